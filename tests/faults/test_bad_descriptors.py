"""Bad descriptors are refused in one line naming the file, the field and the fix, before anything runs: every
numeric field has a range (declared beside its field), and a binary file or a folder is no traceback."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import types
import typing
from pathlib import Path

import pytest
from click.testing import CliRunner

from bert.cli import main
from bert.system import RunSpec, load_descriptor
from bert.typed_config import CHECK
from tests.helpers.runs import train_command
from tests.helpers.systems import unchecked_descriptor, write_unchecked

BAD_VALUES = [
    ("global_batch_size", -32, "must be at least 1 and at most 1048576, got -32"),
    ("global_batch_size", 10**12, "must be at least 1 and at most 1048576, got 1000000000000"),
    ("gradient_accumulation_steps", 0, "must be at least 1, got 0"),  # a divisor of the global batch
    ("processes_per_node", 0, "must be at least 1, got 0"),  # a divisor of the global batch
    ("print_interval_steps", 0, "must be at least 1, got 0"),
    ("eval.batch_size", 0, "must be at least 1, got 0"),
    ("eval.interval_samples", 0, "must be at least 1, got 0 (or null for the MLPerf formula)"),
    ("seed", -1, "must be 0 or more and at most 4294967295, got -1"),
    ("optimizer.base_learning_rate", float("nan"), "must be positive, got nan"),
    ("optimizer.beta_2", 1.0, "must be 0 or more and less than 1, got 1.0"),
    ("optimizer.training_steps", 0, "must be at least 1, got 0"),
    ("launch.master_port", 70000, "must be at least 1 and at most 65535, got 70000"),
    ("launch.cpu_binding.omp_num_threads", 100_000, "must be at least 1 and at most 1024, got 100000 (or null: a "
     "bound rank's physical cores; more than any host has, 100000 crashed a rank)"),
    ("dataset.synthetic.shards", 0, "must be at least 1, got 0"),
    ("model_overrides.num_heads", 0, "must be at least 1, got 0"),
    ("model_overrides.gelu", "relu", "expected one of 'tanh', 'erf', got 'relu' (string)"),
    ("model_overrides.hidden_dropout", 1.0, "must be 0 or more and less than 1, got 1.0"),
    ("optimizer.start_warmup_step", 5, "must be at most 0, got 5 (a positive start gives the reference a negative "
     "learning rate before it; start the warm-up at 0 or before)"),
]


@pytest.mark.parametrize("path, value, problem", BAD_VALUES, ids=[f"{p}={v}" for p, v, _ in BAD_VALUES])
def test_an_out_of_range_value_is_one_line_naming_the_field(tmp_path, path, value, problem):
    system = write_unchecked(tmp_path, "bad", unchecked_descriptor({path: value}))
    result = CliRunner().invoke(main, ["system", "check", str(system)])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.exception
    assert result.output == f"Error: {system}: run.{path}: {problem}\n"


def test_a_bad_value_stops_a_run_before_its_log_is_opened(tmp_path):
    system = write_unchecked(tmp_path, "bad", unchecked_descriptor({"global_batch_size": -32}))
    log = tmp_path / "result_0.txt"
    proc = subprocess.run([sys.executable, "-m", "bert.cli", "train", "--system", str(system), "--seed", "1",
                           "--log-file", str(log)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "run.global_batch_size: must be at least 1" in proc.stderr
    assert not log.exists()


def test_a_batch_the_data_cannot_fill_stops_the_run_before_run_start(tmp_path, small_dataset):
    """2,048 training samples cannot fill a step of 4,096: the loader would wait for ever after run_start."""
    system = load_descriptor("cpu_micro").variant({"global_batch_size": 4096, "max_samples": 8192},
                                              name="big_batch").write(tmp_path).path
    log = tmp_path / "result_0.txt"
    proc = subprocess.run(train_command(system, small_dataset, log), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert f"{small_dataset}: its 2048 training samples do not fill one step of run.global_batch_size 4096" in \
        proc.stderr
    text = log.read_text()
    assert "run_start" not in text and '"status": "aborted"' in text.splitlines()[-1]


def _numeric(tp) -> bool:
    options = typing.get_args(tp) if typing.get_origin(tp) in (typing.Union, types.UnionType) else (tp,)
    return any(option in (int, float) for option in options)


def _spec_classes(cls: type, seen: set[type]) -> None:
    seen.add(cls)
    for tp in typing.get_type_hints(cls).values():
        for option in (*typing.get_args(tp), tp):
            if dataclasses.is_dataclass(option) and option not in seen:
                _spec_classes(option, seen)


def test_every_numeric_field_of_the_run_block_has_a_range():
    classes: set[type] = set()
    _spec_classes(RunSpec, classes)
    assert len(classes) >= 7  # run, optimizer, eval, dataset, synthetic, launch, performance, search
    unchecked = [f"{cls.__name__}.{f.name}" for cls in classes for f in dataclasses.fields(cls)
                 if _numeric(typing.get_type_hints(cls)[f.name]) and CHECK not in f.metadata]
    assert unchecked == []


def test_a_binary_descriptor_or_a_folder_is_one_line(tmp_path):
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe" + bytes(range(256)))
    for target, message in ((binary, "not a text file (not UTF-8); a descriptor is a JSON file like "
                                     "systems/cpu_tiny.json"),
                            (tmp_path, "is a folder, not a descriptor")):
        for command in (["system", "check", str(target)], ["hpo", "--system", str(target), "--trials", "1"]):
            result = CliRunner().invoke(main, command)
            assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.exception
            assert result.output.startswith(f"Error: {target}: {message}") and result.output.count("\n") == 1


def test_a_pipe_or_a_device_given_as_a_descriptor_is_named_as_such(tmp_path):
    fifo = tmp_path / "system.json"
    os.mkfifo(fifo)  # nothing ever writes it: reading it would wait for ever
    for target in (fifo, Path("/dev/zero")):
        proc = subprocess.run([sys.executable, "-m", "bert.cli", "system", "check", str(target)], capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 1 and proc.stderr == (
            f"Error: {target}: is not a regular file (a pipe, a device or a socket); give a descriptor file "
            "(e.g. systems/cpu_tiny.json) or the name of one in systems/\n")


def test_valid_descriptors_keep_loading(tmp_path):
    variant = load_descriptor("cpu_micro").variant(
        {"optimizer.start_warmup_step": -100,  # negative on purpose (published)
         "launch.env": {"NCCL_SOCKET_IFNAME": "ib0", "_X1": "y"}}, name="ok")
    system = variant.write(tmp_path).path
    result = CliRunner().invoke(main, ["system", "check", str(system)])
    assert result.exit_code == 0, result.output
    assert json.loads(system.read_text())["run"]["optimizer"]["start_warmup_step"] == -100
