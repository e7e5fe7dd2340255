"""`mlperf-bert review PATH -o OUT` (compliance.review): one table across every BERT system of a folder of
submissions, as Markdown, CSV and JSON, with the leaderboard and each system's figures."""

import csv
import json
from pathlib import Path

import mlperf_logging
import pytest

from compliance.checkers import rcp_reference
from compliance.result_log import read_result_log
from tests.compliance.fakes import CLOSED_RUN, micro_system, write_package, write_round
from tests.helpers.compliance import cli


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory):
    root = write_round(tmp_path_factory.mktemp("round") / "results")
    # accelerators in the system description, as the CPU descriptors have none
    closed = micro_system("closed", 448, number_of_nodes="1", accelerators_per_node="4",
                          accelerator_model_name="Test Accelerator")
    write_package(root / "OrgD", closed, name="d_closed", **CLOSED_RUN)
    out = tmp_path_factory.mktemp("review") / "out"
    result = cli("review", root, "-o", out)
    return root, out, result


def test_one_row_per_bert_system_in_every_form(reviewed):
    root, out, result = reviewed
    assert result.exit_code == 0, result.output
    rows = json.loads((out / "review.json").read_text())
    assert sorted((r["org"], r["system"]) for r in rows) == [("OrgA", "a_bert"), ("OrgB", "b_one"), ("OrgB", "b_two"),
                                                             ("OrgD", "d_closed")]
    assert all(r["official"] == "PASS" and r["ours"] == "PASS" and r["minutes"] > 0 for r in rows)
    with open(out / "review.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert [(r["org"], r["system"]) for r in table] == [(r["org"], r["system"]) for r in rows]
    markdown = (out / "review.md").read_text()
    assert "![Leaderboard](leaderboard.png)" in markdown and "Submissions without BERT results: OrgC." in markdown
    assert all(f"| {r['org']} | {r['system']} |" in markdown for r in rows)
    names = {p.name for p in out.iterdir() if not p.name.startswith(".")}
    assert {"review.md", "review.csv", "review.json", "leaderboard.png", "OrgB_b_two_accuracy.png",
            "OrgA_a_bert_run_times.png", "OrgD_d_closed_throughput.png"} <= names


def test_per_accelerator_figures_come_from_the_system_json_and_the_logs(reviewed):
    root, out, _ = reviewed
    rows = {r["system"]: r for r in json.loads((out / "review.json").read_text())}
    row = rows["d_closed"]
    logs = [read_result_log(p) for p in (root / "OrgD" / "results" / "d_closed" / "bert").iterdir()]
    assert row["accelerators"] == 4 and row["accelerator"] == "Test Accelerator"
    assert row["accelerator_minutes"] == pytest.approx(row["minutes"] * 4)
    rates = sorted(log.samples_to_converge / (log.run_minutes * 60) for log in logs)
    assert row["samples_per_second_per_accelerator"] == pytest.approx((rates[4] + rates[5]) / 2 / 4)
    cpu = rows["a_bert"]  # a CPU system: no accelerators, no figures per accelerator
    assert cpu["accelerators"] == 0 and cpu["accelerator_minutes"] is None and cpu["rcp"] == "n/a (open division)"


def test_the_closed_system_beside_the_reference_convergence_point_it_is_judged_against(reviewed):
    _, out, _ = reviewed
    row = next(r for r in json.loads((out / "review.json").read_text()) if r["system"] == "d_closed")
    installed = Path(mlperf_logging.__file__).parent / "rcp_checker" / "training_5.0.0" / "rcps_bert.json"
    reference = next(r for r in json.loads(installed.read_text()).values() if r["BS"] == 448)
    assert row["rcp_batch_sizes"] == [448] and row["rcp_source"] == "reference" and row["rcp"] == "Pass"
    assert {key: found["rcp"] for key, found in row["hyperparameters"].items()} == \
        {key: [value] for key, value in reference["Hyperparams"].items()}
    assert row["hyperparameters"]["opt_epsilon"]["logged"] is not None  # logged as opt_lamb_epsilon
    least = rcp_reference(448).min_mean_samples
    assert row["samples_to_converge"] == 2_400_000
    assert row["rcp_margin_percent"] == pytest.approx((2_400_000 / least - 1) * 100)


def test_a_second_review_replaces_its_own_files_and_never_anyone_elses(reviewed, tmp_path):
    root, out, _ = reviewed
    again = cli("review", root, "-o", out, "--system", "a_bert")
    assert again.exit_code == 0, again.output
    assert not (out / "OrgB_b_two_accuracy.png").exists() and (out / "OrgA_a_bert_accuracy.png").exists()
    (out / "notes.txt").write_text("mine")
    refused = cli("review", root, "-o", out)
    assert refused.exit_code == 1 and "notes.txt" in refused.output
    assert (out / "notes.txt").read_text() == "mine" and (out / "review.md").is_file()


def test_a_report_of_a_results_repository_has_every_submission(reviewed, tmp_path):
    root, _, _ = reviewed
    result = cli("report", root, "-o", tmp_path / "report", "--system", "a_bert", "--system", "b_two")
    assert result.exit_code == 0, result.output
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert all(f"# MLPerf Training BERT submission: {org}" in markdown for org in ("OrgA", "OrgB"))
    assert "## System `b_two`" in markdown and "## System `b_one`" not in markdown and "OrgD" not in markdown
    assert "Submissions without BERT results: OrgC." in markdown
    assert "![Eval accuracy against training samples](OrgB_b_two_accuracy.png)" in markdown
    assert (tmp_path / "report" / "OrgB_b_two_accuracy.png").is_file()
