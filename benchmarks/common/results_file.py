"""The results file a benchmark keeps beside itself (benchmarks/<name>_results.md for benchmarks/<name>.py): its
latest output with the date, machine, torch version and command line, replaced atomically (a failed run leaves
the previous results)."""

from __future__ import annotations

import argparse
import datetime
import os
import platform
from pathlib import Path


def add_no_results_flag(parser: argparse.ArgumentParser) -> None:
    """The one spelling of every benchmark's "print only" switch: `args.no_results`."""
    parser.add_argument("--no-results", action="store_true", help="print only; leave the results file as it is")


def header(path: Path, argv: list[str], setting: str = "") -> list[str]:
    """The lines a results file starts with: date, machine, torch version and `setting`, command line."""
    # torch only now: a benchmark that measures its children's memory (data_pipeline) imports this module
    # before it measures, and a child's peak RSS starts at its parent's.
    import torch

    return [
        f"- date: {datetime.datetime.now().isoformat(timespec='seconds')}",
        f"- machine: {platform.node()}, {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"load average at the end {' / '.join(f'{x:.1f}' for x in os.getloadavg())} (1 / 5 / 15 min)",
        f"- torch {torch.__version__}{setting}",
        f"- command: python -m benchmarks.{path.stem.removesuffix('_results')} {' '.join(argv)}".rstrip(),
    ]


def write_text(path: Path, text: str) -> None:
    """Replaces the results file atomically: a failed run leaves the previous results."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    os.replace(partial, path)


def write_results(path: Path, lines: list[str], argv: list[str], setting: str = "") -> None:
    title = [f"# {path.stem.removesuffix('_results')} results", ""]
    write_text(path, "\n".join([*title, *header(path, argv, setting), "", "```", *lines, "```", ""]))


def print_and_record(path: Path, lines: list[str], args: argparse.Namespace, argv: list[str],
                     setting: str = "") -> None:
    """Prints `lines` and, unless `args.no_results`, writes them to the results file `path` (write_results)."""
    print("\n".join(lines))
    if not args.no_results:
        write_results(path, lines, argv, setting)
