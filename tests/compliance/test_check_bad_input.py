"""`check` on broken input: one of each kind, each with a message naming the file and the fix, and exit 1."""

import json
import re
import shutil
import time

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


def _one_line(result, said: str) -> None:
    """The command ended with a verdict (or an error) in plain words: `said` on one line, no traceback."""
    assert result.exit_code in (1, 2), result.output
    assert "Traceback" not in result.output and "Error: 3:" not in result.output
    assert any(said in line for line in result.output.splitlines()), result.output


def test_a_folder_named_as_a_result_is_refused_in_one_line(tmp_path):
    """A folder named result_10.txt among the logs ended `check` with 'Error: 3: Is a directory' and no verdict."""
    logs = write_runs(tmp_path / "logs")
    (logs / "result_10.txt").mkdir()
    result = cli("check", logs)
    _one_line(result, "result_10.txt: is a folder, not a regular file; a submission holds plain files only")
    assert "VERDICT: FAIL" in result.output and "11 result logs" in result.output


@pytest.mark.parametrize("field, digits", [("time_ms", 400), ("eval_accuracy", 400), ("epoch_num", 400)])
def test_numbers_of_hundreds_of_digits_end_in_one_line(tmp_path, field, digits):
    """A 400-digit time_ms, eval_accuracy or epoch_num raised OverflowError in the judgement and the report."""
    org = write_package(tmp_path / "Org")
    log = org / "results" / "cpu_micro" / "bert" / "result_3.txt"
    pattern = {"time_ms": r'"time_ms": \d+', "eval_accuracy": r'"value": [0-9.e-]+', "epoch_num": r'"epoch_num": \d+'}
    huge = {"time_ms": '"time_ms": ', "eval_accuracy": '"value": ', "epoch_num": '"epoch_num": '}[field] + "9" * digits
    edit_lines(log, lambda line: re.sub(pattern[field], huge, line) if '"key": "eval_accuracy"' in line else line)
    said = {"time_ms": "(eval_accuracy) has time_ms inf, which no clock reads", "eval_accuracy": "eval_accuracy inf "
            "is no accuracy", "epoch_num": "eval_accuracy at epoch_num inf, which is no count of samples"}[field]
    _one_line(cli("check", log), said)
    _one_line(cli("score", org), said)
    report = cli("report", org, "-o", tmp_path / "report")
    assert report.exit_code == 1 and "verdict FAIL" in report.output, report.output


@pytest.mark.parametrize("text, said", [
    ('{"a": ' * 100_000 + "1" + "}" * 100_000, "nested deeper than a JSON parser follows"),
    ('{"number_of_nodes": ' + "9" * 5000 + "}", "number_of_nodes: must be a whole number"),
    ('{"number_of_nodes": "' + "9" * 5000 + '"}', "number_of_nodes: must be a whole number"),
])
def test_a_hostile_system_json_ends_in_one_line(tmp_path, text, said):
    """A system JSON nested 100,000 deep raised RecursionError; a 5000-digit integer, ValueError."""
    org = write_package(tmp_path / "Org")
    (org / "systems" / "cpu_micro.json").write_text(text)
    _one_line(cli("check", org), said)


def test_a_log_the_official_parser_cannot_read_in_bounded_time_ends_in_one_line(tmp_path):
    """A 1.1 MB log of one 1 MB :::MLLOG line kept the official parser busy for 600 s, then a TimeoutExpired
    traceback; nested 100,000 deep, a RecursionError."""
    logs = write_runs(tmp_path / "logs")
    body = json.dumps({"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "x",
                       "value": "v" * (1 << 20), "metadata": {}})
    (logs / "result_4.txt").write_text((logs / "result_4.txt").read_text() + f":::MLLOG {body}\n")
    (logs / "result_5.txt").write_text(":::MLLOG " + "[" * 100_000 + "]" * 100_000 + "\n")
    started = time.perf_counter()
    result = cli("check", logs)
    assert time.perf_counter() - started < 300
    _one_line(result, f"result_4.txt: line 43 is a :::MLLOG line of {len(body) + 10:,} characters, over the 4,096 "
                      "that are handed to the official tools")
    _one_line(result, "result_5.txt: line 1 is a :::MLLOG line of 200,010 characters")
