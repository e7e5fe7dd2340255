"""The system description's software fields from what the runs logged (compliance.software): filled from the logs,
a contradiction between the runs or with the descriptor refused in one line, nothing filled from logs that carry
no software_stack; and the package of the session's ten real runs carries what they ran."""

import json

import pytest
import torch

from bert.mllog import SOFTWARE_STACK
from compliance.result_log import read_result_log
from compliance.software import SoftwareContradiction, software_description
from tests.compliance.fakes import edit_events, micro_system, write_run

CPU = {"torch": "2.13.0+cpu", "cuda": None, "cudnn": None, "nccl": None, "driver": None, "python": "3.11.7",
       "mlperf_logging": "4.1.68", "container": None}


def _logs(folder, *stacks):
    logs = []
    for index, stack in enumerate(stacks):
        path = write_run(folder / f"result_{index}.txt", index + 1)
        if stack is not None:
            event = {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": SOFTWARE_STACK,
                     "value": stack, "metadata": {"file": "train.py", "lineno": 1}}
            edit_events(path, lambda i, e, event=event: [event, e] if e["key"] == "init_stop" else e)
        logs.append(read_result_log(path))
    return logs


def test_the_fields_are_filled_from_what_the_runs_ran_and_the_descriptors_words_kept(tmp_path):
    system = micro_system()
    described = software_description(system, _logs(tmp_path, CPU, CPU))
    assert described["framework"] == "PyTorch 2.13.0+cpu (CPU)"
    assert described["other_software_stack"] == {"python_version": "3.11.7", "mlperf_logging_version": "4.1.68",
                                                 "stated": system.description["other_software_stack"]}
    gpu = dict(CPU, torch="2.11.0", cuda="13.0", cudnn="9.10.2", nccl="2.27.3", driver="580.159",
               container="/images/mlperf-bert.sqsh")
    h200 = system.variant(description={"framework": "PyTorch 2.11.0 (CUDA 13.0)",
                                       "other_software_stack": "CUDA 13.0, NVIDIA driver 580.159, Python 3.11"})
    described = software_description(h200, _logs(tmp_path / "gpu", gpu, gpu))
    assert described["framework"] == "PyTorch 2.11.0 (CUDA 13.0)"
    assert described["other_software_stack"]["nccl_version"] == "2.27.3"
    assert described["other_software_stack"]["container_image"] == "/images/mlperf-bert.sqsh"


def test_runs_on_different_software_are_one_line(tmp_path):
    other = dict(CPU, torch="2.12.0+cpu")
    with pytest.raises(SoftwareContradiction) as info:
        software_description(micro_system(), _logs(tmp_path, CPU, CPU, other))
    assert str(info.value) == ("result_2.txt ran torch 2.12.0+cpu, result_0.txt torch 2.13.0+cpu: the runs of one "
                               "submission run on one software stack; run them again on one")


@pytest.mark.parametrize("description, said", [
    ({"framework": "PyTorch 2.11.0 (CUDA 13.0)"}, "system.framework says torch 2.11.0, but the runs ran torch "
                                                  "2.13.0+cpu"),
    ({"other_software_stack": "CUDA 12, cuDNN 8"}, "system.other_software_stack says CUDA 12, but the runs ran "
                                                   "without CUDA"),
    ({"other_software_stack": {"cuda_version": "12.4"}}, "system.other_software_stack.cuda_version says CUDA 12.4"),
    ({"other_software_stack": "Python 3.12"}, "says Python 3.12, but the runs ran Python 3.11.7"),
])
def test_a_stated_version_the_runs_contradict_is_one_line(tmp_path, description, said):
    system = micro_system().variant(description=description)
    with pytest.raises(SoftwareContradiction) as info:
        software_description(system, _logs(tmp_path, CPU))
    assert said in str(info.value) and "\n" not in str(info.value)
    assert str(info.value).startswith(f"{system.path}: ")


def test_logs_without_a_software_stack_leave_the_description_as_it_is(tmp_path):
    system = micro_system()
    assert software_description(system, _logs(tmp_path, None, None)) == system.description
    with pytest.raises(SoftwareContradiction, match="result_1.txt logged no software_stack, result_0.txt did"):
        software_description(system, _logs(tmp_path / "mixed", CPU, None))


def test_the_package_of_ten_real_runs_describes_the_software_they_ran(micro_package):
    (described,) = [json.loads(p.read_text()) for p in (micro_package.org / "systems").glob("*.json")]
    assert described["framework"] == f"PyTorch {torch.__version__} (CPU)"
    logged = read_result_log(micro_package.logs / "result_0.txt").value(SOFTWARE_STACK)
    assert described["other_software_stack"]["python_version"] == logged["python"]
    assert "PACKAGE CHECKER FOUND NO ERRORS" in micro_package.package_result.output or \
        micro_package.package_result.exit_code == 0
