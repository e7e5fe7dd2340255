"""`mlperf-bert train` and `mlperf-bert hpo`: one run, or a search of runs."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from bert.cli.common import descriptor_for_command, out_option, seed_option, system_option
from bert.interrupts import end_with_parent
from bert.system import DEFAULT_SYSTEM
from bert.typed_config import ConfigError

# Fault-injection tests only: the loss of this (1-based) step becomes NaN on every rank. An environment
# variable, not a descriptor field, so that no submission can set it by accident.
NAN_INJECTION_ENV = "MLPERF_BERT_TEST_INJECT_NAN_AT_STEP"
# Set to 1, the ranks print the MLPerf log lines too (run_and_time.sh passes it on to them with the environment).
VERBOSE_ENV = "MLPERF_BERT_VERBOSE"


def _nan_injection_step() -> int | None:
    value = os.environ.get(NAN_INJECTION_ENV)
    if value is None:
        return None
    if not value.isdigit() or int(value) < 1:
        raise click.UsageError(f"{NAN_INJECTION_ENV}={value!r}: must be a step number (1 or more), or unset")
    return int(value)


@click.command()
@system_option("The run's descriptor", default=DEFAULT_SYSTEM)
@seed_option("run.seed, else drawn at random; the log records it")
@click.option("--log-file", "log_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Result log file to write the MLPerf lines to (rank 0).")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Dataset directory, overriding run.dataset.dir (run_and_time.sh: DATADIR).")
@click.option("--checkpoint-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The folder that holds run.init_checkpoint's file (run_and_time.sh: CHECKPOINTDIR).")
@click.option("--cache-cleared/--no-cache-cleared", default=False,
              help="Whether the launcher dropped this node's page cache before this run; cache_clear is logged "
                   "true when every node's rank says so.")
@click.option("-v", "--verbose", is_flag=True, envvar=VERBOSE_ENV, show_envvar=True,
              help="Print the MLPerf log lines (they always go to --log-file) and every print interval's loss, "
                   "learning rate and rates, besides the evals' progress lines.")
def train(system: str, seed: int | None, log_path: Path | None, data_dir: Path | None,
          checkpoint_dir: Path | None, cache_cleared: bool, verbose: bool) -> None:
    """Run one training run (launch through torchrun or srun for several processes)."""
    if "TORCHELASTIC_RUN_ID" in os.environ:  # a rank of torchrun's outlives no agent that was killed
        end_with_parent()
    from bert.train import RunRequest, run

    descriptor = descriptor_for_command(system)
    request = RunRequest(descriptor, descriptor.run_seed(seed), log_path, data_dir, cache_cleared,
                         nan_at_step=_nan_injection_step(), checkpoint_dir=checkpoint_dir, verbose=verbose)
    sys.exit(run(request))


@click.command()
@system_option("The descriptor whose run.search declares the space", default=DEFAULT_SYSTEM)
@click.option("--trials", type=click.IntRange(min=1), default=20, show_default=True,
              help="Finished (complete or pruned) trials the study should hold; a resumed study, or one that "
                   "other workers share, runs only the missing ones.")
@click.option("--storage", default=None, help="Optuna RDB storage URL [default: sqlite:///hpo_<system>.db].")
@click.option("--study", "study_name", default=None, help="Study name [default: the system name].")
@seed_option("the study's, else run.seed, else drawn at random and kept in the study")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Dataset directory, overriding run.dataset.dir.")
@click.option("--log-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write each trial's MLPerf log to DIR/trial_<number>.txt.")
@click.option("--show", is_flag=True, help="Run nothing: print the best trials and write the best as a descriptor.")
@click.option("--top", type=click.IntRange(min=1), default=5, show_default=True,
              help="With --show: how many trials to print.")
@out_option("With --show: the descriptor to write [default: <system>_tuned.json beside the descriptor].", file=True)
def hpo(system: str, trials: int, storage: str | None, study_name: str | None, seed: int | None,
        data_dir: Path | None, log_dir: Path | None, show: bool, top: int, out: Path | None) -> None:
    """Search hyperparameters (Optuna) over the descriptor's run.search. The objective: the samples to reach
    the target."""
    try:
        from bert import hpo as search
    except ModuleNotFoundError as e:
        raise click.ClickException(f"mlperf-bert hpo needs {e.name}: pip install -e '.[hpo]'") from None

    descriptor = descriptor_for_command(system)
    request = search.StudyRequest(descriptor, storage or f"sqlite:///hpo_{descriptor.name}.db",
                                  study_name or descriptor.name, seed, data_dir, log_dir)
    try:
        click.echo(search.hpo_command(request, trials, show, top, out))
    except (search.StudyError, ConfigError) as e:
        raise click.ClickException(str(e)) from None
    except KeyboardInterrupt:
        raise click.ClickException(f"interrupted; run the same command again to resume study {request.study_name!r} "
                                   f"in {request.storage}") from None



COMMANDS = [train, hpo]
