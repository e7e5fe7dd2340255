"""`check` and `score` on what a reviewer is given (compliance.check): a submission that also holds other
benchmarks, a folder of submissions, a results repository, a package's tree, its logs folder and one log; progress
on every long step; a system the tools cannot read left out while the others are checked; one line for what cannot
be checked. Which systems and submissions PATH holds: tests/compliance/test_targets.py."""

import json
import re
import shutil

import pytest

from bert.mlperf_rules import DEFAULT_RULESET, RULESETS
from compliance.check import Progress, check_tree
from compliance.result_log import read_result_log
from compliance.score import score_tree
from tests.compliance.fakes import write_package, write_round
from tests.helpers.compliance import cli


def _olympic_minutes(folder) -> float:
    minutes = sorted(read_result_log(folder / f"result_{i}.txt").run_minutes for i in range(10))
    return sum(minutes[1:-1]) / 8


def test_a_results_repository_is_checked_submission_by_submission_other_benchmarks_skipped(round_tree):
    result = cli("check", round_tree)
    output = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    assert "skipped (no bert/ results): a_vision" in output and output.count("a_vision") == 1
    assert "skipped (no BERT results): OrgC" in output and ".github" not in output and "LICENSE" not in output
    assert "ERROR" not in output
    for system in ("a_bert", "b_one", "b_two"):
        assert f"PASS package checker (results/{system})" in output
    assert "VERDICT (all 2 submissions): PASS" in output
    # The same field in two system JSONs: one line for the cause.
    assert output.count("framework_name: not an MLPerf system description field") == 1
    assert "(in 2 system JSONs: b_one.json, b_two.json)" in output


def test_a_submission_with_other_benchmarks_passes_as_the_package_checker_passes_it(round_tree):
    result = cli("check", round_tree / "OrgA")
    assert result.exit_code == 0, result.output
    assert "skipped (no bert/ results): a_vision" in result.output and "VERDICT: PASS" in result.output


def test_score_of_a_results_repository_scores_every_bert_system(round_tree):
    tree = score_tree(round_tree)
    assert tree.passed and tree.skipped == ("OrgC",)
    scored = {(r.check.target.name, s.system): s.minutes for r in tree.reports for s in r.systems}
    assert set(scored) == {("OrgA", "a_bert"), ("OrgB", "b_one"), ("OrgB", "b_two")}
    for (org, system), minutes in scored.items():
        assert minutes == pytest.approx(_olympic_minutes(round_tree / org / "results" / system / "bert"), abs=1e-5)


class Recorded(Progress):
    def __init__(self):
        self.steps: list[list] = []

    def step(self, description, total):
        self.steps.append([description, total, 0])

    def advance(self, amount=1):
        self.steps[-1][2] += amount


def test_every_long_step_reports_its_progress_to_the_end(round_tree):
    progress = Recorded()
    check_tree(round_tree, progress=progress)
    assert progress.steps == [["reading and judging logs", 30, 30], ["official tools", 3, 3]]
    progress = Recorded()
    check_tree(round_tree / "OrgB" / "results" / "b_one" / "bert", progress=progress)
    assert progress.steps == [["reading and judging logs", 10, 10], ["official tools", 10, 10]]


def test_a_linked_results_folder_is_refused_in_one_line_not_dropped(tmp_path):
    org = write_package(tmp_path / "Org")
    elsewhere = tmp_path / "elsewhere"
    shutil.move(org / "results" / "cpu_micro" / "bert", elsewhere)
    (org / "results" / "cpu_micro" / "bert").symlink_to(elsewhere)
    result = cli("score", org)
    output = " ".join(result.output.split())
    assert result.exit_code == 1 and "VERDICT: FAIL" in output
    assert f"results/cpu_micro/bert: is a symbolic link (to {elsewhere}), not a folder; a submission holds its " \
           "results themselves: replace the link with the folder it points to" in output


@pytest.mark.parametrize("command", ["score", "report", "review"])
def test_a_file_given_where_a_submission_belongs_is_one_line(tmp_path, command):
    log = write_package(tmp_path / "Org") / "results" / "cpu_micro" / "bert" / "result_0.txt"
    result = cli(command, log, *(["-o", tmp_path / "out"] if command != "score" else []))
    assert result.exit_code == 2
    error = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert error == [f"Error: {log}: is a file, not a submission (an ORG folder with systems/ and results/) nor a "
                     f"folder of them; check a result log with `mlperf-bert check {log}`"]
    assert not (tmp_path / "out").exists()


def test_a_folder_of_submissions_without_bert_is_one_line(tmp_path):
    write_round(tmp_path / "round")
    for org in ("OrgA", "OrgB"):
        shutil.rmtree(tmp_path / "round" / org)
    shutil.copytree(tmp_path / "round" / "OrgC", tmp_path / "round" / "OrgD")
    result = cli("check", tmp_path / "round")
    assert result.exit_code == 2 and re.search(r"none of its 2 submissions has BERT results", result.output)
    alone = cli("check", tmp_path / "round" / "OrgC")
    assert alone.exit_code == 1 and "OrgC: no system has BERT results (results/<system>/bert/); there is nothing " \
        "to check" in " ".join(alone.output.split())


def test_number_where_the_system_json_needs_a_string(tmp_path):
    """The tools would crash on that system: they run on the package's other system alone, which keeps its score."""
    org = write_package(tmp_path / "Org")
    shutil.copytree(org / "results" / "cpu_micro", org / "results" / "other")
    shutil.copyfile(org / "systems" / "cpu_micro.json", org / "systems" / "other.json")
    desc = json.loads((org / "systems" / "cpu_micro.json").read_text())
    desc["accelerators_per_node"] = 0
    (org / "systems" / "cpu_micro.json").write_text(json.dumps(desc))
    result = cli("score", org)
    output = " ".join(result.output.split())
    assert result.exit_code == 1 and "VERDICT: FAIL" in output
    assert "systems/cpu_micro.json: accelerators_per_node: must be a string, got 0; write it in quotes, as \"0\"" \
        in output
    assert "NOT RUN system description checker (systems/cpu_micro.json)" in output
    assert "NOT RUN package checker (results/cpu_micro): not run: the harness does not hand this system to the " \
        "tools" in output and "PASS package checker (results/other)" in output
    assert "does not count" not in output  # its logs are checked alone: the compliance checker passes them
    assert re.search(r"other\s*│\s*open\s*│\s*[0-9.]+\s*│", result.output)


def test_a_folder_without_logs_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    result = cli("check", tmp_path)
    assert result.exit_code == 2 and "neither a result log, a folder of result_*.txt logs, a submission" \
        in result.output


def test_check_accepts_the_package_the_logs_folder_and_one_log(micro_package):
    """`package` has checked the tree under 5.0.0 already: here the tree under 4.1.0, the logs folder and one log."""
    for target, ruleset in ((micro_package.org, RULESETS[0]), (micro_package.logs, DEFAULT_RULESET),
                            (micro_package.logs / "result_0.txt", DEFAULT_RULESET)):
        result = cli("check", target, "--ruleset", ruleset)
        assert result.exit_code == 0, result.output
        assert "VERDICT: PASS" in result.output and f"(ruleset {ruleset}" in result.output
