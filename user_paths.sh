# Sourced by run_and_time.sh and run_and_time.sbatch before they work in the repository (or submit a job that
# starts there): the folders a user names relative to where they gave the command mean that folder, not the
# harness's. absolute_user_paths rewrites DATADIR, CHECKPOINTDIR, LOGDIR and each folder of MLPERF_BERT_SYSTEMS
# against $PWD and exports what it rewrote (a job submitted afterwards gets the absolute paths).
absolute_user_paths() {
    local name i folders
    for name in DATADIR CHECKPOINTDIR LOGDIR; do
        if [[ -n "${!name:-}" && "${!name}" != /* ]]; then
            printf -v "$name" '%s' "$PWD/${!name}"
            export "${name?}"
        fi
    done
    if [[ -n "${MLPERF_BERT_SYSTEMS:-}" ]]; then
        IFS=: read -ra folders <<< "$MLPERF_BERT_SYSTEMS"
        for i in "${!folders[@]}"; do
            if [[ -n "${folders[i]}" && "${folders[i]}" != /* ]]; then folders[i]="$PWD/${folders[i]}"; fi
        done
        MLPERF_BERT_SYSTEMS=$(IFS=:; echo "${folders[*]}")
        export MLPERF_BERT_SYSTEMS
    fi
}
