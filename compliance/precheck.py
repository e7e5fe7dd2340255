"""Plain-words checks run before the official tools, for what those tools check badly or crash on.

Each problem is a Finding naming the file and the fix. `blocks` marks input on which the official tools
crash or silently check the wrong thing (a division they do not know, a results folder without its system
JSON, a damaged log): those tools are then not run, and the verdict fails until the input is fixed.
Findings about one log belong to that log's row; the others are about the folder or the package.
"""

from __future__ import annotations

import json
from pathlib import Path

from bert.mllog import STATED_KEYS, stated_values
from bert.mlperf_rules import BENCHMARK, DIVISIONS, TOOL_READ_FIELDS, description_problems
from bert.system import Descriptor
from compliance.checkers import rcp_batch_sizes, rcp_reference
from compliance.files import MAX_JSON_BYTES, UnreadableFile, read_json
from compliance.findings import ERROR, WARNING, Finding
from compliance.judgement import copied_runs, judge_run
from compliance.result_log import ResultLog, number

RUNS = 10  # result logs in a BERT submission


def _malformed(log: ResultLog) -> list[Finding]:
    if not log.malformed:
        return []
    shown = "; ".join(f"line {m.lineno}: {m.problem}" for m in log.malformed[:3])
    more = f" and {len(log.malformed) - 3} more" if len(log.malformed) > 3 else ""
    return [Finding(str(log.path), f"{len(log.malformed)} malformed :::MLLOG line(s) ({shown}{more}); the official "
                    "checkers reject or crash on the whole file. The log is damaged: rerun this run", blocks=True)]


def _division(log: ResultLog, expected: str | None) -> list[Finding]:
    where, logged = str(log.path), log.division
    if logged is None:
        return [Finding(where, "no submission_division line; the compliance checker cannot pick its rules")]
    if logged not in DIVISIONS:
        return [Finding(where, f"submission_division is {logged!r}; it must be 'closed' or 'open' (lower case), "
                        "and the compliance checker crashes on anything else. Fix system.division in the "
                        "descriptor and rerun", blocks=True)]
    if expected is not None and logged != expected:
        return [Finding(where, f"logged division {logged!r}, but the submission is checked as {expected!r}; "
                        "the runs must come from a descriptor of the same division")]
    return []


def _run_fields(log: ResultLog, division: str | None) -> list[Finding]:
    where, found = str(log.path), []
    if log.value("submission_benchmark") != BENCHMARK:
        found.append(Finding(where, f"submission_benchmark is {log.value('submission_benchmark')!r}, not "
                             f"'{BENCHMARK}'", blocks=True))
    sizes = set(map(repr, log.values("global_batch_size")))
    if not sizes:
        found.append(Finding(where, "no global_batch_size line; the RCP checker cannot match the run to a "
                             "reference convergence point"))
    elif len(sizes) > 1 or not isinstance(log.global_batch_size, int):
        found.append(Finding(where, f"global_batch_size logged as {', '.join(sorted(sizes))}; it must be logged "
                             "once, as an integer"))
    seeds = log.values("seed")
    if not seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        problem = "no seed line" if not seeds else f"seed logged as {seeds!r}, not an integer"
        found.append(Finding(where, f"{problem}; the seed checker requires an integer seed per run",
                             ERROR if division == "closed" else WARNING))
    if any("epoch_num" not in e.metadata for e in log.all("eval_accuracy")):
        found.append(Finding(where, "an eval_accuracy line has no epoch_num (samples seen); the RCP checker "
                             "crashes on it", blocks=True))
    return found


def log_findings(log: ResultLog, division: str | None = None) -> list[Finding]:
    """Problems of one log; `division` is the division it must have (None: whatever it logged)."""
    if log.unreadable is not None:
        return [Finding(str(log.path), log.unreadable, blocks=True)]
    if not log.events and not log.malformed:
        return [Finding(str(log.path), "no :::MLLOG lines: not an MLPerf result log (the trainer writes one with "
                        "--log-file)", blocks=True)]
    found = _malformed(log) + _division(log, division)
    return found + _run_fields(log, division or log.division) + judge_run(log)


def _comparable(value: object) -> object:
    """A hashable stand-in for a logged JSON value, equal for equal values (1 and 1.0 alike)."""
    if number(value) is not None:
        return ("number", value)
    return ("json", json.dumps(value, sort_keys=True))


