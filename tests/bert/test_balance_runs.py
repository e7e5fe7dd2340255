"""The descriptor's run.balance selects the strategy, and short runs of 2 gloo ranks with each one pass the
official compliance checker (the presorting ones exchanging batches every step, packing agreeing its rows)."""

from __future__ import annotations

import pytest

from bert.distributed.launch import DistContext
from bert.system import load_system
from bert.train import loader_balance
from bert.typed_config import ConfigError
from compliance.checkers import compliance_check
from compliance.result_log import read_result_log
from tests.conftest import descriptor, write_descriptor
from tests.helpers.runs import run_training


def _short(balance: str, processes: int, **changes) -> dict:
    data = descriptor(processes_per_node=processes, balance=balance, log_weights_initialization=False, **changes)
    data["run"]["eval"].update(target_accuracy=0.03, interval_samples=512)  # one or two evals
    return data


def test_descriptor_selects_the_strategy(tmp_path):
    path = write_descriptor(tmp_path, "packed", _short("packed", 1, length_bins=[16, 64]))
    balance = loader_balance(load_system(path), DistContext(0, 1, 0, 1, None))
    assert (balance.strategy, balance.length_bins, balance.row_len, balance.exchange) == ("packed", [16, 64], 64, None)
    assert (balance.lookahead, balance.attention_width) == (1, 6 * 64)  # run.balance_lookahead; micro's hidden size
    assert load_system(write_descriptor(tmp_path, "plain", descriptor())).run.balance == "none"
    with pytest.raises(ConfigError, match="run.balance: expected one of"):
        load_system(write_descriptor(tmp_path, "bad", descriptor(balance="sorted")))
    with pytest.raises(ConfigError, match="run.length_bins"):
        load_system(write_descriptor(tmp_path, "bins", descriptor(length_bins=[32, 16])))
    with pytest.raises(ConfigError, match="run.balance_lookahead"):
        load_system(write_descriptor(tmp_path, "ahead", descriptor(balance_lookahead=-1)))
    with pytest.raises(ConfigError, match="run.presort_deal"):
        load_system(write_descriptor(tmp_path, "deal", descriptor(presort_deal="round_robin")))


@pytest.mark.parametrize("balance,processes", [("stratified", 2), ("stratified+local_presort", 2),
                                               ("global_presort", 2), ("packed", 2)])
def test_short_run_passes_the_checker(tmp_path, small_dataset, cpu_env, balance, processes):
    system = write_descriptor(tmp_path, "micro_balance", _short(balance, processes))
    proc, log = run_training(tmp_path, system, small_dataset, processes, cpu_env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert read_result_log(log).status == "success"
    result = compliance_check(log, "5.0.0")
    assert result.passed, result.output
