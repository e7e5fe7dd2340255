"""What the loader asks of the ranks it balances with (bert.data.exchanges): every implementation offers each
method of its protocol with the protocol's parameters, and one process's agreement is its own offer."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from bert.data.exchanges import RowAgreement, SampleExchange
from bert.data.packed_batches import LocalRows
from bert.distributed.presort import PresortExchange
from bert.distributed.row_exchange import RowExchange


def _methods(cls: type) -> dict[str, list[str]]:
    return {name: list(inspect.signature(fn).parameters) for name, fn in vars(cls).items()
            if inspect.isfunction(fn) and not name.startswith("_")}


@pytest.mark.parametrize("protocol, implementation", [
    (RowAgreement, RowExchange), (RowAgreement, LocalRows), (SampleExchange, PresortExchange)])
def test_each_implementation_has_the_protocols_methods_and_parameters(protocol, implementation):
    wanted = _methods(protocol)
    assert wanted, protocol
    got = _methods(implementation)
    assert {name: got.get(name) for name in wanted} == wanted


def test_one_process_agrees_with_itself():
    rows = LocalRows()
    offer = np.array([3, 5, 8])
    assert rows.finish_offer(rows.start_offer(offer)).tolist() == [[3, 5, 8]]  # [ranks, most], one rank
    assert rows.finish_sum(rows.start_sum(np.array([7]))).tolist() == [7]
