"""Training throughput of this trainer against Hugging Face transformers' BertForPreTraining, in one process.

Both sides get the same BERT config, the same initial weights (copied through bert.model.tf_names), the same batches
cut from MLPerf-format shards, the same optimizer (bert.optim.lamb.Lamb with the reference parameter groups),
the same precision and the same step (bert.step.TrainStep: autocast, loss scaling, clipping, update). They
alternate, after a warm-up, so that a busy machine slows both alike. transformers runs with
attn_implementation="sdpa" on batches padded to their longest sequence (as its data collators pad) and, as
its users get it, computes the masked-LM logits at every position. Batches are staged on the device before
timing, so neither side's input pipeline is measured.

Model FLOPs are the work the model needs, counted the same for both: 6 FLOPs per weight per real token in
the encoder (forward 2, backward 4), attention scores and mixing over each sequence's real length, the MLM head
on masked positions only, pooler and NSP per sequence. Padding and logits at unmasked positions are not model
work, so they lower utilisation. The peak is the datasheet's dense half-precision rate on GPUs it knows
and otherwise a measured large matmul in the compute dtype (printed, with how it was obtained).

    python -m benchmarks.throughput --preset base            # CPU, BERT-base, seq 128
    python -m benchmarks.throughput --preset large           # GPU, BERT-large, seq 512

The results file (benchmarks/throughput_results.md, written through benchmarks.common.results_file;
--no-results skips it) holds this run's figures, the table of every recorded run (the rows already there are
kept, this run's is added) with the load average it ran under, and where the performance goals stand, derived
from that table. The
last line printed is `speedup_vs_transformers=<ours / transformers>`.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from benchmarks.common.data import read_samples, synthetic_samples
from benchmarks.common.profiling import profile_once, summary
from benchmarks.common.results_file import add_no_results_flag, write_results
from benchmarks.common.timing import peak_flops, sync
from benchmarks.common.transformers_peer import hf_parameter_groups, peer_model, to_hf_batch
from bert.data.batch import Batch, collate, padded_length
from bert.distributed.launch import DistContext
from bert.model.config import BertConfig
from bert.model.pretraining import BertForPreTraining
from bert.optim.factory import build_optimizer, build_schedule
from bert.optim.lamb import Lamb
from bert.simulate.flops import training_flops
from bert.step import PRECISION_DTYPES, TrainStep
from bert.system import Descriptor, load_descriptor

RESULTS = Path(__file__).with_name("throughput_results.md")


@dataclass(frozen=True)
class Preset:
    model: str
    batch_size: int
    seq_len: int
    max_predictions: int
    device: str
    precision: str
    system: str  # the descriptor whose optimizer and step settings both sides use


PRESETS = {
    "tiny": Preset("tiny", 32, 128, 20, "cpu", "bf16", "cpu_tiny"),
    "base": Preset("base", 32, 128, 20, "cpu", "bf16", "cpu_tiny"),
    "large": Preset("large", 64, 512, 76, "cuda", "bf16", "h200_1x1"),
}


def benchmark_system(preset: Preset, args: argparse.Namespace) -> Descriptor:
    """The preset's descriptor, as one process training the preset's model and batch; on a CPU in fp16 it is the
    CUDA run rehearsed (bert.system.Descriptor.cpu_variant)."""
    base = load_descriptor(preset.system)
    changes = {  # the preset's model size, with the descriptor's GELU
        "model": preset.model, "model_overrides": {"gelu": base.model_config().gelu}, "processes_per_node": 1,
        "precision": args.precision or preset.precision, "global_batch_size": args.batch_size or preset.batch_size,
        "gradient_accumulation_steps": 1, "max_seq_length": preset.seq_len, "unpadded": True, "compile": args.compile,
        # the update as the encoder: compiled with --compile (the GPU descriptors' default), else eager as the peer's
        "optimizer.implementation": "compiled" if args.compile else "eager"}
    if preset.device == "cpu":
        return base.cpu_variant(changes, description={"number_of_nodes": "1"})
    return base.variant({**changes, "device": preset.device}, description={"number_of_nodes": "1"})


def build_steps(system: Descriptor, config: BertConfig, ctx: DistContext) -> tuple[TrainStep, TrainStep]:
    spec = system.run.optimizer
    ours = BertForPreTraining(config).to(ctx.device)
    peer = peer_model(ours, config).to(ctx.device).train()
    peer_optimizer = Lamb(hf_parameter_groups(peer, config, spec.weight_decay_rate), lr=spec.base_learning_rate,
                          betas=(spec.beta_1, spec.beta_2), eps=spec.epsilon)
    # compile_encoder applies to our encoder layers only; the peer runs as transformers ships it.
    peer_system = system.variant({"compile": False})
    return (TrainStep(system.run, ctx, ours, build_optimizer(ours, spec), build_schedule(spec)),
            TrainStep(peer_system.run, ctx, peer, peer_optimizer, build_schedule(spec)))


def model_flops(config: BertConfig, batch: Batch) -> float:
    """Training FLOPs the model needs for this batch (bert.simulate.flops)."""
    lengths = (batch.layout.cu_seqlens[1:] - batch.layout.cu_seqlens[:-1]).numpy()
    return training_flops(config, lengths, batch.mlm_labels.numel())


class Feed:
    """Cycles through a fixed list of staged batches and counts what it handed out."""

    def __init__(self, batches: list, flops: list[float]):
        self.batches, self.flops = batches, flops
        self.index, self.sequences, self.model_flops = 0, 0, 0.0

    def __next__(self):
        k = self.index % len(self.batches)
        self.index += 1
        self.model_flops += self.flops[k]
        self.sequences += self.batches[k].model_inputs(True)["input_ids"].shape[0]
        return self.batches[k]

    def reset_counts(self) -> None:
        self.sequences, self.model_flops = 0, 0.0


@dataclass
class Side:
    name: str
    step: TrainStep
    feed: Feed
    round_seconds: list[float] = dataclasses.field(default_factory=list)
    cpu_seconds: float = 0.0  # this process's CPU time, all threads: what other processes change least
    updates: int = 0

    @property
    def seconds(self) -> float:
        return sum(self.round_seconds)

    def run(self, steps: int, device: torch.device) -> float:
        """Runs `steps` updates; returns the seconds they took, the device's work included."""
        sync(device)
        start, start_cpu = time.perf_counter(), time.process_time()
        for _ in range(steps):
            self.step(self.feed, self.updates)
            self.updates += 1
        loss, _ = self.step.pop_loss_and_tokens()  # reads the loss, so the device has finished
        sync(device)
        if loss != loss:
            raise SystemExit(f"{self.name}: the loss is not a number; the comparison is void")
        self.cpu_seconds += time.process_time() - start_cpu
        return time.perf_counter() - start


