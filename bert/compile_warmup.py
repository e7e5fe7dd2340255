"""The compile warm-up: every shape a run's compiled regions will meet (run.compile's encoder layers, each recorded
as a CUDA graph under run.cuda_graphs; LAMB's update under run.optimizer.implementation "compiled") is compiled
between init_start and init_stop, on made-up batches, so that no compilation lands inside the timed region.

`shape_batches(descriptor)`: a training micro-batch of each token size (run.token_sizes; without them, two of
different shapes) and an eval batch of each eval size, on the host. `compile_every_shape(step, run, batches)`
(run: the run block's compile settings) runs them through the run's TrainStep (the model itself, not DDP's
wrapper; the update; the eval forwards; each shape three times under CUDA graphs), puts back the weights,
gradients, optimizer state, loss scaler and every random stream, and returns a `CompileWarmup`: the seconds, the
shapes, and the `fallbacks`, the compiled parts that failed and run eager from then on. With run.compile
"required" a failure raises CompileFailed (exit status 2) instead. Why the run is the one it would have been
without: docs/performance.md, "The compile warm-up".
"""

from __future__ import annotations

import copy
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from bert.data.batch import Batch, collate, collate_packed
from bert.data.random_samples import random_samples
from bert.interrupts import RunInterrupted
from bert.model.pretraining import uncompile_encoder
from bert.model.token_rounding import TokenSizes, token_sizes
from bert.optim.settings import OptimizerSpec
from bert.step import TrainStep
from bert.step_settings import CompileSpec
from bert.system import Descriptor

MIN_LENGTH = 8  # the shortest made-up sequence: [CLS] A [SEP] B [SEP] and masked positions to spare


LAYERS = "encoder layers (run.compile)"
UPDATE = "LAMB update (run.optimizer.implementation)"
MAX_REASON = 300  # characters of an error's message kept in its one line


@dataclass(frozen=True)
class Fallback:
    """A compiled part that runs eager, and why."""

    part: str  # LAYERS or UPDATE
    reason: str  # one line: the error's type and its message's first line

    def __str__(self) -> str:
        return f"{self.part} run eager: compiling failed before the clock: {self.reason}"


@dataclass(frozen=True)
class CompileWarmup:
    seconds: float
    train_shapes: int  # training micro-batches of distinct shapes
    eval_shapes: int
    fallbacks: tuple[Fallback, ...] = ()


class CompileFailed(RuntimeError):
    """A compiled part failed in the warm-up and run.compile is "required"."""

    exit_status = 2  # bert.train's exit code for it: not a failed run of the benchmark, a refused set-up

    def __init__(self, fallback: Fallback):
        super().__init__(f"{fallback.part} failed to compile and run.compile is \"required\": {fallback.reason}; "
                         "set run.compile to true to run such a part eager instead")


def compiles_anything(compiling: CompileSpec, optimizer: OptimizerSpec) -> bool:
    return bool(compiling.compile) or optimizer.implementation == "compiled"


def compiler_problem(system: Descriptor) -> str | None:
    """What the warm-up of a run.compile "required" run would fail with here before it compiled anything, or None:
    torch.compile's backend, inductor, generates C++ for the CPU, built by the compiler it finds (CXX, else g++ or
    clang++), and Triton kernels for CUDA. Asked of inductor itself, by the pre-flight: seconds, not the minutes
    of a compilation."""
    run = system.run
    if run.compile != "required":  # a part that fails to compile otherwise runs eager
        return None
    try:
        if run.device == "cuda":
            from torch.utils._triton import has_triton

            if not has_triton():
                raise RuntimeError("Triton, which inductor writes CUDA kernels in, is not installed or does not "
                                   "support this GPU")
        else:
            from torch._inductor.cpp_builder import get_cpp_compiler

            get_cpp_compiler()  # raises InvalidCxxCompiler unless the compiler inductor would use works
    except Exception as e:
        return str(CompileFailed(Fallback(LAYERS, describe_failure(e))))
    return None


