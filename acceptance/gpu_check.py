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
import sys
from pathlib import Path

import torch

from acceptance.layer_checks import graphs_check, layer_check, speed_check
from acceptance.sizes import SIZES
from acceptance.step_checks import nccl_check, nosync_check, step_check
from bert.system import Descriptor, load_descriptor

SHORT_RUN_UPDATES, SHORT_RUN_EVALS = 60, 2


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
