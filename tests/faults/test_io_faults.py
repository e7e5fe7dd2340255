"""Bad input and failing output: a shard changed after verification, a result log that cannot be written, too
little free disk, a log path that already holds a result, a disk that fills under data synth, checkpoint convert
and data verify."""

import resource
import shutil
import signal
import subprocess
from collections import namedtuple
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import torch

from bert.mllog import LOG_FREE_BYTES, LogError, RunLog, seal_log
from bert.model.config import named_config
from bert.model.pretraining import BertForPreTraining
from bert.prep.verify import verify_dataset
from bert.system import load_descriptor
from bert.train import RunRequest, run
from tests.helpers.compliance import cli
from tests.helpers.faults import assert_log_aborted, assert_stdout_aborted, fault_descriptor, finish, torchrun
from tests.helpers.repo import REPO


def test_a_shard_changed_after_the_manifest_stops_the_run_before_it_starts(tmp_path, fault_data, fault_env):
    assert verify_dataset(fault_data, show_progress=False).manifest is not None
    shard = sorted((fault_data / "train").glob("*.hdf5"))[1]
    with open(shard, "ab") as f:
        f.write(b"\0" * 512)
    log = tmp_path / "result_0.txt"
    code, _, err = finish(torchrun(fault_descriptor(tmp_path), fault_data, log, fault_env))
    assert code != 0
    assert f"{shard}: " in err and "changed since verification" in err
    metadata = assert_log_aborted(log, "changed since verification")
    assert shard.name in metadata["reason"]
    assert "run_start" not in log.read_text()


def test_a_log_that_cannot_be_written_aborts_the_run_and_the_rest_reaches_stdout(tmp_path, fault_data, fault_env):
    code, out, err = finish(torchrun(fault_descriptor(tmp_path), fault_data, "/dev/full", fault_env))
    assert code != 0
    assert "/dev/full: cannot write the result log (No space left on device)" in err
    assert_stdout_aborted(out, "LogWriteError: /dev/full: cannot write the result log")


def test_too_little_free_disk_for_the_log_is_one_line_before_anything_runs(tmp_path, monkeypatch, capsys):
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**9, 10**9 - 1000, LOG_FREE_BYTES // 2))
    log = tmp_path / "result_0.txt"
    system = load_descriptor(fault_descriptor(tmp_path, processes_per_node=1))
    assert run(RunRequest(system, 1, log)) == 1
    assert f"{tmp_path}: only 32.0 MiB free, a run needs 64 MiB for its log" in capsys.readouterr().err
    assert not log.exists()


def test_an_earlier_log_is_never_appended_to(tmp_path):
    log = tmp_path / "result_0.txt"
    log.write_text(":::MLLOG an earlier result\n")
    with pytest.raises(LogError, match="already exists and is not empty"):
        RunLog(log)
    assert log.read_text() == ":::MLLOG an earlier result\n"


def test_log_lines_are_on_disk_as_soon_as_they_are_logged(tmp_path):
    log = RunLog(tmp_path / "result_0.txt", echo=False)
    log.init_start()
    assert '"key": "init_start"' in (tmp_path / "result_0.txt").read_text()
    log.run_stop("aborted", 0, 256, "a reason")
    log.run_stop("success", 0, 256)  # the second stop (another thread's) writes nothing
    log.close()
    lines = (tmp_path / "result_0.txt").read_text().splitlines()
    assert len(lines) == 4 and '"reason": "a reason"' in lines[-1]


def test_run_and_time_refuses_a_folder_with_results_when_asked(tmp_path, cpu_env):
    logdir = tmp_path / "logs"
    (logdir / "cpu_micro").mkdir(parents=True)
    (logdir / "cpu_micro" / "result_0.txt").write_text("earlier\n")
    env = dict(cpu_env, LOGDIR=str(logdir), ON_EXISTING="refuse", DATADIR=str(tmp_path / "nowhere"))
    proc = subprocess.run([str(REPO / "run_and_time.sh"), "cpu_micro"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert "already holds results (result_0.txt)" in proc.stderr and "ON_EXISTING=refuse" in proc.stderr
    assert (logdir / "cpu_micro" / "result_0.txt").read_text() == "earlier\n"
    assert not (tmp_path / "nowhere").exists()


def test_seal_ends_a_cut_off_log_and_leaves_a_finished_one(tmp_path):
    log = RunLog(tmp_path / "result_0.txt", echo=False)
    log.run_start()
    log.close()
    with open(tmp_path / "result_0.txt", "a") as f:
        f.write(':::MLLOG {"namespace": "", "time_ms": 1, "key": "blo')  # a line cut off by a crash
    assert seal_log(tmp_path / "result_0.txt", "rank 0 was killed") == ("aborted", True)
    lines = (tmp_path / "result_0.txt").read_text().splitlines()
    assert lines[1].endswith('"key": "blo') and '"reason": "rank 0 was killed"' in lines[2]
    assert seal_log(tmp_path / "result_0.txt", "again") == ("aborted", False)
    assert (tmp_path / "result_0.txt").read_text().splitlines() == lines


@contextmanager
def file_size_limit(limit: int) -> Iterator[None]:
    """A disk that fills at `limit` bytes a file (RLIMIT_FSIZE; its SIGXFSZ ignored, so writes fail with EFBIG)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)


def _one_error_line(result) -> str:
    lines = [line for line in result.output.splitlines() if line.startswith("Error: ") or "Traceback" in line]
    assert result.exit_code == 1 and len(lines) == 1 and not isinstance(result.exception, OSError), result.output
    return lines[0]


def test_a_full_disk_is_one_line_for_synth_convert_and_verify(tmp_path, small_dataset):
    data, model = tmp_path / "data", tmp_path / "model.pt"
    torch.save(BertForPreTraining(named_config("micro")).state_dict(), model)
    shutil.copytree(small_dataset, tmp_path / "verified")
    with file_size_limit(40_000):  # the vocabulary (30 kB) fits, the first shard does not
        synth = cli("data", "synth", "--system", "cpu_micro", "--out", data)
        convert = cli("checkpoint", "convert", model, tmp_path / "out.pt", "--model", "micro")
    with file_size_limit(100):
        verify = cli("data", "verify", tmp_path / "verified")
    shard = data / "train" / "part-00000-of-00004.hdf5"
    assert _one_error_line(synth) == (f"Error: {shard}: cannot be written (File too large); nothing of it is kept: "
                                      "free space there, or write the data elsewhere")
    assert not list((data / "train").glob("*.hdf5")) and not list((data / "train").glob(".*.tmp*"))
    assert _one_error_line(convert).startswith(f"Error: {tmp_path / 'out.pt'}: cannot be written (")
    assert not (tmp_path / "out.pt").exists() and not list(tmp_path.glob(".out.pt.tmp*"))
    assert _one_error_line(verify).startswith(f"Error: {tmp_path / 'verified'}/") and "File too large" in verify.output
