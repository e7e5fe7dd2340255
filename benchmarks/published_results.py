"""`check` and `score` against the official tools, on every BERT system that MLCommons published for a round:
the same verdicts and scores, and how long each takes.

    python -m benchmarks.published_results --git-dir /path/to/training_results_v5.0.git   # a snapshot (bare or not)
    python -m benchmarks.published_results RESULTS_DIR --ruleset 4.1.0                    # an extracted tree

RESULTS_DIR holds ORG/systems/<system>.json and ORG/results/<system>/bert/ (a checkout of an MLCommons
training_results repository, or its BERT part); with --git-dir the BERT part of the snapshot's HEAD is extracted
into a scratch folder. Each system is copied alone into a package of its own, and on that copy run, one after the
other: the official package checker and result summarizer (mlperf-logging, the ruleset given, each in its own
process as a reviewer runs them), then ours: `check`, then `score`, as a user runs them (in this process, with a
tool cache of this run's own: the first `check` of a system finds nothing kept). A system agrees when both verdicts
are the same and, where both score, the scores are equal to 4 decimals. The time of each side is measured on the
wall clock and as CPU time (this process's and its children's, user and system), per system and for the round; a
machine shared with other work stretches the wall clock, the CPU time much less. Prints one row per system, the
reason of every verdict that differs, the agreement count and the times; the round's results replace its section
of benchmarks/published_results_results.md (the other round's stays), with the date, the machine and the commit.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from benchmarks.common.results_file import add_no_results_flag, header, write_text
from bert.mlperf_rules import BENCHMARK, DEFAULT_RULESET
from compliance import tool_cache
from compliance.check import check
from compliance.checkers import PACKAGE_SUCCESS, USAGE
from compliance.findings import ERROR
from compliance.score import score

RESULTS = Path(__file__).with_name("published_results_results.md")
SCORE_DIGITS = 4  # the scores agree when equal to this many decimals


@dataclass(frozen=True)
class PublishedSystem:
    org: str
    name: str
    root: Path  # the folder holding ORG/

    @property
    def label(self) -> str:
        return f"{self.org}/{self.name}"


@dataclass(frozen=True)
class Verdict:
    passed: bool
    minutes: float | None
    why: str = ""  # for a failing verdict: the first reason given


@dataclass(frozen=True)
class Took:
    """How long something took: wall-clock seconds, and CPU seconds of this process and its children."""

    wall: float = 0.0
    cpu: float = 0.0

    def __add__(self, other: Took) -> Took:
        return Took(self.wall + other.wall, self.cpu + other.cpu)


def timed(work: Callable[[], object]) -> tuple[object, Took]:
    """work(), and how long it took (children's CPU time counts once they are waited for, as every tool is)."""
    def cpu() -> float:
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system
    wall, before = time.perf_counter(), cpu()
    result = work()
    return result, Took(time.perf_counter() - wall, cpu() - before)


def published_systems(root: Path) -> list[PublishedSystem]:
    """Every system of `root` with a bert results folder and its system JSON, in org and name order."""
    found = []
    for bench in sorted(root.glob(f"*/results/*/{BENCHMARK}")):
        org, name = bench.parent.parent.parent.name, bench.parent.name
        if (root / org / "systems" / f"{name}.json").is_file() and any(bench.glob("result_*.txt")):
            found.append(PublishedSystem(org, name, root))
    return found


def package_of(system: PublishedSystem, scratch: Path) -> Path:
    """A copy of one system as a package of its own: ORG/systems/<name>.json and ORG/results/<name>/."""
    org = scratch / system.name / system.org
    (org / "systems").mkdir(parents=True)
    shutil.copyfile(system.root / system.org / "systems" / f"{system.name}.json",
                    org / "systems" / f"{system.name}.json")
    shutil.copytree(system.root / system.org / "results" / system.name, org / "results" / system.name)
    return org


def _tool(args: list[str], cwd: Path) -> str:
    proc = subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True, timeout=1800)
    return proc.stdout + proc.stderr


