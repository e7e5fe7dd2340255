#!/usr/bin/env bash
# Launch and time MLPerf BERT runs of one system: ./run_and_time.sh [--dry-run] [SYSTEM]   (default: cpu_tiny)
# ./run_and_time.sh --help prints this text.
#
# --dry-run prints the launch plan (exact commands, environment, per-rank shards, the cache clearing; under Slurm
# the container and the time check) and starts nothing; then it runs the pre-flight alone (on several nodes,
# started on every node as the run would be; not where it cannot reach them: say so).
# SYSTEM is a descriptor name (looked up in the site folders of MLPERF_BERT_SYSTEMS, then in systems/) or a path
# to one. Before anything starts, a pre-flight checks the device and torch build, the dataset, the checkpoint and
# the results folder (on every node), one line per problem. Environment:
#   NEXP=N          number of runs (default 1, at least 1); each gets a distinct seed and its own result file
#   SEED=S          seed of the first run (a whole number; default: the descriptor's run.seed, else drawn at
#                   random); run i uses S+i
#   LOGDIR=DIR      where results go (default: logs); files are DIR/<system>/result_<i>.txt, never overwritten
#   ON_EXISTING=next|refuse   when that folder already holds results: take the next free index (default), or
#                   refuse to start (of several wrappers started together, one runs). A run logs to
#                   result_<i>.txt.partial, published as result_<i>.txt when it ends with run_stop (whatever its
#                   status), so a result_<i>.txt is always a finished log; a log that cannot be finished (a
#                   full disk) stays .partial.
#   MLPERF_BERT_VERBOSE=1   print the MLPerf log lines too (they always go to the result file) and each print
#                   interval's loss, learning rate and rates; by default rank 0 prints a line per eval with the
#                   accuracy against the target and the time left (kept up to date in place on a terminal)
#   DROP_CACHES=1   drop the page cache before each run on every node (root, or sudo without a password);
#                   cache_clear is logged true only when every node dropped it, else false with a line naming them
#   DATADIR=DIR     dataset directory, overriding the descriptor's run.dataset.dir (a synthetic corpus is written
#                   only into an empty folder or one that holds this harness's own corpus)
#   CHECKPOINTDIR=DIR  the folder that holds the checkpoint run.init_checkpoint names (its file name is kept)
#   NODE_RANK=R     (torchrun on plain hosts, several nodes) this host's node; MASTER_ADDR names node 0
#   CONT=IMAGE      (Slurm with pyxis) the container image the ranks and the pre-flight start in (srun
#                   --container-image); the folders the run uses are mounted at their own paths
#   MOUNTS=LIST     (with CONT) more mounts, SRC:DST[:FLAGS],... (srun --container-mounts)
# Relative DATADIR, CHECKPOINTDIR and LOGDIR are relative to the folder the command is given in, and so are a
# SYSTEM given as a path and the folders of MLPERF_BERT_SYSTEMS.
# Under Slurm (SLURM_JOB_ID set) the ranks are started with srun, one task per process of the descriptor,
# the rendezvous at the allocation's first host (example: run_and_time.sbatch); otherwise with torchrun: on this
# host alone, or started on every host with NODE_RANK and MASTER_ADDR set. run.launch.env (NCCL settings)
# reaches every rank. A failed run is reported and the next one starts; SIGTERM or SIGINT is passed on to the
# run in progress (a second one ends it at once) and no further run starts.
# Each run prints RESULT,bert,<seed>,<seconds>,<user>,<date>: <seconds> is this wrapper's wall time of the launch,
# start-up and compiling included (the log's run_start to run_stop, the time MLPerf scores, is shorter), <date>
# the time the launch started. After the runs a summary gives each result file, its time from run_start to
# run_stop, the official compliance checker's verdict on it, and the next command (check, or package at 10 runs).
# Exit status: 0 every run reached the target and its log is published (or --help); 1 some run did not
# (aborted, crashed, or its log could not be finished); 2 nothing was started (bad input or environment, an
# unknown system, said in one line); 128+N stopped by signal N.
set -euo pipefail
if [[ "${1:-}" == -h || "${1:-}" == --help ]]; then  # the comment above, as the usage text
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
    exit 0
