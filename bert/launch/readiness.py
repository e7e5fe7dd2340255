"""What the first rank would refuse at start-up, refused by the pre-flight instead, before any run starts: a
refusal there would end every one of NEXP runs the same way, each publishing an aborted log.

Each check is the rank's own code, asked early: the dataset's start-up check (bert.data.dataset.check_dataset,
against its manifest), the checkpoint reader (bert.checkpoint), the FP8 implementation's choice
(bert.model.fp8) and the compile warm-up's backend (bert.compile_warmup). The pre-flight runs before every start
(and a multi-node one within run.launch.preflight_timeout_s), so each check takes the cheap way to the same
verdict: the dataset's sample counts come from its manifest, whose files' names, sizes and times are compared,
instead of 4,320 HDF5 headers (a minute); the checkpoint is mapped, not read into memory; the compiler is asked
whether it works, nothing is compiled.
"""

from __future__ import annotations

from pathlib import Path

from bert.data.dataset import check_dataset, dataset_files
from bert.data.shards import ShardError
from bert.system import Descriptor


def first_rank_refusals(system: Descriptor, data_dir: Path | None, checkpoint_dir: Path | None, dataset_here: bool,
                        checkpoint_here: bool) -> list[str]:
    """What the first rank would refuse on this host, one line each: of the dataset and the checkpoint when they are
    here (the pre-flight says so when they are not), and of the set-up."""
    problems = dataset_refusals(system, data_dir) if dataset_here else []
    if checkpoint_here:
        problems += checkpoint_refusals(system, system.init_checkpoint_path(checkpoint_dir))
    return problems + setup_refusals(system)


def dataset_refusals(system: Descriptor, data_dir: Path | None) -> list[str]:
    """What the rank's check of the dataset there would refuse (a shard changed since its manifest, too few
    samples, a vocabulary the model cannot take), in one line."""
    try:
        needs = system.dataset_needs(data_dir)
        check_dataset(dataset_files(needs), needs, read_headers=False)
    except ShardError as e:
        return [str(e)]
    return []


def checkpoint_refusals(system: Descriptor, path: Path | None) -> list[str]:
    """What the rank's loading of run.init_checkpoint at `path` would refuse (not a checkpoint, one that does not
    fit the model, weights that are not finite floats), in one line."""
    if path is None:
        return []
    from bert.checkpoint import check_usable
    from bert.checkpoint_files import CheckpointError

    try:
        check_usable(path, system.model_config())
    except CheckpointError as e:
        return [f"the checkpoint to start from (run.init_checkpoint): {e}"]
    return []


def setup_refusals(system: Descriptor) -> list[str]:
    """What the rank's set-up would refuse on this host: run.precision "fp8" without an implementation or FP8
    tensor cores, run.compile "required" with a compiler that does not work. One line each."""
    fp8, compile_required = system.run.precision == "fp8", system.run.compile == "required"
    if not (fp8 or compile_required):
        return []
    import torch

    if system.run.device == "cuda" and not torch.cuda.is_available():
        return []  # the pre-flight's line on the device says what is missing
    problems = []
    if fp8:
        from bert.model.fp8 import fp8_problem

        problems.append(fp8_problem(torch.device(system.run.device)))
    if compile_required:
        from bert.compile_warmup import compiler_problem

        problems.append(compiler_problem(system))
    return [problem for problem in problems if problem]
