#!/usr/bin/env bash
# The install step of container/Dockerfile, for any Python that already has torch (NVIDIA's NGC PyTorch container,
# with its apex and Transformer Engine): this package goes into the python3 on PATH with, of its dependencies, only
# those that Python lacks or has at a version they do not accept; torch is never installed or replaced (without it
# this step stops and says so). bootstrap.sh's MLPERF_BERT_SYSTEM_PYTHON=1 does it; this script checks the result.
#   container/install.sh          (from any folder)
# Then `mlperf-bert` and `python -m bert.cli` run in that Python; the image keeps MLPERF_BERT_SYSTEM_PYTHON=1 set,
# so that run_and_time.sh uses it. Exit status 0 installed (or nothing was missing), 1 it could not.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export MLPERF_BERT_SYSTEM_PYTHON=1
# shellcheck source=../bootstrap.sh
source "$repo/bootstrap.sh" "" || exit 1  # an explicit (empty) argument: a bare `source` would pass on our $@
python3 -m bert.cli --help > /dev/null
mlperf-bert --help > /dev/null
echo "install: mlperf-bert installed in $(command -v python3)"
