"""The optimizer's memory traffic per parameter (bert.optim.traffic), which `simulate` divides by the HBM
bandwidth: the counter against operators whose traffic is known, and the LAMB update's count."""

import torch

from bert.optim.settings import OptimizerSpec
from bert.optim.traffic import _TrafficCounter, eager_lamb_bytes_per_parameter, optimizer_bytes_per_parameter

N = 1 << 12


def _counted(work) -> float:
    with torch.device("meta"):
        a, b = torch.empty(N), torch.empty(N)
        with _TrafficCounter(N) as counter:
            work(a, b)
    return counter.bytes / N


def test_the_counter_reads_inputs_writes_outputs_and_in_place_targets_both_ways():
    assert _counted(lambda a, b: torch.add(a, b)) == 12  # two reads, one new tensor
    assert _counted(lambda a, b: a.add_(b)) == 12  # read a and b, write a
    assert _counted(lambda a, b: torch._foreach_mul_([a, b], 2.0)) == 16  # two tensors of N, each read and written
    assert _counted(lambda a, b: a.view(2, -1)) == 4  # a view reads nothing new, in this model: its input only
    assert _counted(lambda a, b: torch.linalg.vector_norm(a)) == 4  # a scalar result rounds to nothing


def test_eager_lamb_moves_tens_of_fp32_tensors_per_parameter_and_fused_updates_few():
    eager, scaled = eager_lamb_bytes_per_parameter(False), eager_lamb_bytes_per_parameter(True)
    assert eager % 4 == 0 and 25 <= eager / 4 <= 40, eager  # about 13 foreach passes, most read and write
    assert scaled - eager == 24  # fp16: unscale, overflow to zero and the keep factor, one pass each
    spec = OptimizerSpec(base_learning_rate=1e-3, training_steps=10)
    assert optimizer_bytes_per_parameter(spec, "bf16") == eager
    compiled = optimizer_bytes_per_parameter(OptimizerSpec(base_learning_rate=1e-3, training_steps=10,
                                                           implementation="compiled"), "fp16")
    assert compiled == 40 and compiled < eager / 3
    assert optimizer_bytes_per_parameter(OptimizerSpec(name="adam", base_learning_rate=1e-3, training_steps=10),
                                         "bf16") == 28
