"""The Python checks of acceptance/gpu_check.sh: each subcommand prints what it found, ends with one line
`<check>: ok ...` or `<check>: FAILED ...`, and exits non-zero when the check fails. With --device cpu each runs
at toy sizes, as the rehearsal (GPU_CHECK_DEVICE=cpu) that CI runs so that the script cannot drift.

    python -m acceptance.gpu_check descriptor OUTDIR DATADIR   # the short run's descriptor (OUTDIR/gpu_check.json)
    python -m acceptance.gpu_check layer       # one BERT-large layer, train mode: attention path, kernels, dtype
    python -m acceptance.gpu_check nosync      # the real step never waits for the GPU (bf16, then fp16)
    python -m acceptance.gpu_check step        # the descriptor's step, compiled, eager and FP8: seq/s and MFU
    python -m acceptance.gpu_check speed       # compiled layer and compiled LAMB update against their eager forms
    python -m acceptance.gpu_check nccl        # DDP with the bucket-wise clip hook (bf16 gradient), a gloo group
    python -m acceptance.gpu_check graphs      # a static-shape compiled layer with and without CUDA graphs
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import datetime
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

from benchmarks.common.data import synthetic_samples
from benchmarks.common.host_sync import host_reads_fail
from benchmarks.common.lamb_pair import DRIFT_TOLERANCE, LambPair
from benchmarks.common.profiling import profile_once, summary
from benchmarks.common.ranks import free_port, process_group
from benchmarks.common.timing import median_seconds, peak_flops, sync
from bert.compile_warmup import compile_every_shape, compiles_anything, shape_batches
from bert.data.batch import collate
from bert.data.random_samples import random_samples
from bert.distributed.launch import DistContext, wait_for_all
from bert.model.attention import attention_mask
from bert.model.config import BertConfig, named_config
from bert.model.fp8 import fp8_backend
from bert.model.padding import TokenLayout
from bert.model.pretraining import BertForPreTraining, EncoderLayer, choose_kernels, compile_layer
from bert.model.token_rounding import TokenSizes, token_sizes
from bert.optim.factory import build_optimizer, build_schedule
from bert.prep.instances import SampleSpec
from bert.simulate.flops import training_flops
from bert.simulate.load_balance import named_lengths
from bert.step import PRECISION_DTYPES, TrainStep
from bert.system import Descriptor, load_descriptor

SHORT_RUN_UPDATES, SHORT_RUN_EVALS = 60, 2


@dataclasses.dataclass(frozen=True)
class Sizes:
    sequences: int  # per micro-batch
    length: int
    run: dict  # the short run's changes to systems/h200_1x1.json besides its length and updates
    corpus: dict  # its synthetic corpus
    model: str = "large"


SIZES = {
    "cuda": Sizes(56, 512, {}, {"train_samples": 8192, "eval_samples": 1000, "shards": 8}),
    "cpu": Sizes(4, 64, {"model": "micro", "device": "cpu", "global_batch_size": 8,
                             "gradient_accumulation_steps": 2, "max_predictions_per_seq": 10,
                             "print_interval_steps": 10},
                 {"train_samples": 512, "eval_samples": 64, "shards": 2, "max_predictions": 10}, model="micro"),
}


def short_run_descriptor(out: Path, data: Path, device: str) -> Descriptor:
    """systems/h200_1x1.json for 60 updates and 2 evals on a synthetic corpus, from random weights (no phase-1
    checkpoint is on the machine), eager, open division: a check of the wrapper, the data and the log, not a
    result."""
    sizes, base = SIZES[device], load_descriptor("h200_1x1")
    batch = sizes.run.get("global_batch_size", base.run.global_batch_size)
    corpus = {"vocab_size": 4096, "seed": 12345, "form": "varlen", "max_seq_length": sizes.length,
              "max_predictions": base.run.max_predictions_per_seq, **sizes.corpus}
    # From random weights a few warm-up steps keep the first updates small (the descriptor starts from phase 1).
    # Eager: the step stage times the compiled step; compiling BERT-large here too would cost this stage's minutes.
    changes = {**sizes.run, "max_seq_length": sizes.length, "init_checkpoint": None, "seed": 1, "compile": False,
               "optimizer.implementation": "eager", "optimizer.warmup_steps": 10,
               "max_samples": SHORT_RUN_UPDATES * batch,
               "eval.interval_samples": SHORT_RUN_UPDATES * batch // SHORT_RUN_EVALS,
               "eval.samples": corpus["eval_samples"], "dataset": {"dir": str(data), "synthetic": corpus},
               "notes": f"gpu_check short run: {SHORT_RUN_UPDATES} updates, {SHORT_RUN_EVALS} evals, synthetic "
                        "data, random initialisation (not a result)."}
    return base.variant(changes, name="gpu_check", description={"division": "open"}).write(out)


BERT_DROPOUT = {"hidden_dropout": 0.1, "attention_dropout": 0.1}  # BERT-large's, for the rehearsal's micro model


def descriptor_config(model: str, **overrides: object) -> BertConfig:
    """The named model with h200_1x1's choices (its GELU), as the checked runs compute it."""
    return named_config(model, gelu=load_descriptor("h200_1x1").model_config().gelu, **overrides)


