"""torchrun (torch.distributed.run) as the launch plans start it, ending on a signal with one line and 128 + the
signal's number instead of a SignalException traceback. torchrun has passed the signal on to the ranks by then,
and their logs say how the run ended."""

from __future__ import annotations

import sys

from torch.distributed.elastic.multiprocessing.api import SignalException
from torch.distributed.run import main


def run(argv: list[str]) -> int:
    try:
        main(argv)
    except SignalException as e:
        print(f"torchrun: stopped by {e.sigval.name}, which the ranks were passed", file=sys.stderr, flush=True)
        return 128 + int(e.sigval)
    return 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
