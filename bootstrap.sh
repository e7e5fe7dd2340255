# Sourced by run_and_time.sh and run_tests.sh: puts a Python environment that has this package on PATH,
# creating and filling it on first use. Usage: source bootstrap.sh [EXTRAS], EXTRAS e.g. "test".
#   MLPERF_BERT_VENV=DIR            where the virtual environment lives (default: .venv in the repository)
#   MLPERF_BERT_SYSTEM_PYTHON=1     use the python3 on PATH (e.g. an NVIDIA container with torch and apex): what it
#                                   lacks of this package's dependencies is installed into it, never torch, and
#                                   this checkout unless python3 runs its code already (an image's older install
#                                   is replaced); this checkout's mlperf-bert comes first on PATH
# An install that cannot reach a package registry fails within seconds, in one line (pip's output is kept in a
# file that the line names); a virtual environment left half made (a start stopped while making it) is completed.
_repo="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
_extras="${1:-}"

_pip_install() {  # PYTHON LOG WHAT ARGS...: pip install ARGS, quiet; one line naming WHAT when it fails
    local python="$1" log="$2" what="$3"
    shift 3
    # One retry, not pip's five with back-off: without a registry every index page would be retried for minutes.
    if "$python" -m pip install -q --retries 1 "$@" >"$log" 2>&1; then return 0; fi
    local network signs="Failed to establish a new connection: [^']*|Temporary failure in name resolution"
    signs+="|Name or service not known|Network is unreachable|No route to host|Connection refused|timed out"
    network=$(grep -oE -m1 "$signs" "$log" | head -n 1 || true)
    if [[ -n "$network" ]]; then
        echo "bootstrap: cannot install $what: no package registry answers ($network); give this host access to" \
             "one (or a mirror: PIP_INDEX_URL), or make the environment on a host that has it (pip's output: $log)" >&2
    else
        # pip's own ERROR line, else the first error of the build it ran (its last lines only say "see above")
        local cause
        cause=$(grep -m1 '^ERROR' "$log" || grep -m1 -E '^ +(error|[A-Za-z]*Error): ' "$log" || tail -n 1 "$log")
        echo "bootstrap: pip could not install $what (${cause#"${cause%%[! ]*}"}); pip's output: $log" >&2
    fi
    return 1
}

_missing_requirements() {  # PYTHON: the requirement lines of this package (and EXTRAS) that PYTHON does not meet
    "$1" - "$_repo/setup.cfg" "$_extras" <<'EOF'
import configparser, importlib.metadata as metadata, re, sys
try:
    from packaging.requirements import Requirement
except ImportError:
    try:  # pip's own copy: a Python with pip has it
        from pip._vendor.packaging.requirements import Requirement
    except ImportError:  # neither: a requirement is met by any installed version
        Requirement = None
config = configparser.ConfigParser()
config.read(sys.argv[1])
lines = config["options"]["install_requires"].splitlines()
lines += [line for extra in sys.argv[2:] if extra for line in config["options.extras_require"][extra].splitlines()]
for line in filter(None, map(str.strip, lines)):
    requirement = Requirement(line) if Requirement else None
    try:
        installed = metadata.version(requirement.name if requirement else re.split(r"[<>=!~ \[;]", line)[0])
    except metadata.PackageNotFoundError:
        installed = None
    if installed is None or (requirement and not requirement.specifier.contains(installed, prereleases=True)):
        print(f"{line}\t{installed or 'none'}")
EOF
}

_checkout_state() {  # where python3 imports bert from, asked outside this folder (from inside it, any checkout's
    # code imports this one's): "here\tFOLDER" (FOLDER holds the mlperf-bert command of its install, if any),
    # "other\tPATH" (another checkout's or an older install's code) or "none"
    (cd / && python3 - "$_repo" <<'EOF'
import importlib.metadata as metadata, os, sys
try:
    import bert
except ImportError:
    sys.exit(print("none"))
found = os.path.dirname(os.path.realpath(bert.__file__))
if found != os.path.realpath(os.path.join(sys.argv[1], "bert")):
    sys.exit(print(f"other\t{found}"))
import shutil, subprocess
# Every install's record: a source tree on the path holds an egg-info of its own that lists no command.
commands = [os.path.realpath(d.locate_file(f)) for d in metadata.distributions(name="mlperf-bert")
            for f in d.files or () if f.name == "mlperf-bert"]
on_path = shutil.which("mlperf-bert")
if not commands and on_path:  # a command of no install (acceptance/gpu_check.sh's): taken when it runs this code
    from bert.provenance import running_code
    said = subprocess.run([on_path, "--version"], capture_output=True, text=True, timeout=60).stdout
    if f"code {running_code().digest} " in said:
        commands = [on_path]
print(f"here\t{os.path.dirname(commands[0]) if commands else ''}")
EOF
    )
}