def layer_check(device: torch.device) -> bool:
    """One encoder layer of BERT-large in train mode (dropout 0.1) on the unpadded tokens of full-length
    sequences, bf16 autocast: which SDPA backend torch picks for its attention, the kernels of a forward and
    backward, the dtype it hands to the next layer. (The CPU rehearsal's layer is the micro model's: a CPU's
    bf16 weight gradients of BERT-large take a minute.)"""
    sizes = SIZES[device.type]
    config = descriptor_config(sizes.model, **BERT_DROPOUT)
    torch.manual_seed(0)
    layer = EncoderLayer(config).to(device).train()
    layout = TokenLayout.from_lengths(torch.full((sizes.sequences,), sizes.length), sizes.length).to(device)
    x = torch.randn(layout.num_tokens, config.hidden_size, device=device, dtype=torch.bfloat16, requires_grad=True)
    q = torch.randn(sizes.sequences, config.num_heads, sizes.length, config.head_size, device=device,
                    dtype=torch.bfloat16)  # the shapes and dtype the layer's attention gets
    choice = torch._fused_sdp_choice(q, q, q, attention_mask(layout, device), config.attention_dropout, False)
    backend = {int(getattr(torch.nn.attention.SDPBackend, n)): n for n in dir(torch.nn.attention.SDPBackend)
               if n.isupper()}.get(int(choice), str(choice))
    print(f"SDPA backend torch picks for the padded fallback ({sizes.sequences} x {sizes.length}, "
          f"{config.num_heads} heads of {config.head_size}, bf16, boolean key mask, dropout "
          f"{config.attention_dropout}): {backend}")
    choose_kernels(layer, device)  # as TrainStep decides, before the first forward
    flash = layer.attention.flash_kernel
    path = "variable-length flash kernel" if flash else "padded fallback (SDPA with a key mask)"
    print(f"attention path of the training step (bert.model.attention.unpadded_attention): {path}")

    def forward_backward() -> torch.Tensor:
        with torch.autocast(device.type, dtype=torch.bfloat16):
            out = layer(x, layout, None)
        out.float().square().mean().backward()
        return out

    out = forward_backward()  # warm-up: kernel selection, allocations
    prof, wall = profile_once(forward_backward, device)
    print(f"one layer forward + backward, {sizes.sequences} x {sizes.length} tokens:")
    print("\n".join(summary(prof, device, wall)))
    print(f"layer output dtype {out.dtype} (the residual stream under bf16 autocast)")
    varlen_wanted = device.type == "cuda"  # the point of the kernel: on a GPU, training must take it
    ok = out.dtype == torch.bfloat16 and flash == varlen_wanted
    print(f"layer: {'ok' if ok else 'FAILED'}: {path}, output {out.dtype}")
    return ok


