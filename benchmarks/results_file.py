"""The results file a benchmark keeps beside itself: its latest output with the date, machine, torch version
and command line, replaced atomically (a failed run leaves the previous results)."""

from __future__ import annotations

import argparse
import datetime
import os
import platform
from pathlib import Path


def add_no_results_flag(parser: argparse.ArgumentParser) -> None:
    """The one spelling of every benchmark's "print only" switch: `args.no_results`."""
    parser.add_argument("--no-results", action="store_true", help="print only; leave the results file as it is")


def write_results(path: Path, lines: list[str], argv: list[str], setting: str = "") -> None:
    # torch only now: a benchmark that measures its children's memory (data_pipeline) imports this module
    # before it measures, and a child's peak RSS starts at its parent's.
    import torch

    header = [
        f"# {path.stem.removesuffix('_results')} results", "",
        f"- date: {datetime.datetime.now().isoformat(timespec='seconds')}",
        f"- machine: {platform.node()}, {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"load average at the end {' / '.join(f'{x:.1f}' for x in os.getloadavg())} (1 / 5 / 15 min)",
        f"- torch {torch.__version__}{setting}",
        f"- command: python benchmarks/{path.stem.removesuffix('_results')}.py {' '.join(argv)}", "", "```",
    ]
    partial = path.with_name(path.name + ".partial")
    partial.write_text("\n".join([*header, *lines, "```", ""]))
    os.replace(partial, path)
