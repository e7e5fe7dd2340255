"""Descriptor variants the tests share."""

from __future__ import annotations

from collections.abc import Mapping

from bert.system import System


def cpu_variant(system: System, run: Mapping[str, object]) -> System:
    """A variant of the CPU descriptor `system` with the `run` changes (System.variant). In fp16, which a
    descriptor keeps for CUDA, it is the CUDA run rehearsed on the CPU (System.cpu_rehearsal): torch runs fp16
    autocast and loss scaling there too."""
    if run.get("precision") == "fp16":
        return system.variant({**run, "device": "cuda"}).cpu_rehearsal()
    return system.variant(run)
