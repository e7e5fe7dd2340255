"""What a run logs of the software it ran on (bert.software_stack through bert.mllog): read from this process, and
a log that carries it still passes the official compliance checker, in either division and ruleset."""

import importlib.metadata
import json
import platform

import pytest
import torch

from bert.mllog import SOFTWARE_STACK, RunLog
from bert.mlperf_rules import RULESETS
from bert.software_stack import CONTAINER_IMAGE_ENV, FIELDS, NGC_RELEASE_ENV, driver_version, running_stack
from compliance.checkers import compliance_check
from tests.compliance.fakes import CLOSED_RUN, edit_events, micro_system, write_run


def test_the_stack_is_this_process_s(monkeypatch):
    monkeypatch.delenv(CONTAINER_IMAGE_ENV, raising=False)
    monkeypatch.delenv(NGC_RELEASE_ENV, raising=False)
    stack = running_stack()
    assert list(stack) == list(FIELDS)
    assert stack["torch"] == torch.__version__ and stack["cuda"] == torch.version.cuda
    assert stack["python"] == platform.python_version()
    assert stack["mlperf_logging"] == importlib.metadata.version("mlperf-logging")
    if torch.version.cuda is None:  # this machine's CPU build: nothing of CUDA to report
        assert stack["cudnn"] is None and stack["nccl"] is None
    assert stack["container"] is None
    monkeypatch.setenv(NGC_RELEASE_ENV, "25.04")
    assert running_stack()["container"] == "NVIDIA PyTorch container 25.04"
    monkeypatch.setenv(CONTAINER_IMAGE_ENV, "/images/mlperf-bert.sqsh")
    assert running_stack()["container"] == "/images/mlperf-bert.sqsh"


def test_the_driver_version_is_read_from_the_kernel_modules_file(tmp_path):
    proc = tmp_path / "version"
    proc.write_text("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.03  Release Build  (dvs-builder"
                    "@U16-I1-N08-12-2)  Thu Jul 31 2025\nGCC version:  gcc version 13.3.0\n")
    assert driver_version(proc) == "580.159.03"
    proc.write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n")
    assert driver_version(proc) == "550.54.15"
    assert driver_version(tmp_path / "none") is None


@pytest.mark.parametrize("ruleset", RULESETS)
@pytest.mark.parametrize("division", ["closed", "open"])
def test_a_log_with_the_software_stack_passes_the_official_checker(tmp_path, ruleset, division):
    system = micro_system(division, 448)
    log = write_run(tmp_path / "result_0.txt", 1, system, **(CLOSED_RUN if division == "closed" else {}))
    carrier = RunLog(tmp_path / "stack.txt", echo=False)
    carrier.software_stack()
    carrier.close()
    (line,) = [json.loads(x[len(":::MLLOG "):]) for x in (tmp_path / "stack.txt").read_text().splitlines()]
    assert line["key"] == SOFTWARE_STACK and line["value"]["torch"] == torch.__version__
    edit_events(log, lambda index, event: [line, event] if event["key"] == "init_stop" else event)
    assert SOFTWARE_STACK in log.read_text()
    result = compliance_check(log, ruleset)
    assert result.passed, result.output
