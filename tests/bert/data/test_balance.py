"""The load-balance strategy, parsed once: how each one draws, which ranks exchange, the presort groups' size."""

import pytest

from bert.data.balance import STRATEGIES, balance_strategy
from bert.system import load_descriptor


@pytest.mark.parametrize("name, draws, exchange, group", [
    ("none", "random", "none", 0),
    ("stratified", "stratified", "none", 0),
    ("stratified+local_presort", "stratified", "node", 4),
    ("global_presort", "random", "all", 16),
    ("packed", "random", "rows", 0),
])
def test_each_strategy_says_how_it_draws_and_who_exchanges(name, draws, exchange, group):
    strategy = balance_strategy(name, 128)
    assert (strategy.name, strategy.draws, strategy.exchange, strategy.row_len) == (name, draws, exchange, 128)
    assert strategy.presort_group(16, 4) == group
    assert strategy.presorts == bool(group) and strategy.packed == (exchange == "rows")
    assert strategy.stratified == (draws == "stratified")


def test_every_strategy_a_descriptor_may_name_is_parsed_and_no_other():
    assert all(balance_strategy(name, 512).name == name for name in STRATEGIES)
    with pytest.raises(ValueError, match="unknown strategy 'sorted'; choose one of none, stratified"):
        balance_strategy("sorted", 512)


def test_the_descriptor_holds_its_strategy_parsed_with_its_row_length():
    seed_paper = load_descriptor("dgxa100_128x8_adam")
    assert seed_paper.balance == balance_strategy("stratified+local_presort", seed_paper.run.max_seq_length)
    assert load_descriptor("dgxa100_512x8_packed").balance.packed
    micro = load_descriptor("cpu_micro").variant({"balance": "global_presort", "max_seq_length": 32})
    assert (micro.balance.exchange, micro.balance.row_len) == ("all", 32)
    assert micro.cpu_variant({}).balance == micro.balance
