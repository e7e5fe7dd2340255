"""`mlperf-bert hpo`: hyperparameter search with Optuna over the space a descriptor declares in run.search.

Objective: training samples to reach the target accuracy, fewer is better; a run that reaches
run.max_samples without it counts as max_samples. Each trial is one in-process run (bert.train.run) of the
descriptor with the trial's values, in one process: the descriptor's processes become gradient accumulation
steps, so the global batch and each micro-batch stay as they are. Every eval reports the masked-LM error
(1 - accuracy) to the trial at step = training samples, and a median pruner stops runs that trail the
others (TPE sampler).

The study lives in Optuna RDB storage (`sqlite:///study.db`, or any database URL Optuna takes): `--trials N`
is the number of finished (complete or pruned) trials the study should hold, so the same command resumes an
interrupted study and several workers can run it at once. A trial stopped by Ctrl-C is marked failed; one
whose process died is marked failed by the next worker after the heartbeat grace period, and retried.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path

import optuna
from optuna.storages import RDBStorage, RetryHeartbeatStaleTrialCallback
from optuna.trial import FrozenTrial, Trial, TrialState
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from bert.interrupts import signals_interrupt
from bert.ownership import OwnershipError, claim_file, write_text_atomically
from bert.prep.synthetic.hdf5_corpus import synthesize_if_missing
from bert.search_settings import SearchParam
from bert.search_space import check_search_space, run_field_type
from bert.system import Descriptor
from bert.train import RunRequest, run

FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)
HEARTBEAT_S, GRACE_S = 60, 180


class StudyError(RuntimeError):
    """The study cannot run or be shown; the message says why and what to do."""


@dataclass(frozen=True)
class StudyRequest:
    system: Descriptor
    storage: str  # an Optuna RDB URL
    study_name: str
    # The run seed of every trial, so that trials differ only in the searched values; None: the study's own.
    seed: int | None = None
    data_dir: Path | None = None
    log_dir: Path | None = None  # each trial's MLPerf log as DIR/trial_<number>.txt


def single_process(system: Descriptor) -> Descriptor:
    """The descriptor on one process: the other processes' shares become accumulation steps."""
    accumulation = system.run.gradient_accumulation_steps * system.world_size
    return system.variant({"processes_per_node": 1, "gradient_accumulation_steps": accumulation},
                          description={"number_of_nodes": "1"})


def _suggest(trial: Trial, key: str, param: SearchParam) -> object:
    if param.choices is not None:
        return trial.suggest_categorical(key, param.choices)
    if run_field_type(key) is int:
        return trial.suggest_int(key, int(param.low), int(param.high), step=int(param.step or 1), log=param.log)
    return trial.suggest_float(key, param.low, param.high, step=param.step, log=param.log)


def trial_objective(request: StudyRequest, seed: int, trial: Trial) -> float:
    values = {key: _suggest(trial, key, param) for key, param in request.system.run.search.items()}
    system = single_process(request.system.variant(values))
    evals: list[tuple[int, float]] = []
    pruned = []

    def on_eval(samples: int, accuracy: float) -> bool:
        evals.append((samples, accuracy))
        trial.report(1.0 - accuracy, samples)
        if trial.should_prune():
            pruned.append(samples)
        return bool(pruned)

    log = request.log_dir / f"trial_{trial.number}.txt" if request.log_dir is not None else None
    code = run(RunRequest(system, seed, log, request.data_dir, on_eval=on_eval))
    if code > 128:  # a signal (Ctrl-C, a time limit) stopped the trial: stop the study, resumable, as before
        raise KeyboardInterrupt
    if code == 0:
        return float(evals[-1][0])
    if evals and evals[-1][0] >= system.run.max_samples:
        return float(system.run.max_samples)
    if pruned:
        raise optuna.TrialPruned(f"trailing the other trials at {pruned[0]} samples")
    raise StudyError(f"trial {trial.number} failed (its error is printed above); values {values}")


