#!/usr/bin/env bash
# The prepared check for one H200 (or any single CUDA GPU) without network access, in under 8 minutes:
#
#   benchmarks/gpu_check.sh OUTDIR
#
#   1. wheels      the Python packages the check imports, from the machine's own site-packages; when one is
#                  missing (mlperf-logging: the H200 image lacks it), the wheels carried in .whl/, installed
#                  into a private folder
#   2. env         GPU, driver, torch, transformers, apex
#   3. throughput  benchmarks/throughput.py --preset large: BERT-large, seq 512, bf16, ours vs transformers
#   4. data        a synthetic corpus at seq 512 in the MLPerf shard format (on the CPU, beside stages 3-5)
#   5. gpu tests   the tests that need CUDA: no host synchronisation in the step, varlen attention agrees
#   6. train       a short run from random initialisation with systems/h200_1x1.json's batch (448 = 8 x 56)
#   7. compile     stage 3 with torch.compile of our encoder layers, if the time left allows
#
# Everything lands in OUTDIR (8 files: env.txt, throughput.log, throughput_results.md, gpu_tests.log,
# train.log, result_0.txt, check_system.json, summary.md). Every stage has its own time limit, cut to what is
# left of the budget (GPU_CHECK_BUDGET_S seconds, default 450: 8 minutes less a margin for start-up and for
# copying OUTDIR back), so the whole check ends within it; a failed or timed-out stage is recorded in
# summary.md and the check goes on. Exit status: 0 when every stage but compile succeeded.
#
# Wheels travel with the working tree: in the repository root run
#   python3 -m pip download --no-deps --only-binary=:all: -d .whl mlperf-logging==4.1.68
# and carry `.whl`. GPU_CHECK_DEVICE=cpu makes a dry run of every stage at toy sizes on a CPU; PYTHON names
# the interpreter (default python3).
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$1"
out="$(cd "$1" && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$repo"
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
python="${PYTHON:-python3}"
device="${GPU_CHECK_DEVICE:-cuda}"
budget_s="${GPU_CHECK_BUDGET_S:-450}"
grace_s=10  # how long a stage may take to stop after its limit (SIGINT, then SIGKILL)
summary="$out/summary.md"

if [[ "$device" == cpu ]]; then
    throughput_args=(--preset tiny --device cpu --batch-size 8 --batches 2 --warmup 1 --rounds 1 --steps 1)
    run_changes='{"model": "micro", "device": "cpu", "precision": "bf16", "global_batch_size": 16,
                  "gradient_accumulation_steps": 2, "max_predictions_per_seq": 20, "print_interval_steps": 2}'
    corpus='{"train_samples": 1024, "eval_samples": 64, "shards": 2, "max_seq_length": 128,
             "max_predictions": 20}'
    cap_json='{"max_samples": 96, "interval_samples": 48, "eval_samples": 64}'
else
    throughput_args=(--preset large --warmup 3 --rounds 4 --steps 5)
    run_changes='{}'
    corpus='{"train_samples": 16384, "eval_samples": 1000, "shards": 8, "max_seq_length": 512,
             "max_predictions": 76}'
    # 60 updates of 448 sequences, an eval after 30 and after 60 updates.
    cap_json='{"max_samples": 26880, "interval_samples": 13440, "eval_samples": 1000}'
fi

limit() {  # limit WANT [RESERVE]: WANT seconds, or less so that RESERVE seconds stay for later stages
    local left=$((budget_s - SECONDS - grace_s - ${2:-0}))
    echo $(( $1 < left ? $1 : left ))
}

stage() {  # stage NAME LIMIT_S LOG COMMAND...: runs COMMAND (a command or an exported function) under a limit
    local name=$1 limit=$2 log=$3 start=$SECONDS status=0 verdict
    shift 3
    if (( limit < 10 )); then
        echo "- $name: SKIPPED, the time budget is spent" >>"$summary"
        return 1
    fi
    echo "== $name: $* (limit ${limit} s)" >>"$log"
    timeout -s INT -k "$grace_s" "$limit" bash -c '"$@"' "$name" "$@" >>"$log" 2>&1 || status=$?
    if [[ $status == 0 ]]; then
        verdict="ok"
    elif [[ $status == 124 || $status == 137 ]]; then
        verdict="FAILED (timed out)"
    else
        verdict="FAILED (exit $status)"
    fi
    echo "- $name: $verdict in $((SECONDS - start)) s (log: $(basename "$log"))" >>"$summary"
    return "$status"
}

{
    echo "# gpu_check $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "commit $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown), device $device"
    echo
    echo "## Stages"
} >"$summary"

missing_modules() {  # the modules the check imports that this Python cannot find, space-separated
    "$python" -c 'import importlib.util
needed = ["torch", "numpy", "h5py", "yaml", "click", "tokenizers", "rich", "transformers", "mlperf_logging",
          "pytest", "pandas", "scipy"]
print(" ".join(m for m in needed if importlib.util.find_spec(m) is None))'
}

