"""`mlperf-bert package`: a submission tree from a descriptor and its result logs, then `check` on it.

    OUT/ORG/systems/<name>.json                       the descriptor's MLPerf system description, its software
                                                      fields from what the runs logged (compliance.software)
    OUT/ORG/results/<name>/bert/result_0..9.txt       the logs, renumbered in run order
    OUT/ORG/benchmarks/bert/implementations/<impl>/   `git archive HEAD` of this harness (code, README,
                                                      run_and_time.sh) and systems/<name>.json, the descriptor

<name> is the descriptor's file stem. Before anything is written the logs are judged as `check` judges them, and
the package's provenance is checked: ORG is the descriptor's submitter, and every run logged the code that HEAD
holds (bert.provenance), since the implementation folder is HEAD's. The tree is written into a temporary
sibling folder and renamed into place at the end, so OUT/ORG is never half-written; an existing OUT/ORG is
replaced only with `force`.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bert.descriptor_files import descriptor_files
from bert.mllog import CODE_VERSION
from bert.mlperf_rules import BENCHMARK, DEFAULT_RULESET
from bert.provenance import running_code, source_digest, tar_files
from bert.system import Descriptor, load_descriptor
from bert.typed_config import ConfigError
from compliance.check import CheckReport, Progress, check
from compliance.checkers import require_ruleset
from compliance.errors import InputError
from compliance.files import MAX_LOG_BYTES, read_regular_file
from compliance.findings import ERROR, Finding
from compliance.folder_rules import descriptor_findings, dropped_runs
from compliance.output_folder import build_in_place
from compliance.provenance import code_findings, folder_name_for, org_is_submitter
from compliance.result_log import ResultLog, result_logs_in
from compliance.software import software_description
from compliance.staging import read_staged
from compliance.verdict import judge_folder

HARNESS_ROOT = Path(__file__).resolve().parent.parent


class PackageError(InputError):
    """The package cannot be built; nothing was written."""


@dataclass(frozen=True)
class PackageResult:
    org_dir: Path
    commit: str
    uncommitted_changes: bool  # the checkout differs from the commit the implementation folder holds
    check: CheckReport


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(HARNESS_ROOT), *args], capture_output=True, timeout=120)


def _head() -> tuple[str, bool, bytes]:
    """(HEAD's commit, whether tracked files differ from it, `git archive HEAD`): the code the package holds."""
    head = _git("rev-parse", "HEAD")
    if head.returncode != 0:
        raise PackageError(f"{HARNESS_ROOT} is not a git checkout; the implementation folder is made with "
                           "`git archive HEAD` of the harness, so package from a clone of it")
    archive = _git("archive", "--format=tar", "HEAD")
    if archive.returncode != 0:
        raise PackageError(f"git archive HEAD failed in {HARNESS_ROOT}: {archive.stderr.decode().strip()}")
    dirty = _git("status", "--porcelain", "--untracked-files=no").stdout.strip() != b""
    return head.stdout.decode().strip(), dirty, archive.stdout


def _extract(archive: bytes, dest: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(dest, filter="data")
        else:  # Python < 3.11.4: the archive comes from our own checkout
            tar.extractall(dest)


def _org_findings(org: str, submitter: str, descriptor: Path) -> list[Finding]:
    """The package is its submitter's: ORG is the system.submitter of the descriptor at `descriptor` (whose name
    the logs state too)."""
    if org_is_submitter(org, submitter):
        return []
    return [Finding(str(descriptor), f"--org {org}, but the descriptor's system.submitter is {submitter!r} (and its "
                    f"runs log submission_org {submitter!r}): a package is its submitter's; leave --org out (the "
                    f"folder is then {folder_name_for(submitter)}), or package runs of a descriptor of {org}")]


def _provenance(logs_dir: Path, logs: list[ResultLog], commit: str, archive: bytes) -> list[Finding]:
    """The package holds the code that ran: each run's logged code is HEAD's."""
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        held = source_digest(tar_files(tar))
    problems = code_findings(logs_dir, logs, held, f"commit {commit[:12]}", require=True)
    if problems and any(log.value(CODE_VERSION) == running_code().digest for log in logs):
        problems.append(Finding(str(logs_dir), "the runs ran this checkout's bert/ as it is now, with changes that "
                                f"commit {commit[:12]} lacks: commit them (git status bert/) and package again"))
    return problems


def _refusals(system: Descriptor, logs_dir: Path, logs: list[ResultLog], ruleset: str) -> list[Finding]:
    """The errors that would make the package fail its check (check's own judgement of the folder, before any tool
    runs, and the descriptor's word on the logs): refused before writing anything."""
    judged = judge_folder(logs_dir, logs, system.division, ruleset)
    found = [*judged.findings, *descriptor_findings(logs_dir, logs, system),
             *(f for own in judged.log_findings for f in own),
             *dropped_runs(logs_dir, judged.counts_before_tools())]
    # A log's own errors count through dropped_runs, which judges the runs together.
    return [f for f in found if f.level == ERROR and (f.blocks or Path(f.where) == logs_dir)]


def _write_tree(root: Path, system: Descriptor, description: dict, logs: list[Path], impl: str,
                archive: bytes) -> None:
    (root / "systems").mkdir()
    (root / "systems" / f"{system.name}.json").write_text(json.dumps(description, indent=2) + "\n")
    results = root / "results" / system.name / BENCHMARK
    results.mkdir(parents=True)
    for index, log in enumerate(logs):  # the copies that were judged
        (results / f"result_{index}.txt").write_bytes(read_regular_file(log, MAX_LOG_BYTES))
    code = root / "benchmarks" / BENCHMARK / "implementations" / impl
    code.mkdir(parents=True)
    _extract(archive, code)
    (code / "systems").mkdir(exist_ok=True)
    for source in descriptor_files(system.path):  # its bases too: the copy must resolve as the run's did
        shutil.copyfile(source, code / "systems" / source.name)


def _check_names(org: str, impl: str) -> None:
    for option, name in (("--org", org), ("--impl", impl)):
        if not name or name in (".", "..") or "/" in name or "\\" in name:
            raise PackageError(f"{option} {name!r}: must be a plain folder name")


def build_package(system: str | Path, logs_dir: str | Path, org: str | None, out: str | Path, impl: str = "pytorch",
                  force: bool = False, ruleset: str = DEFAULT_RULESET,
                  progress: Progress | None = None) -> PackageResult:
    """Builds OUT/ORG from the descriptor and its logs (ORG: the descriptor's submitter when None), then checks it.
    Raises PackageError, writing nothing, for input the check would reject in plain words."""
    ruleset, logs_dir, out = require_ruleset(ruleset), Path(logs_dir), Path(out)
    try:
        descriptor = load_descriptor(system)
    except ConfigError as e:
        raise PackageError(str(e)) from None
    org = org or folder_name_for(descriptor.description["submitter"])
    _check_names(org, impl)
    if not logs_dir.is_dir():
        raise PackageError(f"{logs_dir}: no such folder of result logs")
    commit, dirty, archive = _head()
    with tempfile.TemporaryDirectory(prefix="mlperf-package-") as scratch:
        # Each log read once, into a copy: what is judged is what is packaged, whatever happens to the logs meanwhile.
        logs = [read_staged(p, Path(scratch) / p.name) for p in result_logs_in(logs_dir)]
        refusals = (_refusals(descriptor, logs_dir, logs, ruleset)
                    + _org_findings(org, descriptor.description["submitter"], descriptor.path)
                    + _provenance(logs_dir, logs, commit, archive))
        if refusals:
            raise PackageError("not packaged, nothing written:\n" + "\n".join(f"  {f}" for f in refusals))
        target = out / org
        if target.exists() and not force:
            raise PackageError(f"{target} already exists; pass --force to replace it")
        description = software_description(descriptor, logs)  # framework, other_software_stack: what the runs ran
        copies = [Path(scratch) / log.path.name for log in logs]
        build_in_place(target, lambda staging: _write_tree(staging, descriptor, description, copies, impl, archive))
    return PackageResult(target, commit, dirty, check(target, ruleset, descriptor.division, progress))
