"""The rules that read the runs of one folder together (a system's result logs: results/<name>/bert/, or a folder
given to `check`), for what no log shows alone. Each log's own rules are in compliance.log_rules; the rules across
a package's systems in compliance.package_rules.

- Run count. A BERT submission holds RUNS result logs, named result_*.txt (the official tools read no other).
- One configuration. The runs are of one division and one global_batch_size (the RCP checker compares one batch
  size per folder), each of its own seed (an error in the closed division, whose seed checker requires it), and
  they state the same system and configuration (org, platform, status, hyperparameters): the official tools check
  each log alone and would pass runs of several systems mixed. Against a descriptor (`package`, and a package of
  this harness: compliance.provenance), every run states what the descriptor says (descriptor_findings).
- Reference convergence points. In the closed division a global_batch_size above the largest RCP fails the RCP
  checker; one below the smallest is compared with the smallest (a warning says what it must reach).
- Which runs count (olympic scoring). A run with an error never counts and is never the dropped one; a run that
  failed as genuine runs fail (it stopped early, missed the target, or the compliance checker fails it) is
  dropped as the package checker drops it; a second run that does not count fails the folder.
- Copies (compliance.copies). Refused: runs repeating another run's measurements (eval accuracies at their
  epoch_num, each measured at the same time), whatever was edited around them, within a folder when more than
  one run is a copy (one is named in a warning: tinycorp's accepted v4.1 tinybox_green holds result_8.txt, a copy
  of result_3.txt with another seed); across a package's systems always (compliance.package_rules).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from bert.mllog import STATED_KEYS, stated_values
from bert.system import Descriptor
from compliance.checkers import CheckResult, rcp_batch_sizes, rcp_reference
from compliance.copies import WHY_COPIES_FAIL, find_copies, runs_measured
from compliance.findings import ERROR, WARNING, Finding
from compliance.result_log import ResultLog, number

RUNS = 10  # result logs in a BERT submission


@dataclass(frozen=True)
class RunCount:
    """Whether a run counts: None when it does, else why not; `droppable` when olympic scoring may drop it."""

    reason: str | None
    droppable: bool = False


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


def count_run(log: ResultLog, findings: list[Finding], compliance: CheckResult | None = None) -> RunCount:
    """Whether the run of `log` counts, given its findings (compliance.log_rules.log_findings) and
    the official compliance checker's verdict when it ran. A run with an error never counts and is never the
    dropped one; a run that failed as genuine runs fail (it stopped early, missed the target, or the compliance
    checker fails it) is dropped as the package checker drops it."""
    errors = [f.message for f in findings if f.level == ERROR]
    if errors:
        return RunCount(errors[0])
    if not log.converged:
        stop = "no run_stop" if log.status is None else f"run_stop status {log.status!r}"
        return RunCount(f"did not converge: {stop}", droppable=True)
    if compliance is not None and not compliance.passed:
        first = next(iter(compliance.problems()), "")
        return RunCount(f"fails the compliance checker{f': {first}' if first else ''}", droppable=True)
    return RunCount(None)


def dropped_runs(folder: Path, failing: dict[str, RunCount]) -> list[Finding]:
    """Olympic scoring drops one run that does not count, as the package checker does, unless its log has an
    error (then no genuine run wrote it, or the rules fail it whatever the score); a second one fails."""
    refused = [(name, count.reason) for name, count in failing.items() if not count.droppable]
    if refused:
        (name, reason), more = refused[0], len(refused) - 1
        return [Finding(str(folder), f"{name} does not count ({reason}){f', nor do {more} more' if more else ''}; "
                        "olympic scoring drops one run that failed, never a log with an error")]
    if len(failing) == 1:
        (name, count), = failing.items()
        return [Finding(str(folder), f"1 run does not count ({name}: {count.reason}); olympic scoring accepts it as "
                        "the dropped slowest run, as the package checker does", WARNING)]
    if len(failing) > 1:
        return [Finding(str(folder), f"{len(failing)} runs do not count ({', '.join(failing)}: see each log's "
                        "problems); olympic scoring drops at most one")]
    return []


def copied_runs(folder: Path, logs: list[ResultLog]) -> list[Finding]:
    """Copies within a folder: one copy is named in a warning and counted as the official tools count it (a
    published, accepted submission holds one: tinycorp's v4.1 tinybox_green, result_3.txt and result_8.txt, the
    seed alone differing, beside a truncated run that olympic scoring drops); more are refused."""
    copies = find_copies(runs_measured(logs))
    if not copies:
        return []
    shown = "; ".join(f"{c.copy} of {c.original}: {c.evidence}" for c in copies)
    if len(copies) == 1:
        return [Finding(str(folder), f"a copy of one run ({shown}); {WHY_COPIES_FAIL}. One copy is taken as the "
                        "official tools take it (a published, accepted submission holds one), more are refused",
                        WARNING)]
    return [Finding(str(folder), f"copies of one run ({shown}); {WHY_COPIES_FAIL}: keep one of each and rerun the "
                    "others")]
