# Sourced by run_and_time.sh and run_tests.sh: puts a Python environment that has this package on PATH,
# creating and filling it on first use. Usage: source bootstrap.sh [EXTRAS], EXTRAS e.g. "test".
#   MLPERF_BERT_VENV=DIR            where the virtual environment lives (default: .venv in the repository)
#   MLPERF_BERT_SYSTEM_PYTHON=1     use the python3 on PATH as it is (e.g. an NVIDIA container with torch and
#                                   apex); only this package is installed into it, without dependencies
_repo="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
_extras="${1:-}"
if [[ "${MLPERF_BERT_SYSTEM_PYTHON:-0}" == 1 ]]; then
    python3 -c "import bert.cli" 2>/dev/null || python3 -m pip install -q --no-deps -e "$_repo" || return 1
else
    _venv="${MLPERF_BERT_VENV:-$_repo/.venv}"
    _hash="$(cat "$_repo/setup.cfg" "$_repo/pyproject.toml" | sha1sum | cut -c1-12)"
    _stamp="$_venv/.installed-$_hash-${_extras:-base}"
    _installed() {  # any install of this package version satisfies a request without extras
        [[ -f "$_stamp" ]] || { [[ -z "$_extras" ]] && compgen -G "$_venv/.installed-$_hash-*" >/dev/null; }
    }
    _install() {
        echo "bootstrap: preparing $_venv (first use, or setup.cfg changed; a few minutes)" >&2
        [[ -x "$_venv/bin/python" ]] || python3 -m venv "$_venv" || return 1
        # torch first and pinned: a bare 'torch' requirement would pull a multi-GB CUDA build on a CPU machine.
        "$_venv/bin/python" -c "import torch" 2>/dev/null \
            || "$_venv/bin/python" -m pip install -q "torch==${MLPERF_BERT_TORCH_VERSION:-2.13.0}" || return 1
        "$_venv/bin/python" -m pip install -q -e "$_repo${_extras:+[$_extras]}" || return 1
        touch "$_stamp"
    }
    if ! _installed; then
        # Every node of a multi-node start runs this at once, on a shared file system into one environment:
        # one installs while the others wait for its lock, then find its stamp.
        mkdir -p "$_venv" && exec {_lock}>"$_venv/.bootstrap.lock" || return 1
        if ! flock -n "$_lock"; then
            echo "bootstrap: waiting for another install into $_venv to finish" >&2
            flock "$_lock"
        fi
        _status=0
        _installed || _install || _status=1
        exec {_lock}>&-
        [[ $_status -eq 0 ]] || return 1
    fi
    export PATH="$_venv/bin:$PATH"
    export VIRTUAL_ENV="$_venv"
fi
unset _repo _extras _venv _stamp _hash _lock _status
unset -f _installed _install