def _by_value(logs: list[ResultLog], value) -> list[tuple[object, list[str]]]:
    """(a value, the names of the logs that have it) for each distinct `value(log)`, in order of appearance."""
    groups: dict[object, tuple[object, list[str]]] = {}
    for log in logs:
        found = value(log)
        groups.setdefault(_comparable(found), (found, []))[1].append(log.path.name)
    return list(groups.values())


def _describe_groups(groups: list[tuple[object, list[str]]]) -> str:
    return "; ".join(f"{value!r} in {', '.join(names)}" for value, names in groups)


def shared_batch_size(logs: list[ResultLog]) -> int | None:
    """The global_batch_size every log states, when they all state the same whole number."""
    sizes = _by_value(logs, lambda log: log.global_batch_size)
    size = sizes[0][0] if len(sizes) == 1 else None
    return size if isinstance(size, int) and not isinstance(size, bool) else None


def _run_count(folder: Path, logs: list[ResultLog]) -> list[Finding]:
    where, found = str(folder), []
    if not logs:
        return [Finding(where, "no result_*.txt logs; the official tools read result_0.txt ... result_9.txt",
                        blocks=True)]
    if len(logs) < RUNS:
        found.append(Finding(where, f"{len(logs)} result logs; a BERT submission needs exactly {RUNS}: add "
                             f"{RUNS - len(logs)} (NEXP={RUNS - len(logs)} ./run_and_time.sh SYSTEM appends them)"))
    elif len(logs) > RUNS:
        found.append(Finding(where, f"{len(logs)} result logs; a BERT submission needs exactly {RUNS}: keep "
                             f"{RUNS} consecutive runs"))
    others = sorted(p.name for p in folder.iterdir() if not p.is_dir() and not p.name.startswith("result_"))
    if others:
        found.append(Finding(where, f"the official tools ignore {', '.join(others)} (not named result_*.txt)",
                             WARNING))
    return found


def _consistency(folder: Path, logs: list[ResultLog], division: str | None) -> list[Finding]:
    where, found = str(folder), []
    divisions = _by_value(logs, lambda log: log.division)
    if len(divisions) > 1:
        found.append(Finding(where, f"runs of different divisions ({_describe_groups(divisions)}); a folder holds "
                             "the runs of one submission"))
    sizes = _by_value(logs, lambda log: log.global_batch_size)
    if len(sizes) > 1:
        found.append(Finding(where, f"mixed batch sizes: global_batch_size {_describe_groups(sizes)}; the RCP "
                             "checker compares one batch size per folder (it reports only 'Could not detect "
                             "global_batch_size'): keep the runs of one configuration"))
    repeated = [(seed, names) for seed, names in _by_value(logs, lambda log: log.seed)
                if seed is not None and len(names) > 1]
    if repeated:
        closed = division == "closed"
        found.append(Finding(where, f"seeds repeated across runs ({_describe_groups(repeated)}); every run needs "
                             "its own seed" + ("" if closed else " (the official seed checker checks only the "
                                               "closed division)"), ERROR if closed else WARNING))
    return found + _agreement(folder, logs)


# Stated values with a finding of their own in _consistency, which says what the official tools make of them.
_OWN_FINDINGS = ("submission_division", "global_batch_size")


def _shown(parts: list[str], most: int = 4) -> str:
    return "; ".join(parts[:most]) + (f"; and {len(parts) - most} more" if len(parts) > most else "")


def _agreement(folder: Path, logs: list[ResultLog]) -> list[Finding]:
    """The runs of one system state the same system and configuration (org, platform, status,
    hyperparameters): the official tools check each log alone and would pass runs of several systems mixed."""
    differing = []
    for key in STATED_KEYS:
        groups = _by_value(logs, lambda log, key=key: log.value(key))
        if key not in _OWN_FINDINGS and len(groups) > 1:
            differing.append(f"{key}: {_describe_groups(groups)}")
    if not differing:
        return []
    return [Finding(str(folder), f"the runs state different systems or configurations ({_shown(differing)}); the "
                    "folder of a submission holds the runs of one descriptor: keep those, and move the others to "
                    "their own system's folder", blocks=True)]


_GIVE_ITS_RUNS = "package the logs of this descriptor's runs, or give the descriptor they were run with"