def official(org: Path, ruleset: str) -> Verdict:
    """The package checker, then the result summarizer, on `org` (they write into the folder they run in)."""
    with tempfile.TemporaryDirectory(prefix="official-") as scratch:
        tree = Path(scratch) / org.name
        shutil.copytree(org, tree)
        checked = _tool(["mlperf_logging.package_checker", str(tree), USAGE, ruleset], Path(scratch))
        _tool(["mlperf_logging.result_summarizer", str(tree), USAGE, ruleset, "--csv", "summary.csv"], Path(scratch))
        summary = Path(scratch) / "summary_detailed.json"
        rows = json.loads(summary.read_text()) if summary.is_file() else []
    minutes = rows[0].get(f"{BENCHMARK}:time_to_train") if rows else None
    passed = PACKAGE_SUCCESS in checked
    why = "" if passed else next((line for line in checked.splitlines() if "ERROR" in line), "no success line")
    return Verdict(passed, minutes, why)


def ours(org: Path, ruleset: str) -> Verdict:
    """`mlperf-bert check`, then `mlperf-bert score` (which checks the package again and scores it)."""
    check(org, ruleset)
    report = score(org, ruleset)
    minutes = report.systems[0].minutes if report.systems else None
    errors = [f for f in report.check.findings + [f for row in report.check.rows for f in row.findings]
              if f.level == ERROR]
    failed = [t.tool for t in report.check.tools if not t.passed]
    why = str(errors[0]) if errors else (f"{failed[0]} did not pass" if failed else "")
    return Verdict(report.passed, minutes, "" if report.passed else why)


def agree(theirs: Verdict, mine: Verdict) -> bool:
    if theirs.passed != mine.passed or (theirs.minutes is None) != (mine.minutes is None):
        return False
    return theirs.minutes is None or round(theirs.minutes, SCORE_DIGITS) == round(mine.minutes, SCORE_DIGITS)


def compare(system: PublishedSystem, ruleset: str, scratch: Path) -> tuple[Verdict, Verdict, Took, Took]:
    """The official verdict and ours on a package of the system alone, and how long each took."""
    org = package_of(system, scratch)
    theirs, their_time = timed(lambda: official(org, ruleset))
    mine, my_time = timed(lambda: ours(org, ruleset))
    return theirs, mine, their_time, my_time


def _minutes(verdict: Verdict) -> str:
    return "-" if verdict.minutes is None else f"{verdict.minutes:.5f}"


def _row(system: PublishedSystem, theirs: Verdict, mine: Verdict, their_time: Took, my_time: Took) -> str:
    verdicts = [("PASS" if v.passed else "FAIL") for v in (theirs, mine)]
    return (f"{system.label:55} {verdicts[0]:8} {_minutes(theirs):>10} {verdicts[1]:8} {_minutes(mine):>10} "
            f"{'yes' if agree(theirs, mine) else 'NO':>6} {their_time.wall:9.1f} {my_time.wall:9.1f}")


def time_lines(theirs: Took, mine: Took) -> list[str]:
    """The round's times and their ratio, on the wall clock and in CPU time."""
    def ratio(a: float, b: float) -> str:
        return f"{b / a:.2f}x" if a > 0 else "-"
    return [f"time, official tools (package checker + result summarizer): {theirs.wall:.1f} s wall, "
            f"{theirs.cpu:.1f} s CPU",
            f"time, ours (check + score): {mine.wall:.1f} s wall, {mine.cpu:.1f} s CPU",
            f"ours / official: {ratio(theirs.wall, mine.wall)} wall, {ratio(theirs.cpu, mine.cpu)} CPU"]


def record_round(path: Path, title: str, lines: list[str], argv: list[str], setting: str) -> None:
    """This round's section of the results file, replacing its earlier one; the other rounds' sections stay."""
    text = path.read_text() if path.is_file() else ""
    sections = re.split(r"(?m)^(?=## )", text)
    kept = [part for part in sections[1:] if not part.startswith(f"## {title}\n")]
    mine = "\n".join([f"## {title}", "", *header(path, argv, setting), "", "```", *lines, "```", "", ""])
    ordered = sorted([*kept, mine], key=lambda part: part.splitlines()[0], reverse=True)  # the newest round first
    write_text(path, f"# {path.stem.removesuffix('_results')} results\n\n" + "".join(ordered).rstrip("\n") + "\n")