def _step_system(device: torch.device, precision: str, world_size: int = 1, **run: object) -> Descriptor:
    """h200_1x1 as the no-sync and NCCL checks run it: 2 micro-batches a step (with dropout 0.1 everywhere), eager
    (the compiled regions' host reads are traced on fake CUDA in CI, tests/cuda_path; the step stage times them),
    with the `run` changes given. On a CPU it is the rehearsal of that CUDA run (fp16 included)."""
    sizes = SIZES[device.type]
    base = load_descriptor("h200_1x1")
    overrides = {"gelu": base.model_config().gelu}  # the descriptor's, whatever the size
    if sizes.model != "large":
        overrides |= BERT_DROPOUT
    system = base.variant(
        {"model": sizes.model, "model_overrides": overrides, "processes_per_node": world_size,
         "global_batch_size": 2 * sizes.sequences * world_size, "gradient_accumulation_steps": 2,
         "max_seq_length": sizes.length, "init_checkpoint": None, "precision": precision,
         "max_predictions_per_seq": sizes.run.get("max_predictions_per_seq", base.run.max_predictions_per_seq),
         "performance": None,  # the simulator's figures are of one GPU, and this may be two ranks
         "compile": False, "optimizer.implementation": "eager", **run},
        description={"accelerators_per_node": str(world_size)})
    return system if device.type == "cuda" else system.cpu_rehearsal()


def _batches(predictions: int, device: torch.device, count: int) -> list:
    """`count` micro-batches of a synthetic corpus of the check's sizes with `predictions` masked positions a
    sequence at most (run.max_predictions_per_seq), on the device."""
    sizes = SIZES[device.type]
    samples = synthetic_samples(count * sizes.sequences, sizes.length, predictions)
    return [collate(samples.take(np.arange(k * sizes.sequences, (k + 1) * sizes.sequences))).to(device)
            for k in range(count)]


def nosync_check(device: torch.device) -> bool:
    """The training step as the trainer runs it (dropout 0.1, 2 micro-batches) does not wait for the GPU, in
    bf16 and in fp16 with loss scaling; the residual stream between encoder layers is in the autocast dtype."""
    torch.manual_seed(0)
    built = _step_system(device, "bf16")
    with torch.device(device):
        model = BertForPreTraining(built.model_config())
    seen: list[tuple[torch.dtype, torch.dtype]] = []
    for layer in model.bert.encoder:
        layer.register_forward_hook(lambda m, args, out: seen.append((args[0].dtype, out.dtype)))
    batches = _batches(built.run.max_predictions_per_seq, device, 6)
    ok = True
    for precision in ("bf16", "fp16"):
        dtype = PRECISION_DTYPES[precision]
        system = _step_system(device, precision)
        ctx = DistContext(0, 1, 0, 1, device)
        step = TrainStep(system.run, ctx, model, build_optimizer(model, system.run.optimizer),
                         build_schedule(system.run.optimizer))
        step(iter(batches[:2]), 10)  # the first step sets up kernels and memory
        seen.clear()
        try:
            with host_reads_fail(device):
                step(iter(batches[2:4]), 11)
                step(iter(batches[4:6]), 12)
            synced = None
        except RuntimeError as e:
            synced = str(e).splitlines()[0]
        loss, _ = step.pop_loss_and_tokens()
        dtypes = sorted({(str(a), str(b)) for a, b in seen})
        good = synced is None and dtypes == [(str(dtype), str(dtype))] and np.isfinite(loss)
        ok &= good
        print(f"{precision}: {'no host synchronisation in 2 steps' if synced is None else 'SYNC: ' + synced}; "
              f"encoder layer (input, output) dtypes {dtypes}; loss {loss:.3f}"
              + (f"; loss scale {step.scaler.get_scale():g}" if step.scaler.is_enabled() else ""))
    print(f"nosync: {'ok' if ok else 'FAILED'}")
    return ok


STEP_UPDATES = {"cuda": 5, "cpu": 2}  # timed updates of the descriptor's step


def _descriptor_system(device: torch.device) -> Descriptor:
    """systems/h200_1x1.json as it trains (its micro-batch, accumulation, precision, optimizer, compilation); on a
    CPU the rehearsal of that run at toy sizes, with dropout as BERT-large's (the speed stage's layer is that layer:
    inductor's cache then compiles it once for both stages)."""
    system = load_descriptor("h200_1x1").variant({"init_checkpoint": None})
    if device.type == "cuda":
        return system
    sizes = SIZES["cpu"]
    return system.variant({"model": sizes.model, "global_batch_size": 2 * sizes.sequences, "max_seq_length":
                           sizes.length, "gradient_accumulation_steps": sizes.run["gradient_accumulation_steps"],
                           "max_predictions_per_seq": sizes.run["max_predictions_per_seq"],
                           "model_overrides": {**system.run.model_overrides, **BERT_DROPOUT},
                           "performance": None}).cpu_rehearsal()


