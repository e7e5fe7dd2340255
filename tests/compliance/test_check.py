"""`check` and `score` on what a reviewer is given (compliance.check, compliance.targets): a submission that also
holds other benchmarks, a folder of submissions, a results repository; systems picked by name; progress on every
long step; one line for what cannot be checked."""

import re
import shutil

import pytest

from compliance.check import Progress, check_tree
from compliance.result_log import read_result_log
from compliance.score import score_tree
from tests.compliance.fakes import write_package, write_round
from tests.helpers.compliance import cli


@pytest.fixture(scope="module")
def round_tree(tmp_path_factory):
    return write_round(tmp_path_factory.mktemp("round") / "training_results")


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


def test_systems_picked_by_name(round_tree):
    tree = check_tree(round_tree, systems=["b_two", "OrgA/a_bert"])
    assert [(r.target.name, r.systems) for r in tree.reports] == [("OrgA", ["a_bert"]), ("OrgB", ["b_two"])]
    result = cli("score", round_tree, "--system", "nothing")
    assert result.exit_code == 2
    assert "--system nothing: no such BERT system (results/nothing/bert/ with systems/nothing.json) here; the BERT " \
           "systems are: a_bert, b_one, b_two" in " ".join(result.output.split())


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
