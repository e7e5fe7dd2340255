#!/usr/bin/env bash
# Runs a command on a test host of tests/cluster/netns.py: in the host's network namespace, with its hosts file and
# resolv.conf (/etc/netns/NETNS/, which `ip netns exec NETNS` would also use) laid over /etc's in a mount namespace
# of its own, and under its host name (a UTS namespace of its own). Unlike `ip netns exec`, /sys stays this
# machine's, so that its cgroup file systems, which slurmd needs, stay mounted.
#   tests/cluster/on_host.sh NETNS HOSTNAME COMMAND [ARGS...]
set -euo pipefail
if (($# < 3)); then sed -n '2,6p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; fi
exec nsenter --net="/run/netns/$1" unshare --mount --uts -- sh -c \
    'mount --bind "$1/hosts" /etc/hosts && mount --bind "$1/resolv.conf" /etc/resolv.conf && hostname "$0" &&
     shift && exec "$@"' "$2" "/etc/netns/$1" "${@:3}"
