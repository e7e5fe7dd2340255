"""The least time a run can take on its hardware: no log may claim to have trained faster than its machine computes.

A run that trained S samples did at least S x F floating-point operations, F being the training FLOPs of one sample
(bert.simulate.flops, the count benchmarks/throughput.py divides by): BERT-large's in the closed division, whose
rules fix the model, and the model of the descriptor packaged beside the code in a package of this harness (the
open division's model is the submitter's, and a log does not name it). Counted at the least work a genuine run
could do: samples of a quarter of the sequence length in real tokens (MLPerf's phase-2 samples hold about half,
254 of 512), with the masked positions the reference's rule gives them.

A machine does at most N x P of them per second: N its accelerators (number_of_nodes x accelerators_per_node of
its system JSON, or its host cores where it has none) and P the best rate of one. P is generous on purpose: the
highest floating-point rate of the accelerator's datasheet, sparsity and the lowest precision included (FP4 on a
B200 or GB200, FP8 on an H100 or H200), though dense BF16 and FP8 are what BERT trains in and published runs reach
a fraction of it; an accelerator model not in the table counts UNKNOWN_PEAK, above any made. A lone log, or a
folder without a system JSON, names no hardware: its machine is counted as one accelerator per sequence of its
global batch (data parallelism gives every accelerator at least one sequence a step) at UNKNOWN_PEAK.

So the least time is S x F / (N x P). Every published BERT run takes many times longer: at least 12.4 times on
the hardware of its system JSON in Training v4.1 and v5.0 (the closest: Clemson's A100 PCIe runs; NVIDIA's 7.1 s
on 3,472 H100 is 74 times its least time), at least 7.8 times in v0.7 to v4.0, and a lone log at least 3,700 times
(one accelerator per sequence). A run logged below it did not run: its times were edited (a run of 1 ms, or one
compressed a thousand times, is refused).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cache

import numpy as np

from bert.model.config import BertConfig, named_config
from bert.simulate.flops import flops_per_sequence
from compliance.result_log import ResultLog, number

MLPERF_MAX_PREDICTIONS = 76  # masked positions a sequence has at most (the reference's max_predictions_per_seq)
MLPERF_SEQUENCE = 512

# Accelerator models as system JSONs and logged platforms name them ("NVIDIA Blackwell GPU (B200-SXM-180GB)",
# "2xXE9680Lx8B200-SXM-180GB"), each with the best rate of one in FLOP/s: the datasheet's highest floating-point
# figure, with sparsity and at the lowest precision the part has. First match wins (GB200 before B200).
ACCELERATORS: tuple[tuple[str, str, float], ...] = (
    ("GB300", r"GB300", 30e15), ("B300", r"B300", 30e15), ("GB200", r"GB200", 20e15), ("B200", r"B200", 18e15),
    ("B100", r"B100", 14e15), ("GH200", r"GH200", 3.958e15), ("H200", r"H200", 3.958e15),
    ("H100", r"H100", 3.958e15), ("H800", r"H800", 3.958e15), ("A100", r"A100", 0.624e15),
    ("A800", r"A800", 0.624e15), ("L40S", r"L40S", 1.466e15), ("L40", r"L40(?![0-9])", 1.448e15),
    ("L4", r"(?<![A-WYZ0-9])L4(?![0-9S])", 0.485e15), ("A30", r"(?<![0-9])A30(?![0-9])", 0.33e15),
    ("A40", r"(?<![0-9])A40(?![0-9])", 0.3e15), ("A6000", r"A6000", 0.31e15), ("A5000", r"A5000", 0.223e15),
    ("A4500", r"A4500", 0.19e15), ("A4000", r"A4000", 0.154e15), ("A10", r"(?<![0-9])A10(?![0-9])", 0.25e15),
    ("V100", r"V100", 0.125e15), ("RTX 5090", r"5090", 3.352e15), ("RTX 4090", r"4090", 1.321e15),
    ("MI355X", r"MI355", 20e15), ("MI350X", r"MI350", 20e15), ("MI325X", r"MI325", 5.23e15),
    ("MI300X", r"MI300X", 5.23e15), ("MI300A", r"MI300A", 3.92e15), ("MI250X", r"MI250", 0.383e15),
    ("RX 7900 XTX", r"7900 ?XTX", 0.123e15), ("Gaudi3", r"GAUDI ?3", 1.835e15), ("Gaudi2", r"GAUDI ?2", 0.865e15),
)
UNKNOWN_PEAK = 50e15  # more than twice the best rate of any accelerator made (2025)
CPU_CORE_PEAK = 16e12  # a host core, matrix units included (an AMX core peaks near 7 TFLOP/s): twice that
MAX_COUNT = 10**7  # more accelerators (or cores) than any machine has: a count above it is no count


@dataclass(frozen=True)
class Machine:
    units: int  # accelerators (or host cores)
    peak: float  # FLOP/s of one
    what: str  # "8 NVIDIA H100-SXM5-80GB of systems/x.json at 3.958 PFLOP/s each", for messages


def whole(value: object) -> int | None:
    """A count written as a whole number (an int, or a string of digits, as system JSONs write them), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value <= MAX_COUNT else None
    text = str(value).strip()
    return int(text) if text.isdigit() and len(text) <= 8 and int(text) <= MAX_COUNT else None