fi
# Started with `&` by a script, this shell inherits SIGINT ignored, and bash cannot trap a signal ignored on
# entry: Ctrl-C would end the ranks while this wrapper went on to the next run. It starts itself again with both
# signals' default handling (once: the traps below then take them).
if [[ -n "$(trap -p INT)$(trap -p TERM)" && -z "${_MLPERF_BERT_SIGNALS_RESET:-}" ]]; then
    export _MLPERF_BERT_SIGNALS_RESET=1
    exec python3 -c 'import os, signal, sys
for s in (signal.SIGINT, signal.SIGTERM): signal.signal(s, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' bash "${BASH_SOURCE[0]}" "$@"
fi
unset _MLPERF_BERT_SIGNALS_RESET
if [[ "${1:-}" == -* && "$1" != --dry-run ]]; then  # before anything slow, and not read as a system's name
    hint=""
    if [[ "$1" == --d* || "$1" == -d* ]]; then hint="did you mean --dry-run? "; fi
    echo "run_and_time: unknown option $1; ${hint}the options are --dry-run and --help" >&2
    exit 2
fi
# shellcheck source=user_paths.sh
source "$(dirname "${BASH_SOURCE[0]}")/user_paths.sh"
absolute_user_paths  # the user's relative folders mean theirs: this script works in the repository
dry_run=0
if [[ "${1:-}" == --dry-run ]]; then dry_run=1; shift; fi
# So is a descriptor named by its path (bert.descriptor_files.find_descriptor: a .json, or an existing file).
if [[ -n "${1:-}" && "$1" != /* && ( "$1" == *.json || -e "$1" ) ]]; then set -- "$PWD/$1" "${@:2}"; fi
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$repo"
# shellcheck source=bootstrap.sh
source "$repo/bootstrap.sh" ""  # an explicit (empty) argument: a bare `source` would pass on our $1

refuse() {  # one line, and nothing is started
    echo "run_and_time: $*" >&2
    exit 2
}

whole_number() {  # NAME VALUE MIN MAX: prints VALUE as a number, or refuses it
    # Only digits reach arithmetic: bash evaluates the text of a variable inside $(( )) as an expression, so
    # NEXP='x[$(cmd)]' would run cmd. Ten digits at most cannot overflow; 10# reads 010 as ten, not octal.
    if [[ $2 =~ ^[0-9]{1,10}$ ]] && ((10#$2 >= $3 && 10#$2 <= $4)); then
        echo $((10#$2))
    else
        refuse "$1=$2: must be a whole number from $3 to $4"
    fi
}

# With no SYSTEM, `system env` takes the default system (bert.system.DEFAULT_SYSTEM).
system_env="$(mlperf-bert system env ${1:+"$1"})" || exit 2  # it printed the descriptor's error
eval "$system_env"
system="${1:-$SYSTEM_NAME}"  # as the user named it, so that a refusal's fix repeats their words
nexp=$(whole_number NEXP "${NEXP:-1}" 1 100000) || exit 2
if [[ -n "${SEED:-}" ]]; then
    first_seed=$(whole_number SEED "$SEED" 0 "$MAX_SEED") || exit 2
else
    first_seed="$RUN_SEED"  # the descriptor's run.seed, else drawn by `system env` (Descriptor.run_seed)
fi
if ((first_seed + nexp - 1 > MAX_SEED)); then
    refuse "seeds $first_seed..$((first_seed + nexp - 1)) of NEXP=$nexp runs pass the largest seed $MAX_SEED;" \
           "use a smaller SEED"
fi
case "${ON_EXISTING:-next}" in
    next | refuse) ;;
    *) refuse "ON_EXISTING=${ON_EXISTING} must be next or refuse" ;;
esac
logdir="${LOGDIR:-logs}/$SYSTEM_NAME"
datadir="${DATADIR:-$DATASET_DIR}"
node_rank=$(whole_number NODE_RANK "${NODE_RANK:-0}" 0 $((NODES - 1))) || exit 2  # 00 is node 0 too
plan_args=(--data-dir "$datadir" --node-rank "$node_rank")
if [[ -n "${CHECKPOINTDIR:-}" ]]; then plan_args+=(--checkpoint-dir "$CHECKPOINTDIR"); fi
if [[ -n "${MOUNTS:-}" && -z "${CONT:-}" ]]; then refuse "MOUNTS=$MOUNTS needs CONT=<container image>"; fi
unplaced=""  # why the pre-flight cannot run here (a dry run away from the nodes)
if [[ -n "${SLURM_JOB_ID:-}" ]]; then
    if [[ $dry_run == 0 ]] && ! command -v srun >/dev/null; then  # the ranks and the pre-flight start through it
        refuse "SLURM_JOB_ID=$SLURM_JOB_ID is set but srun is not on PATH: run inside a Slurm job on a node that has" \
               "Slurm's commands, or unset SLURM_JOB_ID to start the ranks with torchrun"
    fi
    # Refuses an allocation that cannot run the descriptor (one line); prints the first node's address.
    first_node=$(mlperf-bert system allocation "$system") || exit 2
    plan_args+=(--launcher slurm --master-addr "${MASTER_ADDR:-$first_node}")
    if [[ -n "${CONT:-}" ]]; then plan_args+=(--container-image "$CONT" --container-mounts "${MOUNTS:-}"); fi
    if [[ -z "${SLURM_JOB_NODELIST:-}" ]]; then
        unplaced="no Slurm allocation here; run the dry run inside one (salloc) to check its nodes"
    fi
else
    if [[ -n "${CONT:-}" ]]; then
        refuse "CONT=$CONT: containers are started by Slurm's srun (pyxis); without Slurm, start run_and_time.sh" \
               "inside the container itself"
    fi
    plan_args+=(--launcher torchrun)
    if [[ "$NODES" != 1 && ( -z "${MASTER_ADDR:-}" || -z "${NODE_RANK:-}" ) ]]; then
        if [[ $dry_run == 0 ]]; then
            refuse "$SYSTEM_NAME has $NODES nodes; launch it from a Slurm allocation, or on every" \
                   "host with NODE_RANK=<0..$((NODES - 1))> and MASTER_ADDR=<node 0's address>"
        fi
        unplaced="start the dry run on every host with NODE_RANK=<0..$((NODES - 1))> and MASTER_ADDR=<node 0's"
        unplaced+=" address>, or inside a Slurm allocation, to check the nodes"
    elif [[ "$NODES" != 1 ]]; then
        plan_args+=(--master-addr "$MASTER_ADDR")
    fi
fi
# Rank 0, which writes the log, runs on node 0; the wrappers of the other torchrun nodes claim no result file.
logging_node=1
if [[ -z "${SLURM_JOB_ID:-}" && "$NODES" != 1 && "$node_rank" != 0 ]]; then logging_node=0; fi
step_command() {  # STEP: the command of that step of the plan (bert.launch.plan), into the array `command`
    command=()
    while IFS= read -r -d '' arg; do command+=("$arg"); done < <(
        mlperf-bert system plan "$SYSTEM_PATH" --command "$1" --log-file "$logdir/result_0.txt" "${plan_args[@]}")
    [[ ${#command[@]} -gt 0 ]] || exit 2  # the plan printed why
}
# Checks what the run needs before anything starts; on several nodes every node reports to node 0, which refuses
# the start in one line per problem (a node that cannot reach node 0 gives up after
# run.launch.preflight_timeout_s). Under Slurm, one task on every node (bert.launch.preflight).
preflight() {
    step_command preflight
    "${command[@]}"
}
if [[ $dry_run == 1 ]]; then
    dry=(--runs "$nexp")
    if [[ "${DROP_CACHES:-0}" == 1 ]]; then dry+=(--drop-caches); fi
    mlperf-bert system plan "$SYSTEM_PATH" --seed "$first_seed" --log-file "$logdir/result_<i>.txt" \
        "${plan_args[@]}" "${dry[@]}" || exit 2
    if [[ -n "$unplaced" ]]; then
        echo "run_and_time: pre-flight not run: $unplaced" >&2
    else
        preflight || exit 2
    fi
    exit 0
fi
holds_results() { compgen -G "$logdir/result_*.txt*" >/dev/null; }
refuse_existing() {
    refuse "$logdir already holds results ($(cd "$logdir" && echo result_*.txt*)) and ON_EXISTING=refuse; move" \
           "them away, set LOGDIR, or use ON_EXISTING=next"
}
# Nothing is written (a corpus, a results folder) for a start that is refused anyway; the lock below decides races.
if [[ "${ON_EXISTING:-next}" == refuse && $logging_node == 1 ]] && holds_results; then refuse_existing; fi
if [[ "$SYNTHETIC" == 1 ]]; then  # it refuses, in one line, a folder that holds anything but its own corpus
    mlperf-bert data synth --system "$SYSTEM_PATH" --out "$datadir" --if-missing || exit 2
fi
preflight || exit 2  # before a result file is claimed: a start it refuses leaves nothing behind
if [[ $logging_node == 1 ]]; then
    mkdir -p "$logdir" 2>/dev/null || refuse "cannot create the results folder $logdir; set LOGDIR to a folder" \
                                             "you can write"
fi
lock=""
release_lock() {  # only the lock this wrapper made
    if [[ -n "$lock" ]]; then rm -f "$lock/pid"; rmdir "$lock" 2>/dev/null || true; fi
}
trap release_lock EXIT
case "${ON_EXISTING:-next}" in
    next) ;;
    refuse)
        if [[ $logging_node == 0 ]]; then
            :  # this node writes nothing in the results folder
        elif ! mkdir "$logdir/.run_and_time.lock" 2>/dev/null; then
            # The folder is claimed atomically (mkdir), so that of two wrappers started together only one runs.
            [[ -d "$logdir/.run_and_time.lock" ]] ||
                refuse "cannot write in $logdir; set LOGDIR to a folder you can write"
            holder=$(cat "$logdir/.run_and_time.lock/pid" 2>/dev/null || echo "?")
            refuse "another run_and_time.sh (pid $holder) is starting runs in $logdir with ON_EXISTING=refuse;" \
                   "wait for it to end (if it is not running, remove $logdir/.run_and_time.lock)"
        else
            lock="$logdir/.run_and_time.lock"
            echo $$ > "$lock/pid"
            if holds_results; then refuse_existing; fi
        fi ;;
esac

claim_index() {  # the first index with no result and no partial log; creates the partial log (atomically)
    local index=0
    # A name that is taken by anything, a link too (noclobber writes through a link to a device: /dev/zero).
    taken() { [[ -e "$1" || -L "$1" ]]; }
    until ! taken "$logdir/result_$index.txt" && ! taken "$logdir/result_$index.txt.partial" &&
          ( set -C; : > "$logdir/result_$index.txt.partial" ) 2>/dev/null
    do
        # Taken indices have a file; a failure without one is a folder that takes no file (no loop forever).
        if ! taken "$logdir/result_$index.txt" && ! taken "$logdir/result_$index.txt.partial"; then
            refuse "cannot create a result file in $logdir; set LOGDIR to a folder you can write"
        fi
        index=$((index + 1))
    done
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
on_signal() {  # passed on as received, so that the log names the signal that came; srun takes SIGINT as a
    interrupted="$1"  # request for its status, so it gets SIGTERM
    local as="$1"
    if [[ -n "${SLURM_JOB_ID:-}" ]]; then as=TERM; fi
    if [[ -n "$child" ]]; then kill -"$as" "$child" 2>/dev/null || true; fi
}
trap 'on_signal TERM' TERM
trap 'on_signal INT' INT

# Under Slurm one task on every node drops its page cache; elsewhere this host's, and the ranks gather every
# node's answer (bert.train). Each node says "page cache cleared on <host>" or why not.
clearing_nodes=1
if [[ -n "${SLURM_JOB_ID:-}" ]]; then clearing_nodes=$NODES; fi
if [[ "${DROP_CACHES:-0}" == 1 ]]; then step_command cache-clear; cache_clear=("${command[@]}"); fi
drop_caches() {  # prints the run's flag: --cache-cleared only when every node here said so, else names the others
    local said cleared failed
    said=$("${cache_clear[@]}" 2>&1) || true
    cleared=$(grep -c "^page cache cleared on " <<< "$said") || true
    if ((cleared == clearing_nodes)); then echo --cache-cleared; return; fi
    failed=$(sed -n 's/^page cache NOT cleared on \([^ ]*\).*/\1/p' <<< "$said" | paste -sd, - | sed 's/,/, /g')
    echo "run_and_time: cache_clear is logged as false: the page cache was not dropped on" \
         "${failed:-$((clearing_nodes - cleared)) node(s) that did not answer} (root, or sudo without a password," \
         "is needed on every node)" >&2
    echo --no-cache-cleared
}

failed=() ran=0 results=()
for ((i = 0; i < nexp; i++)); do
    if [[ $logging_node == 1 ]]; then
        index=$(claim_index) || exit 2
        partial="$logdir/result_$index.txt.partial"
        where="log $logdir/result_$index.txt"
    else
        partial=/dev/null where="node $node_rank: node 0 keeps the log"  # no rank here writes one
    fi
    seed=$((first_seed + i))
    said_seed="seed $seed"
    # Without SEED or run.seed each host draws its own; the ranks take rank 0's (bert.train), node 0's.
    if [[ $logging_node == 0 && -z "${SEED:-}" ]]; then said_seed="node 0's seed"; fi

    cleared=--no-cache-cleared
    if [[ "${DROP_CACHES:-0}" == 1 ]]; then cleared=$(drop_caches); fi

    launch=()
    while IFS= read -r -d '' arg; do launch+=("$arg"); done < <(
        mlperf-bert system plan "$SYSTEM_PATH" --command --seed "$seed" --log-file "$partial" "${plan_args[@]}" \
            "$cleared")
    [[ ${#launch[@]} -gt 0 ]] || { echo "run_and_time: no launch command for $SYSTEM_NAME" >&2; exit 2; }

    echo "run_and_time: run $((i + 1))/$nexp of $SYSTEM_NAME, $said_seed, $where"
    start=$(date +%s.%N)
    # In the background, so that a signal to this script is served (passed on) while the run goes on; in a
    # session of its own, so that Ctrl-C reaches the run once, through this script, not also from the terminal.
    setsid "${launch[@]}" &
    child=$!
    while kill -0 "$child" 2>/dev/null; do wait "$child" || true; done
    status=0
    wait "$child" || status=$?
    child=""
    end=$(date +%s.%N)
    if [[ $logging_node == 0 ]]; then
        ran=$((ran + 1))
        if [[ $status != 0 ]]; then
            echo "run_and_time: run $((i + 1)) FAILED on node $node_rank (launcher exit status $status)" >&2
            failed+=("run $((i + 1))")
        fi
        if [[ -n "$interrupted" ]]; then break; fi
        continue
    fi
    # A log without run_stop (a rank 0 killed before it) is sealed with an aborted one; the launcher's status
    # is the evidence. Seal's status: 0 the log ends with a successful run_stop, 1 with an aborted one, 3 it
    # is no finished log and cannot be made one (nothing logged, a full disk): then it is not published.
    why="the ranks ended without run_stop (launcher exit status $status)"
    if [[ $status != 0 ]]; then why+=": a rank was killed or crashed"; fi
    verdict=0
    mlperf-bert log seal "$partial" --reason "$why; see the launcher's output" || verdict=$?
    if ((verdict <= 1)); then
        result=$(publish "$partial" "$index")
    else
        result="$partial"
        echo "run_and_time: $partial is not a finished log, so it is not published as result_$index.txt" >&2
    fi
    ran=$((ran + 1)) results+=("$result")
    seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
    echo "RESULT,bert,$seed,$seconds,${USER:-$(id -un)},$(date -d "@${start%.*}" '+%Y-%m-%d %r')"
    if [[ $status != 0 || $verdict != 0 ]]; then
        echo "run_and_time: run $((i + 1)) FAILED (launcher exit status $status; not converged, aborted, crashed" \
             "or no finished log); its log: $result" >&2
        failed+=("$(basename "$result")")
    fi
    if [[ -n "$interrupted" ]]; then
        echo "run_and_time: stopped by SIG$interrupted after $ran of $nexp run(s); no further run started" >&2
        break
    fi
done
if [[ ${#results[@]} -gt 0 && -z "$interrupted" ]]; then  # each log's outcome and verdict, the next command
    mlperf-bert log summary --system "$system" "${results[@]}" || true  # it says why it could not
fi
if ((${#failed[@]} > 0)); then
    echo "run_and_time: ${#failed[@]} of $ran run(s) failed: ${failed[*]}" >&2
fi
if [[ -n "$interrupted" ]]; then
    exit $((128 + $(kill -l "$interrupted")))
fi
((${#failed[@]} == 0))
