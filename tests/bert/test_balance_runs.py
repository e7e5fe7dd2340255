"""The descriptor's run.balance selects the strategy, and short runs of 2 gloo ranks with each one pass the
official compliance checker (the presorting ones exchanging batches every step, packing agreeing its rows)."""

from __future__ import annotations

import pytest

from bert.distributed.launch import DistContext
from bert.mlperf_rules import DEFAULT_RULESET
from bert.system import Descriptor, load_descriptor
from bert.train import loader_balance
from bert.typed_config import ConfigError
from compliance.checkers import compliance_check
from compliance.result_log import read_result_log
from tests.helpers.runs import run_training


def _short(balance: str, processes: int, **changes) -> Descriptor:
    return load_descriptor("cpu_micro").variant(
        {"processes_per_node": processes, "balance": balance, "log_weights_initialization": False, **changes,
         "eval.target_accuracy": 0.03, "eval.interval_samples": 512},  # one or two evals
        name="micro_balance")


def test_descriptor_selects_the_strategy():
    balance = loader_balance(_short("packed", 1, length_bins=[16, 64]), DistContext(0, 1, 0, 1, None))
    assert (balance.strategy.name, balance.length_bins, balance.strategy.row_len, balance.exchange) == (
        "packed", [16, 64], 64, None)
    assert (balance.strategy.draws, balance.strategy.exchange) == ("random", "rows")
    assert (balance.lookahead, balance.attention_width) == (1, 6 * 64)  # run.balance_lookahead; micro's hidden size
    micro = load_descriptor("cpu_micro")
    assert micro.run.balance == "none"
    with pytest.raises(ConfigError, match="run.balance: expected one of"):
        micro.variant({"balance": "sorted"})
    with pytest.raises(ConfigError, match="run.length_bins"):
        micro.variant({"length_bins": [32, 16]})
    with pytest.raises(ConfigError, match="run.balance_lookahead"):
        micro.variant({"balance_lookahead": -1})
    with pytest.raises(ConfigError, match="run.presort_deal"):
        micro.variant({"presort_deal": "round_robin"})


@pytest.mark.parametrize("balance,processes", [("stratified", 2), ("stratified+local_presort", 2),
                                               ("global_presort", 2), ("packed", 2)])
def test_short_run_passes_the_checker(tmp_path, small_dataset, cpu_env, balance, processes):
    system = _short(balance, processes).write(tmp_path).path
    proc, log = run_training(tmp_path, system, small_dataset, processes, cpu_env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert read_result_log(log).status == "success"
    result = compliance_check(log, DEFAULT_RULESET)
    assert result.passed, result.output
