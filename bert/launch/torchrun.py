"""torchrun (torch.distributed.run) as the launch plans start it, ending on a signal with one line and 128 + the
signal's number instead of a SignalException traceback. torchrun has passed the signal on to the ranks by then,
and their logs say how the run ended.

Where OMP_NUM_THREADS is unset and a node runs several ranks, torchrun gives each rank OMP_NUM_THREADS=1 and
prints a four-line banner saying so; it is set here to that same value first, so the ranks run with the threads
they always had (run.launch.cpu_binding may set their own later) and the console has no banner."""

from __future__ import annotations

import os
import sys

from torch.distributed.elastic.multiprocessing.api import SignalException
from torch.distributed.run import determine_local_world_size, main

# torchrun's own choice for ranks that share a node, when OMP_NUM_THREADS is unset
TORCHRUN_DEFAULT_THREADS = "1"
_NPROC_OPTIONS = ("--nproc-per-node", "--nproc_per_node")


def _ranks_per_node(argv: list[str]) -> int:
    """torchrun's --nproc-per-node among `argv` (its default: 1); 0 for a value torchrun itself will refuse."""
    for i, arg in enumerate(argv):
        name, equals, value = arg.partition("=")
        if name in _NPROC_OPTIONS:
            try:
                return determine_local_world_size(value if equals else argv[i + 1])
            except (ValueError, IndexError):
                return 0
    return 1


def set_default_threads(argv: list[str], environ: dict | os._Environ = os.environ) -> None:
    """OMP_NUM_THREADS as torchrun would set it for the ranks of `argv`, where it is unset."""
    if "OMP_NUM_THREADS" not in environ and _ranks_per_node(argv) > 1:
        environ["OMP_NUM_THREADS"] = TORCHRUN_DEFAULT_THREADS


def run(argv: list[str]) -> int:
    try:
        set_default_threads(argv)
        main(argv)
    except SignalException as e:
        print(f"torchrun: stopped by {e.sigval.name}, which the ranks were passed", file=sys.stderr, flush=True)
        return 128 + int(e.sigval)
    return 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
