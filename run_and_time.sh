#!/usr/bin/env bash
# Launch and time MLPerf BERT runs of one system: ./run_and_time.sh [SYSTEM]   (default: cpu_tiny)
#
# SYSTEM is a descriptor name in systems/ or a path to one. Environment:
#   NEXP=N          number of runs (default 1); each gets a distinct seed and its own result file
#   SEED=S          seed of the first run (default: drawn at random); run i uses S+i
#   LOGDIR=DIR      where results go (default: logs); files are DIR/<system>/result_<i>.txt, never overwritten
#   DROP_CACHES=1   drop the page cache before each run (needs root); logged as cache_clear
#   DATADIR=DIR     dataset directory, overriding the descriptor's run.dataset.dir
# Under Slurm (SLURM_JOB_ID set) the ranks are started with srun, one task per process of the descriptor;
# otherwise with torchrun on this host.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$repo"
# shellcheck source=bootstrap.sh
source "$repo/bootstrap.sh" ""  # an explicit (empty) argument: a bare `source` would pass on our $1

system="${1:-cpu_tiny}"
eval "$(mlperf-bert system env "$system")"
nexp="${NEXP:-1}"
logdir="${LOGDIR:-logs}/$SYSTEM_NAME"
datadir="${DATADIR:-$DATASET_DIR}"
mkdir -p "$logdir"

if [[ "$SYNTHETIC" == 1 ]]; then
    mlperf-bert data synth --system "$SYSTEM_PATH" --out "$datadir" --if-missing
fi

first_seed="${SEED:-${RUN_SEED:-$(( $(od -An -N4 -tu4 /dev/urandom) % 2000000000 ))}}"
failed=0
for ((i = 0; i < nexp; i++)); do
    index=0
    while [[ -e "$logdir/result_$index.txt" ]]; do index=$((index + 1)); done
    result="$logdir/result_$index.txt"
    seed=$((first_seed + i))

    cleared=--no-cache-cleared
    if [[ "${DROP_CACHES:-0}" == 1 ]]; then
        if sync && echo 3 > /proc/sys/vm/drop_caches 2>/dev/null; then
            cleared=--cache-cleared
        else
            echo "run_and_time: could not drop the page cache (needs root); cache_clear is logged as false" >&2
        fi
    fi

    train_args=(-m bert.cli train --system "$SYSTEM_PATH" --seed "$seed" --log-file "$result"
                --data-dir "$datadir" "$cleared")
    if [[ -n "${SLURM_JOB_ID:-}" ]]; then
        export MASTER_ADDR="${MASTER_ADDR:-$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)}"
        export MASTER_PORT="${MASTER_PORT:-29500}"
        launch=(srun --nodes="$NODES" --ntasks-per-node="$PROCS_PER_NODE" --kill-on-bad-exit=1
                python "${train_args[@]}")
    else
        if [[ "$NODES" != 1 ]]; then
            echo "run_and_time: $SYSTEM_NAME has $NODES nodes; launch it from a Slurm allocation" >&2
            exit 2
        fi
        launch=(torchrun --standalone --nnodes=1 --nproc_per_node="$PROCS_PER_NODE" "${train_args[@]}")
    fi

    echo "run_and_time: run $((i + 1))/$nexp of $SYSTEM_NAME, seed $seed, log $result"
    start=$(date +%s.%N)
    status=0
    "${launch[@]}" || status=$?
    end=$(date +%s.%N)
    seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
    echo "RESULT,bert,$seed,$seconds,${USER:-$(id -un)},$(date -d "@${start%.*}" '+%Y-%m-%d %r')"
    if [[ $status != 0 ]]; then
        echo "run_and_time: run $((i + 1)) ended with status $status (not converged or failed); see $result" >&2
        failed=$((failed + 1))
    fi
done
[[ $failed == 0 ]]