def step_forms(device: torch.device) -> dict[str, Descriptor]:
    """What the step stage times: the descriptor as published (compiled, the default), the same eager, and in FP8
    where an FP8 implementation imports (bert.model.fp8). The CPU rehearsal runs its FP8 layers eager: inductor's
    CPU code for emulated FP8 says nothing of the GPU's, and the FP8 layer's compiled trace is
    tests/cuda_path/test_layer_proxies.py's."""
    default = _descriptor_system(device)
    forms = {"default": default, "eager": default.variant({"compile": False, "optimizer.implementation": "eager"})}
    if fp8_backend() is not None:
        forms["fp8"] = default.variant({"precision": "fp8", **({} if device.type == "cuda" else {"compile": False})})
    return forms


def _mlperf_micro_batches(system: Descriptor, count: int) -> tuple[list, list[float]]:
    """`count` micro-batches of the descriptor's size with MLPerf-length sequences, as many masked positions each
    as the reference masks, rounded to run.token_sizes where set; and the model FLOPs each needs."""
    run, config = system.run, system.model_config()
    sizes = token_sizes(run.token_sizes, system.per_process_batch, run.max_seq_length)
    spec = SampleSpec(max_seq_length=run.max_seq_length, max_predictions=run.max_predictions_per_seq)
    batches, flops = [], []
    for k in range(count):
        lengths = named_lengths("mlperf-wiki", system.per_process_batch, seed=k, max_len=run.max_seq_length)
        masked = spec.masked_count(lengths)
        samples = random_samples(lengths, config.vocab_size, run.max_predictions_per_seq, seed=k, masked=masked)
        batches.append(collate(samples, sizes=sizes))
        flops.append(training_flops(config, lengths, float(masked.sum())))
    return batches, flops


@dataclasses.dataclass(frozen=True)
class StepTiming:
    seconds: float  # of the timed updates
    rate: float  # sequences/s
    mfu: float
    loss: float
    warm_s: float
    fallbacks: tuple[str, ...]  # the compiled parts that ran eager (bert.compile_warmup)


def time_step(system: Descriptor, device: torch.device, peak: float) -> StepTiming:
    """`system`'s training step as a run takes it (bert.step.TrainStep: its micro-batch, gradient accumulation,
    precision, optimizer and clipping, compiled before the clock where it compiles: the training shapes and the
    update; the eval's shapes are the short run's) on batches of the MLPerf length mix."""
    run, updates = system.run, STEP_UPDATES[device.type]
    torch.manual_seed(0)
    with torch.device(device):
        model = BertForPreTraining(system.model_config())
    step = TrainStep(system.run, DistContext(0, 1, 0, 1, device), model, build_optimizer(model, run.optimizer),
                     build_schedule(run.optimizer))
    warmed = (compile_every_shape(step, run, dataclasses.replace(shape_batches(system), evals=[]))
              if compiles_anything(run, run.optimizer) else None)
    accumulate = run.gradient_accumulation_steps
    batches, flops = _mlperf_micro_batches(system, (updates + 1) * accumulate)
    batches = [b.to(device) for b in batches]
    step(iter(batches[:accumulate]), 0)  # untimed: kernels chosen, memory allocated
    sync(device)
    start = time.perf_counter()
    for u in range(1, updates + 1):
        step(iter(batches[u * accumulate:(u + 1) * accumulate]), u)
    loss, _ = step.pop_loss_and_tokens()
    seconds = time.perf_counter() - start
    mfu = sum(flops[accumulate:]) / seconds / peak  # the timed updates' batches, not the untimed first one's
    return StepTiming(seconds, updates * run.global_batch_size / seconds, mfu, loss,
                      warmed.seconds if warmed else 0.0, tuple(str(f) for f in warmed.fallbacks) if warmed else ())


def _describe(system: Descriptor) -> str:
    run = system.run
    return (f"{run.precision}, {'compiled layers' if run.compile else 'eager layers'}, LAMB "
            f"{run.optimizer.implementation}")