def check_storage_url(url: str) -> None:
    """Refuses, before Optuna sees it, a storage URL that would fail with a traceback or keep the study in
    memory only (lost at exit, and not shared with other workers)."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise StudyError(f"--storage {url!r}: not a database URL; use e.g. sqlite:///hpo.db or "
                         "postgresql://user@host/db") from None
    if parsed.get_backend_name() != "sqlite":
        return
    database = parsed.database or ""
    if database in ("", ":memory:") or "mode=memory" in url:
        raise StudyError(f"--storage {url!r}: names no file, so the study would live in memory and be lost at "
                         "exit; name a file: sqlite:///hpo.db (relative) or sqlite:////abs/path/hpo.db")
    folder = Path(database.removeprefix("file:")).parent
    if not folder.is_dir():
        raise StudyError(f"--storage {url!r}: the folder {folder} does not exist; create it or name a file in an "
                         "existing folder")


def _storage(url: str) -> RDBStorage:
    check_storage_url(url)
    with warnings.catch_warnings():  # heartbeats are marked experimental; they are what makes workers safe
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        try:
            return RDBStorage(url, heartbeat_interval=HEARTBEAT_S, grace_period=GRACE_S,
                              heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(max_retry=1))
        except ImportError:
            raise StudyError(f"--storage {url!r}: the database driver for it is not installed (e.g. pip install "
                             "psycopg2-binary for postgresql, pymysql for mysql+pymysql)") from None
        except SQLAlchemyError as e:
            reason = str(getattr(e, "orig", None) or e).splitlines()[0]
            raise StudyError(f"--storage {url!r}: cannot open the study database ({reason}); check that it is "
                             "reachable and is an Optuna database") from None


def open_study(request: StudyRequest) -> optuna.Study:
    """Creates the study or loads it; refuses one made for another descriptor."""
    study = optuna.create_study(
        study_name=request.study_name, storage=_storage(request.storage), direction="minimize",
        load_if_exists=True, sampler=optuna.samplers.TPESampler(),
        pruner=optuna.pruners.MedianPruner(n_startup_trials=3),
    )
    made_for = study.user_attrs.get("system")
    if made_for is None:
        study.set_user_attr("system", request.system.name)
    elif made_for != request.system.name:
        raise StudyError(f"study {request.study_name!r} in {request.storage} searches system {made_for!r}, not "
                         f"{request.system.name!r}; pass --study with another name")
    kept = study.user_attrs.get("seed")
    if kept is None:
        study.set_user_attr("seed", request.system.run_seed(request.seed))
    elif request.seed is not None and request.seed != kept:
        raise StudyError(f"study {request.study_name!r} in {request.storage} runs its trials with seed {kept}, not "
                         f"{request.seed}; drop --seed, or pass --study with another name")
    return study


def study_seed(study: optuna.Study) -> int:
    """The run seed of every trial of the study (chosen when the study was created: see open_study)."""
    return study.user_attrs["seed"]


def finished_trials(study: optuna.Study) -> int:
    return len(study.get_trials(deepcopy=False, states=FINISHED))


def _ensure_dataset(request: StudyRequest) -> None:
    spec, root = request.system.run.dataset.synthetic, request.system.dataset_dir(request.data_dir)
    if spec is not None:
        try:
            synthesize_if_missing(root, spec, on_wait=print)
        except FileExistsError as e:
            raise StudyError(str(e)) from None


def run_study(request: StudyRequest, trials: int) -> optuna.Study:
    """Runs trials until the study holds `trials` finished ones (counting other workers' and earlier ones)."""
    if not request.system.run.search:
        raise StudyError(f"{request.system.path}: run.search is empty; declare the search space there, e.g. "
                         '"search": {"optimizer.base_learning_rate": {"low": 1e-4, "high": 1e-2, "log": true}}')
    check_search_space(request.system)
    study = open_study(request)
    missing = trials - finished_trials(study)
    if missing > 0:
        _ensure_dataset(request)
        seed = study_seed(study)
        with signals_interrupt():  # between trials too, where no run's SignalGuard listens
            study.optimize(lambda trial: trial_objective(request, seed, trial), n_trials=missing,
                           callbacks=[optuna.study.MaxTrialsCallback(trials, states=FINISHED)])
    return study


def summary(study: optuna.Study, target_accuracy: float, max_samples: int, top: int) -> str:
    """The trial counts and the best finished trials (their training samples to `target_accuracy`, or the cap
    `max_samples`: run.eval.target_accuracy and run.max_samples), one line each."""
    counts = {state: len(study.get_trials(deepcopy=False, states=(state,))) for state in TrialState}
    lines = [f"study {study.study_name}: " + ", ".join(f"{n} {state.name.lower()}" for state, n in counts.items()
                                                      if n)]
    complete = sorted(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)), key=lambda t: t.value)
    if complete:
        lines.append(f"best trials (training samples to {target_accuracy}; {max_samples} = the cap, not reached):")
        for t in complete[:top]:
            values = " ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in t.params.items())
            lines.append(f"  trial {t.number:>4}  {t.value:>12.0f}  {values}")
    return "\n".join(lines)


