"""What the official tools get: a tree of copies of exactly what the harness read and judged, never the submission.

Every result log `check` reads is read once (compliance.files), written here as read, and parsed from that copy,
so the tools see the very bytes that were judged, whatever happens to the submission meanwhile. A system's
copies reach the tools only when its judgement lets them (compliance.check): the `result_*.txt` of its `bert/`
folder and its system JSON, as a package of that one system (`ORG/systems/<name>.json`,
`ORG/results/<name>/bert/`), which is all the package checker and the result summarizer read for BERT. Nothing
else of a submission is handed over: not another benchmark's folder (the package checker would run its checks on
those logs too), not a `scaling.json` (the package checker writes its own) nor a `package_checker_params` (an RCP
or seed-checker bypass is the review committee's to grant, not the submitter's), nor power logs.

No value of a log may become a path. The compliance checker loads the rules file named after a log's
`submission_division` (`{division}_common.yaml`) and then after its `submission_benchmark`
(`closed_{benchmark}.yaml`), and runs the code those files hold; the RCP checker reads the reference file named
after `submission_benchmark`. A log whose lines give those keys any value but the ones BERT's rules know is
refused here (path_value_findings), whatever else is said of it, and never handed over.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

from bert.mlperf_rules import BENCHMARK, DIVISIONS
from compliance.files import MAX_LOG_BYTES, UnreadableFile, read_regular_file
from compliance.findings import Finding
from compliance.result_log import ResultLog, read_result_log

# The log keys whose values the official tools make file names of, and the values BERT's rules know.
PATH_KEYS = {"submission_division": DIVISIONS, "submission_benchmark": (BENCHMARK,)}


def read_staged(source: Path, copy: Path) -> ResultLog:
    """The log at `source`, read once: its bytes written to `copy` and parsed from there (the ResultLog names
    `source`). A file that cannot be read (compliance.files) is not copied; its ResultLog says why."""
    try:
        data = read_regular_file(source, MAX_LOG_BYTES)
    except UnreadableFile as e:
        return ResultLog(path=source, events=(), malformed=(), unreadable=str(e))
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_bytes(data)
    return dataclasses.replace(read_result_log(copy), path=source)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def path_value_findings(log: ResultLog) -> list[Finding]:
    """A blocking finding for a log that gives a key the tools make a file name of a value BERT's rules do not
    know, on any of its lines (the tools read the first; a reader that saw another line first must not differ)."""
    for key, allowed in PATH_KEYS.items():
        for event in log.all(key):
            if not (isinstance(event.value, str) and event.value in allowed):
                return [Finding(str(log.path), f"line {event.lineno}: {key} is {_shown(event.value)}; the official "
                                f"tools name a file they load after this value, so the log is not handed to them: "
                                f"{key} must be {' or '.join(map(repr, allowed))}", blocks=True)]
    return []


class Staging:
    """The tree of copies under `root` (a scratch folder the caller owns and removes)."""

    def __init__(self, root: Path):
        self.root = root

    def system_package(self, index: int, org: Path, system: str) -> Path:
        """The ORG folder of the package of one system (`index` tells the packages of a round apart)."""
        return self.root / f"p{index}" / system / org.name

    def log_copy(self, package: Path, system: str, log: Path) -> Path:
        return package / "results" / system / BENCHMARK / log.name

    def folder(self, index: int) -> Path:
        """The copy of a folder of logs (or of one log's folder) checked alone."""
        return self.root / f"f{index}"

    def write_system_json(self, package: Path, system: str, description: dict) -> None:
        """The system JSON as the harness read it: its parsed fields (compliance.package_rules.read_system_json)."""
        path = package / "systems" / f"{system}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(description, indent=1))

    def discard(self, package: Path) -> None:
        """A system's copies that are not to reach the tools."""
        shutil.rmtree(package.parent, ignore_errors=True)
