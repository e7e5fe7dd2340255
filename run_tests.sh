#!/usr/bin/env bash
# Run the test suite (installs what it needs on first use): ./run_tests.sh [pytest args]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$repo"
# shellcheck source=bootstrap.sh
source "$repo/bootstrap.sh" test
ruff check .
pytest -q --durations=30 "$@"
