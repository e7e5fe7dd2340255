"""The load-balance strategy of a run and its settings (the run block's balance fields).

A strategy's name (run.balance) is read here and nowhere else: `balance_strategy` parses it, where the descriptor
is read, into a BalanceStrategy that says how the sampler draws each rank's batch (at random, or a fixed count
from each length bin), which ranks exchange their batches every step (none; the ranks of a node or all ranks,
presorting; all ranks, agreeing on packed rows) and the row length. The loader, the presort and row exchanges,
the launch plan, the compile warm-up and the simulator read its attributes.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Literal

from bert.typed_config import ranged

Strategy = Literal["none", "stratified", "stratified+local_presort", "global_presort", "packed"]
Draws = Literal["random", "stratified"]
Exchange = Literal["none", "node", "all", "rows"]
# How a presort group's gathered sequences are spread over its ranks (bert.data.balance_plans.deal): balanced
# largest differencing with equal counts (closest to equal cost), or the seed paper's snake order.
PresortDeal = Literal["balanced", "snake"]
STRATEGIES: tuple[str, ...] = typing.get_args(Strategy)
DEALS: tuple[str, ...] = typing.get_args(PresortDeal)
MAX_BALANCE_LOOKAHEAD = 8

# What each strategy is: how its sampler draws and which ranks exchange.
_STRATEGY_PARTS: dict[str, tuple[Draws, Exchange]] = {
    "none": ("random", "none"),
    "stratified": ("stratified", "none"),
    "stratified+local_presort": ("stratified", "node"),  # the seed paper's
    "global_presort": ("random", "all"),  # NVIDIA's exchange padding
    "packed": ("random", "rows"),
}


@dataclass(frozen=True)
class BalanceStrategy:
    """A load-balance strategy, parsed."""

    name: str  # as the descriptor names it (run.balance), for what is shown to the user
    draws: Draws  # each rank's batch: at random, or a fixed count from each length bin (bert.data.stratified_sampler)
    # The ranks that exchange their batches every step: none, those of a node or all (presorting,
    # bert.distributed.presort), or all agreeing on packed rows (bert.distributed.row_exchange).
    exchange: Exchange
    row_len: int  # the longest sequence (run.max_seq_length): a packed row's length, an exchanged row's width

    @property
    def stratified(self) -> bool:
        return self.draws == "stratified"

    @property
    def presorts(self) -> bool:
        return self.exchange in ("node", "all")

    @property
    def packed(self) -> bool:
        return self.exchange == "rows"

    def presort_group(self, world_size: int, ranks_per_node: int) -> int:
        """The ranks of each presort group: those of a node, or all; 0 when the strategy does not presort."""
        return {"node": ranks_per_node, "all": world_size}.get(self.exchange, 0)


def balance_strategy(name: str, row_len: int) -> BalanceStrategy:
    """The strategy `name` (one of STRATEGIES) for sequences of up to `row_len` tokens."""
    if name not in _STRATEGY_PARTS:
        raise ValueError(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}")
    draws, exchange = _STRATEGY_PARTS[name]
    return BalanceStrategy(name, draws, exchange, row_len)


def length_bins_problem(edges: list[int], max_seq_length: int) -> str | None:
    """What is wrong with upper length-bin edges for sequences up to `max_seq_length`, or None: the one rule of
    the descriptor's run.length_bins and of every --bins option."""
    if not edges or edges[0] < 1 or any(b <= a for a, b in zip(edges, edges[1:])):
        return f"{edges} must be positive, increasing upper edges, e.g. [128, 256, 384, 512]"
    if edges[-1] < max_seq_length:
        return f"the last edge {edges[-1]} must reach the maximum sequence length {max_seq_length}"
    return None


@dataclass(frozen=True, kw_only=True)
class BalanceSpec:
    """How a step's samples are spread over the ranks: fields of the run block."""

    balance: Strategy = "none"
    """The load-balance strategy: "none" (random per-rank batches), "stratified" (a fixed count from each length
    bin per rank), "stratified+local_presort" (that, and the ranks of a node exchange their batches every step and
    deal them out by cost: the seed paper's), "global_presort" (random batches exchanged over all ranks: NVIDIA's
    exchange padding) or "packed" (up to 3 sequences per row of max_seq_length tokens). Data order stays random
    and every sample is seen at most once an epoch, as the closed division requires."""
    length_bins: list[int] | None = None
    """Upper edges of the length bins, in tokens, the last reaching max_seq_length; null: the data's own length
    quantiles, one bin per sequence of a per-rank batch (bins that one length fills are merged), measured on the
    first training shard. Stratified strategies only."""
    presort_deal: PresortDeal = "balanced"
    """How a presort group's gathered sequences are dealt to its ranks: "balanced" (largest differencing with
    equal counts: closest to equal cost) or "snake" (the seed paper's order of the sorted lengths)."""
    balance_lookahead: int = ranged(0, MAX_BALANCE_LOOKAHEAD, default=1, note="0 takes the draws in order")
    """Stratified strategies: a rank looks at (1 + lookahead) x its draws of each bin and takes those that bring
    its batch's cost closest to the target every rank shares (bert.data.lookahead); 0 takes them in order."""