def machine_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    model = platform.processor() or "CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{model}, {torch.get_num_threads()} threads"


COLUMNS = ("date", "device", "machine", "torch", "transformers", "preset", "precision", "batch x seq",
           "mean length", "ours seq/s", "transformers seq/s", "speedup", "MFU ours", "MFU transformers",
           "peak TFLOP/s", "load 1/5 min", "notes")
CPU_GOAL, GPU_GOAL_SPEEDUP, GPU_GOAL_MFU = 1.5, 2.0, 0.45


def recorded_rows(path: Path) -> list[dict[str, str]]:
    """The table rows already in the results file (one dict per run), oldest first."""
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| 20") and len(cells) == len(COLUMNS):
            rows.append(dict(zip(COLUMNS, cells)))
    return rows


def goal_status(rows: list[dict[str, str]]) -> list[str]:
    """Where the performance goals stand, from the latest matching row: measured, or not yet."""
    cpu = [r for r in rows if r["device"] == "cpu" and r["preset"] == "base"]
    gpu = [r for r in rows if r["device"] == "cuda" and r["preset"] == "large" and "H200" in r["machine"]]
    lines = ["Goals (from the latest matching row):"]
    if cpu:
        r = cpu[-1]
        met = "met" if float(r["speedup"]) >= CPU_GOAL else "NOT met"
        if "UNDER LOAD" in r["notes"]:
            met += " (measured under load: indicative only)"
        lines.append(f"- CPU, base preset: at least {CPU_GOAL}x transformers: {met}, {r['speedup']}x on {r['date']} "
                     f"({r['machine']}, load {r['load 1/5 min']}; {r['notes'].split(';')[0]}). Re-measure on a quiet "
                     f"machine with: python -m benchmarks.throughput --preset base")
    else:
        lines.append("- CPU, base preset: not yet measured (python -m benchmarks.throughput --preset base)")
    if gpu:
        r = gpu[-1]
        lines.append(f"- H200, BERT-large seq 512 bf16: MFU {r['MFU ours']} (goal {GPU_GOAL_MFU:.0%}), "
                     f"{r['speedup']}x transformers (goal {GPU_GOAL_SPEEDUP}x), on {r['date']}")
    else:
        lines.append(f"- H200, BERT-large seq 512 bf16 (goals: MFU at least {GPU_GOAL_MFU:.0%}, at least "
                     f"{GPU_GOAL_SPEEDUP}x transformers): NOT YET MEASURED. No H200 row is recorded: "
                     f"acceptance/gpu_check.sh has not been run on an H200. Run it there (carrying .whl with the "
                     f"mlperf-logging wheel, see its header) and copy the rows of OUTDIR/throughput_results.md "
                     f"into the table below.")
    return lines


