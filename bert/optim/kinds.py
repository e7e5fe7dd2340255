"""The optimizers a descriptor may name (run.optimizer.name), one kind each, in one table.

A kind carries what every part of the harness needs of its optimizer: how it is built over the parameter groups
(bert.optim.factory), the implementations it runs in (run.optimizer.implementation), the bytes one update moves
(bert.optim.traffic, for the simulator), the MLPerf keys its values are logged under and what a descriptor's notes
must then say (bert.mllog, bert.hpo), whether the closed division allows it (bert.system) and whether the
reference convergence points are its runs (bert.reference_hyperparameters). The name is compared here and nowhere
else: every other module reads `OptimizerSpec.kind`'s attributes (a test holds it).

Adding an optimizer: its name in `OptimizerName` and its entry in `OPTIMIZERS` (the two are checked against each
other at import, bert.kind_tables). Nothing here imports torch: the builders and the traffic counts are deferred.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from mlperf_logging.mllog import constants as C

from bert.kind_tables import deferred, kind_table

if TYPE_CHECKING:
    import torch

    from bert.optim.settings import OptimizerSpec

OptimizerName = Literal["lamb", "adam"]
DEFAULT_OPTIMIZER: OptimizerName = "lamb"  # the reference's

# The MLPerf keys of LAMB's own hyperparameters (the closed division's tunable ones), by the field that holds each.
LAMB_KEYS = {C.OPT_LAMB_EPSILON: "epsilon", C.OPT_LAMB_BETA_1: "beta_1", C.OPT_LAMB_BETA_2: "beta_2",
             C.OPT_LAMB_WEIGHT_DECAY: "weight_decay_rate"}
# What an ADAM descriptor's notes say about its log (the rules name no ADAM keys; the open division requires none).
ADAM_KEYS_NOTE = (f"Optimizer ADAM (AdamW, open division): its betas, epsilon and weight decay are logged under the "
                  f"LAMB key names {C.OPT_LAMB_BETA_1}, {C.OPT_LAMB_BETA_2}, {C.OPT_LAMB_EPSILON} and "
                  f"{C.OPT_LAMB_WEIGHT_DECAY}.")


@dataclass(frozen=True)
class OptimizerKind:
    name: str  # as run.optimizer.name names it
    title: str  # in words, for messages: "LAMB"
    # (parameter groups of bert.optim.factory.parameter_groups, the spec, whether the parameters are on CUDA) ->
    # the optimizer, which takes GradScaler's overflow flag on the device.
    build: Callable[[list[dict], OptimizerSpec, bool], torch.optim.Optimizer]
    # run.optimizer.implementation values it runs in, each with what it means.
    implementations: Mapping[str, str]
    update_bytes: Callable[[OptimizerSpec, str], float]  # (spec, run.precision) -> bytes per parameter of one update
    log_keys: Mapping[str, str]  # MLPerf key -> the run.optimizer field logged under it (bert.mllog)
    log_note: str  # what a descriptor's notes must say of those keys ("" when they are the optimizer's own)
    closed_division: bool  # the closed division allows it (MLPerf: the reference's LAMB)
    reference: bool  # the reference convergence points are runs of it: run.rcp_hyperparameters may take their values


OPTIMIZERS: dict[str, OptimizerKind] = kind_table(OptimizerName, [
    OptimizerKind("lamb", "LAMB", deferred("bert.optim.factory", "build_lamb"),
                  {"eager": "foreach kernels (bert.optim.lamb)", "compiled": "the same update through torch.compile"},
                  deferred("bert.optim.traffic", "lamb_update_bytes"), LAMB_KEYS, "",
                  closed_division=True, reference=True),
    OptimizerKind("adam", "AdamW", deferred("bert.optim.factory", "build_adamw"),
                  {"eager": "torch's fused kernel on CUDA, foreach kernels on a CPU"},
                  deferred("bert.optim.traffic", "adamw_update_bytes"), LAMB_KEYS, ADAM_KEYS_NOTE,
                  closed_division=False, reference=False),
], __name__)


def stated_optimizer(name: object) -> OptimizerKind | None:
    """The kind that run.optimizer.name names as unvalidated JSON states it (absent: the default); None when it
    names none (the descriptor's reader then refuses it, naming the choices)."""
    name = DEFAULT_OPTIMIZER if name is None else name
    return OPTIMIZERS.get(name) if isinstance(name, str) else None
