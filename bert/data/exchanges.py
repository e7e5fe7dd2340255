"""What the loader asks of the ranks it balances with (run.balance): the two exchanges, as Protocols.

The implementations live in bert.distributed (a gloo group of their own each); the loader calls them on its
finisher thread a step ahead of the batch, so that the communication overlaps a step.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from bert.data.shards import Samples


class SampleExchange(Protocol):
    """Presorting (bert.distributed.presort.PresortExchange): the ranks of a group gather their batches and each
    takes back an equal count of near-equal cost."""

    def share(self, samples: Samples) -> Samples:
        """Sends this rank's batch and returns its share of the group's sequences; every rank of the group
        makes the same number of exchanges."""
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
