#!/usr/bin/env bash
# A real Slurm cluster on this one host, for the tests and for trying run_and_time.sbatch by hand:
#   tests/cluster/slurm_local.sh install              Debian's slurm-wlm and munge (root, apt-get)
#   tests/cluster/slurm_local.sh start  DIR [NODES]   writes DIR/slurm.conf, starts munged, slurmctld and NODES
#                                                     slurmd (default 1), waits until every node is idle
#   tests/cluster/slurm_local.sh start  DIR HOSTS     the same on the test hosts of tests/cluster/netns.py that the
#                                                     file HOSTS names, a line each: NAME ADDRESS NETNS; the first
#                                                     runs slurmctld (submit there), each other one a slurmd
#   tests/cluster/slurm_local.sh status DIR           sinfo and squeue of that cluster
#   tests/cluster/slurm_local.sh stop   DIR           cancels its jobs, ends every daemon and job step it started
# After start, `export SLURM_CONF=DIR/slurm.conf` points sbatch, srun, squeue and scancel at it.
#
# Everything lives under DIR (which must be new or empty): the munge key and socket, state and spool folders,
# pid files and daemon logs; no system file is touched, so several such clusters can run side by side, each on
# its own free ports. No cgroups (proctrack/linuxproc, task/none), so it runs in containers and CI machines.
# It runs as root or as any other user (the daemons, and so every job, then run as that user).
# With NODES=2 the nodes are two slurmd on this host (Slurm's multiple-slurmd mode), each with its own port. With
# HOSTS every daemon runs on its own host (tests/cluster/on_host.sh), each node's NodeAddr its host's address, and
# every client command of this script (sinfo, scancel) runs on the first host.
# Start cleans up after itself when it fails; stop is safe to repeat.
set -euo pipefail

