"""The least time a run takes on its hardware (compliance.hardware): the accelerator a name or platform names (the
first match of the table wins: GB200 before B200), counts as system JSONs write them, the machine a system JSON
describes (or its host cores), and the samples a run trained inside its clock."""

import pytest

from compliance.hardware import (
    CPU_CORE_PEAK,
    UNKNOWN_PEAK,
    accelerator_model,
    accelerator_peak,
    lone_machine,
    samples_trained,
    system_machine,
    whole,
)
from compliance.result_log import read_result_log
from tests.compliance.fakes import CLOSED_RUN, edit_events, micro_system, write_run


@pytest.mark.parametrize("text, model", [
    ("NVIDIA GB200", "GB200"), ("NVIDIA Blackwell GPU (B200-SXM-180GB)", "B200"),
    ("2xXE9680Lx8B200-SXM-180GB", "B200"), ("NVIDIA H100-SXM5-80GB", "H100"), ("NVIDIA L40S", "L40S"),
    ("NVIDIA L40", "L40"), ("NVIDIA L4", "L4"), ("NVIDIA A100-SXM4-80GB", "A100"), ("NVIDIA A10", "A10"),
    ("AMD Instinct MI300X", "MI300X"), ("Intel Gaudi 2", "Gaudi2"), ("tinybox red", None),
    ("2xSUBMISSION_PLATFORM_PLACEHOLDER", None),
])
def test_the_accelerator_a_name_or_platform_names(text, model):
    assert accelerator_model(text) == model


def test_a_model_not_in_the_table_counts_more_than_any_made():
    assert accelerator_peak("NVIDIA H100-SXM5-80GB") == (3.958e15, True)
    assert accelerator_peak("Acme Tensor Engine 9") == (UNKNOWN_PEAK, False)


@pytest.mark.parametrize("value, count", [
    (8, 8), ("8", 8), (" 16 ", 16), ("0", 0), (True, None), (-1, None), ("-1", None), ("1e3", None),
    ("9" * 9, None), (10**8, None), (None, None), ("eight", None),
])
def test_a_count_is_a_whole_number_as_system_jsons_write_it(value, count):
    assert whole(value) == count


def test_the_machine_of_a_system_json_or_its_host_cores():
    gpus = system_machine({"number_of_nodes": "2", "accelerators_per_node": "8",
                           "accelerator_model_name": "NVIDIA H200-SXM5-141GB"}, "systems/x.json")
    assert (gpus.units, gpus.peak) == (16, 3.958e15)
    assert gpus.what == "16 NVIDIA H200-SXM5-141GB of systems/x.json, counted at 3.958 PFLOP/s each"
    cpus = system_machine({"number_of_nodes": "2", "accelerators_per_node": "0", "host_processors_per_node": "2",
                           "host_processor_core_count": "56"}, "systems/cpu.json")
    assert (cpus.units, cpus.peak) == (224, CPU_CORE_PEAK)
    assert cpus.what == "the 224 host cores of systems/cpu.json (no accelerators), counted at 16 TFLOP/s each"
    assert system_machine({"number_of_nodes": "0", "accelerators_per_node": "8"}, "x") is None
    assert system_machine({"number_of_nodes": "1", "accelerators_per_node": "0"}, "x") is None  # no cores stated


def test_a_lone_log_gets_one_accelerator_per_sequence_and_only_evals_inside_the_run_count(tmp_path):
    log = write_run(tmp_path / "result_0.txt", seed=1, system=micro_system("closed", 448), **CLOSED_RUN)
    read = read_result_log(log)
    machine = lone_machine(read)
    assert (machine.units, machine.peak) == (448, UNKNOWN_PEAK)
    last = max(e.metadata["epoch_num"] for e in read.all("eval_accuracy"))
    assert samples_trained(read) == last
    stop = read.first("run_stop").time_ms
    edit_events(log, lambda _, e: dict(e, time_ms=stop + 1) if e["key"] == "eval_accuracy" and
                e["metadata"]["epoch_num"] == last else e)  # the last eval now after the clock stopped
    assert samples_trained(read_result_log(log)) < last
