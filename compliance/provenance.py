"""Whether a package holds what ran: the code each run logged (bert.provenance) against the code the package
holds, and each system's logs against the descriptor packaged beside that code.

`package` writes the descriptor of the runs into benchmarks/bert/implementations/<impl>/systems/ and the code of
its commit into the same folder; `check` of a package that holds them compares the logs with both, so a log
edited to another target, or the results of two systems swapped, fail there as they fail `package`. A package
without them (every published one) is judged by the logs alone.
"""

from __future__ import annotations

import re
from pathlib import Path

from bert.mllog import CODE_VERSION, TARGET_ACCURACY
from bert.mlperf_rules import BENCHMARK
from bert.provenance import source_digest
from bert.system import Descriptor, load_descriptor
from bert.typed_config import ConfigError
from compliance.files import MAX_LOG_BYTES, UnreadableFile, read_regular_file
from compliance.findings import WARNING, Finding
from compliance.precheck import descriptor_findings
from compliance.result_log import ResultLog
from compliance.software import packaged_description


def implementations(org: Path) -> list[Path]:
    """The implementation folders of a package (benchmarks/bert/implementations/<impl>/)."""
    root = org / "benchmarks" / BENCHMARK / "implementations"
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


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


def _package_code_digest(impl: Path) -> str | None:
    """The source digest of the bert package in an implementation folder, read as any file of a package is
    (compliance.files); None when it holds none or a file of it cannot be read."""
    files = []
    for path in sorted((impl / "bert").rglob("*.py")) if (impl / "bert").is_dir() else []:
        try:
            files.append((path.relative_to(impl).as_posix(), read_regular_file(path, MAX_LOG_BYTES)))
        except UnreadableFile:
            return None
    return source_digest(files) if files else None


def _packaged_descriptor(org: Path, name: str, impls: list[Path]) -> tuple[Descriptor | None, list[Finding]]:
    path = next((impl / "systems" / f"{name}.json" for impl in impls
                 if (impl / "systems" / f"{name}.json").is_file()), None)
    if path is None:
        return None, []
    try:
        return load_descriptor(path), []
    except ConfigError as e:
        return None, [Finding(str(path), f"the descriptor packaged with the code cannot be read ({e}); the logs "
                              "cannot be compared with it")]


def _written_here(runs: list[ResultLog]) -> bool:
    """Whether the logs come from this harness's trainer (they state its target and code; published ones do not)."""
    return any(log.value(CODE_VERSION) is not None or log.value(TARGET_ACCURACY) is not None for log in runs)


def package_provenance(org: Path, descriptions: dict[str, dict], logs: dict[str, list[ResultLog]]) -> list[Finding]:
    """Each system's submitter against the package's folder name; and for the logs of this harness, each log's
    code against the bert package of the implementation folder, and each system's description and logs against
    the descriptor packaged beside that code."""
    found = [Finding(str(org / "systems" / f"{name}.json"), f"submitter {d.get('submitter')!r} is not the "
                     f"organisation the package's folder names ({org.name}); a package is one submitter's",
                     WARNING) for name, d in descriptions.items() if not org_is_submitter(org.name, d.get("submitter"))]
    impls = implementations(org)
    held: dict[str, str] | None = None  # read once, and only for logs that name their code
    for name, runs in logs.items():
        if not _written_here(runs):
            continue
        folder = org / "results" / name / BENCHMARK
        logged = [log for log in runs if log.value(CODE_VERSION) is not None]
        if logged and held is None:
            held = {impl.name: digest for impl in impls if (digest := _package_code_digest(impl)) is not None}
        if logged and held and not any(all(log.value(CODE_VERSION) == digest for log in logged)
                                       for digest in held.values()):
            impl, digest = next(iter(held.items()))
            found += code_findings(folder, logged, digest, f"the bert package of implementations/{impl}")
        system, problems = _packaged_descriptor(org, name, impls)
        found += problems
        if system is None:
            continue
        found += descriptor_findings(folder, runs, system, "the official tools do not compare them, but no run of the "
                                     "descriptor packaged with the code logs this: a log was edited, or the "
                                     "results are another system's")
        if name in descriptions and descriptions[name] != packaged_description(system, runs):
            found.append(Finding(str(org / "systems" / f"{name}.json"), f"differs from the system block of "
                                 f"{system.path}, the descriptor packaged with the code: the system description "
                                 "of a package is its descriptor's; was it swapped or edited?"))
    return found