def step_check(device: torch.device) -> bool:
    """The descriptor's training step on the MLPerf length mix, in each of step_forms, one after the other in one
    process: sequences/s and model FLOP utilisation per form (the default's are the figures run.performance takes:
    gpu_samples_per_s, or model_flops_utilization with the peak), and the ratios between them."""
    forms = step_forms(device)
    default = forms["default"]
    # A CPU's bf16 matmuls are emulated: its rehearsal measures a peak in small fp32 matmuls (meaningless there).
    peak, peak_source = (peak_flops(device, PRECISION_DTYPES[default.run.precision]) if device.type == "cuda"
                         else peak_flops(device, torch.float32, n=512))
    run = default.run
    mean = float(np.mean(named_lengths("mlperf-wiki", 10_000, max_len=run.max_seq_length)))
    print(f"step of {default.name} as it trains ({run.gradient_accumulation_steps} micro-batch(es) of "
          f"{default.per_process_batch}, MLPerf length mix (mean {mean:.0f} tokens), LAMB; model FLOP utilisation of "
          f"{peak / 1e12:.3g} TFLOP/s ({peak_source}))")
    timings, ok = {}, True
    for name, system in forms.items():
        timing = timings[name] = time_step(system, device, peak)
        for fallback in timing.fallbacks:
            print(f"  {name}: {fallback}")
        print(f"step[{name}] ({_describe(system)}; compiled before the clock in {timing.warm_s:.1f} s): "
              f"{timing.rate:.1f} sequences/s, model FLOP utilisation {100 * timing.mfu:.1f}%, loss {timing.loss:.3f}: "
              f"gpu_samples_per_s={timing.rate:.1f} model_flops_utilization={timing.mfu:.3f}", flush=True)
        ok &= bool(np.isfinite(timing.loss) and timing.rate > 0)
        if device.type == "cuda":
            torch.cuda.empty_cache()
    print(f"step: compiled_over_eager_step={timings['default'].seconds / timings['eager'].seconds:.3f}"
          + (f" fp8_over_bf16_step={timings['fp8'].seconds / timings['default'].seconds:.3f}" if "fp8" in timings
             else " (no FP8: neither torchao nor Transformer Engine imports here)"))
    print(f"step: {'ok' if ok else 'FAILED'}")
    return ok


TIMED_REPEATS = 5  # calls timed per side, after the one that compiles


def _mlperf_batches(sizes: Sizes, hidden: int, device: torch.device, rounding: TokenSizes | None = None,
                    dtype: torch.dtype = torch.float32) -> list[tuple[torch.Tensor, TokenLayout]]:
    """Three layer inputs of `sizes.sequences` MLPerf-length sequences each (three token counts, or one when
    `rounding` rounds them), with their layouts."""
    batches = []
    for k in range(3):
        lengths = named_lengths("mlperf-wiki", sizes.sequences, seed=k, max_len=sizes.length)
        layout = (TokenLayout.from_lengths(torch.from_numpy(lengths), sizes.length) if rounding is None
                  else rounding.layout(lengths)).to(device)
        batches.append((torch.randn(layout.num_tokens, hidden, device=device, dtype=dtype, requires_grad=True),
                        layout))
    return batches


def _layer_steps(module: torch.nn.Module, batches: list, device: torch.device,
                 graphs: bool = False) -> Callable[[], None]:
    """Forward and backward of `module` over `batches` under bf16 autocast (a new CUDA graph round each, with
    `graphs`)."""
    def run() -> None:
        for x, layout in batches:
            if graphs:
                torch.compiler.cudagraph_mark_step_begin()
            with torch.autocast(device.type, dtype=torch.bfloat16):
                module(x, layout, None).float().square().mean().backward()
    return run


def _layer_twins(device: torch.device, dropout: float) -> tuple[BertConfig, EncoderLayer, EncoderLayer]:
    """An encoder layer of the check's model in train mode, its kernels chosen as TrainStep chooses them, and an
    identical copy of it."""
    config = descriptor_config(SIZES[device.type].model, hidden_dropout=dropout, attention_dropout=dropout)
    torch.manual_seed(0)
    layer = EncoderLayer(config).to(device).train()
    choose_kernels(layer, device)
    return config, layer, copy.deepcopy(layer)


