"""The summary that ends run_and_time.sh's console (compliance.run_summary): each log's outcome and time, the
official compliance checker's verdict on it (the real checker), and the next command."""

import os

from compliance.run_summary import next_command, summary_lines
from tests.compliance.fakes import edit_events, write_run, write_runs
from tests.helpers.compliance import cli


def test_a_finished_run_is_its_outcome_its_time_and_the_checkers_verdict(tmp_path):
    log = write_run(tmp_path / "result_0.txt", seed=3)
    lines = summary_lines([log], "cpu_micro")
    assert lines[0] == "summary (official compliance checker: training 5.0.0):"
    assert lines[1].startswith(f"  {log}: success, mlm accuracy 0.0700 at 3,072 samples, ")
    assert lines[1].endswith(" s from run_start to run_stop; checker PASS")
    assert lines[2] == (f"next: mlperf-bert check {tmp_path}  (1 of the 10 runs a submission takes; NEXP=9 "
                        "./run_and_time.sh cpu_micro adds the others)")


def test_an_aborted_run_says_why_and_a_broken_log_gets_the_checkers_words(tmp_path):
    aborted = write_run(tmp_path / "result_0.txt", seed=3, status="aborted")
    edit_events(aborted, lambda _, e: dict(e, metadata={**e["metadata"], "reason": "sample cap reached"})
                if e["key"] == "run_stop" else e)
    broken = write_run(tmp_path / "result_1.txt", seed=4)
    edit_events(broken, lambda _, e: None if e["key"] == "init_stop" else e)
    lines = summary_lines([aborted, broken], "cpu_micro")
    assert "aborted, mlm accuracy 0.0700 at 3,072 samples, " in lines[1] and "(sample cap reached); checker " \
        in lines[1]
    assert lines[2].endswith("; checker FAIL: CHECK for 'run_start' failed in line 22 (failed test: ( "
                             "s['init_stopped'] == True ))")


def test_a_log_that_is_no_regular_file_is_not_given_to_the_checker(tmp_path):
    fifo = tmp_path / "result_0.txt"
    os.mkfifo(fifo)  # the checker would wait on it for ever
    (line,) = summary_lines([fifo], "cpu_micro")[1:2]
    assert line.startswith(f"  {fifo}: not read (") and line.endswith("; checker not run")


def test_the_next_command_is_package_once_the_folder_holds_a_submissions_runs(tmp_path):
    logs = write_runs(tmp_path / "logs")
    assert next_command(logs, "cpu_micro") == (f"mlperf-bert package {logs} --system cpu_micro -o submission  (the "
                                               "folder holds the 10 runs of a submission)")
    write_run(logs / "result_10.txt", seed=20)
    assert next_command(logs, "my system") == (f"mlperf-bert check {logs}  (11 runs: a submission takes 10 "
                                               "consecutive ones)")
    assert "'my system'" in next_command(tmp_path / "empty", "my system")


def test_log_summary_prints_it(tmp_path):
    log = write_run(tmp_path / "result_0.txt", seed=3)
    result = cli("log", "summary", log, "--system", "cpu_micro")
    assert result.exit_code == 0 and result.output.splitlines() == summary_lines([log], "cpu_micro")
