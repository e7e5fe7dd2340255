#!/usr/bin/env bash
# Launch and time MLPerf BERT runs of one system: ./run_and_time.sh [--dry-run] [SYSTEM]   (default: cpu_tiny)
#
# --dry-run prints the launch plan (exact commands, environment, per-rank shards) and starts nothing.
# SYSTEM is a descriptor name in systems/ or a path to one. Environment:
#   NEXP=N          number of runs (default 1); each gets a distinct seed and its own result file
#   SEED=S          seed of the first run (default: drawn at random); run i uses S+i
#   LOGDIR=DIR      where results go (default: logs); files are DIR/<system>/result_<i>.txt, never overwritten
#   DROP_CACHES=1   drop the page cache before each run (needs root); logged as cache_clear
#   DATADIR=DIR     dataset directory, overriding the descriptor's run.dataset.dir
#   NODE_RANK=R     (torchrun on plain hosts, several nodes) this host's node; MASTER_ADDR names node 0
# Under Slurm (SLURM_JOB_ID set) the ranks are started with srun, one task per process of the descriptor,
# the rendezvous at the allocation's first host (example: run_and_time.sbatch); otherwise with torchrun: on this
# host alone, or started on every host with NODE_RANK and MASTER_ADDR set. run.launch.env (NCCL settings)
# reaches every rank.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$repo"
# shellcheck source=bootstrap.sh
source "$repo/bootstrap.sh" ""  # an explicit (empty) argument: a bare `source` would pass on our $1

dry_run=0
if [[ "${1:-}" == --dry-run ]]; then dry_run=1; shift; fi
system="${1:-cpu_tiny}"
eval "$(mlperf-bert system env "$system")"
nexp="${NEXP:-1}"
logdir="${LOGDIR:-logs}/$SYSTEM_NAME"
datadir="${DATADIR:-$DATASET_DIR}"
first_seed="${SEED:-${RUN_SEED:-$(( $(od -An -N4 -tu4 /dev/urandom) % 2000000000 ))}}"
plan_args=(--data-dir "$datadir" --node-rank "${NODE_RANK:-0}")
if [[ -n "${SLURM_JOB_ID:-}" ]]; then
    if [[ -n "${SLURM_JOB_NUM_NODES:-}" && "$SLURM_JOB_NUM_NODES" != "$NODES" ]]; then
        echo "run_and_time: the allocation has $SLURM_JOB_NUM_NODES node(s) but $SYSTEM_NAME describes $NODES;" \
             "submit with sbatch --nodes=$NODES" >&2
        exit 2
    fi
    plan_args+=(--launcher slurm
                --master-addr "${MASTER_ADDR:-$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)}")
else
    plan_args+=(--launcher torchrun)
    if [[ "$NODES" != 1 ]]; then
        if [[ -z "${MASTER_ADDR:-}" || -z "${NODE_RANK:-}" ]]; then
            echo "run_and_time: $SYSTEM_NAME has $NODES nodes; launch it from a Slurm allocation, or on every" \
                 "host with NODE_RANK=<0..$((NODES - 1))> and MASTER_ADDR=<node 0's address>" >&2
            exit 2
        fi
        plan_args+=(--master-addr "$MASTER_ADDR")
    fi
fi
if [[ $dry_run == 1 ]]; then
    exec mlperf-bert system plan "$SYSTEM_PATH" --seed "$first_seed" --log-file "$logdir/result_<i>.txt" \
        "${plan_args[@]}"
fi
mkdir -p "$logdir"

if [[ "$SYNTHETIC" == 1 ]]; then
    mlperf-bert data synth --system "$SYSTEM_PATH" --out "$datadir" --if-missing
fi

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

    launch=()
    while IFS= read -r -d '' arg; do launch+=("$arg"); done < <(
        mlperf-bert system plan "$SYSTEM_PATH" --command --seed "$seed" --log-file "$result" "${plan_args[@]}" \
            "$cleared")
    [[ ${#launch[@]} -gt 0 ]] || { echo "run_and_time: no launch command for $SYSTEM_NAME" >&2; exit 2; }

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