def speed_check(device: torch.device) -> bool:
    """The compiled forms against their eager ones, in one process: an encoder layer (regional compilation,
    dynamic token counts, dropout 0.1) over batches of MLPerf-length sequences, and the LAMB update of the model
    (benchmarks.common.lamb_pair). Prints each one's time and the ratio; the compiled update must stay within
    DRIFT_TOLERANCE of the eager one. Both are the step stage's graphs, which inductor's cache (the check's own,
    TORCHINDUCTOR_CACHE_DIR) holds compiled already: the time this stage adds is Dynamo's tracing."""
    sizes = SIZES[device.type]
    config, layer, compiled_layer = _layer_twins(device, dropout=0.1)
    compile_layer(compiled_layer)
    # Three token counts: the compiled layer must not recompile for each.
    batches = _mlperf_batches(sizes, config.hidden_size, device, dtype=torch.bfloat16)
    start = time.perf_counter()
    _layer_steps(compiled_layer, batches, device)()
    compile_s = time.perf_counter() - start
    eager_s = median_seconds(_layer_steps(layer, batches, device), device, TIMED_REPEATS)
    compiled_s = median_seconds(_layer_steps(compiled_layer, batches, device), device, TIMED_REPEATS)
    tokens = sum(layout.num_tokens for _, layout in batches)
    print(f"encoder layer forward + backward, 3 batches of {sizes.sequences} MLPerf-length sequences ({tokens} "
          f"tokens), bf16, dropout 0.1: eager {eager_s * 1e3:.2f} ms, compiled {compiled_s * 1e3:.2f} ms (compiled "
          f"in {compile_s:.1f} s): compiled_over_eager_layer={compiled_s / eager_s:.3f}")

    with torch.device(device):  # the step stage's model: inductor's cache holds its compiled update already
        model = BertForPreTraining(descriptor_config(sizes.model))
    pair = LambPair(model)
    pair.warm_up(device)
    for r in range(TIMED_REPEATS):
        pair.round(r, 1, device)
    eager_s, compiled_s = (side.seconds_per_update("wall") for side in pair.sides)
    drift, scale = pair.drift()
    print(f"LAMB update of BERT-{sizes.model} with {len(model.bert.encoder)} layers ({pair.parameters:,} parameters): "
          f"eager {eager_s * 1e3:.2f} ms, compiled {compiled_s * 1e3:.2f} ms (compiled in {pair.compile_seconds:.1f} "
          f"s), largest difference after {1 + TIMED_REPEATS} updates {drift:.2g} (at most {DRIFT_TOLERANCE:g} of the "
          f"largest weight, {scale:.3g}): compiled_over_eager_lamb={pair.ratio('wall'):.3f}")
    ok = pair.agree() and all(x.grad is not None and x.grad.isfinite().all() for x, _ in batches)
    print(f"speed: {'ok' if ok else 'FAILED'}")
    return ok


def graphs_check(device: torch.device) -> bool:
    """An encoder layer compiled for static shapes (run.token_sizes) against the same layer
    recorded under CUDA graphs (run.cuda_graphs), forward and backward in train mode over micro-batches rounded
    to one size, so that each side compiles once. On a CPU, reduce-overhead records no graph: the rehearsal runs
    the code path only. Both sides must give the same gradient (the graph replays the same kernels)."""
    sizes = SIZES[device.type]
    config, static, graphed = _layer_twins(device, dropout=0.0)
    for p in (*static.parameters(), *graphed.parameters()):  # kept in place, as the step keeps them under graphs
        p.grad = torch.zeros_like(p)
    compile_layer(static, static=True)
    # On a CPU reduce-overhead records no graph and both sides run the same kernels: compiled alike, inductor's cache
    # compiles them once (tests/cuda_path traces the CUDA graphs' compile options).
    compile_layer(graphed, static=True, cuda_graphs=device.type == "cuda")
    rounding = TokenSizes.spread(1, sizes.sequences, sizes.length)  # one size: every batch has one shape
    batches = _mlperf_batches(sizes, config.hidden_size, device, rounding)
    timings = {}
    for name, module, graphs in (("static", static, False), ("graphs", graphed, True)):
        for x, _ in batches:
            x.grad = None
        start = time.perf_counter()
        _layer_steps(module, batches, device, graphs)()
        compile_s = time.perf_counter() - start
        timings[name] = (median_seconds(_layer_steps(module, batches, device, graphs), device, TIMED_REPEATS),
                         compile_s)
    grads = [p.grad for p in static.parameters()], [p.grad for p in graphed.parameters()]
    agree = all(torch.allclose(a, b, rtol=1e-2, atol=1e-3) for a, b in zip(*grads))
    (static_s, static_compile), (graphs_s, graphs_compile) = timings["static"], timings["graphs"]
    print(f"encoder layer forward + backward, 3 batches of {sizes.sequences} rounded to {rounding.sizes[0]} tokens, "
          f"bf16: compiled {static_s * 1e3:.2f} ms (compiled in {static_compile:.1f} s), under CUDA graphs "
          f"{graphs_s * 1e3:.2f} ms (in {graphs_compile:.1f} s): cuda_graphs_over_compiled_layer="
          f"{graphs_s / static_s:.3f}")
    print(f"graphs: {'ok' if agree else 'FAILED: the gradients differ'}")
    return agree


