"""The training step's checks of a GPU machine (`python -m acceptance.gpu_check nosync|step|nccl`): the step never
waits for the GPU in bf16 and fp16 (nosync), h200_1x1's step as it trains, compiled, eager and in FP8, with its
sequences/s and model FLOP utilisation (step), and DDP with the bucket-wise clip hook over NCCL (nccl). Each prints
what it found and ends with one line `<check>: ok ...` or `<check>: FAILED ...`."""

from __future__ import annotations

import dataclasses
import datetime
import time

import numpy as np
import torch
import torch.distributed as dist

from acceptance.sizes import BERT_DROPOUT, SIZES
from benchmarks.common.data import synthetic_samples
from benchmarks.common.host_sync import host_reads_fail
from benchmarks.common.ranks import free_port, process_group
from benchmarks.common.timing import peak_flops, sync
from bert.compile_warmup import compile_every_shape, compiles_anything, shape_batches
from bert.data.batch import collate
from bert.data.random_samples import random_samples
from bert.distributed.launch import DistContext, wait_for_all
from bert.model.fp8 import fp8_backend
from bert.model.pretraining import BertForPreTraining
from bert.model.token_rounding import token_sizes
from bert.optim.factory import build_optimizer, build_schedule
from bert.prep.instances import SampleSpec
from bert.simulate.flops import training_flops
from bert.simulate.load_balance import named_lengths
from bert.step import PRECISION_DTYPES, TrainStep
from bert.system import Descriptor, load_descriptor


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
