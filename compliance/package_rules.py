"""The rules that read a whole package (an ORG folder: systems/<name>.json beside results/<name>/bert/), for what
no folder shows alone. One log's rules are in compliance.log_rules, a folder's runs' in compliance.folder_rules;
whether a package this harness made holds what ran, in compliance.provenance.

- Layout (layout_findings). systems/ and results/, each BERT results folder with its system JSON of the same name
  (the official tools crash or check the wrong thing without them: they are not run), and the implementation
  folder the rules require (a warning: the package checker does not look).
- System JSON (read_system_json), read once, as the official tools read it: a field they read as text or as a
  number that holds something else, or a division they do not know, blocks them; the fields they never read may
  hold any JSON value; a field that is no MLPerf field is a warning.
- Copies across systems (compliance.copies): the same runs filed under two systems are refused, always (within a
  folder, compliance.folder_rules takes one copy as the official tools take it).
- Hardware (package_judgement, platform_findings). Refused: logs whose stated platform contradicts their
  system's node or accelerator count or names another system of the package, and logs whose printed system
  (a :::SYSJSON line, which NVIDIA's scripts print from the system JSON) names another node count or
  accelerator model. A free-text platform naming another accelerator model is a warning: genuine logs carry
  copied platform text (NVIDIA's accepted v2.0 2xa30 package logs "1xNVIDIA DGX A100" on its A30 system).
- Time taken. Refused: a closed-division run faster than the hardware of its system JSON trains BERT-large
  (compliance.hardware; a lone log is bounded by log rule 7, against the largest machine its global batch can use).
"""

from __future__ import annotations

import re
from pathlib import Path

from bert.mlperf_rules import BENCHMARK, TOOL_READ_FIELDS, description_problems
from compliance.copies import WHY_COPIES_FAIL, find_copies, runs_measured
from compliance.files import MAX_JSON_BYTES, UnreadableFile, read_json
from compliance.findings import ERROR, WARNING, Finding
from compliance.hardware import Machine, accelerator_model, least_sample_flops, system_machine, too_fast, whole
from compliance.log_rules import faster_than_any_machine
from compliance.result_log import ResultLog


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


def layout_findings(org: Path) -> list[Finding]:
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


_COUNT_PREFIX = re.compile(r"^\s*(\d+)\s*x", re.IGNORECASE)  # "2xNVIDIA GB200": nodes (or accelerators) x platform


def _names(folder: str, description: dict) -> set[str]:
    names = {folder, str(description.get("system_name", ""))}
    return {n.strip().lower() for n in names | {_COUNT_PREFIX.sub("", n, count=1) for n in names} if n.strip()}


def _other_model(stated: object, description: dict) -> str | None:
    """The accelerator model `stated` names when it is not the one the system description names."""
    said, own = accelerator_model(str(stated)), accelerator_model(str(description.get("accelerator_model_name", "")))
    return said if said is not None and own is not None and said != own else None


def _platform_problem(platform: str, folder: str, descriptions: dict[str, dict]) -> tuple[str, str] | None:
    """(what the stated platform contradicts, the finding's level), or None."""
    description = descriptions[folder]
    prefix = _COUNT_PREFIX.match(platform)
    nodes, per_node = whole(description.get("number_of_nodes")), whole(description.get("accelerators_per_node"))
    if prefix and nodes is not None and per_node is not None and int(prefix[1]) not in (nodes, nodes * per_node):
        return (f"its count ({prefix[1]}) is neither the {nodes} node(s) nor the {nodes * per_node} accelerators of "
                f"systems/{folder}.json"), ERROR
    said = {platform.strip().lower(), _COUNT_PREFIX.sub("", platform, count=1).strip().lower()}
    others = [name for name, d in descriptions.items() if name != folder and said & _names(name, d)]
    if others and not said & _names(folder, description):
        return f"it names the package's other system {others[0]}", ERROR
    model = _other_model(platform, description)
    if model is not None:  # free text, copied between systems in genuine logs: see the module
        return (f"it names {model} accelerators, and systems/{folder}.json has "
                f"{description.get('accelerator_model_name')!r}"), WARNING
    return None