def descriptor_findings(folder: Path, logs: list[ResultLog], system: Descriptor,
                        fix: str = _GIVE_ITS_RUNS) -> list[Finding]:
    """Every run states what the descriptor of the submission says (system, division, status, org,
    hyperparameters): a package is the descriptor's runs, not some other system's. `fix` ends the message."""
    wrong = []
    for key, expected in stated_values(system).items():
        groups = _by_value([log for log in logs if _comparable(log.value(key)) != _comparable(expected)],
                           lambda log, key=key: log.value(key))
        if groups:
            wrong.append(f"{key} is {expected!r} in the descriptor, but {_describe_groups(groups)}")
    if not wrong:
        return []
    return [Finding(str(folder), f"the logs are not runs of {system.path} ({_shown(wrong)}); {fix}", blocks=True)]


def _rcp_range(folder: Path, batch_size: int, ruleset: str) -> list[Finding]:
    sizes = rcp_batch_sizes(ruleset)
    if batch_size > sizes[-1]:
        return [Finding(str(folder), f"global_batch_size {batch_size} is above the largest reference convergence "
                        f"point ({sizes[-1]}); the RCP checker fails it ('Missing RCP'): use a batch size of at "
                        f"most {sizes[-1]} or have an RCP for {batch_size} accepted first")]
    if batch_size < sizes[0]:
        reference = rcp_reference(batch_size, ruleset)
        return [Finding(str(folder), f"global_batch_size {batch_size} is below the smallest reference convergence "
                        f"point ({sizes[0]}); the RCP checker compares it with {sizes[0]} and fails it unless the "
                        f"olympic mean of samples to converge is at least {reference.min_mean_samples:,.0f}",
                        WARNING)]
    return []


def folder_findings(folder: Path, logs: list[ResultLog], division: str | None, ruleset: str) -> list[Finding]:
    """Problems of the runs of one submission taken together (not those of each log; a log that could not be read
    has its own finding, and says nothing about the others)."""
    found = _run_count(folder, logs)
    logs = [log for log in logs if log.unreadable is None]
    if logs:
        found += _consistency(folder, logs, division) + copied_runs(folder, logs)
        size = shared_batch_size(logs)
        if division == "closed" and size is not None:
            found += _rcp_range(folder, size, ruleset)
    return found


def read_system_json(path: Path) -> tuple[dict | None, list[Finding]]:
    """A package's system description (systems/<name>.json), read once, and its problems as the official tools
    read it: a problem in a field they read as text or as a number, or in the division, makes them crash or
    misread the package (it blocks them); the fields they never read may hold any JSON value."""
    where = str(path)
    try:
        data = read_json(path, MAX_JSON_BYTES)
    except UnreadableFile as e:
        return None, [Finding(where, f"not readable as JSON ({e}); the package checker crashes on it", blocks=True)]
    if not isinstance(data, dict):
        return None, [Finding(where, "not a JSON object of system description fields", blocks=True)]
    found = []
    for field, problem in description_problems(data):
        unknown = "not an MLPerf system description field" in problem
        blocks = field == "division" or (field in data and field in TOOL_READ_FIELDS)
        found.append(Finding(where, f"{field}: {problem}", WARNING if unknown else ERROR, blocks))
    return data, found


def package_findings(org: Path) -> list[Finding]:
    """Problems of the package layout: systems/<name>.json beside results/<name>/bert/, the code folder."""
    missing = [part for part in ("systems", "results") if not (org / part).is_dir()]
    if missing:
        return [Finding(str(org), f"no {' or '.join(m + '/' for m in missing)} folder; a submission holds "
                        "systems/<name>.json and results/<name>/bert/result_0..9.txt", blocks=True)]
    systems = {p.stem for p in (org / "systems").glob("*.json")}
    # Only BERT's systems: the others are another benchmark's (compliance.check names them once, as skipped).
    results = {p.name for p in (org / "results").iterdir() if p.is_dir() and (p / BENCHMARK).is_dir()}
    found = []
    for name in sorted(results - systems):
        found.append(Finding(str(org / "results" / name), f"no systems/{name}.json; the system JSON file name must "
                             f"equal the results folder name (found: {', '.join(sorted(systems)) or 'none'})",
                             blocks=True))
    implementations = org / "benchmarks" / BENCHMARK / "implementations"
    if not implementations.is_dir() or not any(implementations.iterdir()):
        found.append(Finding(str(org), f"no benchmarks/{BENCHMARK}/implementations/<name>/ with the code, README and "
                             "run_and_time.sh; the rules require it (the package checker does not look)", WARNING))
    return found
