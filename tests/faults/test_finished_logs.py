"""A result_<i>.txt is always a finished log, and a wrapper that ran no successful run never exits 0: a disk
that fills mid-run, a start that logged nothing, a launcher that says success without a finished log."""

from __future__ import annotations

import resource
import subprocess
import sys

from click.testing import CliRunner

from bert.cli import main
from bert.mllog import RunLog
from tests.helpers.faults import (
    CASE_TIMEOUT_S,
    assert_log_aborted,
    fake_launcher,
    fault_descriptor,
    single_line_error,
    wrapper,
)
from tests.helpers.logs import mllog_line

FILE_LIMIT = 6000  # bytes: a log cut off by it stops during the run's initialisation


def _file_size_limit(limit: int):
    """A file-size limit for a subprocess: writes past it fail (EFBIG) as on a full disk, for every process."""
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_a_disk_that_fills_mid_run_leaves_the_partial_log_unpublished(tmp_path, fault_data, fault_env):
    logdir = tmp_path / "logs"
    env = dict(fault_env, NEXP="1", SEED="3", LOGDIR=str(logdir), DATADIR=str(fault_data))
    proc = wrapper(fault_descriptor(tmp_path), env, timeout=CASE_TIMEOUT_S, preexec_fn=_file_size_limit(FILE_LIMIT))
    assert proc.returncode == 1, proc.stderr[-3000:]
    results = logdir / "faulty_micro"
    partial = results / "result_0.txt.partial"
    assert sorted(p.name for p in results.iterdir()) == ["result_0.txt.partial"]  # nothing published
    assert partial.stat().st_size == FILE_LIMIT and not partial.read_text().endswith("\n")  # cut mid-line
    assert f"{partial}: cannot be finished with a run_stop line (File too large)" in proc.stderr
    assert f"{partial} is not a finished log, so it is not published as result_0.txt" in proc.stderr
    assert "1 of 1 run(s) failed: result_0.txt.partial" in proc.stderr
    assert "in seal_log" not in proc.stderr  # no traceback of the seal


def test_seal_says_in_one_line_why_it_cannot_finish_a_log(tmp_path):
    log = RunLog(tmp_path / "result_0.txt.partial", echo=False)
    log.run_start()
    log.close()
    size = (tmp_path / "result_0.txt.partial").stat().st_size
    proc = subprocess.run([sys.executable, "-m", "bert.cli", "log", "seal", str(tmp_path / "result_0.txt.partial"),
                           "--reason", "killed"], capture_output=True, text=True, timeout=60,
                          preexec_fn=_file_size_limit(size))
    assert proc.returncode == 3
    assert single_line_error(proc.stderr) == (f"error: {tmp_path / 'result_0.txt.partial'}: cannot be finished with a "
                                              "run_stop line (File too large); the log is kept as it is, not "
                                              "published: free the disk")
    empty = tmp_path / "empty.partial"
    empty.touch()
    result = CliRunner().invoke(main, ["log", "seal", str(empty), "--reason", "x"])
    assert result.exit_code == 3 and "holds no MLPerf log line (the run ended before it started its log)" in \
        result.output
    assert empty.read_bytes() == b""


def test_a_start_that_logged_nothing_publishes_no_result(tmp_path, fault_data, fault_env):
    """The launcher fails before the trainer opens its log (here: a bad test variable): the empty partial log
    that the wrapper made stays unpublished, and the wrapper fails."""
    logdir = tmp_path / "logs"
    env = dict(fault_env, NEXP="1", SEED="3", LOGDIR=str(logdir), DATADIR=str(fault_data),
               MLPERF_BERT_TEST_INJECT_NAN_AT_STEP="soon")
    proc = wrapper(fault_descriptor(tmp_path), env, timeout=CASE_TIMEOUT_S)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert sorted(p.name for p in (logdir / "faulty_micro").iterdir()) == ["result_0.txt.partial"]
    assert "holds no MLPerf log line" in proc.stderr and "run 1 FAILED" in proc.stderr


def test_a_launcher_that_says_success_without_a_finished_log_is_a_failed_run(tmp_path, cpu_env, small_dataset):
    logdir = tmp_path / "logs"
    env = dict(cpu_env, NEXP="2", SEED="3", LOGDIR=str(logdir), DATADIR=str(small_dataset))
    # Run 1 writes nothing; run 2 a log that stops before its run_stop. Both launches "succeed" (status 0).
    env |= fake_launcher(tmp_path / "bin", f'if [[ $log == *result_1* ]]; then echo \'{mllog_line("run_start")}\' '
                                           '> "$log"; fi\nexit 0')
    proc = wrapper("cpu_micro", env)
    assert proc.returncode == 1, proc.stderr[-3000:]
    results = logdir / "cpu_micro"
    assert sorted(p.name for p in results.iterdir()) == ["result_0.txt.partial", "result_1.txt"]
    assert_log_aborted(results / "result_1.txt", "the ranks ended without run_stop (launcher exit status 0)")
    assert "2 of 2 run(s) failed: result_0.txt.partial result_1.txt" in proc.stderr


def test_a_launcher_that_succeeds_with_a_finished_log_is_a_success(tmp_path, cpu_env, small_dataset):
    logdir = tmp_path / "logs"
    env = dict(cpu_env, NEXP="1", SEED="3", LOGDIR=str(logdir), DATADIR=str(small_dataset))
    env |= fake_launcher(tmp_path / "bin", f"echo '{mllog_line('run_stop', status='success')}' > \"$log\"")
    proc = wrapper("cpu_micro", env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(p.name for p in (logdir / "cpu_micro").iterdir()) == ["result_0.txt"]
