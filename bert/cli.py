"""`mlperf-bert`: the command line. Thin: each command parses, calls one function, prints."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from bert.system import System, load_system
from bert.typed_config import ConfigError


def _load(system: str) -> System:
    try:
        return load_system(system)
    except ConfigError as e:
        raise click.ClickException(str(e)) from None


@click.group()
def main() -> None:
    """MLPerf Training BERT: train, prepare data, check and package submissions."""


@main.command()
@click.option("--system", "system_name", default="cpu_tiny", show_default=True,
              help="Descriptor: a path to a JSON file or the name of one in systems/.")
@click.option("--seed", type=int, default=None, help="Run seed (default: the descriptor's run.seed).")
@click.option("--log-file", "log_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Result log file to write the MLPerf lines to (rank 0).")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Dataset directory, overriding run.dataset.dir.")
@click.option("--cache-cleared/--no-cache-cleared", default=False,
              help="Whether the launcher dropped the page cache before this run (logged as cache_clear).")
def train(system_name: str, seed: int | None, log_path: Path | None, data_dir: Path | None,
          cache_cleared: bool) -> None:
    """Run one training run (launch through torchrun or srun for several processes)."""
    from bert.train import RunRequest, run

    system = _load(system_name)
    seed = seed if seed is not None else system.run.seed
    if seed is None:
        raise click.UsageError(f"no seed: pass --seed or set run.seed in {system.path}")
    sys.exit(run(RunRequest(system, seed, log_path, data_dir, cache_cleared)))


@main.command()
@click.option("--system", "system_name", default="cpu_tiny", show_default=True,
              help="Descriptor whose run.search declares the space: a path or a name in systems/.")
@click.option("--trials", type=int, default=20, show_default=True,
              help="Finished (complete or pruned) trials the study should hold; a resumed study, or one that "
                   "other workers share, runs only the missing ones.")
@click.option("--storage", default=None, help="Optuna RDB storage URL [default: sqlite:///hpo_<system>.db].")
@click.option("--study", "study_name", default=None, help="Study name [default: the system name].")
@click.option("--seed", type=int, default=None, help="Run seed of every trial [default: run.seed, else 1].")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Dataset directory, overriding run.dataset.dir.")
@click.option("--log-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write each trial's MLPerf log to DIR/trial_<number>.txt.")
@click.option("--show", is_flag=True, help="Run nothing: print the best trials and write the best as a descriptor.")
@click.option("--top", type=int, default=5, show_default=True, help="With --show: how many trials to print.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="With --show: the descriptor to write [default: <system>_tuned.json beside the descriptor].")
def hpo(system_name: str, trials: int, storage: str | None, study_name: str | None, seed: int | None,
        data_dir: Path | None, log_dir: Path | None, show: bool, top: int, out: Path | None) -> None:
    """Hyperparameter search (Optuna) over the descriptor's run.search: samples to reach the target."""
    try:
        from bert import hpo as search
    except ModuleNotFoundError as e:
        raise click.ClickException(f"mlperf-bert hpo needs {e.name}: pip install -e '.[hpo]'") from None

    system = _load(system_name)
    seed = seed if seed is not None else system.run.seed if system.run.seed is not None else 1
    request = search.StudyRequest(system, storage or f"sqlite:///hpo_{system.name}.db", study_name or system.name,
                                  seed, data_dir, log_dir)
    try:
        click.echo(search.hpo_command(request, trials, show, top, out))
    except (search.StudyError, ConfigError) as e:
        raise click.ClickException(str(e)) from None
    except KeyboardInterrupt:
        raise click.ClickException(f"interrupted; run the same command again to resume study {request.study_name!r} "
                                   f"in {request.storage}") from None


@main.group()
def data() -> None:
    """Dataset tools."""


@data.command()
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Output directory (default: the descriptor's run.dataset.dir).")
@click.option("--system", "system_name", default="cpu_tiny", show_default=True,
              help="Descriptor whose run.dataset.synthetic block sets the corpus size and shapes.")
@click.option("--overwrite", is_flag=True, help="Replace an existing dataset in the output directory.")
@click.option("--if-missing", is_flag=True, help="Do nothing when a complete corpus is already there.")
def synth(out: Path | None, system_name: str, overwrite: bool, if_missing: bool) -> None:
    """Write the deterministic synthetic corpus (train shards, eval file, vocab.txt)."""
    import time

    from bert.data.synth import is_complete, synthesize
    from bert.system import SyntheticDataSpec

    system = _load(system_name)
    spec = system.run.dataset.synthetic or SyntheticDataSpec()
    out = out or system.dataset_dir()
    if if_missing and is_complete(out):
        click.echo(f"synthetic dataset already complete in {out}")
        return
    start = time.perf_counter()
    try:
        synthesize(out, spec, overwrite=overwrite or (if_missing and out.exists()))
    except FileExistsError as e:
        raise click.ClickException(str(e)) from None
    click.echo(f"wrote {spec.train_samples} train + {spec.eval_samples} eval samples to {out} "
               f"in {time.perf_counter() - start:.1f} s")


@main.group(name="system")
def system_group() -> None:
    """System descriptors."""


@system_group.command(name="check")
@click.argument("systems", nargs=-1, required=True)
def system_check(systems: tuple[str, ...]) -> None:
    """Validate descriptors; prints one line per descriptor."""
    for name in systems:
        s = _load(name)
        click.echo(f"{s.path}: ok ({s.nodes} node(s) x {s.run.processes_per_node} process(es), "
                   f"global batch {s.run.global_batch_size}, model {s.run.model})")


@system_group.command(name="env")
@click.argument("system")
def system_env(system: str) -> None:
    """Print the launch shape as shell assignments (used by run_and_time.sh)."""
    s = _load(system)
    values = {
        "SYSTEM_NAME": s.name, "SYSTEM_PATH": str(s.path), "NODES": s.nodes,
        "PROCS_PER_NODE": s.run.processes_per_node, "DEVICE": s.run.device,
        "DATASET_DIR": str(s.dataset_dir()), "SYNTHETIC": int(s.run.dataset.synthetic is not None),
        "RUN_SEED": "" if s.run.seed is None else s.run.seed,
    }
    for key, value in values.items():
        click.echo(f"{key}={shlex.quote(str(value))}")


if __name__ == "__main__":
    main()