def describe_failure(error: BaseException) -> str:
    """One line: the error's type and the first line of its message; for an error that wraps another (Dynamo's
    BackendCompilerFailed around an inductor or Triton error), its type and the wrapped error's."""
    def line(e: BaseException) -> str:
        first = next((text.strip() for text in str(e).splitlines() if text.strip()), "")
        return f"{type(e).__name__}: {first}" if first else type(e).__name__
    cause = error.__cause__ or getattr(error, "inner_exception", None)
    text = f"{type(error).__name__} from {line(cause)}" if cause not in (None, error) else line(error)
    return text if len(text) <= MAX_REASON else text[:MAX_REASON - 3] + "..."


def _lengths(tokens: int, count: int) -> np.ndarray:
    """`count` sequence lengths of `tokens` tokens in all, as even as they go."""
    each, more = divmod(tokens, count)
    return np.full(count, each, dtype=np.int64) + (np.arange(count) < more)


def _lengths_per_size(sizes: TokenSizes, count: int) -> list[np.ndarray]:
    """For each size, the lengths of `count` sequences that round to it (bert.model.token_rounding)."""
    fillers = sizes.slots - count
    out = []
    for size in sizes.sizes:
        tokens = min(max(size - fillers, count * MIN_LENGTH), count * sizes.max_len)
        lengths = _lengths(tokens, count)
        if sizes.size_for(int(lengths.sum()), count) == size:
            out.append(lengths)
    return out


