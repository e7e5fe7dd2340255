"""The MLPerf Training rules this harness obeys, as data: the benchmark's name, the rulesets that still know
BERT, the target, the eval interval formula and the system description's fields and values.

A bottom-floor module without heavy imports, so that the command line and the compliance tools read the same
facts as the trainer (see ../shared/MLPERF_BERT.md for where each comes from).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

BENCHMARK = "bert"  # the submission_benchmark value and the results folder name of a package
# The rulesets whose tools still accept BERT (retired after 5.0.0); the newest is the default of every check.
RULESETS = ("4.1.0", "5.0.0")
DEFAULT_RULESET = RULESETS[-1]
# The MLPerf Training system description: every field present (description_problems says which values must be
# strings or whole numbers).
SYSTEM_DESCRIPTION_FIELDS = (
    "submitter", "division", "status", "system_name", "number_of_nodes", "host_processors_per_node",
    "host_processor_model_name", "host_processor_core_count", "host_processor_vcpu_count",
    "host_processor_frequency", "host_processor_caches", "host_processor_interconnect",
    "host_memory_capacity", "host_storage_type", "host_storage_capacity", "host_networking",
    "host_networking_topology", "host_memory_configuration", "accelerators_per_node",
    "accelerator_model_name", "accelerator_host_interconnect", "accelerator_frequency",
    "accelerator_on-chip_memories", "accelerator_memory_configuration", "accelerator_memory_capacity",
    "accelerator_interconnect", "accelerator_interconnect_topology", "cooling", "hw_notes", "framework",
    "other_software_stack", "operating_system", "sw_notes",
)
DIVISIONS = ("closed", "open")
MLPERF_TARGET_ACCURACY = 0.720  # masked-LM eval accuracy a closed-division run must reach
# What the closed division fixes of the benchmark (its reference model, sequence length and target; the optimizer
# is its kind's rule, bert.optim.kinds): the named model config (bert.model.config) that is the reference's
# BERT-large, and the fields of it that make the model (GELU's form is free: NVIDIA's accepted closed runs compute
# erf, the reference tanh).
CLOSED_MODEL = "large"
CLOSED_MODEL_FIELDS = ("vocab_size", "hidden_size", "num_layers", "num_heads", "intermediate_size",
                       "max_position_embeddings", "type_vocab_size", "layer_norm_eps", "hidden_dropout",
                       "attention_dropout")


@dataclass(frozen=True)
class ReferencePreprocessing:
    """The flags of create_pretraining_data.py in the MLPerf reference's preprocessing: they make the dataset a
    closed submission must train on. The seed is also the default of every seeded data command (shuffles,
    synthetic corpora), so that the defaults reproduce."""

    max_seq_length: int = 512
    max_predictions_per_seq: int = 76
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    dupe_factor: int = 10
    random_seed: int = 12345


REFERENCE_PREP = ReferencePreprocessing()
EVAL_SAMPLES = 10000  # the eval set: the samples pick_eval_samples.py keeps


def closed_benchmark_problems(model: str, config: object, reference: object, max_seq_length: int,
                              max_predictions: int, target: float, eval_samples: int) -> list[tuple[str, str]]:
    """What keeps a run from being the closed division's benchmark, as (run field, problem): its model `config`
    against the `reference` config (CLOSED_MODEL's, field by field), the sequence shape of the reference
    preprocessing, the target and the eval set. A closed log of anything else states a benchmark that did not run.
    (An optimizer the closed division does not allow is refused where the descriptor is read, bert.system.)"""
    fix = 'or set system.division to "open"'
    problems = []
    differ = [f"{name} {getattr(config, name)!r} (BERT-large: {getattr(reference, name)!r})"
              for name in CLOSED_MODEL_FIELDS if getattr(config, name) != getattr(reference, name)]
    if differ:
        problems.append(("run.model", f"{model!r} is not the closed division's model: {', '.join(differ)}; use "
                                      f'"{CLOSED_MODEL}" without these overrides, {fix}'))
    prep = REFERENCE_PREP
    for field, value, fixed in (("run.max_seq_length", max_seq_length, prep.max_seq_length),
                                ("run.max_predictions_per_seq", max_predictions, prep.max_predictions_per_seq),
                                ("run.eval.target_accuracy", target, MLPERF_TARGET_ACCURACY),
                                ("run.eval.samples", eval_samples, EVAL_SAMPLES)):
        if value != fixed:
            problems.append((field, f"{value!r}, but the closed division fixes it at {fixed!r}: use {fixed!r}, {fix}"))
    return problems
TRAINING_SHARDS = 4320  # the usual re-cut of the 500 prepared parts (2048 below 256 nodes)
# System-description status -> the value of the `submission_status` log key.
STATUSES = {
    "Available on-premise": "onprem",
    "Available cloud": "cloud",
    "Research, Development, or Internal (RDI)": "research",
    "Preview": "preview",
}


def mlperf_eval_interval(global_batch_size: int) -> int:
    """Samples between evaluations under the MLPerf BERT rules."""
    return math.floor(0.05 * (230.23 * global_batch_size + 3_000_000) / 25_000) * 25_000


def converging_eval(samples_to_converge: float, global_batch: int, interval: int) -> tuple[int, int]:
    """(steps, evals) of the first eval whose sample count reaches `samples_to_converge`: evals run at the first
    step past each multiple of the interval (as bert.train runs them), and a run stops at the first that reaches
    the target."""
    evals = max(1, int(samples_to_converge // interval))
    while True:
        steps = -(-evals * interval // global_batch)
        if steps * global_batch >= samples_to_converge:
            return steps, evals
        evals += 1


# How the official tools read a system description (mlperf-logging 4.1.68, measured field by field): the system
# description checker and the result summarizer join or search TEXT_FIELDS as text (any other value crashes
# them; the notes only when not empty), the result summarizer passes WHOLE_NUMBER_FIELDS to int(), and the
# package checker takes any division but "closed" as open. They never read the other fields, which published
# descriptions often fill with objects or lists (other_software_stack: {"cuda_version": "12.4", ...}).
TEXT_FIELDS = ("submitter", "division", "status", "system_name", "host_processor_model_name",
               "host_processor_core_count", "accelerator_model_name", "accelerators_per_node", "framework")
NOTES_FIELDS = ("hw_notes", "sw_notes")
WHOLE_NUMBER_FIELDS = ("number_of_nodes", "host_processors_per_node", "accelerators_per_node")
TOOL_READ_FIELDS = TEXT_FIELDS + NOTES_FIELDS + WHOLE_NUMBER_FIELDS


def _whole_number(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return None
    try:
        return int(value)
    except ValueError:
        return None


def description_problems(desc: dict) -> list[tuple[str, str]]:
    """Every problem of an MLPerf system description as the official tools read it, in order, as (field, what is
    wrong and the fix)."""
    problems = [(key, 'missing; the MLPerf system description needs all '
                      f'{len(SYSTEM_DESCRIPTION_FIELDS)} fields (use "" where nothing applies)')
                for key in SYSTEM_DESCRIPTION_FIELDS if key not in desc]
    for key, value in desc.items():
        if key not in SYSTEM_DESCRIPTION_FIELDS:
            problems.append((key, "not an MLPerf system description field; move it to the run block or remove it"))
        elif (key in TEXT_FIELDS or key in NOTES_FIELDS and value) and not isinstance(value, str):
            problems.append((key, f'must be a string, got {value!r}; write it in quotes, as "{value}" (the official '
                                  'tools read it as text)'))
    division, status = desc.get("division"), desc.get("status")
    if isinstance(division, str) and division not in DIVISIONS:
        problems.append(("division", f'must be "closed" or "open" (lower case), got {division!r}'))
    if isinstance(status, str) and status not in STATUSES:
        problems.append(("status", f"must be one of {', '.join(map(repr, STATUSES))}, got {status!r}"))
    for key in WHOLE_NUMBER_FIELDS:
        if key in desc and _whole_number(desc[key]) is None:
            problems.append((key, f'must be a whole number (as "8"), got {desc[key]!r}'))
    nodes = _whole_number(desc.get("number_of_nodes"))
    if nodes is not None and nodes < 1:
        problems.append(("number_of_nodes", "must be at least \"1\""))
    return problems