def accelerator_model(text: str) -> str | None:
    """The accelerator model that `text` (a model name, a logged platform) names, or None."""
    upper = text.upper()
    return next((name for name, pattern, _ in ACCELERATORS if re.search(pattern, upper)), None)


def accelerator_peak(model_name: str) -> tuple[float, bool]:
    """(the best rate of one accelerator of `model_name`, whether the table knows the model)."""
    model = accelerator_model(model_name)
    peak = next((peak for name, _, peak in ACCELERATORS if name == model), None)
    return (UNKNOWN_PEAK, False) if peak is None else (peak, True)


def _rate(peak: float) -> str:
    return f"{peak / 1e15:g} PFLOP/s" if peak >= 1e15 else f"{peak / 1e12:g} TFLOP/s"


def system_machine(description: dict, where: str) -> Machine | None:
    """The machine a system JSON describes (None when it states no usable count)."""
    nodes, per_node = whole(description.get("number_of_nodes")), whole(description.get("accelerators_per_node"))
    if nodes is None or per_node is None or nodes == 0:
        return None
    if per_node > 0:
        name = str(description.get("accelerator_model_name", "")).strip()
        peak, known = accelerator_peak(name)
        label = name or "accelerators of unnamed model"
        return Machine(nodes * per_node, peak, f"{nodes * per_node} {label} of {where}, counted at {_rate(peak)} "
                       f"each{'' if known else ' (a model not in the table: more than any accelerator made)'}")
    sockets = whole(description.get("host_processors_per_node"))
    cores = whole(description.get("host_processor_core_count"))
    if not sockets or not cores:
        return None
    units = nodes * sockets * cores
    return Machine(units, CPU_CORE_PEAK, f"the {units} host cores of {where} (no accelerators), counted at "
                   f"{_rate(CPU_CORE_PEAK)} each")


def lone_machine(log: ResultLog) -> Machine | None:
    """A machine large enough for any run of the log's global batch size (one accelerator per sequence)."""
    batch = whole(log.global_batch_size)
    if not batch:
        return None
    return Machine(batch, UNKNOWN_PEAK, f"{batch} accelerators (the log names no hardware: one per sequence of its "
                   f"global batch of {batch}) counted at {_rate(UNKNOWN_PEAK)} each, more than any accelerator made")


@cache
def least_sample_flops(config: BertConfig | None = None, sequence: int = MLPERF_SEQUENCE,
                       max_predictions: int = MLPERF_MAX_PREDICTIONS) -> float:
    """The training FLOPs of one sample of a quarter of the sequence length (see the module), of BERT-large
    unless `config` says otherwise."""
    return float(flops_per_sequence(config or named_config("large"), np.array([max(sequence // 4, 1)]),
                                    max_predictions))


def samples_trained(log: ResultLog) -> float | None:
    """The samples the run trained by its last eval from run_start to run_stop (the eval's epoch_num)."""
    start, stop = log.first("run_start"), log.first("run_stop")
    if start is None or stop is None:
        return None
    seen = [number(e.metadata.get("epoch_num")) for e in log.all("eval_accuracy")
            if start.time_ms < e.time_ms <= stop.time_ms]
    seen = [s for s in seen if s is not None and 0 < s < math.inf]
    return max(seen) if seen else None


def least_seconds(log: ResultLog, machine: Machine, sample_flops: float) -> float | None:
    """The least time from run_start to run_stop of the log's run on `machine` (None: nothing to count)."""
    samples = samples_trained(log)
    if samples is None or machine.units <= 0:
        return None
    return samples * sample_flops / (machine.units * machine.peak)


def too_fast(log: ResultLog, machine: Machine, sample_flops: float, model: str) -> str | None:
    """Why the log's run is faster than `machine` can train it, or None."""
    least = least_seconds(log, machine, sample_flops)
    minutes = log.run_minutes
    if least is None or minutes is None or minutes * 60 >= least:
        return None
    return (f"run_start to run_stop is {minutes:.5f} minutes ({minutes * 60:,.3f} s), but training "
            f"{samples_trained(log):,.0f} samples of {model} ({sample_flops / 1e9:,.3g} GFLOP each at least) takes at "
            f"least {least / 60:.5f} minutes ({least:,.3f} s) on {machine.what}: no run is faster than its hardware, "
            "so the times were edited")