def extract_bert(git_dir: Path, dest: Path) -> str:
    """The BERT systems of the snapshot's HEAD (their system JSONs and results folders) into `dest`, read object by
    object (a snapshot may lack some large files: those are left out); returns the commit."""
    def git(*args: str, data: bytes | None = None) -> bytes:
        return subprocess.run(["git", f"--git-dir={git_dir}", *args], input=data, capture_output=True,
                              check=True).stdout
    commit = git("rev-parse", "HEAD").decode().strip()
    listed = git("ls-tree", "-r", "--name-only", "HEAD").decode().splitlines()
    results = [p for p in listed if p.split("/")[1:2] == ["results"] and p.split("/")[3:4] == [BENCHMARK]]
    descriptions = {f"{org}/systems/{name}.json" for org, _, name, *_ in (p.split("/") for p in results)}
    wanted = results + sorted(descriptions & set(listed))
    out = io.BytesIO(git("cat-file", "--batch", data="".join(f"HEAD:{p}\n" for p in wanted).encode()))
    for path in wanted:
        header = out.readline().split()
        if header[-1] == b"missing":
            continue
        data = out.read(int(header[2]))
        out.read(1)  # the newline after each object
        (dest / path).parent.mkdir(parents=True, exist_ok=True)
        (dest / path).write_bytes(data)
    return commit


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="?", type=Path, help="folder of published results (ORG/results/...)")
    parser.add_argument("--git-dir", type=Path, help="a training_results snapshot (git directory) to extract")
    parser.add_argument("--ruleset", default=DEFAULT_RULESET, help="the round's ruleset (5.0.0 for v5.0)")
    parser.add_argument("--commit", default="", help="the repository commit of RESULTS (read from --git-dir)")
    parser.add_argument("--repository", default="", help="where the results come from (default: the round's "
                        "mlcommons/training_results repository)")
    add_no_results_flag(parser)
    args = parser.parse_args(argv)
    if (args.results is None) == (args.git_dir is None):
        parser.error("give a RESULTS folder or --git-dir, one of them")
    with tempfile.TemporaryDirectory(prefix="published-results-") as scratch:
        os.environ[tool_cache.ENV] = str(Path(scratch) / "tool-cache")  # this run's own: nothing kept before
        root, commit = args.results, args.commit or "not given"
        if args.git_dir is not None:
            root = Path(scratch) / "published"
            commit = extract_bert(args.git_dir, root)
        systems = published_systems(root)
        if not systems:
            raise SystemExit(f"{root}: no ORG/results/<system>/{BENCHMARK}/ with its ORG/systems/<system>.json")
        lines = [f"{'system':55} {'official':8} {'minutes':>10} {'ours':8} {'minutes':>10} {'agree':>6} "
                 f"{'theirs s':>9} {'ours s':>9}"]
        differing, their_total, my_total = [], Took(), Took()
        for system in systems:
            theirs, mine, their_time, my_time = compare(system, args.ruleset, Path(scratch) / "packages")
            their_total, my_total = their_total + their_time, my_total + my_time
            lines.append(_row(system, theirs, mine, their_time, my_time))
            print(lines[-1], file=sys.stderr, flush=True)  # progress; the whole table is printed at the end
            if not agree(theirs, mine):
                differing.append(f"{system.label}: official: {theirs.why or 'passes'}; ours: {mine.why or 'passes'}")
    count = len(systems) - len(differing)
    lines += ["", *differing, f"agree: {count} of {len(systems)} systems (verdict, and the score to {SCORE_DIGITS} "
                                f"decimals)", *time_lines(their_total, my_total)]
    round_number = ".".join(args.ruleset.split(".")[:2])
    repository = args.repository or f"mlcommons/training_results_v{round_number}"
    setting = (f"; {repository} at commit {commit}, {len(systems)} BERT systems; mlperf-logging "
               f"{version('mlperf-logging')}")
    print("\n".join(lines))
    if not args.no_results:
        record_round(RESULTS, f"Training v{round_number} (ruleset {args.ruleset})", lines, argv, setting)


if __name__ == "__main__":
    main(sys.argv[1:])
