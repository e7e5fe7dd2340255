"""Whether a package holds what ran: the code each run logged (bert.provenance) against the code the package holds,
and each system's logs against the descriptor packaged beside that code. A package this harness made is whole or
refused.

`package` writes the descriptor of the runs into benchmarks/bert/implementations/<impl>/systems/ and the code of
its commit into the same folder, and every run of this harness logs its target (target_accuracy) and its code
(code_version) before run_start. Each of these is a mark of this harness, and any one of them makes the package
this harness's: a log stating code_version or target_accuracy, a descriptor under implementations/<impl>/systems/,
or the harness's own code in an implementation folder (HARNESS_FILES). Deleting one mark does not turn the others
off: a package with any mark must hold every part, and a missing part is an error naming it (a log without its
target or code line, a system without its packaged descriptor, an implementation folder without the bert package),
as is a part that contradicts the logs (a target edited lower, another system's runs, a results folder renamed to
another system, code that is not what ran). A package with no mark at all (every published one) is judged by the
logs alone; deleting every mark turns a package of this harness into one (the logs then are judged as anyone's,
and their open-division success is taken as stated, in a warning).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from bert.mllog import CODE_VERSION, TARGET_ACCURACY
from bert.mlperf_rules import BENCHMARK
from bert.provenance import source_digest
from bert.system import Descriptor, load_descriptor
from bert.typed_config import ConfigError
from compliance.files import MAX_LOG_BYTES, UnreadableFile, read_regular_file
from compliance.findings import WARNING, Finding
from compliance.folder_rules import descriptor_findings
from compliance.hardware import least_sample_flops, system_machine
from compliance.package_rules import hardware_findings
from compliance.result_log import ResultLog
from compliance.software import packaged_description

# Files that only this harness's code holds, any of which marks an implementation folder as this harness's.
HARNESS_FILES = ("bert/mllog.py", "bert/provenance.py", "compliance/provenance.py")
MAX_CODE_FILES = 5000  # the bert package holds about a hundred; a tree of more is no code of this harness


def implementations(org: Path) -> list[Path]:
    """The implementation folders of a package (benchmarks/bert/implementations/<impl>/)."""
    root = org / "benchmarks" / BENCHMARK / "implementations"
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()) if root.is_dir() else []


def _squeezed(name: object) -> str:
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def org_is_submitter(org: str, submitter: object) -> bool:
    """Whether a package's folder name (ORG) names the submitter of its systems: the same letters and digits, or
    their start ("Clemson" for "Clemson University Research Computing and Data", "krai" for "Krai"), as every
    published BERT package of Training v4.1 and v5.0 does."""
    folder = _squeezed(org)
    return bool(folder) and _squeezed(submitter).startswith(folder)


def folder_name_for(submitter: str) -> str:
    """The ORG folder for a submitter when none is given: the submitter's name as it is. The official result
    summarizer and system description checker link each system to <results repository>/blob/<branch>/<submitter>/
    systems/<system>.json and its code to .../<submitter>/benchmarks, so a folder of any other name makes links
    that do not resolve. Only what a folder name cannot hold is replaced by '_' (path separators, control
    characters; surrounding spaces are dropped, and a name of dots alone is no folder)."""
    name = re.sub(r"[/\\\x00-\x1f\x7f]+", "_", submitter).strip()
    return name if name.strip(".") else "submitter"


def _short(digest: object) -> str:
    return str(digest)[:12]


def code_findings(where: Path, logs: list[ResultLog], digest: str, holder: str,
                  require: bool = False) -> list[Finding]:
    """Each log's code_version against `digest`, the code the package holds (`holder` says which). A log without
    code_version is refused when `require` (it came from no run of this harness's trainer), else passed over."""
    unnamed = [log.path.name for log in logs if log.value(CODE_VERSION) is None]
    ran: dict[tuple[str, str], list[str]] = {}
    for log in logs:
        logged = log.first(CODE_VERSION)
        if logged is not None and logged.value != digest:
            ran.setdefault((_short(logged.value), str(logged.metadata.get("commit"))[:12]), []).append(log.path.name)
    found = []
    if require and unnamed:
        found.append(Finding(str(where), f"{', '.join(unnamed)}: no {CODE_VERSION} line, so nothing ties the run to "
                             "the packaged code (a run of this harness's trainer logs the code it runs before "
                             "run_start); rerun with this harness"))
    for (code, commit), names in ran.items():
        found.append(Finding(str(where), f"{', '.join(names)} ran code {code} (commit {commit}), but the package "
                             f"holds {holder} (code {_short(digest)}): the packaged code is not what ran. Package "
                             "from the commit the runs ran from, or rerun with this one"))
    return found


def _code_files(impl: Path) -> list[Path] | None:
    """The .py files of the bert package of an implementation folder, without following links out of it; None
    when it holds none or a tree no code of this harness is."""
    found = []
    for folder, _, files in os.walk(impl / "bert"):  # os.walk follows no link to a folder
        found += [Path(folder) / name for name in files if name.endswith(".py")]
        if len(found) > MAX_CODE_FILES:
            return None
    return sorted(found) or None


def _package_code_digest(impl: Path) -> str | None:
    """The source digest of the bert package in an implementation folder, read as any file of a package is
    (compliance.files); None when it holds none or a file of it cannot be read."""
    files = []
    for path in _code_files(impl) or []:
        try:
            files.append((path.relative_to(impl).as_posix(), read_regular_file(path, MAX_LOG_BYTES)))
        except UnreadableFile:
            return None
    return source_digest(files) if files else None


def harness_marks(impls: list[Path], logs: dict[str, list[ResultLog]]) -> list[str]:
    """The marks of this harness the package holds (see the module), described for a message."""
    marks = []
    for key in (CODE_VERSION, TARGET_ACCURACY):
        stating = next((f"{name}/{log.path.name}" for name, runs in logs.items() for log in runs
                        if log.value(key) is not None), None)
        if stating is not None:
            marks.append(f"{stating} logs {key}")
    for impl in impls:
        where = f"benchmarks/{BENCHMARK}/implementations/{impl.name}"
        if any((impl / "systems").glob("*.json")):
            marks.append(f"{where}/systems/ holds a descriptor")
        held = [name for name in HARNESS_FILES if (impl / name).is_file()]
        if held:
            marks.append(f"{where} holds this harness's {held[0]}")
    return marks


def _packaged_descriptor(name: str, impls: list[Path]) -> tuple[Descriptor | None, Path | None, list[Finding]]:
    """(the descriptor packaged for system `name`, its path, what is wrong with it)."""
    path = next((impl / "systems" / f"{name}.json" for impl in impls
                 if (impl / "systems" / f"{name}.json").is_file()), None)
    if path is None:
        return None, None, []
    try:
        return load_descriptor(path), path, []
    except (ConfigError, ValueError, RecursionError, OSError) as e:  # a hostile file: a traceback is no verdict
        return None, path, [Finding(str(path), f"the descriptor packaged with the code cannot be read ({e}); the "
                                    "logs cannot be compared with it")]


def _missing_parts(org: Path, name: str, runs: list[ResultLog], impls: list[Path], marks: list[str]) -> list[Finding]:
    """The parts of a package of this harness that system `name` lacks."""
    why = f"a package this harness made holds it, and this one is this harness's ({'; '.join(marks[:2])})"
    folder, found = org / "results" / name / BENCHMARK, []
    for key in (TARGET_ACCURACY, CODE_VERSION):
        lacking = [log.path.name for log in runs if log.value(key) is None]
        if lacking:
            found.append(Finding(str(folder), f"{', '.join(lacking)}: no {key} line, which every run of this "
                                 f"harness logs before run_start: {why}. Was it deleted?"))
    descriptors = sorted(p.stem for impl in impls for p in (impl / "systems").glob("*.json"))
    if not any((impl / "systems" / f"{name}.json").is_file() for impl in impls):
        found.append(Finding(str(folder), f"no descriptor of system {name} beside the code (benchmarks/{BENCHMARK}/"
                             f"implementations/<impl>/systems/{name}.json; found: {', '.join(descriptors) or 'none'}): "
                             f"{why}. Was it deleted, or the results folder and system JSON renamed?"))
    return found


def _code_problems(org: Path, impls: list[Path], logs: dict[str, list[ResultLog]], marks: list[str]) -> list[Finding]:
    """The packaged bert code against the code each run logged."""
    held = {impl.name: digest for impl in impls if (digest := _package_code_digest(impl)) is not None}
    if not held:
        return [Finding(str(org / "benchmarks" / BENCHMARK / "implementations"), "no implementation folder holds "
                        "the bert package (implementations/<impl>/bert/) that the runs ran: a package this harness "
                        f"made holds it, and this one is this harness's ({'; '.join(marks[:2])}). Was it deleted?")]
    found = []
    for name, runs in logs.items():
        logged = [log for log in runs if log.value(CODE_VERSION) is not None]
        if logged and not any(all(log.value(CODE_VERSION) == digest for log in logged) for digest in held.values()):
            impl, digest = next(iter(held.items()))
            found += code_findings(org / "results" / name / BENCHMARK, logged, digest,
                                   f"the bert package of implementations/{impl}")
    return found


def _against_descriptor(org: Path, name: str, runs: list[ResultLog], system: Descriptor,
                        description: dict | None) -> list[Finding]:
    """The logs and the system JSON of system `name` against the descriptor packaged with the code."""
    folder = org / "results" / name / BENCHMARK
    found = descriptor_findings(folder, runs, system, "the official tools do not compare them, but no run of the "
                                "descriptor packaged with the code logs this: a log was edited, or the results are "
                                "another system's")
    if description is not None and description != packaged_description(system, runs):
        found.append(Finding(str(org / "systems" / f"{name}.json"), f"differs from the system block of "
                             f"{system.path}, the descriptor packaged with the code: the system description of a "
                             "package is its descriptor's; was it swapped or edited?"))
    machine = system_machine(description or system.description, f"systems/{name}.json")
    open_runs = [log for log in runs if log.division != "closed"]  # closed: BERT-large, judged by package_rules
    if machine is not None and open_runs:
        flops = least_sample_flops(system.model_config(), system.run.max_seq_length, system.run.max_predictions_per_seq)
        found += hardware_findings(folder, open_runs, machine, flops, f"its descriptor's {system.run.model} model")
    return found


def package_provenance(org: Path, descriptions: dict[str, dict], logs: dict[str, list[ResultLog]]) -> list[Finding]:
    """Each system's submitter against the package's folder name; and for a package of this harness (any of its
    marks), every part present and each agreeing with the logs (see the module)."""
    found = [Finding(str(org / "systems" / f"{name}.json"), f"submitter {d.get('submitter')!r} is not the "
                     f"organisation the package's folder names ({org.name}); a package is one submitter's",
                     WARNING) for name, d in descriptions.items() if not org_is_submitter(org.name, d.get("submitter"))]
    impls = implementations(org)
    logs = {name: [log for log in runs if log.unreadable is None] for name, runs in logs.items()}  # said elsewhere
    marks = harness_marks(impls, logs)
    if not marks:
        return found
    found += _code_problems(org, impls, logs, marks)
    for name, runs in logs.items():
        found += _missing_parts(org, name, runs, impls, marks)
        system, _, problems = _packaged_descriptor(name, impls)
        found += problems
        if system is not None:
            found += _against_descriptor(org, name, runs, system, descriptions.get(name))
    return found
