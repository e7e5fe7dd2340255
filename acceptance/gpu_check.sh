#!/usr/bin/env bash
# The first run on a new GPU machine: one H200 (or any single CUDA GPU), no network, in under 9 minutes.
#
#   acceptance/gpu_check.sh OUTDIR        (a new or empty folder: everything the check writes lands there)
#
# Stages, the biggest risks first, and those that compile (speed, graphs) after every stage that cannot fail for
# a compiler's reasons; each under a time limit cut to what is left of the budget (GPU_CHECK_BUDGET_S, default
# 540 s: the 9 minutes less start-up and copying OUTDIR back); a failed or timed-out stage is noted in one line of
# the summary, with the last line it printed, and the next one runs:
#   1. env         the packages (a missing one from the wheels carried in .whl/, below), GPU, driver, torch, apex
#   2. layer       one BERT-large layer in train mode, bf16, 56 x 512: the attention path (the variable-length
#                  flash kernel with dropout), the padded fallback's SDPA backend, the kernels, the dtype
#   3. nosync      the real step (dropout 0.1, 2 micro-batches of 56 x 512) never waits for the GPU, in bf16 and
#                  then fp16 with loss scaling; the dtype between encoder layers; then the tests that need CUDA
#                  (-k cuda: the flash kernel against the math reference, with its dropout mask replayed; the
#                  unpadded path against the padded one)
#   4. step        systems/h200_1x1.json's step as it trains: 8 micro-batches of 56, the MLPerf length mix, LAMB,
#                  side by side in one process: as published (compiled layers and update, bf16), eager, and FP8
#                  (run.precision "fp8") where torchao or Transformer Engine imports; each compiled before it is
#                  timed: sequences/s and model FLOP utilisation of each, the default's the figures run.performance
#                  takes, and compiled_over_eager_step= and fp8_over_bf16_step=
#   5. throughput  benchmarks/throughput.py --preset large (ours against transformers) and one profiled step:
#                  time shares of matmuls, attention, LayerNorm, optimizer and the rest; peak memory
#   6. train       60 updates and 2 evals at systems/h200_1x1.json's batch through run_and_time.sh, eager (a
#                  synthetic corpus made on the CPU during stages 1-5, random weights)
#   7. nccl        DDP with the bucket-wise clip hook over NCCL with the gradient sent in bf16, a gloo
#                  sub-group, the barrier before run_start
#   8. speed       a compiled encoder layer and the compiled LAMB update of BERT-large's parameters against their
#                  eager forms, in one process (the step stage's graphs: inductor's cache has them compiled)
#   9. graphs      a compiled encoder layer for static shapes with and without CUDA graphs (last, as the least
#                  certain gain: it runs when the budget has time left)
# On the CPU cores, beside stages 2-3: the synthetic corpus (until stage 6), and benchmarks/loader.py (every
# balance strategy's sequences per CPU second per rank on 8 ranks, with real pinning).
# OUTDIR gets 8 files, few enough to bring back from a remote machine: summary.md (also printed at the end), env.txt, checks.log
# (layer, nosync, speed, nccl, loader), throughput.log, throughput_results.md, gpu_check.json (the short run's
# descriptor), train.log and result_0.txt. Exit status 0 when every stage passed.
#
# GPU_CHECK_DEVICE=cpu rehearses every stage at toy sizes on a CPU (tests/acceptance/test_gpu_check.py runs it
# in CI). PYTHON names the interpreter (default python3).
#
# Wheels: a GPU machine with torch 2.11 or later and Python 3.12 but no package registry lacks mlperf-logging (and
# torchao, for the step stage's FP8 row); their wheels travel in .whl/ (git-ignored), made in the repository root
# where pip reaches a registry by the lines the env stage prints first (from WHEELS below; 3.6 MiB together when
# measured; more than WHEELS_MAX_MIB fails the stage), and the env stage installs each one whose package is missing.
set -euo pipefail

WHEEL_PLATFORMS="--python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 --platform
manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 --platform
manylinux2014_x86_64 --platform manylinux1_x86_64"
WHEELS="mlperf-logging==4.1.68 torchao==0.18.0"  # torchao: optional, the step stage's FP8 row
WHEELS_MAX_MIB=40

