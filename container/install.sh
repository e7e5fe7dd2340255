#!/usr/bin/env bash
# The install step of container/Dockerfile, for any Python that already has torch (NVIDIA's NGC PyTorch container,
# with its apex and Transformer Engine): installs this package into the python3 on PATH and, of its dependencies
# (setup.cfg's install_requires), only those that Python lacks or has at a version they do not accept. torch is
# never installed or replaced: without it this step stops and says so.
#   container/install.sh          (from any folder)
# Then `mlperf-bert` and `python -m bert.cli` run in that Python; set MLPERF_BERT_SYSTEM_PYTHON=1 (the image does)
# so that run_and_time.sh uses it. Exit status 0 installed (or nothing was missing), 1 it could not.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="$(command -v python3)" || { echo "install: no python3 on PATH" >&2; exit 1; }
# What setup.cfg asks for and this Python does not have, one requirement a line; torch is only checked.
missing="$("$python" - "$repo/setup.cfg" <<'PY'
import configparser
import importlib.metadata
import sys

try:
    from packaging.requirements import Requirement
except ImportError:  # pip brings its own copy
    from pip._vendor.packaging.requirements import Requirement

config = configparser.ConfigParser()
config.read(sys.argv[1])
for line in config["options"]["install_requires"].split("\n"):
    if not line.strip():
        continue
    requirement = Requirement(line.strip())
    try:
        found = importlib.metadata.version(requirement.name)
    except importlib.metadata.PackageNotFoundError:
        found = None
    # An installed pre-release (NGC's torch 2.7.0a0+...nv25.04) counts as the version it leads to.
    fits = found is not None and requirement.specifier.contains(found, prereleases=True)
    if requirement.name == "torch":
        if not fits:
            sys.exit(f"install: {sys.executable} has torch {found or 'not at all'}; this step keeps the torch it "
                     f"finds and needs {requirement}: use NVIDIA's PyTorch container, or install torch first")
    elif not fits:
        print(requirement)
PY
)"
if [[ -n "$missing" ]]; then
    echo "install: adding what $python lacks: $(echo "$missing" | paste -sd' ' -)" >&2
    mapfile -t requirements <<< "$missing"
    # The installed torch is pinned, so that no dependency's resolution may replace NVIDIA's build.
    "$python" -m pip install --quiet "${requirements[@]}" \
        --constraint <("$python" -c 'import importlib.metadata as m; print("torch==" + m.version("torch"))')
fi
# Built with the setuptools that Python has when it can build the package (NGC's can), so that nothing else is
# fetched; else pip builds it in an environment of its own.
isolation=()
if "$python" -c 'import setuptools as s, importlib.util as u, sys
v = tuple(int(p) for p in s.__version__.split(".")[:2])
sys.exit(v < (61, 0) or (v < (70, 1) and u.find_spec("wheel") is None))' 2>/dev/null; then
    isolation=(--no-build-isolation)
fi
"$python" -m pip install --quiet --no-deps "${isolation[@]}" -e "$repo"
"$python" -m bert.cli --help > /dev/null
echo "install: mlperf-bert installed in $python"