def nccl_check(device: torch.device) -> bool:
    """One process, one GPU: the NCCL group (gloo on a CPU) with DDP and the bucket-wise clip hook, the gradient
    sent in bf16 (run.grad_comm_dtype), for 2 steps,
    a gloo sub-group with run.dist_timeout_s as the presort exchange makes one, and the barrier before
    run_start. (Several ranks on one GPU are refused by NCCL; tests/bert/distributed covers several gloo ranks.)"""
    backend = "nccl" if device.type == "cuda" else "gloo"
    with process_group(0, 1, free_port(), datetime.timedelta(seconds=60), backend=backend, threads=None,
                       device_id=device if device.type == "cuda" else None):
        system = _step_system(device, "bf16", world_size=2, clip="bucketwise_before_allreduce", grad_comm_dtype="bf16",
                              model_overrides={"num_layers": 2}, bucket_cap_mb=25.0 if device.type == "cuda" else 0.25)
        # TrainStep wraps DDP for several ranks; the group has one (this GPU), which DDP reduces over.
        ctx = DistContext(0, 2, 0, 2, device)
        torch.manual_seed(0)
        with torch.device(device):
            model = BertForPreTraining(system.model_config())
        step = TrainStep(system.run, ctx, model, build_optimizer(model, system.run.optimizer),
                         build_schedule(system.run.optimizer))
        batches = _batches(system.run.max_predictions_per_seq, device, 4)
        before = [p.detach().clone() for p in model.parameters()]
        step(iter(batches[:2]), 10)
        step(iter(batches[2:]), 11)
        step.check_numerics()
        changed = sum(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
        group = dist.new_group([0], backend="gloo", timeout=datetime.timedelta(seconds=system.run.dist_timeout_s))
        gathered = [torch.zeros(2, dtype=torch.int32)]
        dist.all_gather(gathered, torch.tensor([7, 8], dtype=torch.int32), group=group)
        wait_for_all(DistContext(0, 2, 0, 2, device))
        loss, _ = step.pop_loss_and_tokens()
        ok = (step.clipping.num_buckets >= 1 and changed == len(before) and gathered[0].tolist() == [7, 8]
              and np.isfinite(loss))
        print(f"{backend}: DDP over {dist.get_world_size()} rank(s), {step.clipping.num_buckets} bucket(s) clipped "
              f"by the hook and sent in bf16, {changed}/{len(before)} tensors updated, loss {loss:.3f}; gloo sub-group "
              f"all_gather {gathered[0].tolist()}; barrier passed")
        print(f"nccl: {'ok' if ok else 'FAILED'}")
        return ok


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("check", choices=("descriptor", "layer", "nosync", "step", "speed", "nccl", "graphs"))
    p.add_argument("paths", nargs="*", type=Path, help="descriptor: OUTDIR DATADIR")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    args = p.parse_args(argv)
    if args.check == "descriptor":
        out, data = args.paths
        print(short_run_descriptor(out, data, args.device).path)
        return 0
    if args.device == "cuda" and not torch.cuda.is_available():
        print(f"torch {torch.__version__} sees no CUDA device; pass --device cpu for the rehearsal", file=sys.stderr)
        return 2
    device = torch.device(args.device, 0) if args.device == "cuda" else torch.device("cpu")
    checks = {"layer": layer_check, "nosync": nosync_check, "step": step_check, "speed": speed_check,
              "nccl": nccl_check, "graphs": graphs_check}
    return 0 if checks[args.check](device) else 1


if __name__ == "__main__":
    sys.exit(main())