wheels() {  # installs the carried wheels when a module the check imports is missing here
    local missing
    missing=$(missing_modules) || return 1
    if [[ -z "$missing" ]]; then
        echo "every module the check imports is installed"
        return 0
    fi
    echo "missing here: $missing"
    if ! compgen -G "$repo/.whl/*.whl" >/dev/null; then
        echo "no wheels were carried in .whl/: on a machine with network access run" \
             "python3 -m pip download --no-deps --only-binary=:all: -d .whl PACKAGE==VERSION for each" >&2
        return 1
    fi
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$work/site" \
        "$repo"/.whl/*.whl
    echo "installed into $work/site: $(ls "$work/site" | tr '\n' ' ')"
    missing=$(missing_modules) || return 1
    if [[ -n "$missing" ]]; then
        echo "still missing after installing the carried wheels: $missing (carry their wheels in .whl/)" >&2
        return 1
    fi
}

environment() {
    "$python" - <<'EOF'
import importlib.util, platform, torch, transformers
print(f"python {platform.python_version()}, torch {torch.__version__} (CUDA {torch.version.cuda}), "
      f"transformers {transformers.__version__}, apex {'yes' if importlib.util.find_spec('apex') else 'no'}")
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print(f"{p.name}: {p.total_memory / 2**30:.1f} GiB, {p.multi_processor_count} SMs, capability {p.major}.{p.minor}")
import mlperf_logging
print("mlperf_logging from", mlperf_logging.__file__)
EOF
    [[ $? == 0 ]] || return 1
    if command -v nvidia-smi >/dev/null; then
        nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,power.limit --format=csv
    fi
}

check_system() {  # the descriptor of the short run: h200_1x1 with a synthetic corpus and a sample cap
    "$python" - "$out/check_system.json" "$work/data" "$run_changes" "$corpus" "$cap_json" <<'EOF'
import json, sys
path, data, run_changes, corpus, short = sys.argv[1], sys.argv[2], *map(json.loads, sys.argv[3:])
system = json.load(open("systems/h200_1x1.json"))
run = system["run"]
run.update(run_changes)
synthetic = {"vocab_size": 4096, "seed": 12345, "form": "varlen", **corpus}
run["dataset"] = {"dir": data, "synthetic": synthetic}
run["max_seq_length"] = synthetic["max_seq_length"]
run["max_samples"] = short["max_samples"]
run["eval"].update(samples=short["eval_samples"], interval_samples=short["interval_samples"])
run["seed"] = 1
run["notes"] = "gpu_check short run: synthetic data, random initialisation, capped samples (not a result)."
system["system"]["division"] = "open"
with open(path, "w") as f:
    json.dump(system, f, indent=2)
EOF
    "$python" -m bert.cli system check "$out/check_system.json"
}

short_run() {
    local status=0
    "$python" -m bert.cli train --system "$out/check_system.json" --seed 1 --log-file "$out/result_0.txt" \
        || status=$?
    # A run that stops at the sample cap exits 1 (not converged) by design; here it only has to run.
    if [[ $status == 1 ]] && grep -q '"status": "aborted", "reason": "sample cap' "$out/result_0.txt"; then
        return 0
    fi
    return "$status"
}

export python repo work out run_changes corpus cap_json
export -f missing_modules wheels environment check_system short_run
# After the repository: the private folder only adds what is missing (site-packages come after PYTHONPATH,
# so a carried wheel of a package the machine has would win; `wheels` installs only when one is missing).
export PYTHONPATH="$PYTHONPATH:$work/site"
failed=0
stage wheels "$(limit 60)" "$out/env.txt" wheels || failed=1
stage env "$(limit 60)" "$out/env.txt" environment || failed=1
stage descriptor "$(limit 30)" "$out/train.log" check_system || failed=1

# The corpus is made on the CPU while the GPU runs the throughput benchmark.
stage data "$(limit 150)" "$work/data.log" "$python" -m bert.cli data synth --system "$out/check_system.json" &
data_pid=$!
# The throughput stage leaves room for the tests and a training run of at least 2 minutes.
stage throughput "$(limit 180 240)" "$out/throughput.log" "$python" benchmarks/throughput.py "${throughput_args[@]}" \
    --results "$out/throughput_results.md" --note "gpu_check" || failed=1
gpu_tests=(-k cuda)
if [[ "$device" == cpu ]]; then
    gpu_tests=(-k "cuda or gather_rows")  # on a CPU the CUDA tests skip; a quick one shows the stage works
fi
stage "gpu tests" "$(limit 120 120)" "$out/gpu_tests.log" "$python" -m pytest -q -rs -p no:cacheprovider \
    tests/bert/test_fast_path.py "${gpu_tests[@]}" || failed=1
data_status=0
wait "$data_pid" || data_status=$?
cat "$work/data.log" >>"$out/train.log"

if [[ $data_status == 0 ]]; then
    stage train "$(limit 300)" "$out/train.log" short_run || failed=1
else
    echo "- train: skipped, no data (see train.log)" >>"$summary"
    failed=1
fi

left=$(limit 240)
if (( left >= 90 )); then
    stage compile "$left" "$out/throughput.log" "$python" benchmarks/throughput.py "${throughput_args[@]}" \
        --compile --results "$out/throughput_results.md" --note "gpu_check" || true
else
    echo "- compile: skipped, ${left} s left" >>"$summary"
fi

{
    echo
    echo "## Figures"
    echo
    grep -h -E "^(preset|ours|transformers|peak|speedup_vs_transformers)" "$out/throughput.log" | sed 's/^/    /' || true
    echo
    grep -h -E "seq/s|mlm accuracy|error" "$out/train.log" | tail -n 8 | sed 's/^/    /' || true
    echo
    echo "total $SECONDS s"
} >>"$summary"
cat "$summary"
exit "$failed"
