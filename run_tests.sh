#!/usr/bin/env bash
# Run the test suite (installs what it needs on first use): ./run_tests.sh [pytest args]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$repo"
# shellcheck source=bootstrap.sh
source "$repo/bootstrap.sh" test
ruff check .
# Two workers: most tests wait on processes they start (ranks, launchers, a Slurm cluster), so a second
# worker uses the time; on a 2-core machine the suite takes about 10 minutes instead of 14. TEST_WORKERS=0 runs them in this process.
pytest -q -n "${TEST_WORKERS:-2}" --durations=30 "$@"
