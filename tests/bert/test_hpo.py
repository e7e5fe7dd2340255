"""`mlperf-bert hpo` on the micro system: a 3-trial study that is interrupted, resumed from its SQLite file, and
whose best trial becomes a descriptor that trains to the same result and passes the compliance checker."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest

from bert.hpo import StudyError, StudyRequest, open_study, run_study, single_process, trial_objective
from bert.system import load_descriptor
from compliance.checkers import compliance_check
from compliance.result_log import read_result_log
from tests.helpers.runs import train_command

SEARCH = {
    "optimizer.name": {"choices": ["lamb", "adam"]},
    "optimizer.base_learning_rate": {"low": 0.01, "high": 0.03, "log": True},
    "optimizer.warmup_steps": {"low": 0, "high": 20, "step": 10},
}


def _search_system(tmp_path: Path, target: float = 0.045) -> Path:
    return load_descriptor("cpu_micro").variant(
        {"max_samples": 3072, "log_weights_initialization": False, "search": SEARCH,
         "eval.target_accuracy": target, "eval.interval_samples": 1024}, name="micro_search").write(tmp_path).path


def _hpo(system: Path, storage: str, data: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "bert.cli", "hpo", "--system", str(system), "--storage", storage,
            "--data-dir", str(data), *extra]


def _states(storage: str) -> dict[str, int]:
    trials = optuna.load_study(study_name="micro_search", storage=storage).get_trials(deepcopy=False)
    return {state: sum(t.state.name == state for t in trials) for state in ("COMPLETE", "PRUNED", "FAIL")}


def _interrupt_after_first_trial(cmd: list[str], env: dict, cwd: Path) -> str:
    # Started with SIGINT ignored, as from `&` in a script: the study must stop all the same, whether the signal
    # lands in a trial's run or between two trials.
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    output, deadline = [], time.monotonic() + 120
    for line in proc.stdout:
        output.append(line)
        if "Trial 0 finished" in line:
            proc.send_signal(signal.SIGINT)
            break
        assert time.monotonic() < deadline, "".join(output[-20:])
    output.append(proc.communicate(timeout=60)[0])
    assert proc.returncode == 1, "".join(output[-20:])
    return "".join(output)


def test_study_is_interrupted_resumed_and_its_best_descriptor_trains_and_passes(tmp_path, small_dataset, cpu_env):
    system = _search_system(tmp_path)
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    cmd = _hpo(system, storage, small_dataset, "--trials", "3", "--seed", "5")

    interrupted = _interrupt_after_first_trial(cmd, cpu_env, tmp_path)
    assert "interrupted; run the same command again to resume study 'micro_search'" in interrupted
    assert _states(storage)["COMPLETE"] == 1
    first = optuna.load_study(study_name="micro_search", storage=storage).trials[0]

    resumed = subprocess.run(cmd, env=cpu_env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert _states(storage)["COMPLETE"] + _states(storage)["PRUNED"] == 3
    kept = optuna.load_study(study_name="micro_search", storage=storage).trials[0]
    assert (kept.params, kept.value) == (first.params, first.value)  # resumed, not restarted

    out = tmp_path / "micro_tuned.json"
    shown = subprocess.run(_hpo(system, storage, small_dataset, "--show", "--out", str(out)), env=cpu_env,
                           cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr[-3000:]
    assert "best trials (training samples to 0.045; 3072 = the cap, not reached):" in shown.stdout
    best = optuna.load_study(study_name="micro_search", storage=storage).best_trial
    tuned = load_descriptor(out)
    assert tuned.run.optimizer.name == best.params["optimizer.name"]
    assert tuned.run.optimizer.base_learning_rate == best.params["optimizer.base_learning_rate"]
    assert f"trial {best.number}" in tuned.notes_text
    assert ("logged under the LAMB key names" in tuned.notes_text) == (tuned.run.optimizer.name == "adam")

    log = tmp_path / "result_0.txt"
    train = subprocess.run(train_command(out, small_dataset, log, seed=5), env=cpu_env, capture_output=True,
                           text=True, timeout=120)
    assert train.returncode == (0 if best.value < 3072 else 1), train.stderr[-3000:]
    trained = read_result_log(log).value("train_samples")
    assert trained == best.value  # the trial, run again from the written descriptor
    result = compliance_check(log)
    assert result.passed, result.output


def test_one_process_keeps_the_global_batch_and_micro_batch(tmp_path):
    system = load_descriptor("cpu_micro").variant({"processes_per_node": 2, "gradient_accumulation_steps": 2,
                                               "global_batch_size": 32})
    one = single_process(system)
    assert (one.run.processes_per_node, one.run.gradient_accumulation_steps) == (1, 4)
    assert one.run.global_batch_size == 32 and one.nodes == 1 and one.per_process_batch == system.per_process_batch
    assert system.run.processes_per_node == 2  # the input is not changed


def test_empty_space_and_foreign_study_are_refused(tmp_path):
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    plain = load_descriptor("cpu_micro")
    with pytest.raises(StudyError, match="run.search is empty"):
        run_study(StudyRequest(plain, storage, "shared", seed=1), trials=1)
    searching = load_descriptor("cpu_micro").variant({"search": SEARCH}, name="searching")
    open_study(StudyRequest(searching, storage, "shared", seed=1))
    with pytest.raises(StudyError, match="searches system 'searching', not 'other'"):
        other = searching.variant(name="other")
        open_study(StudyRequest(other, storage, "shared", seed=1))


def test_a_pruned_trial_stops_its_run_after_the_eval(tmp_path, small_dataset):
    system = load_descriptor(_search_system(tmp_path, target=0.9))  # far off: the first eval does not end the run
    request = StudyRequest(system, "sqlite:///:memory:", "pruned", seed=1, data_dir=small_dataset, log_dir=tmp_path)
    study = optuna.create_study(pruner=optuna.pruners.ThresholdPruner(upper=0.5))  # any error above 0.5 prunes
    study.optimize(lambda trial: trial_objective(request, 1, trial), n_trials=1)
    assert study.trials[0].state == optuna.trial.TrialState.PRUNED
    assert list(study.trials[0].intermediate_values) == [1024]
    stop = read_result_log(tmp_path / "trial_0.txt").events[-1]
    assert stop.key == "run_stop" and stop.metadata == {
        **stop.metadata, "status": "aborted", "reason": "stopped by the caller after the eval at 1024 samples"}


def test_a_study_keeps_the_seed_it_was_created_with(tmp_path):
    from bert.hpo import study_seed

    storage = f"sqlite:///{tmp_path / 'study.db'}"
    searching = load_descriptor("cpu_micro").variant({"search": SEARCH, "seed": None}, name="searching")
    seed = study_seed(open_study(StudyRequest(searching, storage, "kept")))  # drawn: no --seed, no run.seed
    assert study_seed(open_study(StudyRequest(searching, storage, "kept"))) == seed  # a resumed worker
    assert study_seed(open_study(StudyRequest(searching, storage, "kept", seed=seed))) == seed
    with pytest.raises(StudyError, match=f"runs its trials with seed {seed}, not {seed + 1}"):
        open_study(StudyRequest(searching, storage, "kept", seed=seed + 1))
    given = study_seed(open_study(StudyRequest(searching, storage, "given", seed=5)))
    assert given == 5
