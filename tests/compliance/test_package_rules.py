"""The rules of a whole package (compliance.package_rules): its layout, each system JSON as the official tools read
it, the hardware its logs state or print against their system JSON, and the least time that hardware allows."""

from __future__ import annotations

import json

import pytest

from compliance.findings import WARNING
from compliance.package_rules import package_judgement, platform_findings, read_system_json
from compliance.result_log import read_result_log
from tests.compliance.fakes import (
    CLOSED_RUN,
    compressed,
    micro_system,
    stating_platform,
    with_stated_system,
    write_package,
    write_run,
)
from tests.helpers.compliance import check_fails, cli, ends_in_one_line


def _description(nodes: str, per_node: str = "8", name: str = "") -> dict:
    return {"number_of_nodes": nodes, "accelerators_per_node": per_node, "system_name": name}


def _logs_stating(folder, platforms: list[str | None]) -> list:
    folder.mkdir(parents=True)
    return [read_result_log(stating_platform(write_run(folder / f"result_{i}.txt", seed=i), platform))
            for i, platform in enumerate(platforms)]


def test_platforms_as_published_pass_and_swapped_results_folders_fail(tmp_path):
    descriptions = {"nyx_n1": _description("1", name="Nyx (1x NVIDIA DGX B200)"),
                    "tyche_ngpu64": _description("16", "4", "Tyche (1x NVIDIA GB200 NVL72)"),
                    "AS-4126GS-NBR-LCC_N2": _description("2"), "7920T_2xA5000_hdd": _description("1", "2"),
                    "tinybox_red": _description("1", "6", "tinybox red")}
    genuine = {"nyx_n1": _logs_stating(tmp_path / "a", ["1xNVIDIA HGX B200", None]),
               "tyche_ngpu64": _logs_stating(tmp_path / "b", ["16xNVIDIA GB200"]),
               "AS-4126GS-NBR-LCC_N2": _logs_stating(tmp_path / "c", ["2xSUBMISSION_PLATFORM_PLACEHOLDER"]),
               "7920T_2xA5000_hdd": _logs_stating(tmp_path / "d", ["2xA5000"]),
               "tinybox_red": _logs_stating(tmp_path / "e", ["tinybox_red"])}
    assert platform_findings(tmp_path, descriptions, genuine) == []
    swapped = dict(genuine, nyx_n1=genuine["tyche_ngpu64"], tyche_ngpu64=genuine["nyx_n1"])
    said = [f.message for f in platform_findings(tmp_path, descriptions, swapped)]
    assert len(said) == 2 and all("are these another system's results?" in m for m in said)
    assert "its count (16) is neither the 1 node(s) nor the 8 accelerators of systems/nyx_n1.json" in said[0]
    named = {"2xXE9712x4GB200": _description("2", "4", "2xXE9712x4GB200"),
             "2xXE9680Lx8B200": _description("2", "8", "2xXE9680Lx8B200")}
    crossed = {"2xXE9712x4GB200": _logs_stating(tmp_path / "f", ["2xXE9680Lx8B200"]),
               "2xXE9680Lx8B200": _logs_stating(tmp_path / "g", ["2xXE9680Lx8B200"])}
    said = [f.message for f in platform_findings(tmp_path, named, crossed)]
    assert len(said) == 1 and "it names the package's other system 2xXE9680Lx8B200" in said[0]


def test_system_json_fields_are_checked_as_the_official_tools_read_them(tmp_path):
    org = write_package(tmp_path / "Org")
    path = org / "systems" / "cpu_micro.json"
    published = json.loads(path.read_text())
    published["other_software_stack"] = {"cuda_version": "12.4", "nccl_version": "2.22.3-1+cuda12.6"}
    published["host_memory_configuration"] = ["16x 64GB", "DDR5"]
    published["number_of_nodes"] = 1
    path.write_text(json.dumps(published))
    assert read_system_json(path)[1] == []
    published["framework"] = {"name": "PyTorch"}
    path.write_text(json.dumps(published))
    (finding,) = read_system_json(path)[1]
    assert finding.blocks and "framework: must be a string, got {'name': 'PyTorch'}" in finding.message


