"""What the loader asks of the ranks it balances with (run.balance): the two exchanges, as Protocols.

The implementations live in bert.distributed (a gloo group of their own each); the loader only starts an
exchange a step ahead and finishes it when the batch is due, so that the communication overlaps a step.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Protocol

import numpy as np

from bert.data.shards import Samples


class SampleExchange(Protocol):
    """Presorting (bert.distributed.presort.PresortExchange): the ranks of a group gather their batches and each
    takes back an equal count of near-equal cost."""

    def start(self, samples: Samples) -> Future:
        """Sends this rank's batch; every rank of the group starts the same number of exchanges."""
        ...

    def finish(self, pending: Future) -> Samples:
        """This rank's share of the group's sequences."""
        ...


class RowAgreement(Protocol):
    """Packing by rows (bert.distributed.row_exchange.RowExchange, or one process's LocalRows): every rank's
    offer of capacities to every rank, and a sum over the ranks."""

    def start_offer(self, offer: np.ndarray) -> object:
        ...

    def finish_offer(self, pending: object) -> np.ndarray:
        """[ranks, most]: every rank's offer, in rank order."""
        ...

    def start_sum(self, values: np.ndarray) -> object:
        ...

    def finish_sum(self, pending: object) -> np.ndarray:
        ...
