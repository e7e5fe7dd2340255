"""The software a run ran on, as its log records it (bert.mllog's software_stack key, before run_start): torch, the
CUDA it was built with, cuDNN, NCCL, the NVIDIA driver, Python, mlperf-logging, and the container image when known.

`running_stack()` reads them from this process (a CPU build has no CUDA, cuDNN, NCCL or driver: None); nothing is
taken from the descriptor, so that `package` can fill the system description's software fields from what ran
(compliance.software). The container: pyxis and enroot name no image to the process, so the image is the one the
launch names (MLPERF_BERT_CONTAINER_IMAGE, from CONT) or, in NVIDIA's PyTorch containers, their release.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
from pathlib import Path

# What the log's software_stack value holds, in this order.
FIELDS = ("torch", "cuda", "cudnn", "nccl", "driver", "python", "mlperf_logging", "container")
CONTAINER_IMAGE_ENV = "MLPERF_BERT_CONTAINER_IMAGE"  # the image the ranks run in, when the launch knows it
NGC_RELEASE_ENV = "NVIDIA_PYTORCH_VERSION"  # set in NVIDIA's PyTorch containers: their release, e.g. "25.04"
_DRIVER_FILE = Path("/proc/driver/nvidia/version")
_DRIVER = re.compile(r"Kernel Module(?: for \S+)?\s+(\d+(?:\.\d+)+)")


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def driver_version(path: Path = _DRIVER_FILE) -> str | None:
    """The NVIDIA kernel driver's version (/proc/driver/nvidia/version), or None without one."""
    try:
        text = path.read_text(errors="replace")[:4096]
    except OSError:
        return None
    match = _DRIVER.search(text)
    return match.group(1) if match else None


def _nccl(torch) -> str | None:
    if not torch.cuda.is_available():
        return None
    try:
        version = torch.cuda.nccl.version()
    except (RuntimeError, AttributeError):
        return None
    return ".".join(map(str, version)) if isinstance(version, tuple) else str(version)


def _cudnn(torch) -> str | None:
    version = torch.backends.cudnn.version() if torch.version.cuda else None
    if not version:
        return None
    major, rest = divmod(int(version), 10000) if version >= 10000 else divmod(int(version), 1000)
    minor, patch = divmod(rest, 100)
    return f"{major}.{minor}.{patch}"


def _container() -> str | None:
    image = os.environ.get(CONTAINER_IMAGE_ENV)
    if image:
        return image
    release = os.environ.get(NGC_RELEASE_ENV)
    return f"NVIDIA PyTorch container {release}" if release else None


def running_stack() -> dict[str, str | None]:
    """This process's software stack (FIELDS; None where it has none)."""
    import torch

    values = (torch.__version__, torch.version.cuda, _cudnn(torch), _nccl(torch), driver_version(),
              platform.python_version(), _version("mlperf-logging"), _container())
    return dict(zip(FIELDS, values, strict=True))