usage() { sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

die() { echo "slurm_local: $*" >&2; exit 1; }

APT_LOCK_WAIT_S=300

install_packages() {
    [[ $(id -u) == 0 ]] || die "installing slurm-wlm and munge needs root"
    command -v apt-get >/dev/null || die "installing slurm-wlm and munge needs apt-get (Debian or Ubuntu)"
    # Another apt (a second test suite's install on a fresh machine, unattended-upgrades) may hold apt's locks:
    # wait for it instead of failing. /var/lib/dpkg is root's alone, so no other user can plant a link there.
    exec 9</var/lib/dpkg
    flock -w "$APT_LOCK_WAIT_S" 9 || die "another install held /var/lib/dpkg for ${APT_LOCK_WAIT_S} s"
    apt_update_waiting
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="$APT_LOCK_WAIT_S" \
        install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
}

apt_update_waiting() {  # apt-get update, retried while another apt holds its lists lock (it never waits for it)
    local waited=0 output
    until output=$(apt-get update -qq 2>&1); do
        grep -q "Could not get lock" <<<"$output" && ((waited < APT_LOCK_WAIT_S)) || { echo "$output" >&2; return 1; }
        sleep 2
        waited=$((waited + 2))
    done
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

on_host="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/on_host.sh"

host_field() {  # DIR LINE FIELD: a field (1 name, 2 address, 3 namespace) of a line of DIR/hosts
    sed -n "$2p" "$1/hosts" | awk -v f="$3" '{ print $f }'
}

on() {  # DIR LINE COMMAND...: the command on the host of that line of DIR/hosts, or here without DIR/hosts
    local dir="$1" line="$2"
    shift 2
    if [[ -f "$dir/hosts" ]]; then
        "$on_host" "$(host_field "$dir" "$line" 3)" "$(host_field "$dir" "$line" 1)" "$@"
    else
        "$@"
    fi
}

node_names() {  # DIR NODES: the node names of this cluster, one a line
    local host
    host=$(hostname -s)
    if [[ -f "$1/hosts" ]]; then awk 'NR > 1 { print $1 }' "$1/hosts"
    elif (($2 == 1)); then echo "$host"
    else seq -f "$host-n%g" 0 $(($2 - 1)); fi
}

write_conf() {  # DIR NODES
    local dir="$1" nodes="$2" host cpus memory name controller ctld_port=6817 slurmd_port=6818 line=1
    host=$(hostname -s)
    cpus=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)  # nproc obeys those two
    memory=$(awk '/MemTotal/ { print int($2 / 1024 / 2) }' /proc/meminfo)  # MB, half: other work shares it
    if [[ -f "$dir/hosts" ]]; then  # hosts of their own: Slurm's own ports are free on each
        controller="$(host_field "$dir" 1 1)($(host_field "$dir" 1 2))"
    else
        controller="$host(127.0.0.1)" ctld_port=$(free_port) slurmd_port=$(free_port)
    fi
    cat > "$dir/slurm.conf" <<EOF
# Written by tests/cluster/slurm_local.sh for a test cluster; not for production.
ClusterName=mlperfbert
SlurmctldHost=$controller
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
# The node's CPU count is what this file says, whatever slurmd finds (two slurmd share the host's CPUs).
SlurmdParameters=config_overrides
ReturnToService=2
SlurmdTimeout=60
MinJobAge=600
EOF
    local port
    while read -r name; do
        line=$((line + 1))
        if [[ -f "$dir/hosts" ]]; then
            echo "NodeName=$name NodeAddr=$(host_field "$dir" "$line" 2) CPUs=$cpus" \
                 "RealMemory=$((memory / nodes)) State=UNKNOWN" >> "$dir/slurm.conf"
        elif ((nodes == 1)); then
            echo "NodeName=$name NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory State=UNKNOWN" >> "$dir/slurm.conf"
        else
            port=$(free_port)
            echo "NodeName=$name NodeHostname=$host NodeAddr=127.0.0.1 Port=$port CPUs=$cpus" \
                 "RealMemory=$((memory / nodes)) State=UNKNOWN" >> "$dir/slurm.conf"
        fi
    done < <(node_names "$dir" "$nodes")
    echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >> "$dir/slurm.conf"
}

start_munge() {
    local dir="$1/munge"
    mkdir -m 700 "$dir"
    dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 status=none
    chmod 400 "$dir/munge.key"
    # --force: munged wants every folder above its socket open to all users, and a test's temporary folder
    # (pytest's among them) is private; only this host's processes talk to it.
    munged --force --socket="$dir/munge.socket" --key-file="$dir/munge.key" --pid-file="$dir/munged.pid" \
        --log-file="$dir/munged.log" --seed-file="$dir/munged.seed" \
        || die "munged did not start: $(tail -n 3 "$dir/munged.log" 2>/dev/null)"
}

wait_idle() {  # DIR NODES: until sinfo shows every node idle (30 s at most)
    local dir="$1" nodes="$2" idle
    for _ in $(seq 1 150); do
        idle=$(SLURM_CONF="$dir/slurm.conf" on "$dir" 1 sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l)
        ((idle == nodes)) && return 0
        sleep 0.2
    done
    SLURM_CONF="$dir/slurm.conf" on "$dir" 1 sinfo -N -l >&2 || true
    tail -n 5 "$dir"/*.log >&2 || true
    return 1
}

start() {  # DIR NODES|HOSTS
    local dir="$1" nodes="${2:-1}" name line=1 hosts=""
    if [[ -f "$nodes" ]]; then hosts=$(realpath "$nodes") nodes=$(($(grep -c . "$hosts") - 1)); fi
    [[ "$nodes" =~ ^[1-9][0-9]*$ ]] || die "NODES must be a positive integer or a HOSTS file with 2 lines or more, not '$2'"
    for tool in munged slurmctld slurmd sbatch sinfo; do
        command -v "$tool" >/dev/null || die "$tool is not installed; run '$0 install' (root, Debian)"
    done
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    [[ -z "$(ls -A "$dir")" ]] || die "$dir is not empty; give start a new folder"
    trap 'stop "$dir"' EXIT  # whatever ends start early (die, set -e) ends what it began
    mkdir -p "$dir/ctld" "$dir/spool"
    if [[ -n "$hosts" ]]; then cp "$hosts" "$dir/hosts"; fi
    write_conf "$dir" "$nodes"
    start_munge "$dir"
    export SLURM_CONF="$dir/slurm.conf"
    on "$dir" 1 slurmctld -i || die "slurmctld did not start: $(tail -n 3 "$dir/slurmctld.log" 2>/dev/null)"
    while read -r name; do
        line=$((line + 1))
        mkdir -p "$dir/spool/$name"
        on "$dir" "$line" slurmd -N "$name" ||
            die "slurmd $name did not start: $(tail -n 3 "$dir/slurmd-$name.log" 2>/dev/null)"
    done < <(node_names "$dir" "$nodes")
    wait_idle "$dir" "$nodes" || die "the nodes did not become idle within 30 s (logs in $dir)"
    trap - EXIT
    echo "slurm_local: $nodes node(s) idle; export SLURM_CONF=$dir/slurm.conf"
}

pids_of_cluster() {  # DIR: the job steps (slurmstepd) started by this cluster's slurmd, found by their config
    local dir="$1" pid
    for pid in $(pgrep -x slurmstepd 2>/dev/null || true); do
        if { tr '\0' '\n' < "/proc/$pid/environ"; } 2>/dev/null | grep -qx "SLURM_CONF=$dir/slurm.conf"; then
            echo "$pid"
        fi
    done
}

end_pids() {  # PID...: SIGTERM, then SIGKILL what is left after 5 s
    (($# > 0)) || return 0
    kill -TERM "$@" 2>/dev/null || true
    for _ in $(seq 1 50); do
        kill -0 "$@" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$@" 2>/dev/null || true
}

stop() {  # DIR
    local dir="$1" pids=() file
    [[ -f "$dir/slurm.conf" ]] || return 0
    export SLURM_CONF="$dir/slurm.conf"
    on "$dir" 1 scancel --full --quiet --user="$(id -un)" 2>/dev/null || true
    for file in "$dir"/slurmctld.pid "$dir"/slurmd-*.pid "$dir"/munge/munged.pid; do
        [[ -f "$file" ]] && pids+=("$(cat "$file")")
    done
    mapfile -t -O "${#pids[@]}" pids < <(pids_of_cluster "$dir")
    end_pids "${pids[@]}"
    # The job steps' own processes (the job's tasks) end with their step; anything left is ended here.
    mapfile -t pids < <(pids_of_cluster "$dir")
    end_pids "${pids[@]}"
    rm -f "$dir"/*.pid "$dir"/munge/munged.pid
}

status() {  # DIR
    export SLURM_CONF="$1/slurm.conf"
    on "$1" 1 sinfo -N -l
    on "$1" 1 squeue
}

case "${1:-}" in
    install) install_packages ;;
    start) (($# >= 2)) || usage; start "$2" "${3:-1}" ;;
    stop) (($# == 2)) || usage; stop "$2" ;;
    status) (($# == 2)) || usage; status "$2" ;;
    *) usage ;;
esac