def tuned_notes(system: Descriptor, study: optuna.Study, best: FrozenTrial, log_note: str
                ) -> str | dict[str, str | None]:
    """The tuned descriptor's notes: the study and its best trial added (as the topic "tuning" of notes kept as
    topics), and the tuned optimizer's `log_note` (bert.optim.kinds: for ADAM the key names its values are logged
    under) where the notes lack it (the topic "optimizer")."""
    reached = (f"{best.value:.0f} training samples to the target" if best.value < system.run.max_samples else
               f"the target not reached within the cap of {system.run.max_samples} samples")
    note = f"Tuned by mlperf-bert hpo (study {study.study_name}, trial {best.number}: {reached}, in one process)."
    log_note = log_note if log_note not in system.notes_text else ""
    if isinstance(system.run.notes, dict):
        return {**system.run.notes, "tuning": note, **({"optimizer": log_note} if log_note else {})}
    return " ".join(part for part in (system.run.notes, note, log_note) if part)


def write_best(study: optuna.Study, system: Descriptor, out: Path) -> Path:
    """Writes the descriptor with the best trial's values (the descriptor's own launch shape kept),
    validated before it replaces anything at `out`, and only a file that hpo wrote (bert.ownership)."""
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if not complete:
        raise StudyError(f"study {study.study_name} has no complete trial yet; run some with --trials N")
    best = min(complete, key=lambda t: t.value)
    tuned = system.variant(best.params)  # validated: an invalid descriptor never reaches `out`
    tuned = tuned.variant({"notes": tuned_notes(system, study, best, tuned.run.optimizer.kind.log_note)})
    try:
        with claim_file(out, "hpo", replace=True, foreign_hint="pass another --out"):
            write_text_atomically(out, json.dumps(tuned.data, indent=2) + "\n")
    except OwnershipError as e:
        raise StudyError(str(e)) from None
    return out


def default_out(descriptor: Path) -> Path:
    """Where the best trial's descriptor goes: beside the descriptor at `descriptor`, named after it."""
    return descriptor.with_name(f"{descriptor.stem}_tuned.json")


def hpo_command(request: StudyRequest, trials: int, show: bool, top: int, out: Path | None) -> str:
    """`mlperf-bert hpo`: runs (or resumes) the study, or with `show` writes the best trial's descriptor;
    returns the report to print."""
    run = request.system.run
    if not show:
        return summary(run_study(request, trials), run.eval.target_accuracy, run.max_samples, top)
    study = open_study(request)
    written = write_best(study, request.system, out or default_out(request.system.path))
    return f"{summary(study, run.eval.target_accuracy, run.max_samples, top)}\nwrote {written}"
