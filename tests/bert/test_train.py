"""Training runs: launched the way run_and_time.sh launches them (torchrun, gloo, several processes), each
run.balance strategy in short runs of 2 ranks that pass the official checker, a start from run.init_checkpoint
(evaluated before run_start, refused before it when it does not fit), and the loop's printed rate."""

import subprocess
import sys
from pathlib import Path

import h5py
import pytest
import torch

from bert.checkpoint import convert
from bert.distributed.launch import DistContext
from bert.mllog import CODE_VERSION, INIT_CHECKPOINT_EVAL_ACCURACY
from bert.mlperf_rules import DEFAULT_RULESET, RULESETS
from bert.model.config import named_config
from bert.model.pretraining import BertForPreTraining
from bert.model.tf_names import tensor_names, to_hf_state_dict
from bert.provenance import running_code
from bert.run_progress import Goal, RunConsole
from bert.system import Descriptor, load_descriptor
from bert.train import RunRequest, loader_balance, run
from bert.typed_config import ConfigError
from compliance.checkers import compliance_check
from compliance.result_log import read_result_log
from tests.helpers.datasets import copy_dataset, edit_unseen
from tests.helpers.runs import run_training
from tests.helpers.systems import unchecked_descriptor, write_unchecked


def test_two_process_gloo_run_converges_and_passes_the_checker(tmp_path, small_dataset, cpu_env):
    system = load_descriptor("cpu_micro").variant({"processes_per_node": 2}, name="micro2").write(tmp_path).path
    proc, log = run_training(tmp_path, system, small_dataset, 2, cpu_env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = read_result_log(log)
    keys = [x.key for x in result.events]
    assert keys[:3] == ["cache_clear", "init_start", "submission_benchmark"]
    assert keys.index("init_stop") < keys.index("run_start") < keys.index("block_start")
    assert keys[-3:] == ["train_samples", "eval_samples", "run_stop"]
    assert result.status == "success" and not result.malformed
    evals = result.all("eval_accuracy")
    assert evals[-1].value >= 0.06 and all(e.metadata["epoch_num"] % 1024 == 0 for e in evals)
    assert result.value("train_samples") == evals[-1].metadata["epoch_num"]
    assert result.first("seed").metadata["file"].endswith("bert/train.py")
    code = result.first(CODE_VERSION)  # what ran, once, before run_start (bert.provenance)
    assert len(result.all(CODE_VERSION)) == 1 and keys.index(CODE_VERSION) < keys.index("run_start")
    assert (code.value, code.metadata["commit"]) == (running_code().digest, running_code().commit)
    logged = [x.metadata["tensor"] for x in result.all("weights_initialization")]
    assert logged == [e.tf for e in tensor_names(named_config("micro"))]
    for ruleset in RULESETS:
        result = compliance_check(log, ruleset)
        assert result.passed, result.output


def test_corrupt_shard_after_start_ends_with_an_aborted_run_stop(tmp_path, small_dataset, cpu_env):
    data = copy_dataset(small_dataset, tmp_path / "data")

    def corrupt(f) -> None:  # the metadata and the manifest pass the start-up check; a sample does not
        ids = f["input_ids"][:]
        ids[0, 1] = 9999
        f["input_ids"][...] = ids
    edit_unseen(data, corrupt)
    system = load_descriptor("cpu_micro").path
    proc, log = run_training(tmp_path, system, data, 1, cpu_env)
    assert proc.returncode != 0
    events = read_result_log(log).events
    assert "run_start" in [x.key for x in events]
    assert events[-1].key == "run_stop" and events[-1].metadata["status"] == "aborted"
    assert "ShardError" in events[-1].metadata["reason"]
    assert "sample 0: token id 9999 is outside the vocabulary" in events[-1].metadata["reason"]


def test_bad_dataset_stops_before_run_start_with_one_line(tmp_path, small_dataset, cpu_env):
    data = copy_dataset(small_dataset, tmp_path / "data")
    with h5py.File(data / "eval.hdf5", "r+") as f:
        del f["next_sentence_labels"]
    system = load_descriptor("cpu_micro").path
    proc, log = run_training(tmp_path, system, data, 1, cpu_env)
    assert proc.returncode != 0
    assert "eval.hdf5: missing key(s) next_sentence_labels" in proc.stderr
    assert "run_start" not in log.read_text()


def test_too_few_eval_samples_is_named(tmp_path, small_dataset, cpu_env):
    system = load_descriptor("cpu_micro").variant({"eval.samples": 10_000}, name="micro").write(tmp_path).path
    proc, _ = run_training(tmp_path, system, small_dataset, 1, cpu_env)
    assert proc.returncode != 0
    assert "has 256 eval samples, fewer than run.eval.samples = 10000" in proc.stderr


def test_missing_dataset_and_missing_shards_are_named(tmp_path, cpu_env):
    system = load_descriptor("cpu_micro").path
    proc, _ = run_training(tmp_path, system, tmp_path / "nowhere", 1, cpu_env)
    assert proc.returncode != 0 and "nowhere: dataset directory does not exist" in proc.stderr
    assert "name the folder that holds it with DATADIR (run_and_time.sh) or --data-dir" in proc.stderr
    (tmp_path / "empty").mkdir()
    proc, _ = run_training(tmp_path, system, tmp_path / "empty", 1, cpu_env)
    assert proc.returncode != 0 and "no training shards match 'train/*.hdf5'" in proc.stderr


def test_bad_descriptor_is_one_line_before_anything_runs(tmp_path, cpu_env):
    system = write_unchecked(tmp_path, "micro", unchecked_descriptor({"model": "huge"}))
    proc = subprocess.run([sys.executable, "-m", "bert.cli", "train", "--system", str(system), "--seed", "1"],
                          env=cpu_env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "micro.json: run.model: unknown model config 'huge'" in proc.stderr
    assert "Traceback" not in proc.stderr


class _Clock:
    """time.perf_counter for the loop: each step takes 1 s and each eval 100 s of it."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_rate_printed_is_of_training_alone_not_of_the_evals_between(monkeypatch, capsys):
    """Each print covers the steps since the last one, over their time only: an eval between them (100 s here,
    against 1 s a step) neither inflates nor deflates the sequences per second."""
    from bert import train as trainer
    from bert.mllog import RunLog

    clock = _Clock()
    monkeypatch.setattr(trainer.time, "perf_counter", clock)
    system = load_descriptor("cpu_micro").variant({"print_interval_steps": 4, "eval.interval_samples": 96,
                                               "eval.target_accuracy": 0.5})  # 3 steps of 32 to an eval

    class Step:
        def __call__(self, loader, step):
            clock.now += 1.0

        def pop_loss_and_tokens(self):
            return 1.0, 320  # tokens

        check_numerics = staticmethod(lambda: None)
        schedule = staticmethod(lambda step: 1e-3)

    def evaluate():
        clock.now += 100.0
        return 0.9 if clock.now > 300 else 0.1

    ctx = DistContext(0, 1, 0, 1, torch.device("cpu"))
    console = RunConsole(Goal.of(system), verbose=True)  # the print intervals' lines are a verbose run's
    training = trainer.Training(system, ctx, RunLog(None), Step(), None, evaluate, None, lambda: None, console)
    assert trainer._train(training, trainer.Progress())[0] == "success"
    rates = [line.split(" seq/s")[0].split()[-1] for line in capsys.readouterr().out.splitlines() if "seq/s" in line]
    assert rates == ["32.0", "32.0"]  # 32 sequences a step, a step a second, across the evals at steps 3 and 6


def _short(balance: str, processes: int, **changes) -> Descriptor:
    return load_descriptor("cpu_micro").variant(
        {"processes_per_node": processes, "balance": balance, "log_weights_initialization": False, **changes,
         "eval.target_accuracy": 0.03, "eval.interval_samples": 512},  # one or two evals
        name="micro_balance")


def test_descriptor_selects_the_strategy():
    balance = loader_balance(_short("packed", 1, length_bins=[16, 64]), DistContext(0, 1, 0, 1, None))
    assert (balance.strategy.name, balance.length_bins, balance.strategy.row_len, balance.exchange) == (
        "packed", [16, 64], 64, None)
    assert (balance.strategy.draws, balance.strategy.exchange) == ("random", "rows")
    assert (balance.lookahead, balance.attention_width) == (1, 6 * 64)  # run.balance_lookahead; micro's hidden size
    micro = load_descriptor("cpu_micro")
    assert micro.run.balance == "none"
    with pytest.raises(ConfigError, match="run.balance: expected one of"):
        micro.variant({"balance": "sorted"})
    with pytest.raises(ConfigError, match="run.length_bins"):
        micro.variant({"length_bins": [32, 16]})
    with pytest.raises(ConfigError, match="run.balance_lookahead"):
        micro.variant({"balance_lookahead": -1})
    with pytest.raises(ConfigError, match="run.presort_deal"):
        micro.variant({"presort_deal": "round_robin"})


@pytest.mark.parametrize("balance,processes", [("stratified", 2), ("stratified+local_presort", 2),
                                               ("global_presort", 2), ("packed", 2)])
def test_short_run_passes_the_checker(tmp_path, small_dataset, cpu_env, balance, processes):
    system = _short(balance, processes).write(tmp_path).path
    proc, log = run_training(tmp_path, system, small_dataset, processes, cpu_env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert read_result_log(log).status == "success"
    result = compliance_check(log, DEFAULT_RULESET)
    assert result.passed, result.output


def _hf_checkpoint(path: Path, model_name: str) -> Path:
    config = named_config(model_name)
    torch.manual_seed(5)
    torch.save(to_hf_state_dict(BertForPreTraining(config).state_dict(), config), path)
    return path


def test_run_starts_from_the_converted_checkpoint_and_evaluates_it_first(tmp_path, small_dataset, monkeypatch):
    from bert import train as trainer
    from bert.mllog import RunLog

    seen: list[str] = []  # the eval set read once for the checkpoint eval, once after run_start; the path found once

    class CountedEvalSet(trainer.EvalSet):
        def __init__(self, *args, **kwargs):
            seen.append("eval set read")
            super().__init__(*args, **kwargs)

    def noted(what: str, method):
        def call(*args):
            seen.append(what)
            return method(*args)
        return call

    monkeypatch.setattr(trainer, "EvalSet", CountedEvalSet)
    monkeypatch.setattr(RunLog, "run_start", noted("run_start", RunLog.run_start))
    monkeypatch.setattr(Descriptor, "init_checkpoint_path", noted("checkpoint path", Descriptor.init_checkpoint_path))
    converted = tmp_path / "init.pt"
    convert(_hf_checkpoint(tmp_path / "hf.bin", "micro"), converted, named_config("micro"))
    system = load_descriptor("cpu_micro").variant(
        {"init_checkpoint": str(converted), "max_samples": 512,
         "eval": {"target_accuracy": 0.06, "samples": 256, "interval_samples": 512, "batch_size": 256}},
        name="micro_ckpt")
    log = tmp_path / "result_0.txt"
    run(RunRequest(system, 3, log, small_dataset))
    result = read_result_log(log)
    keys = [x.key for x in result.events]
    assert keys.index(INIT_CHECKPOINT_EVAL_ACCURACY) < keys.index("init_stop") < keys.index("run_start")
    before = result.value(INIT_CHECKPOINT_EVAL_ACCURACY)
    first_eval = result.value("eval_accuracy")
    assert 0.0 <= before < first_eval  # an untrained checkpoint scores below the trained model
    assert keys[-1] == "run_stop"
    assert compliance_check(log, DEFAULT_RULESET).passed
    assert seen == ["checkpoint path", "eval set read", "run_start", "eval set read"]


def test_checkpoint_of_another_model_fails_before_run_start(tmp_path, small_dataset, capsys):
    tiny = _hf_checkpoint(tmp_path / "tiny.bin", "tiny")
    system = load_descriptor("cpu_micro").variant({"init_checkpoint": str(tiny)}, name="micro_bad")
    log = tmp_path / "result_0.txt"
    assert run(RunRequest(system, 3, log, small_dataset)) == 1
    keys = [x.key for x in read_result_log(log).events]
    assert "run_start" not in keys and "init_stop" not in keys
    error = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
    assert len(error) == 1 and "tiny.bin: does not fit the model: tensor bert.embeddings" in error[0]
    assert "[4096, 128]" in error[0] and "[4096, 64]" in error[0]
