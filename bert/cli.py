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


RULESET_HELP = "Official ruleset (4.1.0 or 5.0.0; BERT was retired after 5.0.0)."


def _console():
    from rich.console import Console

    return Console(width=max(Console().width, 120))


def _with_progress(work, *args):
    """Runs one compliance function under a transient status line on stderr (shown on a terminal only);
    its errors become one-line messages: exit 2 for a request it does not serve, 1 for bad input."""
    from rich.console import Console

    from compliance.errors import InputError, UsageError

    status = Console(stderr=True).status("starting")
    try:
        with status:
            return work(*args, progress=status.update)
    except UsageError as e:
        raise click.UsageError(str(e)) from None
    except InputError as e:
        raise click.ClickException(str(e)) from None


@main.command()
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--ruleset", default="5.0.0", show_default=True, help=RULESET_HELP)
@click.option("--division", type=click.Choice(["closed", "open"]), default=None,
              help="The division the logs must belong to (default: what the logs and system JSON say).")
def check(path: Path, ruleset: str, division: str | None) -> None:
    """Check a result log, a folder of result logs or a submission tree with the official tools."""
    from compliance.check import check
    from compliance.render import print_check

    report = _with_progress(check, path, ruleset, division)
    print_check(report, _console())
    sys.exit(0 if report.passed else 1)


@main.command()
@click.option("--system", "system_name", required=True, help="Descriptor of the runs: a path or a name in systems/.")
@click.option("--logs", "logs_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder of the runs' result_*.txt logs (e.g. logs/<system>).")
@click.option("--org", required=True, help="Submitting organization: the top folder of the package.")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Where to write ORG/.")
@click.option("--impl", default="pytorch", show_default=True,
              help="Implementation name: benchmarks/bert/implementations/<impl>/.")
@click.option("--force", is_flag=True, help="Replace an existing OUT/ORG.")
@click.option("--ruleset", default="5.0.0", show_default=True, help=RULESET_HELP)
def package(system_name: str, logs_dir: Path, org: str, out: Path, impl: str, force: bool, ruleset: str) -> None:
    """Build a submission tree from a descriptor and its logs, then check it."""
    from compliance.package import build_package
    from compliance.render import print_check

    result = _with_progress(build_package, system_name, logs_dir, org, out, impl, force, ruleset)
    note = " (the checkout has uncommitted changes; they are not in the package)" if result.uncommitted_changes else ""
    click.echo(f"packaged {result.org_dir} with the code of commit {result.commit[:12]}{note}")
    print_check(result.check, _console())
    sys.exit(0 if result.check.passed else 1)


@main.command()
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--ruleset", default="5.0.0", show_default=True, help=RULESET_HELP)
def score(path: Path, ruleset: str) -> None:
    """Score a submission (ORG folder) with the official result summarizer, after the package checker."""
    from compliance.render import print_score
    from compliance.score import score

    report = _with_progress(score, path, ruleset)
    print_score(report, _console())
    sys.exit(0 if report.passed else 1)


@main.command()
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("-o", "--out", required=True, type=click.Path(path_type=Path),
              help="Folder for report.md and its figures (replaced when it holds an earlier report).")
@click.option("--ruleset", default="5.0.0", show_default=True, help=RULESET_HELP)
def report(path: Path, out: Path, ruleset: str) -> None:
    """Write a Markdown report with figures for a submission (ORG folder)."""
    from compliance.report import write_report

    result = _with_progress(write_report, path, out, ruleset)
    verdict = "PASS" if result.score.passed else "FAIL (see the verdict in the report)"
    click.echo(f"wrote {result.path} and {len(result.figures)} figures; verdict {verdict}")
    sys.exit(0 if result.score.passed else 1)


if __name__ == "__main__":
    main()
