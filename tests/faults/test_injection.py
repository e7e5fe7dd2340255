"""Nothing from a descriptor or the environment is executed, and no result lands outside LOGDIR: an environment
name that is an option of `env`, shell arithmetic in NEXP or SEED, a descriptor named `...json`."""

from __future__ import annotations

import pytest

from bert.system import load_descriptor
from bert.typed_config import ConfigError
from tests.helpers.faults import single_line_error, wrapper
from tests.helpers.systems import unchecked_descriptor, write_unchecked


def test_an_environment_name_that_is_an_option_is_refused_and_runs_nothing(tmp_path, cpu_env, small_dataset):
    marker = tmp_path / "ran"
    data = unchecked_descriptor({"launch.env": {"--split-string": f"sh -c 'touch {marker}'", "NCCL_DEBUG": "INFO"}})
    system = write_unchecked(tmp_path / "systems", "injected", data)
    env = dict(cpu_env, NEXP="1", SEED="1", LOGDIR=str(tmp_path / "logs"), DATADIR=str(small_dataset))
    proc = wrapper(system, env)
    assert proc.returncode == 2
    assert single_line_error(proc.stderr) == (
        f"Error: {system}: run.launch.env: '--split-string' is not an environment variable name; use letters, "
        "digits and '_', not starting with a digit (e.g. NCCL_SOCKET_IFNAME)")
    assert not marker.exists() and not (tmp_path / "logs").exists()


@pytest.mark.parametrize("name", ["NEXP", "SEED"])
def test_nexp_and_seed_are_never_evaluated_as_shell_code(tmp_path, cpu_env, name):
    marker = tmp_path / "ran"
    value = f"x[$(touch {marker})]"
    env = {**cpu_env, "NEXP": "1", "SEED": "1", "LOGDIR": str(tmp_path / "logs"), "DATADIR": str(tmp_path / "data"),
           name: value}
    proc = wrapper("cpu_micro", env)
    assert proc.returncode == 2
    assert single_line_error(proc.stderr).startswith(f"run_and_time: {name}={value}: must be a whole number from ")
    assert not marker.exists() and not (tmp_path / "logs").exists()


def test_a_descriptor_named_dots_cannot_put_results_outside_logdir(tmp_path, cpu_env):
    system = write_unchecked(tmp_path / "systems", "..", unchecked_descriptor())  # systems/...json
    assert system.name == "...json"
    with pytest.raises(ConfigError, match=r"'\.\.' cannot name a system: .* use only letters, digits, '\.', '_' "
                                          "and '-', starting with a letter or a digit; rename the file"):
        load_descriptor(system)
    logdir = tmp_path / "systems" / "logs"
    env = dict(cpu_env, NEXP="1", SEED="1", LOGDIR=str(logdir), DATADIR=str(tmp_path / "data"))
    proc = wrapper(system, env)
    assert proc.returncode == 2 and "cannot name a system" in single_line_error(proc.stderr)
    assert sorted(p.name for p in (tmp_path / "systems").iterdir()) == ["...json"]
    assert not (tmp_path / "data").exists()