def record(path: Path, figures: list[str], row: dict[str, str], argv: list[str], setting: str) -> None:
    rows = [*recorded_rows(path), row]
    table = ["| " + " | ".join(COLUMNS) + " |", "|---" * len(COLUMNS) + "|",
             *("| " + " | ".join(r[c] for c in COLUMNS) + " |" for r in rows)]
    write_results(path, [*figures, "", *goal_status(rows), "", *table], argv, setting)


def load_average() -> tuple[str, str]:
    """The 1- and 5-minute load averages, and a note when other processes were competing for the cores: more
    load than the benchmark's own threads account for."""
    one, five, _ = os.getloadavg()
    busy = max(one, five) > min(torch.get_num_threads(), os.cpu_count() or 1) + 0.5
    note = "UNDER LOAD (other processes used the cores)" if busy else ""
    return f"{one:.1f}/{five:.1f} on {os.cpu_count()} cores", note


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", choices=sorted(PRESETS), default="base")
    p.add_argument("--data", type=Path, default=None,
                   help="dataset folder with train/*.hdf5 (default: a fresh synthetic corpus of the preset's shapes)")
    p.add_argument("--precision", choices=sorted(PRECISION_DTYPES), default=None, help="default: the preset's")
    p.add_argument("--batch-size", type=int, default=None, help="default: the preset's")
    p.add_argument("--device", default=None, help="default: the preset's (cpu or cuda)")
    p.add_argument("--compile", action="store_true", help="torch.compile our encoder layers and LAMB's update "
                   "(run.compile, run.optimizer.implementation), as the GPU descriptors do")
    p.add_argument("--batches", type=int, default=8, help="distinct batches cycled through")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps per side first")
    p.add_argument("--rounds", type=int, default=3, help="alternations")
    p.add_argument("--steps", type=int, default=3, help="timed steps per side per round")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default: torch's choice)")
    p.add_argument("--peak-tflops", type=float, default=None, help="peak to measure utilisation against")
    p.add_argument("--results", type=Path, default=RESULTS, help="the results file (its table rows are kept)")
    add_no_results_flag(p)
    p.add_argument("--note", default="", help="free text for the notes column")
    p.add_argument("--profile", action="store_true",
                   help="after timing, profile one step of ours: time by kind of work, top kernels, peak memory")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> float:
    import transformers

    args = parse_args(argv)
    preset = PRESETS[args.preset]
    if args.device:
        preset = dataclasses.replace(preset, device=args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    system = benchmark_system(preset, args)
    run = system.run
    device = torch.device(preset.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"preset {args.preset} runs on cuda but torch {torch.__version__} sees no GPU; "
                         "pass --device cpu to run it here anyway")
    config = system.model_config()
    ctx = DistContext(0, 1, 0, 1, device)
    needed = args.batches * run.global_batch_size
    samples = (read_samples(args.data, needed) if args.data is not None
               else synthetic_samples(needed, preset.seq_len, preset.max_predictions))
    if int(samples.lengths.max()) > config.max_position_embeddings:
        raise SystemExit(f"{args.data}: sequences longer than the model's {config.max_position_embeddings} positions")
    seq_len = padded_length(samples, 8)
    batches = [collate(samples.take(np.arange(k, k + run.global_batch_size)))
               for k in range(0, len(samples), run.global_batch_size)]
    flops = [model_flops(config, b) for b in batches]
    torch.manual_seed(0)
    ours_step, peer_step = build_steps(system, config, ctx)
    sides = [Side("ours", ours_step, Feed([b.to(device) for b in batches], flops)),
             Side("transformers", peer_step, Feed([to_hf_batch(b).to(device) for b in batches], flops))]

    mean_length = float(samples.lengths.mean())
    print(f"preset {args.preset}: BERT-{preset.model} ({config.num_layers} layers, hidden {config.hidden_size}), "
          f"batch {run.global_batch_size}, max length {seq_len} (mean real length {mean_length:.1f}), "
          f"{run.precision}, {machine_name(device)}, torch {torch.__version__}, transformers "
          f"{transformers.__version__}{', compiled encoder' if run.compile else ''}", flush=True)
    alternate(sides, args, device)
    if args.profile:
        profile_step(sides[0], device)
    peak, peak_source = peak_flops(device, PRECISION_DTYPES[run.precision], args.peak_tflops)
    figures, measured, speedup = report(sides, peak, peak_source)
    if not args.no_results:
        load, busy = load_average()
        notes = "; ".join(filter(None, [
            busy, "compiled encoder" if run.compile else "", args.note,
            f"{args.rounds} rounds of {args.steps} step(s), ratio {measured.pop('ratio range')}",
            measured.pop("cpu time ratio", ""),
            f"peak {peak_source}"]))
        row = {"date": datetime.date.today().isoformat(), "device": device.type, "machine": machine_name(device),
               "torch": torch.__version__, "transformers": transformers.__version__, "preset": args.preset,
               "precision": run.precision, "batch x seq": f"{run.global_batch_size} x {seq_len}",
               "mean length": f"{mean_length:.1f}", **measured, "load 1/5 min": load, "notes": notes}
        record(args.results, figures, row, sys.argv[1:] if argv is None else argv,
               f", transformers {transformers.__version__}, {machine_name(device)}")
        print(f"results written to {args.results}")
    print(f"speedup_vs_transformers={speedup:.3f}")
    return speedup


def alternate(sides: list[Side], args: argparse.Namespace, device: torch.device) -> None:
    """Warm-up, then rounds in which each side runs `args.steps` updates, the order flipping every round."""
    for side in sides:
        side.run(args.warmup, device)
        side.feed.reset_counts()
        side.cpu_seconds = 0.0
        print(f"  warmed up {side.name}", flush=True)
    for r in range(args.rounds):
        for side in sides if r % 2 == 0 else sides[::-1]:
            side.round_seconds.append(side.run(args.steps, device))
        ours, peer = (s.round_seconds[-1] for s in sides)
        print(f"  round {r + 1}/{args.rounds}: ours {ours:.2f} s, transformers {peer:.2f} s for "
              f"{args.steps} step(s): ratio {peer / ours:.3f}", flush=True)


def profile_step(side: Side, device: torch.device) -> None:
    """Prints where one step of `side` spends its time (benchmarks.common.profiling); not part of the timings."""
    rounds, sequences, flops = list(side.round_seconds), side.feed.sequences, side.feed.model_flops
    prof, wall = profile_once(lambda: side.run(1, device), device)
    side.round_seconds, side.feed.sequences, side.feed.model_flops = rounds, sequences, flops
    print(f"profile of one step of {side.name}:", *summary(prof, device, wall), sep="\n  ", flush=True)


def report(sides: list[Side], peak: float, peak_source: str) -> tuple[list[str], dict[str, str], float]:
    """Prints the figures; returns them, the measured cells of the results table (and the ratio range) and
    ours / transformers."""
    rates = [s.feed.sequences / s.seconds for s in sides]
    mfu = [s.feed.model_flops / s.seconds / peak for s in sides]
    speedup = rates[0] / rates[1]
    # A busy machine shows as spread between rounds; each round pairs the two sides under the same load.
    paired = sorted(b / a for a, b in zip(*(s.round_seconds for s in sides)))
    figures = [f"peak {peak / 1e12:.2f} TFLOP/s ({peak_source})"]
    figures += [f"{side.name}: {rate:.2f} sequences/s, model FLOP utilisation {100 * u:.1f}%"
                for side, rate, u in zip(sides, rates, mfu)]
    figures.append(f"ratio per round: median {paired[len(paired) // 2]:.3f}, range {paired[0]:.3f} to {paired[-1]:.3f}")
    cpu_time_ratio = sides[1].cpu_seconds / sides[0].cpu_seconds
    if sides[0].step.ctx.device.type == "cpu":
        figures.append(f"ratio of CPU time (less disturbed by other processes on a shared machine): "
                       f"{cpu_time_ratio:.3f}")
    figures.append(f"speedup {speedup:.3f}")
    print("\n".join(figures))
    measured = {"ours seq/s": f"{rates[0]:.2f}", "transformers seq/s": f"{rates[1]:.2f}", "speedup": f"{speedup:.2f}",
                "MFU ours": f"{100 * mfu[0]:.1f}%", "MFU transformers": f"{100 * mfu[1]:.1f}%",
                "peak TFLOP/s": f"{peak / 1e12:.2f}", "ratio range": f"{paired[0]:.2f}-{paired[-1]:.2f}"}
    if sides[0].step.ctx.device.type == "cpu":
        measured["cpu time ratio"] = f"CPU-time ratio {cpu_time_ratio:.2f}"
    return figures, measured, speedup


if __name__ == "__main__":
    main()