def _dynamic_lengths(count: int, max_len: int) -> list[np.ndarray]:
    """Two batches of different token counts, padded lengths and longest sequences, as the loader's change."""
    rng = np.random.default_rng(0)
    low = min(max(MIN_LENGTH, max_len // 4), max_len)
    return [rng.integers(low, max_len + 1, count) for _ in range(2)]


def _batches(system: Descriptor, count: int, sizes: TokenSizes | None, packed: bool, seed: int) -> list[Batch]:
    """Batches of `count` made-up sequences in the layout the run makes (rounded to `sizes`, or in packed rows),
    one per shape to compile."""
    run, config = system.run, system.model_config()
    max_len = run.max_seq_length
    all_lengths = _lengths_per_size(sizes, count) if sizes is not None else _dynamic_lengths(count, max_len)
    batches = []
    for k, lengths in enumerate(all_lengths):
        samples = random_samples(lengths, config.vocab_size, run.max_predictions_per_seq, seed=seed + k)
        batches.append(collate_packed(samples, max_len) if packed else collate(samples, sizes=sizes))
    return batches


@dataclass
class _Saved:
    """What the run's numbers depend on, as it stood before the warm-up."""

    weights: dict[str, torch.Tensor]
    optimizer: dict
    scaler: dict
    streams: tuple

    @staticmethod
    def take(step: TrainStep) -> _Saved:
        device = step.ctx.device
        cuda = torch.cuda.get_rng_state(device) if device.type == "cuda" else None
        return _Saved({k: v.detach().clone() for k, v in step.model.state_dict().items()},
                      copy.deepcopy(step.optimizer.state_dict()), step.scaler.state_dict(),
                      (random.getstate(), np.random.get_state(), torch.get_rng_state(), cuda))

    def put_back(self, step: TrainStep) -> None:
        step.model.load_state_dict(self.weights)  # copied in place: CUDA graphs keep their parameters' memory
        step.zero_grad()
        step.optimizer.load_state_dict(self.optimizer)
        step.scaler.load_state_dict(self.scaler)
        python, numpy, cpu, cuda = self.streams
        random.setstate(python)
        np.random.set_state(numpy)
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state(cuda, step.ctx.device)


@dataclass(frozen=True)
class ShapeBatches:
    train: list[Batch]  # a per-rank micro-batch of each shape training meets
    evals: list[Batch]  # an eval batch of each shape the eval meets


def shape_batches(system: Descriptor) -> ShapeBatches:
    """The made-up batches of every shape the run's compiled regions will meet, on the host."""
    run, batch, eval_batch = system.run, system.per_process_batch, system.run.eval.batch_size
    train = _batches(system, batch, token_sizes(run.token_sizes, batch, run.max_seq_length),
                     packed=system.balance.packed, seed=1)
    evals = _batches(system, eval_batch, token_sizes(run.token_sizes, eval_batch, run.max_seq_length),
                     packed=False, seed=2)  # the eval set is never packed (bert.eval)
    return ShapeBatches(train, evals)


class _Attempts:
    """The compiled parts tried so far: a part whose compiling fails runs eager from then on (a Fallback), unless
    the run requires compiling (CompileFailed)."""

    def __init__(self, required: bool):
        self.required = required
        self.fallbacks: list[Fallback] = []

    def compiled(self, part: str, work: Callable[[], None], run_eager: Callable[[], None]) -> bool:
        """Runs `work`, which compiles `part`; on a failure `part` runs eager from then on. Whether it worked."""
        try:
            work()
            return True
        except RunInterrupted:
            raise
        except Exception as e:
            fallback = Fallback(part, describe_failure(e))
            if self.required:
                raise CompileFailed(fallback) from e
            run_eager()
            self.fallbacks.append(fallback)
            return False


def _train_shapes(step: TrainStep, batches: list[Batch], repeats: int) -> None:
    for batch in batches:
        for _ in range(repeats):
            step.forward_backward(batch.to(step.ctx.device), step.model)


def _eval_shapes(step: TrainStep, batches: list[Batch], repeats: int) -> None:
    model = step.model
    model.eval()
    try:
        with torch.no_grad():
            for batch in batches:
                for _ in range(repeats):
                    with step.autocast:
                        model(**batch.to(step.ctx.device).model_inputs(step.unpadded))
    finally:
        model.train()


def compile_every_shape(step: TrainStep, run: CompileSpec, batches: ShapeBatches) -> CompileWarmup:
    """Compiles (and records under CUDA graphs) every shape of the run's compiled regions through `step`, on
    `batches` (shape_batches), then puts back everything it changed; a compiled part that fails runs eager from
    then on (CompileWarmup.fallbacks), unless run.compile is "required" (CompileFailed). Call it before the clock
    starts, on every rank (it communicates only what the update does without DDP, and all ranks compile the same)."""
    model, start, saved = step.model, time.perf_counter(), _Saved.take(step)
    repeats = 3 if run.cuda_graphs else 1
    attempts = _Attempts(run.compile == "required")
    layers_compiled = bool(run.compile)
    if not layers_compiled:
        _train_shapes(step, batches.train, repeats)  # eager: the update's gradients
    elif not attempts.compiled(LAYERS, lambda: _train_shapes(step, batches.train, repeats),
                               lambda: uncompile_encoder(model)):
        layers_compiled = False
        step.zero_grad()
        step.forward_backward(batches.train[0].to(step.ctx.device), model)  # the update's gradients, eager
    if getattr(step.optimizer, "compiled", False):  # bert.optim.lamb.Lamb's update through torch.compile
        attempts.compiled(UPDATE, step.update, step.optimizer.run_eagerly)
    else:
        step.update()
    if layers_compiled:
        attempts.compiled(LAYERS, lambda: _eval_shapes(step, batches.evals, repeats), lambda: uncompile_encoder(model))
    elif not run.compile:
        _eval_shapes(step, batches.evals, repeats)
    saved.put_back(step)
    if step.ctx.device.type == "cuda":
        torch.cuda.synchronize(step.ctx.device)
    return CompileWarmup(time.perf_counter() - start, len(batches.train), len(batches.evals),
                         tuple(attempts.fallbacks))
