#!/usr/bin/env bash
# Launch and time MLPerf BERT runs of one system: ./run_and_time.sh [--dry-run] [SYSTEM]   (default: cpu_tiny)
#
# --dry-run prints the launch plan (exact commands, environment, per-rank shards) and starts nothing.
# SYSTEM is a descriptor name in systems/ or a path to one. Environment:
#   NEXP=N          number of runs (default 1); each gets a distinct seed and its own result file
#   SEED=S          seed of the first run (default: drawn at random); run i uses S+i
#   LOGDIR=DIR      where results go (default: logs); files are DIR/<system>/result_<i>.txt, never overwritten
#   ON_EXISTING=next|refuse   when that folder already holds results: take the next free index (default), or
#                   refuse to start. A run logs to result_<i>.txt.partial, renamed when it ends (whatever its
#                   status), so a result_<i>.txt is always a finished log.
#   DROP_CACHES=1   drop the page cache before each run (needs root); logged as cache_clear
#   DATADIR=DIR     dataset directory, overriding the descriptor's run.dataset.dir
#   NODE_RANK=R     (torchrun on plain hosts, several nodes) this host's node; MASTER_ADDR names node 0
# Under Slurm (SLURM_JOB_ID set) the ranks are started with srun, one task per process of the descriptor,
# the rendezvous at the allocation's first host (example: run_and_time.sbatch); otherwise with torchrun: on this
# host alone, or started on every host with NODE_RANK and MASTER_ADDR set. run.launch.env (NCCL settings)
# reaches every rank. A failed run is reported and the next one starts; SIGTERM or SIGINT is passed on to the
# run in progress (a second one ends it at once) and no further run starts.
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
    # Refuses an allocation that cannot run the descriptor (one line); prints the first node's address.
    first_node=$(mlperf-bert system allocation "$system") || exit 2
    plan_args+=(--launcher slurm --master-addr "${MASTER_ADDR:-$first_node}")
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
case "${ON_EXISTING:-next}" in
    next) ;;
    refuse)
        if compgen -G "$logdir/result_*.txt*" >/dev/null; then
            echo "run_and_time: $logdir already holds results ($(cd "$logdir" && echo result_*.txt*)) and" \
                 "ON_EXISTING=refuse; move them away, set LOGDIR, or use ON_EXISTING=next" >&2
            exit 2
        fi ;;
    *) echo "run_and_time: ON_EXISTING=${ON_EXISTING} must be next or refuse" >&2; exit 2 ;;
esac

claim_index() {  # the first index with no result and no partial log; creates the partial log (atomically)
    local index=0
    until [[ ! -e "$logdir/result_$index.txt" ]] && ( set -C; : > "$logdir/result_$index.txt.partial" ) 2>/dev/null
    do index=$((index + 1)); done
    echo "$index"
}

publish() {  # partial log, index -> its result_<i>.txt; a hard link never replaces a result another run made
    local partial="$1" index="$2" last=$(($2 + 1000))
    until ln "$partial" "$logdir/result_$index.txt" 2>/dev/null; do
        index=$((index + 1))
        if ((index > last)); then echo "$partial"; return; fi  # no hard links here: keep the partial log
    done
    rm -f "$partial"
    echo "$logdir/result_$index.txt"
}

child="" interrupted=""
on_signal() {
    interrupted="$1"
    if [[ -n "$child" ]]; then kill -TERM "$child" 2>/dev/null || true; fi
}
trap 'on_signal TERM' TERM
trap 'on_signal INT' INT

if [[ "$SYNTHETIC" == 1 ]]; then
    mlperf-bert data synth --system "$SYSTEM_PATH" --out "$datadir" --if-missing
fi

failed=() ran=0
for ((i = 0; i < nexp; i++)); do
    index=$(claim_index)
    partial="$logdir/result_$index.txt.partial"
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
        mlperf-bert system plan "$SYSTEM_PATH" --command --seed "$seed" --log-file "$partial" "${plan_args[@]}" \
            "$cleared")
    [[ ${#launch[@]} -gt 0 ]] || { echo "run_and_time: no launch command for $SYSTEM_NAME" >&2; exit 2; }

    echo "run_and_time: run $((i + 1))/$nexp of $SYSTEM_NAME, seed $seed, log $logdir/result_$index.txt"
    start=$(date +%s.%N)
    # In the background, so that a signal to this script is served (passed on) while the run goes on.
    "${launch[@]}" &
    child=$!
    while kill -0 "$child" 2>/dev/null; do wait "$child" || true; done
    status=0
    wait "$child" || status=$?
    child=""
    end=$(date +%s.%N)
    if [[ $status != 0 ]]; then  # a rank 0 killed before its run_stop: the launcher's status is the evidence
        why="the ranks ended without run_stop (launcher exit status $status): a rank was killed or crashed"
        mlperf-bert log seal "$partial" --reason "$why; see the launcher's output" || true
    fi
    result=$(publish "$partial" "$index")
    ran=$((ran + 1))
    seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
    echo "RESULT,bert,$seed,$seconds,${USER:-$(id -un)},$(date -d "@${start%.*}" '+%Y-%m-%d %r')"
    if [[ $status != 0 ]]; then
        echo "run_and_time: run $((i + 1)) FAILED with status $status (not converged, aborted or crashed);" \
             "its log: $result" >&2
        failed+=("$(basename "$result")")
    fi
    if [[ -n "$interrupted" ]]; then
        echo "run_and_time: stopped by SIG$interrupted after $ran of $nexp run(s); no further run started" >&2
        break
    fi
done
if ((${#failed[@]} > 0)); then
    echo "run_and_time: ${#failed[@]} of $ran run(s) failed: ${failed[*]}" >&2
fi
if [[ -n "$interrupted" ]]; then
    exit $((128 + $(kill -l "$interrupted")))
fi
((${#failed[@]} == 0))
