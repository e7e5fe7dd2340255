"""The logs of one submission state one system: `check` and `package` refuse runs of two systems mixed, and
`package` refuses logs that are not its descriptor's runs. Logs holding any JSON where a number or a string
belongs are reported, never a traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import compliance.check as check_module
from bert.mllog import CODE_VERSION
from bert.mlperf_rules import DEFAULT_RULESET
from bert.system import load_descriptor
from compliance import plots
from compliance.checkers import CheckResult
from compliance.package import _refusals
from compliance.provenance import package_provenance
from compliance.report import rcp_text, runs_table
from compliance.result_log import read_result_log, result_logs_in
from tests.compliance.fakes import (
    IMPLEMENTATION,
    edit_events,
    head_code,
    micro_system,
    published_style,
    write_package,
    write_run,
    write_runs,
)
from tests.helpers.compliance import cli


def _other_system():
    """cpu_micro run on another machine with another learning rate (the descriptor's name is the same)."""
    return load_descriptor("cpu_micro").variant({"optimizer.base_learning_rate": 0.02},
                                            description={"system_name": "another machine"})


def test_check_and_package_refuse_the_runs_of_two_systems_mixed(tmp_path):
    logs = write_runs(tmp_path / "logs", count=5)
    for i in range(5, 10):
        write_run(logs / f"result_{i}.txt", seed=100 + i, system=_other_system())
    checked = cli("check", logs)
    assert checked.exit_code == 1 and "VERDICT: FAIL" in checked.output
    said = " ".join(checked.output.split())
    platform = load_descriptor("cpu_micro").description["system_name"]
    assert f"the runs state different systems or configurations (submission_platform: {platform!r} in " \
           "result_0.txt, result_1.txt, result_2.txt, result_3.txt, result_4.txt; 'another machine' in result_5.txt" \
           in said
    assert "opt_base_learning_rate: 0.01 in result_0.txt, result_1.txt, result_2.txt, result_3.txt, result_4.txt; " \
           "0.02 in result_5.txt" in said
    out = tmp_path / "out"
    packaged = cli("package", "--system", "cpu_micro", "--logs", logs, "--out", out)
    assert packaged.exit_code == 1 and "not packaged, nothing written" in packaged.output
    assert "the runs state different systems or configurations" in " ".join(packaged.output.split())
    assert not out.exists()


def test_package_refuses_logs_that_are_not_its_descriptors_runs(tmp_path):
    logs = write_runs(tmp_path / "logs", system=_other_system())
    out = tmp_path / "out"
    packaged = cli("package", "--system", "cpu_micro", "--logs", logs, "--out", out)
    assert packaged.exit_code == 1 and not out.exists()
    said = " ".join(packaged.output.split())
    assert f"the logs are not runs of {load_descriptor('cpu_micro').path} (submission_platform is" in said
    assert "opt_base_learning_rate is 0.01 in the descriptor, but 0.02 in result_0.txt" in said


def _variants(template: Path) -> list[list[str]]:
    """The template's lines, each variant with one value or one metadata value replaced by a JSON object."""
    lines = template.read_text().splitlines()
    variants = []
    for i, line in enumerate(lines):
        event = json.loads(line.split(":::MLLOG ", 1)[1])
        for field in ["value", *(f"metadata.{key}" for key in event["metadata"])]:
            changed = json.loads(json.dumps(event))
            if field == "value":
                changed["value"] = {"unexpected": [1, 2]}
            else:
                changed["metadata"][field.split(".", 1)[1]] = {"unexpected": "x"}
            variants.append([*lines[:i], f":::MLLOG {json.dumps(changed)}", *lines[i + 1:]])
    return variants


@pytest.fixture
def passing_tools(monkeypatch):
    """The official checkers, as if they passed (their verdict is not what these tests look at)."""
    def passing(logs, rcp_folders, ruleset, advance=None):
        return ({log: CheckResult("compliance", str(log), True, "") for log in logs.values()},
                {folder: CheckResult("rcp", str(folder), True, "") for folder in rcp_folders.values()})
    monkeypatch.setattr(check_module, "run_logs", passing)


@pytest.mark.filterwarnings("ignore:Tight layout not applied")  # a legend of a hundred runs
def test_a_json_object_wherever_a_value_belongs_is_reported_not_a_traceback(tmp_path, passing_tools):
    variants = _variants(write_run(tmp_path / "template.txt", seed=1))
    assert len(variants) > 80
    folders = []
    for start in range(0, len(variants), 10):
        folder = tmp_path / f"logs_{start}"
        folder.mkdir()
        for i, lines in enumerate(variants[start:start + 10]):
            (folder / f"result_{i}.txt").write_text("\n".join(lines) + "\n")
        folders.append(folder)
        result = cli("check", folder)  # fails the test on a traceback
        assert result.exit_code in (0, 1) and "VERDICT" in result.output
        _refusals(micro_system(), folder, [read_result_log(p) for p in result_logs_in(folder)], DEFAULT_RULESET)
    logs = [read_result_log(p) for folder in folders for p in result_logs_in(folder)]
    runs_table(logs)
    rcp_text(logs, DEFAULT_RULESET)
    plots.accuracy_plot(logs, None, "", tmp_path / "accuracy.png")
    plots.throughput_plot(logs, tmp_path / "throughput.png")


def test_package_refuses_another_organisations_runs_and_code_that_is_not_what_ran(tmp_path):
    logs = write_runs(tmp_path / "logs")
    out = tmp_path / "out"
    mine = cli("package", "--system", "cpu_micro", "--logs", logs, "--org", "MyOrg", "--out", out)
    assert mine.exit_code == 1 and not out.exists()
    assert "--org MyOrg, but the descriptor's system.submitter is 'MLPerf BERT harness developers' (and its runs " \
           "log submission_org 'MLPerf BERT harness developers'): a package is its submitter's; leave --org out " \
           "(the folder is then MLPerf BERT harness developers)" in " ".join(mine.output.split())
    edit_events(logs / "result_3.txt", lambda _, e: dict(e, value="0" * 64, metadata={"commit": "0123abcd"})
                if e["key"] == CODE_VERSION else e)
    edit_events(logs / "result_5.txt", lambda _, e: None if e["key"] == CODE_VERSION else e)
    result = cli("package", "--system", "cpu_micro", "--logs", logs, "--out", out)
    said = " ".join(result.output.split())
    assert result.exit_code == 1 and not out.exists()
    assert f"result_3.txt ran code 000000000000 (commit 0123abcd), but the package holds commit " \
           f"{head_code().commit[:12]} (code {head_code().digest[:12]}): the packaged code is not what ran" in said
    assert "result_5.txt: no code_version line, so nothing ties the run to the packaged code" in said


def test_check_compares_the_logs_with_the_code_a_package_holds(tmp_path):
    org = write_package(tmp_path / "MLPerf")
    logs = {"cpu_micro": [read_result_log(p) for p in result_logs_in(org / "results" / "cpu_micro" / "bert")]}
    assert package_provenance(org, {}, logs) == []
    (org / IMPLEMENTATION / "bert" / "train.py").write_text("# not what ran\n")
    (finding,) = package_provenance(org, {}, logs)
    assert "result_0.txt, result_1.txt" in finding.message and finding.level == "error"
    assert "but the package holds the bert package of implementations/pytorch" in finding.message


@pytest.fixture
def packaged(tmp_path):
    """A package made by `package` of ten open-division cpu_micro runs (its descriptor's target: 0.06)."""
    logs = write_runs(tmp_path / "logs")
    result = cli("package", "--system", "cpu_micro", "--logs", logs, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    return next((tmp_path / "out").iterdir())


def _refused(org) -> str:
    result = cli("check", org)
    assert result.exit_code == 1 and "VERDICT: FAIL" in result.output, result.output
    return " ".join(result.output.split())


def _cut_at(log, accuracy):
    """The run as if it had stopped with success at its first eval (of `accuracy`), with no target or code line."""
    seed = read_result_log(log).seed
    write_run(log, seed, system=load_descriptor("cpu_micro").variant({"eval.target_accuracy": accuracy}),
              accuracies=(accuracy,))
    published_style(log)


def test_a_package_is_whole_or_refused(packaged):
    """Deleting the target_accuracy and code_version lines of runs cut at 0.045 (the descriptor's target is 0.06),
    the packaged descriptor, or the packaged bert package: each part's absence is refused, naming it."""
    results = packaged / "results" / "cpu_micro" / "bert"
    for log in results.glob("result_*.txt"):
        _cut_at(log, 0.045)
    said = _refused(packaged)
    assert "result_0.txt, result_1.txt, result_2.txt, result_3.txt, result_4.txt, result_5.txt, result_6.txt, " \
           "result_7.txt, result_8.txt, result_9.txt: no target_accuracy line, which every run of this harness logs " \
           "before run_start: a package this harness made holds it, and this one is this harness's " \
           "(benchmarks/bert/implementations/pytorch/systems/ holds a descriptor;" in said
    assert "no code_version line, which every run of this harness logs" in said
    assert "target_accuracy is 0.06 in the descriptor, but None in result_0.txt" in said


@pytest.mark.parametrize("part, said", [
    ("systems/cpu_micro.json", "no descriptor of system cpu_micro beside the code (benchmarks/bert/implementations/"
                               "<impl>/systems/cpu_micro.json; found: cpu_tiny, "),
    ("bert", "no implementation folder holds the bert package (implementations/<impl>/bert/) that the runs ran: a "
             "package this harness made holds it"),
])
def test_a_deleted_part_of_a_package_is_named(packaged, part, said):
    shutil.rmtree(packaged / IMPLEMENTATION / part) if part == "bert" else (packaged / IMPLEMENTATION / part).unlink()
    refused = _refused(packaged)
    assert said in refused
    assert "a package this harness made holds it, and this one is this harness's (cpu_micro/result_0.txt logs " \
           "code_version;" in refused


def test_results_renamed_to_another_system_are_refused(packaged):
    """The results folder and system JSON renamed to a "DGX H100 (fake)" of 8 H100s: the CPU runs are no runs of
    it, and the package holds no descriptor of it."""
    (packaged / "results" / "cpu_micro").rename(packaged / "results" / "dgx_h100_fake")
    description = json.loads((packaged / "systems" / "cpu_micro.json").read_text())
    description.update(system_name="DGX H100 (fake)", accelerators_per_node="8",
                       accelerator_model_name="NVIDIA H100-SXM5-80GB")
    (packaged / "systems" / "dgx_h100_fake.json").write_text(json.dumps(description))
    (packaged / "systems" / "cpu_micro.json").unlink()
    said = _refused(packaged)
    assert "no descriptor of system dgx_h100_fake beside the code (benchmarks/bert/implementations/<impl>/systems/" \
           "dgx_h100_fake.json; found: cpu_micro, cpu_tiny, " in said
    assert "Was it deleted, or the results folder and system JSON renamed?" in said


@pytest.mark.parametrize("text", ['{"run": {"max_samples": ' + "9" * 5000 + "}}", '{"a": ' * 100_000 + "}" * 100_000])
def test_a_hostile_packaged_descriptor_is_refused_in_one_line(tmp_path, text):
    """A 5000-digit integer (ValueError) or nesting 100,000 deep in the descriptor beside the code."""
    org = write_package(tmp_path / "MLPerf")
    (org / IMPLEMENTATION / "systems" / "cpu_micro.json").write_text(text)
    logs = {"cpu_micro": [read_result_log(p) for p in result_logs_in(org / "results" / "cpu_micro" / "bert")]}
    (finding,) = package_provenance(org, {}, logs)
    assert finding.message.startswith("the descriptor packaged with the code cannot be read (")
