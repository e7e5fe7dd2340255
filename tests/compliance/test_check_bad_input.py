"""`check` on broken input: one of each kind, each with a message naming the file and the fix, and exit 1."""

import json
import re
import shutil

import pytest

from tests.compliance.fakes import CLOSED_RUN, edit_lines, micro_system, write_package, write_run, write_runs
from tests.helpers.compliance import cli


def _failed(*args) -> str:
    result = cli("check", *args)
    assert result.exit_code == 1, result.output
    assert "VERDICT: FAIL" in result.output
    return result.output


def test_malformed_mllog_line(tmp_path):
    logs = write_runs(tmp_path / "logs")
    edit_lines(logs / "result_3.txt", lambda line: line[:60] if '"key": "eval_accuracy"' in line else line)
    first = next(i for i, line in enumerate((logs / "result_3.txt").read_text().splitlines(), 1) if len(line) == 60)
    output = _failed(logs)
    assert f"result_3.txt: 3 malformed :::MLLOG line(s) (line {first}: not valid JSON: Unterminated string" in output
    assert "The log is damaged: rerun this run" in output
    assert "NOT CHECKED" in output


def test_truncated_log_without_run_stop(tmp_path):
    log = write_run(tmp_path / "result_0.txt", seed=1)
    edit_lines(log, lambda line: None if '"key": "train_samples"' in line or '"key": "eval_samples"' in line
               or '"key": "run_stop"' in line else line)
    output = _failed(log)
    assert "result_0.txt: no run_stop line: the log is truncated (the run crashed, was killed or is still " \
           "running): the run does not count; olympic scoring may drop it as the slowest run" in output
    assert "Required EXACTLY_ONE occurrence of 'run_stop' but found 0" in output  # the official checker agrees


def test_mixed_batch_sizes(tmp_path):
    logs = write_runs(tmp_path / "logs", count=9)
    write_run(logs / "result_9.txt", seed=99, system=micro_system(batch_size=64))
    output = _failed(logs)
    assert "mixed batch sizes: global_batch_size 32 in result_0.txt" in output
    assert "64 in result_9.txt; the RCP checker compares one batch size per folder" in output


def test_folder_with_nine_runs(tmp_path):
    logs = write_runs(tmp_path / "logs", count=9)
    output = _failed(logs)
    assert f"{logs}: 9 result logs; a BERT submission needs exactly 10: add 1 (NEXP=1 ./run_and_time.sh SYSTEM " \
           "appends them)" in output


def test_system_json_missing_fields(tmp_path):
    org = write_package(tmp_path / "Org")
    desc = json.loads((org / "systems" / "cpu_micro.json").read_text())
    del desc["cooling"], desc["hw_notes"]
    (org / "systems" / "cpu_micro.json").write_text(json.dumps(desc))
    output = _failed(org)
    assert "systems/cpu_micro.json: cooling: missing; the MLPerf system description needs all 33 fields" in output
    assert "systems/cpu_micro.json: hw_notes: missing" in output
    assert "FAIL    system description checker" in output and "Missing field cooling" in output


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


def test_division_spelled_wrong(tmp_path):
    org = write_package(tmp_path / "Org")
    desc = json.loads((org / "systems" / "cpu_micro.json").read_text())
    desc["division"] = "Closed"
    (org / "systems" / "cpu_micro.json").write_text(json.dumps(desc))
    output = _failed(org)
    assert "systems/cpu_micro.json: division: must be \"closed\" or \"open\" (lower case), got 'Closed'" in output
    assert "NOT RUN package checker" in output
    log = write_run(tmp_path / "result_0.txt", seed=1)  # no descriptor can say "Open": the log is edited
    edit_lines(log, lambda line: line.replace('"value": "open"', '"value": "Open"')
               if '"key": "submission_division"' in line else line)
    output = _failed(log)
    assert "submission_division is 'Open'; it must be 'closed' or 'open' (lower case), and the compliance " \
           "checker crashes on anything else. Fix system.division in the descriptor and rerun" in output


def test_system_json_name_differs_from_the_results_folder(tmp_path):
    org = write_package(tmp_path / "Org")
    (org / "systems" / "cpu_micro.json").rename(org / "systems" / "micro.json")
    output = _failed(org)
    assert "results/cpu_micro: no systems/cpu_micro.json; the system JSON file name must equal the results folder " \
           "name (found: micro)" in output
    assert "NOT RUN package checker" in output


def test_repeated_seeds_warn_in_open_and_fail_in_closed(tmp_path):
    logs = write_runs(tmp_path / "open")
    write_run(logs / "result_1.txt", seed=1)
    result = cli("check", logs)
    assert result.exit_code == 0, result.output
    assert "WARNING" in result.output and "seeds repeated across runs (1 in result_0.txt, result_1.txt)" \
        in result.output
    closed = write_runs(tmp_path / "closed", system=micro_system("closed", 448), **CLOSED_RUN)
    write_run(closed / "result_1.txt", seed=1, system=micro_system("closed", 448), **CLOSED_RUN)
    output = _failed(closed)
    assert "ERROR" in output and "seeds repeated across runs (1 in result_0.txt, result_1.txt); every run needs " \
                                 "its own seed" in output


def test_batch_size_outside_the_reference_convergence_points(tmp_path):
    logs = write_runs(tmp_path / "logs", system=micro_system("closed", 32768), **CLOSED_RUN)
    output = _failed(logs)
    assert "global_batch_size 32768 is above the largest reference convergence point (16384); the RCP checker " \
           "fails it ('Missing RCP')" in output
    assert "FAIL    RCP checker" in output and "Missing RCP, please submit RCP with BS = 32768" in output


def test_closed_division_runs_that_pass(tmp_path):
    logs = write_runs(tmp_path / "logs", system=micro_system("closed", 448), **CLOSED_RUN)
    result = cli("check", logs, "--division", "closed")
    assert result.exit_code == 0, result.output
    assert "PASS    RCP checker" in result.output
    mismatch = cli("check", logs, "--division", "open")
    assert mismatch.exit_code == 1 and "logged division 'closed', but the submission is checked as 'open'" \
        in mismatch.output


@pytest.mark.parametrize("ruleset, message", [
    ("5.1.0", "ruleset 5.1.0: BERT was retired after MLPerf Training v5.0"),
    ("6.0.0", "ruleset 6.0.0: BERT was retired after MLPerf Training v5.0"),
    ("3.1.0", "ruleset '3.1.0' is not supported; use one of 4.1.0, 5.0.0"),
])
def test_unsupported_rulesets_are_refused_with_the_reason(tmp_path, ruleset, message):
    log = write_run(tmp_path / "result_0.txt", seed=1)
    result = cli("check", log, "--ruleset", ruleset)
    assert result.exit_code == 2 and message in result.output


def test_a_folder_without_logs_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    result = cli("check", tmp_path)
    assert result.exit_code == 2 and "neither a result log, a folder of result_*.txt logs, a submission" \
        in result.output