def test_the_hardware_a_log_names_must_be_its_systems(tmp_path):
    """Dell's B200 logs name their model in the platform and print the system they ran on (:::SYSJSON); under an
    H200 system both contradict it: the printed system is refused, the free-text platform warned of. A platform
    that names no model (a placeholder), or the same model by another name ("Dell B200" for "NVIDIA Blackwell GPU
    (B200-SXM-180GB)"), is genuine."""
    h200 = dict(_description("2", "8", "2xXE9680Lx8H200-SXM-141GB"), accelerator_model_name="NVIDIA H200-SXM5-141GB")
    b200 = dict(h200, accelerator_model_name="NVIDIA Blackwell GPU (B200-SXM-180GB)")
    named = _logs_stating(tmp_path / "a", ["2xXE9680Lx8B200-SXM-180GB"])
    found = platform_findings(tmp_path, {"h200": h200}, {"h200": named})
    assert [f.level for f in found] == [WARNING]  # free text: NVIDIA's accepted v2.0 2xa30 logs name an A100
    said = [f.message for f in found]
    assert said == ["the logs state submission_platform '2xXE9680Lx8B200-SXM-180GB', but it names B200 accelerators, "
                    "and systems/h200.json has 'NVIDIA H200-SXM5-141GB': are these another system's results? The "
                    "official tools do not compare them; results/<name>/ must hold the runs of systems/<name>.json"]
    assert platform_findings(tmp_path, {"b200": b200}, {"b200": named}) == []
    printed = tmp_path / "b" / "result_0.txt"
    printed.parent.mkdir()
    with_stated_system(write_run(printed, seed=1), dict(b200, accelerator_model_name="Dell B200"))
    logs = {"h200": [read_result_log(printed)]}
    (found,) = package_judgement(tmp_path, {"h200": h200}, logs)
    assert found.message.startswith("result_0.txt prints the system it ran on (:::SYSJSON): B200 accelerators, and "
                                    "systems/h200.json has 'NVIDIA H200-SXM5-141GB'. These are another system's")
    assert package_judgement(tmp_path, {"b200": b200}, {"b200": logs["h200"]}) == []
    nodes = dict(b200, number_of_nodes="4")
    (found,) = package_judgement(tmp_path, {"b200": nodes}, {"b200": logs["h200"]})
    assert "(:::SYSJSON): number_of_nodes 2, and systems/b200.json has 4" in found.message


def test_a_package_run_faster_than_its_system_is_refused(tmp_path):
    """The least time from the system JSON: 2.4 million samples of BERT-large on 8 B200 take seconds; the same on a
    model the table does not know is counted at more than any accelerator made."""
    nyx = dict(_description("1", "8", "nyx"), accelerator_model_name="NVIDIA Blackwell GPU (B200-SXM-180GB)")
    system = micro_system("closed", 448)
    folder = tmp_path / "nyx"
    folder.mkdir()
    genuine = read_result_log(write_run(folder / "result_0.txt", seed=1, system=system, **CLOSED_RUN))
    fast = read_result_log(compressed(write_run(folder / "result_1.txt", seed=2, system=system, **CLOSED_RUN), 100))
    assert package_judgement(tmp_path, {"nyx": nyx}, {"nyx": [genuine]}) == []
    (found,) = package_judgement(tmp_path, {"nyx": nyx}, {"nyx": [genuine, fast]})
    assert found.where.endswith("results/nyx/bert/result_1.txt")
    assert "takes at least 0.06679 minutes (4.007 s) on 8 NVIDIA Blackwell GPU (B200-SXM-180GB) of " \
           "systems/nyx.json, counted at 18 PFLOP/s each: no run is faster than its hardware" in found.message
    unknown = dict(nyx, accelerator_model_name="Acme Tensor Engine 9")
    (found,) = package_judgement(tmp_path, {"nyx": unknown}, {"nyx": [genuine, fast]})
    assert "8 Acme Tensor Engine 9 of systems/nyx.json, counted at 50 PFLOP/s each (a model not in the table: more " \
           "than any accelerator made)" in found.message


def test_system_json_missing_fields(tmp_path):
    org = write_package(tmp_path / "Org")
    desc = json.loads((org / "systems" / "cpu_micro.json").read_text())
    del desc["cooling"], desc["hw_notes"]
    (org / "systems" / "cpu_micro.json").write_text(json.dumps(desc))
    output = check_fails(org)
    assert "systems/cpu_micro.json: cooling: missing; the MLPerf system description needs all 33 fields" in output
    assert "systems/cpu_micro.json: hw_notes: missing" in output
    assert "FAIL    system description checker" in output and "Missing field cooling" in output


def test_system_json_name_differs_from_the_results_folder(tmp_path):
    org = write_package(tmp_path / "Org")
    (org / "systems" / "cpu_micro.json").rename(org / "systems" / "micro.json")
    output = check_fails(org)
    assert "results/cpu_micro: no systems/cpu_micro.json; the system JSON file name must equal the results folder " \
           "name (found: micro)" in output
    assert "NOT RUN package checker" in output


@pytest.mark.parametrize("text, said", [
    ('{"a": ' * 100_000 + "1" + "}" * 100_000, "nested deeper than a JSON parser follows"),
    ('{"number_of_nodes": ' + "9" * 5000 + "}", "number_of_nodes: must be a whole number"),
    ('{"number_of_nodes": "' + "9" * 5000 + '"}', "number_of_nodes: must be a whole number"),
])
def test_a_hostile_system_json_ends_in_one_line(tmp_path, text, said):
    """A system JSON nested 100,000 deep raised RecursionError; a 5000-digit integer, ValueError."""
    org = write_package(tmp_path / "Org")
    (org / "systems" / "cpu_micro.json").write_text(text)
    ends_in_one_line(cli("check", org), said)