_system_python() {  # what python3 lacks is installed into it; its torch is never touched
    local missing torch log
    missing=$(_missing_requirements python3) || { echo "bootstrap: python3 cannot read $_repo/setup.cfg" >&2; return 1; }
    torch=$(grep '^torch[<>=!~ ]' <<<"$missing" || true)
    if [[ -n "$torch" ]]; then
        echo "bootstrap: MLPERF_BERT_SYSTEM_PYTHON=1 but python3 ($(command -v python3)) lacks ${torch%%$'\t'*}" \
             "(installed: ${torch#*$'\t'}); use a Python that has it (an NVIDIA container), or unset" \
             "MLPERF_BERT_SYSTEM_PYTHON to make a virtual environment" >&2
        return 1
    fi
    # pip's output goes to a file of a new name: a fixed name in a shared /tmp could be a link planted by anyone.
    log=$(mktemp "${TMPDIR:-/tmp}/mlperf-bert-bootstrap-XXXXXXXX.log") || return 1
    local wanted=() line
    while IFS=$'\t' read -r line _; do [[ -n "$line" ]] && wanted+=("$line"); done <<<"$missing"
    if ((${#wanted[@]} > 0)); then
        echo "bootstrap: installing into python3 what it lacks: ${wanted[*]}" >&2
        # The installed torch pinned: a dependency that asked for another torch must not replace the container's.
        _pip_install python3 "$log" "${wanted[*]} into python3 (modules this package needs)" \
            --constraint <(python3 -c "import importlib.metadata as m; print('torch==' + m.version('torch'))") \
            "${wanted[@]}" || return 1
    fi
    # This checkout's code, installed: an image built from an older commit has that commit's bert and mlperf-bert.
    local state
    state=$(_checkout_state)
    if [[ "$state" != here$'\t'?* ]]; then
        local isolation=() what="this package into python3"  # a Python that can build it needs no registry for it
        if python3 -c "import setuptools, wheel" 2>/dev/null ||
           python3 -c "import setuptools.command.bdist_wheel" 2>/dev/null; then  # setuptools 70.1 on builds alone
            isolation=(--no-build-isolation)
        elif python3 -c "import setuptools" 2>/dev/null; then
            what+=" (its setuptools builds no wheel without the wheel module: a registry provides both)"
        fi
        _pip_install python3 "$log" "$what" --no-deps "${isolation[@]}" -e "$_repo" || return 1
        state=$(_checkout_state)
    fi
    case "$state" in
        here$'\t'?*) export PATH="${state#*$'\t'}:$PATH" ;;  # its mlperf-bert before any other on PATH
        other*) echo "bootstrap: python3 imports bert from ${state#*$'\t'}, not from this checkout ($_repo), even" \
                     "after installing this one: remove that copy from PYTHONPATH or from python3's site-packages" >&2
                return 1 ;;
        *) echo "bootstrap: python3 has no mlperf-bert command from $_repo even after installing it; install it" \
                "by hand (python3 -m pip install -e $_repo)" >&2
           return 1 ;;
    esac
    rm -f "$log"
}

if [[ "${MLPERF_BERT_SYSTEM_PYTHON:-0}" == 1 ]]; then
    _system_python || return 1
else
    _venv="${MLPERF_BERT_VENV:-$_repo/.venv}"
    _hash="$(cat "$_repo/setup.cfg" "$_repo/pyproject.toml" | sha1sum | cut -c1-12)"
    _stamp="$_venv/.installed-$_hash-${_extras:-base}"
    _installed() {  # any install of this package version satisfies a request without extras
        [[ -f "$_stamp" ]] || { [[ -z "$_extras" ]] && compgen -G "$_venv/.installed-$_hash-*" >/dev/null; }
    }
    _has_pip() { "$_venv/bin/python" -m pip --version >/dev/null 2>&1; }
    _make_venv() {
        _has_pip && return 0
        if [[ -e "$_venv/bin/python" ]]; then
            echo "bootstrap: $_venv is half made (no pip in it: a start stopped while making it); completing it" >&2
        fi
        python3 -m venv "$_venv" || return 1  # over a half-made one it adds what is missing and keeps the rest
        _has_pip && return 0
        echo "bootstrap: $_venv has no working pip even after python3 -m venv completed it; remove it" \
             "(rm -r $_venv) and start again" >&2
        return 1
    }
    _install() {
        echo "bootstrap: preparing $_venv (first use, or setup.cfg changed; a few minutes)" >&2
        _make_venv || return 1
        local log="$_venv/.bootstrap-pip.log"
        # torch first and pinned: a bare 'torch' requirement would pull a multi-GB CUDA build on a CPU machine.
        local torch="torch==${MLPERF_BERT_TORCH_VERSION:-2.13.0}"
        "$_venv/bin/python" -c "import torch" 2>/dev/null \
            || _pip_install "$_venv/bin/python" "$log" "$torch into $_venv" "$torch" || return 1
        _pip_install "$_venv/bin/python" "$log" "this package${_extras:+ with [$_extras]} into $_venv" \
            -e "$_repo${_extras:+[$_extras]}" || return 1
        touch "$_stamp"
    }
    if ! _installed; then
        # Every node of a multi-node start runs this at once, on a shared file system into one environment:
        # one installs while the others wait for its lock, then find its stamp.
        mkdir -p "$_venv" && exec {_lock}>>"$_venv/.bootstrap.lock" || return 1  # >>: truncates no planted link
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
unset -f _installed _install _has_pip _make_venv _pip_install _missing_requirements _system_python \
    _checkout_state
