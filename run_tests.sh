#!/usr/bin/env bash
# Run the test suite (installs what it needs on first use): ./run_tests.sh [pytest args]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$repo"
# shellcheck source=bootstrap.sh
source "$repo/bootstrap.sh" test
ruff check .
# One torch thread per worker and per process a test starts, unless asked otherwise: torch's default of a
# thread per core, times the workers and their subprocesses, oversubscribes the cores, and spinning OpenMP
# threads then stall steps for seconds (an e2e run took 224 s instead of 45, a SIGTERM outlived its 10 s grace).
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
# The tests start hundreds of Python processes (CLI commands, ranks, launchers): each compiles the repository's sources again unless their
# bytecode is kept (in __pycache__, which git ignores), which an environment's PYTHONDONTWRITEBYTECODE forbids.
unset PYTHONDONTWRITEBYTECODE
# One worker more than the cores (at most 8): many tests wait on processes they start (ranks, launchers, a Slurm
# cluster, a timeout running out), and the extra worker uses those waits. On 2 cores, two workers left a tenth of
# the CPU idle; three keep it busy. TEST_WORKERS=N sets the count, TEST_WORKERS=0 runs them in this process.
workers=()  # a system Python (MLPERF_BERT_SYSTEM_PYTHON) may lack pytest-xdist: then one process runs them all
cores=$(nproc 2>/dev/null || echo 2)
default_workers=$(( cores + 1 < 8 ? cores + 1 : 8 ))
if python3 -c "import xdist" 2>/dev/null; then workers=(-n "${TEST_WORKERS:-$default_workers}" --dist loadgroup); fi
pytest -q "${workers[@]}" --durations=30 "$@"