if [[ $# -ne 1 ]]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
if [[ -e "$1" && -n "$(ls -A "$1" 2>/dev/null)" ]]; then
    echo "gpu_check: $1 is not empty; give a new folder (nothing in it is replaced)" >&2
    exit 2
fi
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$1"
out="$(cd "$1" && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")"
trap 'rm -rf "$work"' EXIT
python="$(command -v "${PYTHON:-python3}")" || { echo "gpu_check: no ${PYTHON:-python3} here; set PYTHON" >&2; exit 2; }
[[ "$python" == /* ]] || python="$PWD/$python"  # absolute, but not resolved: a venv's python is a symlink
cd "$repo"
device="${GPU_CHECK_DEVICE:-cuda}"
# The rehearsal proves that every stage runs, not how fast: a shared CPU runs the toy sizes (and inductor's CPU
# compilations) slower than a GPU runs the real ones, so its stages get twice the GPU's limits and budget.
slack=$([[ "$device" == cpu ]] && echo 2 || echo 1)
budget_s="${GPU_CHECK_BUDGET_S:-$((540 * slack))}"
grace_s=10  # how long a stage may take to stop after its limit (SIGINT, then SIGKILL)
summary="$out/summary.md"

# The GPU image has torch but not this package: the repository is on the path, and `python`, `python3` and
# `mlperf-bert` (which run_and_time.sh and its launch command call) are this interpreter.
mkdir -p "$work/bin"
printf '#!/bin/sh\nexec "%s" "$@"\n' "$python" >"$work/bin/python"
cp "$work/bin/python" "$work/bin/python3"
printf '#!/bin/sh\nexec "%s" -m bert.cli "$@"\n' "$python" >"$work/bin/mlperf-bert"
chmod +x "$work/bin/python" "$work/bin/python3" "$work/bin/mlperf-bert"
export PATH="$work/bin:$PATH" PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}:$work/site" PYTHONUNBUFFERED=1
# Inductor's kernels are built afresh, as a run on a new machine builds them, in a cache of the check's own: no
# stale kernel from another torch, and no half-written one from another user's compilation in the shared default.
export TORCHINDUCTOR_CACHE_DIR="$work/inductor"
if [[ "$device" == cpu ]]; then
    # Two shared cores: a pool of compile workers in every stage that compiles costs more than it saves.
    export TORCHINDUCTOR_COMPILE_THREADS=1
fi
export MLPERF_BERT_SYSTEM_PYTHON=1

if [[ "$device" == cpu ]]; then
    # A stated peak: measuring one takes minutes of bf16 matmuls on a CPU without bf16 units (the rehearsal's
    # figures mean nothing anyway).
    throughput_args=(--preset tiny --device cpu --batch-size 8 --batches 2 --warmup 1 --rounds 1 --steps 1
                     --peak-tflops 1)
    loader_args=(--ranks 2 --batch 8 --seq 128 --samples 1024 --shards 2 --warmup 2 --batches 4)
else
    throughput_args=(--preset large --warmup 3 --rounds 3 --steps 4)
    loader_args=(--ranks 8 --samples 16384 --batches 40)
fi

limit() {  # limit WANT [RESERVE]: WANT seconds, or less so that RESERVE seconds stay for later stages
    local want=$(($1 * slack)) left=$((budget_s - SECONDS - grace_s - ${2:-0} * slack))
    echo $(( want < left ? want : left ))
}

stage() {  # stage NAME LIMIT_S LOG COMMAND...: runs COMMAND (a command or an exported function) under a limit
    local name=$1 limit=$2 log=$3 start=$SECONDS status=0 verdict output
    shift 3
    if (( limit < 10 )); then
        echo "- $name: SKIPPED, the time budget is spent" | tee -a "$log" >>"$summary"
        return 1
    fi
    output="$work/stage.${name// /_}.out"  # this stage's own lines (stages run beside each other share logs)
    timeout -s INT -k "$grace_s" "$limit" bash -c '"$@"' "$name" "$@" >"$output" 2>&1 || status=$?
    { echo "== $name: $* (limit ${limit} s)"; cat "$output"; } >>"$log"
    if [[ $status == 0 ]]; then
        verdict="ok"
    elif [[ $status == 124 || $status == 137 ]]; then
        verdict="FAILED (timed out)"
    else
        verdict="FAILED (exit $status)"
    fi
    verdict+=" in $((SECONDS - start)) s (log: $(basename "$log"))"
    if [[ $status != 0 ]]; then  # the stage's last words, on the summary's one line
        verdict+=": $(grep -v '^[[:space:]]*$' "$output" | tail -n 1 | cut -c 1-200)"
    fi
    echo "- $name: $verdict" >>"$summary"
    return "$status"
}

missing_modules() {  # missing_modules [optional]: the modules the check imports that this Python cannot find
    "$python" - "${1:-}" <<'EOF'
import importlib.util, sys
needed = ["torch", "numpy", "h5py", "yaml", "click", "tokenizers", "rich", "transformers", "mlperf_logging", "pytest"]
optional = ["torchao"]  # the step stage's FP8 row (or Transformer Engine, which is never installed here)
print(" ".join(m for m in (optional if sys.argv[1] else needed) if importlib.util.find_spec(m) is None))
EOF
}

wheels() {  # the pip download lines of the wheels to carry, and the size of those in .whl/ (at most WHEELS_MAX_MIB)
    local spec size
    echo "wheels for a GPU machine without a package registry (Python 3.12, x86-64), made in the repository root:"
    for spec in $WHEELS; do
        echo "    python3 -m pip download --no-deps --only-binary=:all: $(echo $WHEEL_PLATFORMS) -d .whl $spec"
    done
    size=$(cat "$repo"/.whl/*.whl 2>/dev/null | wc -c)
    echo "carried in .whl/: $(compgen -G "$repo/.whl/*.whl" | wc -l) wheel(s), $((size / 1024)) KiB (at most" \
         "$WHEELS_MAX_MIB MiB)"
    (( size <= WHEELS_MAX_MIB * 1024 * 1024 ))
}

environment() {  # installs the carried wheel of each missing package, then says what the machine is
    local missing module wheel
    wheels || { echo "the wheels in .whl/ are over $WHEELS_MAX_MIB MiB" >&2; return 1; }
    missing="$(missing_modules) $(missing_modules optional)"
    for module in $missing; do
        echo "missing here: $module"
        for wheel in "$repo/.whl/$module"-*.whl; do  # the first, if any
            [[ -f "$wheel" ]] && "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
                --target "$work/site" "$wheel"
            break
        done
    done
    missing=$(missing_modules)
    [[ -z "$missing" ]] || { echo "still missing after the carried wheels (see the pip download lines above):" \
                                  "$missing" >&2; return 1; }
    "$python" - <<'EOF' || return 1
import importlib.util, platform, torch, transformers, mlperf_logging
from bert.model.fp8 import fp8_backend
print(f"python {platform.python_version()}, torch {torch.__version__} (CUDA {torch.version.cuda}), "
      f"transformers {transformers.__version__}, apex {'yes' if importlib.util.find_spec('apex') else 'no'}, "
      f"FP8 through {fp8_backend() or 'nothing (neither torchao nor Transformer Engine imports)'}, "
      f"mlperf_logging from {mlperf_logging.__file__}")
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print(f"{p.name}: {p.total_memory / 2**30:.1f} GiB, {p.multi_processor_count} SMs, capability {p.major}.{p.minor}")
EOF
    if command -v nvidia-smi >/dev/null; then
        nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,power.limit --format=csv
    fi
}

short_run() {  # 60 updates and 2 evals; the run stops at its sample cap, which run_and_time.sh counts as FAILED
    local status=0 log="$work/logs/gpu_check/result_0.txt"
    # Verbose: train.log keeps each print interval's rates (seq/s), which the summary's figures quote.
    MLPERF_BERT_VERBOSE=1 LOGDIR="$work/logs" DATADIR="$work/data" SEED=1 NEXP=1 "$repo/run_and_time.sh" \
        "$out/gpu_check.json" || status=$?
    [[ -f "$log" ]] && cp "$log" "$out/result_0.txt"
    if [[ $status == 1 ]] && grep -q '"status": "aborted", "reason": "sample cap' "$out/result_0.txt" \
        && [[ $(grep -c '"key": "eval_accuracy"' "$out/result_0.txt") == 2 ]]; then
        return 0
    fi
    return $(( status == 0 ? 1 : status ))
}

export python repo work out WHEEL_PLATFORMS WHEELS WHEELS_MAX_MIB
export -f missing_modules wheels environment short_run

{
    echo "# gpu_check $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "commit $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown), device $device"
    echo
    echo "## Wheels"
    echo
    wheels || true
    echo
    echo "## Stages"
} >"$summary"

failed=0
checks=("$python" -m acceptance.gpu_check)
stage env "$(limit 90)" "$out/env.txt" environment || failed=1
stage descriptor "$(limit 30)" "$out/train.log" "${checks[@]}" descriptor "$out" "$work/data" --device "$device" \
    || failed=1
# The corpus is made on the CPU while the GPU runs stages 2-5, the loader benchmark while it runs 2-3.
stage data "$(limit 240 60)" "$work/data.log" "$python" -m bert.cli data synth --system "$out/gpu_check.json" \
    --out "$work/data" &
data_pid=$!
stage loader "$(limit 120 60)" "$work/loader.log" "$python" -m benchmarks.loader "${loader_args[@]}" --no-results &
loader_pid=$!
stage layer "$(limit 60 240)" "$out/checks.log" "${checks[@]}" layer --device "$device" || failed=1
stage nosync "$(limit 90 200)" "$out/checks.log" "${checks[@]}" nosync --device "$device" || failed=1
cuda_tests=(-k cuda)
if [[ "$device" == cpu ]]; then
    cuda_tests=(-k "cuda or gather_rows")  # on a CPU the CUDA tests skip; a quick one shows the stage runs
fi
stage "cuda tests" "$(limit 60 200)" "$out/checks.log" "$python" -m pytest -q -rs -p no:cacheprovider \
    tests/bert/model/test_fast_path.py tests/bert/model/test_varlen_attention.py "${cuda_tests[@]}" || failed=1
wait "$loader_pid" || failed=1  # before the timed stages: the loader's 8 ranks would compete for the cores
cat "$work/loader.log" >>"$out/checks.log"
stage step "$(limit 300 150)" "$out/checks.log" "${checks[@]}" step --device "$device" || failed=1
stage throughput "$(limit 120 200)" "$out/throughput.log" "$python" -m benchmarks.throughput "${throughput_args[@]}" \
    --profile --results "$out/throughput_results.md" --note "gpu_check" || failed=1
data_status=0
wait "$data_pid" || data_status=$?
cat "$work/data.log" >>"$out/train.log"
if [[ $data_status == 0 ]]; then
    stage train "$(limit 160 100)" "$out/train.log" short_run || failed=1
else
    echo "- train: SKIPPED, no data (see train.log)" >>"$summary"
    failed=1
fi
stage nccl "$(limit 45 60)" "$out/checks.log" "${checks[@]}" nccl --device "$device" || failed=1
stage speed "$(limit 120 30)" "$out/checks.log" "${checks[@]}" speed --device "$device" || failed=1
stage graphs "$(limit 90)" "$out/checks.log" "${checks[@]}" graphs --device "$device" || failed=1

{
    echo
    echo "## Figures"
    echo
    grep -h -E "^(SDPA backend|attention path|layer output|bf16:|fp16:|step of|step\[|step: compiled|encoder layer|LAMB update|gloo:|nccl:|graphs:)" \
        "$out/checks.log" | sed 's/^/    /' || true
    grep -h -E "sequences per CPU second|^loader_seq_per_s_per_rank" "$out/checks.log" | sed 's/^ */    /' || true
    grep -h -A 11 -E "^one layer forward" "$out/checks.log" | sed 's/^/    /' || true
    grep -h -E "^peak (GPU|resident)" "$out/checks.log" | sed 's/^/    layer: /' || true
    grep -h -E "^(preset|ours|transformers|peak|speedup_vs_transformers)" "$out/throughput.log" | sed 's/^/    /' || true
    grep -h -A 11 -E "^profile of one step" "$out/throughput.log" | sed 's/^/    /' || true
    grep -h -E "^  peak (GPU|resident)" "$out/throughput.log" | sed 's/^ */    step: /' || true
    grep -h -E "seq/s|mlm accuracy|^error \(rank" "$out/train.log" | tail -n 6 | sed 's/^/    /' || true
    echo
    echo "total $SECONDS s"
} >>"$summary"
cat "$summary"
exit "$failed"
