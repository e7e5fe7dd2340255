"""The system description's software fields from what the runs logged: `package` writes `framework` and
`other_software_stack` from the software_stack each run logged (bert.software_stack), not from the descriptor's
words, and refuses in one line runs that ran on different software, or a descriptor whose stated versions the
runs contradict (a "PyTorch 2.11.0" whose runs ran torch 2.13.0).

What the descriptor states is kept beside the logged versions (other_software_stack's "stated"), so that what
no log can know (apex, Transformer Engine, the operating system's packages) stays said. Logs that record no
software_stack (another harness's, or older) leave the descriptor's fields as they are.
"""

from __future__ import annotations

import re

from bert.mllog import SOFTWARE_STACK
from bert.software_stack import FIELDS
from bert.system import Descriptor
from compliance.errors import InputError
from compliance.result_log import ResultLog

# How a descriptor's text names each logged component, and the version after it.
_NAMED = {
    "torch": r"(?:PyTorch|torch)", "cuda": r"CUDA", "cudnn": r"cuDNN", "nccl": r"NCCL",
    "driver": r"(?:NVIDIA )?driver", "python": r"Python", "mlperf_logging": r"mlperf[-_]logging",
}
_VERSION = r"\s*v?(\d+(?:\.\d+)*)"
# Keys of an other_software_stack object (as published: {"cuda_version": "12.4", ...}) -> the component, first match.
_KEYS = (("cudnn", "cudnn"), ("nccl", "nccl"), ("driver", "driver"), ("cuda", "cuda"), ("torch", "torch"),
         ("python", "python"), ("mlperf", "mlperf_logging"))
_LABELS = {"torch": "torch", "cuda": "CUDA", "cudnn": "cuDNN", "nccl": "NCCL", "driver": "driver",
           "python": "Python", "mlperf_logging": "mlperf-logging", "container": "container"}


class SoftwareContradiction(InputError):
    """The runs' software contradicts itself or the descriptor; nothing is written."""


def _numbers(version: str) -> list[str]:
    return re.findall(r"\d+", version.split("+")[0])


def _agrees(stated: str, logged: str | None) -> bool:
    """A stated version agrees with a logged one when it is its prefix, part by part ("12" with "12.4.1")."""
    if logged is None:
        return False
    said, ran = _numbers(stated), _numbers(logged)
    return said == ran[:len(said)]


def stated_versions(description: dict) -> list[tuple[str, str, str]]:
    """(component, version, where) for every version the description's framework and other_software_stack state."""
    found = []
    for field in ("framework", "other_software_stack"):
        value = description.get(field)
        if isinstance(value, str):
            for component, name in _NAMED.items():
                found += [(component, match, field) for match in re.findall(rf"\b{name}{_VERSION}", value, re.I)]
        elif isinstance(value, dict):
            for key, item in value.items():
                component = next((c for word, c in _KEYS if word in str(key).lower()), None)
                match = re.match(r"\s*v?(\d+(?:\.\d+)*)", str(item)) if component else None
                if match:
                    found.append((component, match.group(1), f"{field}.{key}"))
    return found


def _stack_text(stack: dict) -> str:
    return ", ".join(f"{_LABELS[k]} {v}" for k, v in stack.items() if k in _LABELS and v is not None)


def logged_stack(logs: list[ResultLog]) -> dict | None:
    """The software every run logged, the same for all (None when no run logged one); SoftwareContradiction names
    two runs that differ."""
    stacks = [(log, log.value(SOFTWARE_STACK)) for log in logs]
    stated = [(log, stack) for log, stack in stacks if isinstance(stack, dict)]
    if not stated:
        return None
    first_log, first = stated[0]
    for log, stack in stated[1:]:
        if stack != first:
            component = next(k for k in FIELDS if stack.get(k) != first.get(k))
            raise SoftwareContradiction(
                f"{log.path.name} ran {_LABELS[component]} {stack.get(component)}, {first_log.path.name} "
                f"{_LABELS[component]} {first.get(component)}: the runs of one submission run on one software stack; "
                "run them again on one")
    missing = [log.path.name for log, stack in stacks if not isinstance(stack, dict)]
    if missing:
        raise SoftwareContradiction(f"{missing[0]} logged no {SOFTWARE_STACK}, {first_log.path.name} did: these are "
                                    "not the runs of one harness version; package runs of one")
    return first


def software_description(system: Descriptor, logs: list[ResultLog]) -> dict:
    """The system description of `system` with framework and other_software_stack from what `logs` ran; as it is
    when they logged nothing. SoftwareContradiction (one line) for runs that differ, or a stated version they
    contradict."""
    description = dict(system.description)
    stack = logged_stack(logs)
    if stack is None:
        return description
    for component, version, field in stated_versions(description):
        if not _agrees(version, stack.get(component)):
            ran = stack.get(component)
            raise SoftwareContradiction(
                f"{system.path}: system.{field} says {_LABELS[component]} {version}, but the runs ran "
                f"{f'{_LABELS[component]} {ran}' if ran else f'without {_LABELS[component]}'} ({_stack_text(stack)}): "
                "correct the descriptor (package fills these fields from the logs), or package runs made there")
    cuda = f" (CUDA {stack['cuda']})" if stack.get("cuda") else " (CPU)"
    description["framework"] = f"PyTorch {stack['torch']}{cuda}"
    logged = {f"{key}_version" if key not in ("container",) else "container_image": value
              for key, value in stack.items() if key != "torch" and value is not None}
    stated = system.description.get("other_software_stack")
    description["other_software_stack"] = {**logged, **({"stated": stated} if stated else {})}
    return description



def packaged_description(system: Descriptor, logs: list[ResultLog]) -> dict:
    """The system description `package` writes for `system` and its runs `logs` (software_description), or the
    descriptor's own where the runs contradict it (such a package was never written by `package`)."""
    try:
        return software_description(system, logs)
    except SoftwareContradiction:
        return dict(system.description)