def platform_findings(org: Path, descriptions: dict[str, dict], logs: dict[str, list[ResultLog]]) -> list[Finding]:
    """Hardware, the stated platform: the logs of results/<name>/ are runs of systems/<name>.json, so the platform a
    log states ("2xNVIDIA GB200", free text, often a placeholder) must not contradict that system's node count or
    accelerator model, nor name another system of the package. The official tools compare none of them, so results
    folders swapped between two systems pass them."""
    found = []
    for folder, runs in logs.items():
        if folder not in descriptions:
            continue
        platforms = {str(v) for log in runs for v in log.values("submission_platform")}
        for platform in sorted(platforms):
            problem = _platform_problem(platform, folder, descriptions)
            if problem:
                found.append(Finding(str(org / "results" / folder), f"the logs state submission_platform "
                                     f"{platform!r}, but {problem[0]}: are these another system's results? The "
                                     "official tools do not compare them; results/<name>/ must hold the runs of "
                                     "systems/<name>.json", problem[1]))
    return found


def _stated_system_problem(stated: dict, folder: str, description: dict) -> str | None:
    """What a :::SYSJSON object a log prints says against the system's description, or None."""
    for field in ("number_of_nodes", "accelerators_per_node"):
        said, own = whole(stated.get(field)), whole(description.get(field))
        if said is not None and own is not None and said != own:
            return f"{field} {said}, and systems/{folder}.json has {own}"
    model = _other_model(stated.get("accelerator_model_name", ""), description)
    if model is not None:
        return f"{model} accelerators, and systems/{folder}.json has {description.get('accelerator_model_name')!r}"
    return None


def _stated_systems(org: Path, folder: str, runs: list[ResultLog], description: dict) -> list[Finding]:
    """Hardware, the printed system: what the run saw of its machine against the system it is filed under."""
    for log in runs:
        for stated in log.stated_systems:
            problem = _stated_system_problem(stated, folder, description)
            if problem:
                return [Finding(str(org / "results" / folder), f"{log.path.name} prints the system it ran on "
                                f"(:::SYSJSON): {problem}. These are another system's results; results/<name>/ must "
                                "hold the runs of systems/<name>.json")]
    return []


def hardware_findings(folder: Path, runs: list[ResultLog], machine: Machine, sample_flops: float,
                      model: str) -> list[Finding]:
    """Time taken in a package: each run no faster than `machine` trains `model` (compliance.hardware)."""
    found = []
    for log in runs:
        problem = too_fast(log, machine, sample_flops, model)
        if problem is not None and faster_than_any_machine(log) is None:  # else log_rules.judge_run has said it
            found.append(Finding(str(folder / log.path.name), problem))
    return found


def package_judgement(org: Path, descriptions: dict[str, dict], logs: dict[str, list[ResultLog]]) -> list[Finding]:
    """The rules that read the logs of a whole package: copies across its systems (the same runs filed under two
    systems), the machine each system's logs print against the one its system JSON describes (hardware), and each
    closed-division run against the least time its system's hardware allows (time taken)."""
    found = []
    logs = {name: [log for log in runs if log.unreadable is None] for name, runs in logs.items()}
    measured = [m for name, runs in logs.items()
                for m in runs_measured(runs, lambda log, name=name: f"{name}/bert/{log.path.name}")]
    for c in find_copies(measured):
        if c.copy.split("/")[0] != c.original.split("/")[0]:
            found.append(Finding(str(org / "results"), f"results/{c.copy} is a copy of results/{c.original} "
                                 f"({c.evidence}); {WHY_COPIES_FAIL}, and one run is one system's"))
    for name, runs in logs.items():
        description = descriptions.get(name)
        if description is None:
            continue
        found += _stated_systems(org, name, runs, description)
        machine = system_machine(description, f"systems/{name}.json")
        closed = [log for log in runs if log.division == "closed"]
        if machine is not None and closed:
            found += hardware_findings(org / "results" / name / "bert", closed, machine, least_sample_flops(),
                                       "BERT-large")
    return found
