"""What a closed-division descriptor may not be, judged before anything runs: `mlperf-bert system check` and the
pre-flight refuse it, one line per problem naming the field.

`descriptor_problems`: a closed run is the benchmark (bert.mlperf_rules.closed_benchmark_problems: BERT-large,
sequence 512 with 76 masked positions, the 0.720 target on the 10,000 eval samples; an optimizer or clip mode the
closed division does not allow is refused where the descriptor is read, bert.system), at a batch size the RCP
checker has a reference for, with a sample cap that lets a run converging as the reference's did reach its eval
(bert.rcp.sample_cap_floor). `input_problems`: a closed GPU run trains on the official MLPerf dataset from the
official phase-1 checkpoint (bert.prep.official_files). The open division is never judged here, nor what a CPU
rehearsal of a closed descriptor trains on.
"""

from __future__ import annotations

from pathlib import Path

from bert.mlperf_rules import CLOSED_MODEL, closed_benchmark_problems
from bert.model.config import named_config
from bert.rcp import RcpError, convergence, rcp_source, reference_points, safe_sample_cap, sample_cap_floor
from bert.system import Descriptor

Problem = tuple[str, str]  # (field, what is wrong and the fix)


def inputs_judged(system: Descriptor) -> bool:
    """Whether what `system` starts from is held to the closed division's rules: a closed run on a GPU (a CPU
    rehearsal of a closed descriptor trains on whatever the test or check gives it)."""
    return system.division == "closed" and system.run.device == "cuda"


def benchmark_problems(system: Descriptor) -> list[Problem]:
    run = system.run
    return closed_benchmark_problems(run.model, run.model_config(), named_config(CLOSED_MODEL), run.max_seq_length,
                                     run.max_predictions_per_seq, run.eval.target_accuracy, run.eval.samples)


def sample_cap_problems(system: Descriptor) -> list[Problem]:
    """The batch size has a reference convergence point, and run.max_samples is at least the RCP's mean samples to
    converge plus one eval interval."""
    run, batch, interval = system.run, system.run.global_batch_size, system.eval_interval_samples
    try:
        reference = convergence(batch, run.ruleset)
    except RcpError as e:
        return [("run.ruleset", str(e))]
    if reference is None:
        largest = max(reference_points(run.ruleset))
        return [("run.global_batch_size", f"{batch} is above the largest reference convergence point ({largest}, "
                 f"{rcp_source(run.ruleset)}): the RCP checker fails a closed submission at it ('Missing RCP'); use "
                 f"at most {largest}")]
    floor = sample_cap_floor(reference, interval)
    if run.max_samples >= floor:
        return []
    safe = safe_sample_cap(reference, batch, interval)
    return [("run.max_samples", f"{run.max_samples:,} is below the reference's samples to converge at global batch "
             f"{batch} ({reference.source}: mean {reference.mean:,.0f}, {rcp_source(run.ruleset)}) plus one eval "
             f"interval ({interval:,}) = {floor:,}: every run slower than the reference's mean would stop aborted "
             f"before the eval that reaches the target; set it to at least {floor:,} ({safe:,} lets a run as slow as "
             f"the slowest reference run converge), or drop it with run.rcp_hyperparameters set to derive it")]


def descriptor_problems(system: Descriptor) -> list[Problem]:
    """Every reason the closed descriptor `system` cannot make an accepted closed run (none for the others)."""
    if system.division != "closed":
        return []
    problems = benchmark_problems(system)
    return problems + sample_cap_problems(system) if not problems else problems


def input_problems(system: Descriptor, data_dir: Path | None, checkpoint_dir: Path | None) -> list[str]:
    """What the closed run `system` would start from that is not official: the dataset (its `data mlperf`
    provenance and unchanged files) and the converted phase-1 checkpoint; one line each (none for the others)."""
    if not inputs_judged(system):
        return []
    from bert.prep.official_files import checkpoint_verdict, dataset_verdict

    problems = []
    root = system.dataset_dir(data_dir)
    dataset = dataset_verdict(root)
    if root.is_dir() and not dataset.official:  # a missing folder is the pre-flight's own line
        problems.append(f"a closed run trains on the official MLPerf dataset, but {dataset.reason}")
    checkpoint = system.init_checkpoint_path(checkpoint_dir)
    if checkpoint is None:
        problems.append("a closed run starts from the MLPerf phase-1 checkpoint, but run.init_checkpoint is null: "
                        "convert it (`mlperf-bert checkpoint convert model.ckpt-28252 OUT`) and name OUT there")
    elif checkpoint.exists():
        verdict = checkpoint_verdict(checkpoint)
        if not verdict.official:
            problems.append(f"a closed run starts from the official MLPerf phase-1 checkpoint, but {verdict.reason}")
    return problems


def preflight_problems(system: Descriptor, node: int, data_dir: Path | None, checkpoint_dir: Path | None) -> list[str]:
    """The pre-flight's closed-division lines of node `node`: the descriptor's problems (node 0 says them), then
    what this node would start from."""
    lines = [f"{system.path}: {field}: {problem}" for field, problem in descriptor_problems(system)] if node == 0 \
        else []
    return lines + input_problems(system, data_dir, checkpoint_dir)
