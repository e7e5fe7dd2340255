"""Every file of a submission read by one reader (compliance.files): a FIFO, a device, a folder or a file over its cap
under a result's name is refused unread, in one line."""

from __future__ import annotations

import os
import threading

from compliance.result_log import read_result_log, result_logs_in
from tests.compliance.fakes import write_runs
from tests.helpers.compliance import cli, ends_in_one_line


def _within(seconds: float, work):
    """work() in a thread; fails the test when it is still running after `seconds` (a read that hangs)."""
    result = []
    thread = threading.Thread(target=lambda: result.append(work()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    return result[0]


def test_a_fifo_a_device_and_a_huge_file_are_refused_unread(tmp_path):
    os.mkfifo(tmp_path / "result_0.txt")
    (tmp_path / "result_1.txt").symlink_to("/dev/zero")
    with open(tmp_path / "result_2.txt", "wb") as f:
        f.truncate(65 << 20)  # sparse: over the cap without writing it
    said = [_within(10, lambda p=p: read_result_log(p)).unreadable for p in result_logs_in(tmp_path)]
    assert said[0].startswith("is a named pipe (FIFO), not a regular file")
    assert said[1].startswith("is a device, not a regular file")
    assert said[2] == f"is {65 << 20:,} bytes, over the {64 << 20:,} bytes such a file can be; it is not read"


def test_a_folder_named_as_a_result_is_refused_in_one_line(tmp_path):
    """A folder named result_10.txt among the logs ended `check` with 'Error: 3: Is a directory' and no verdict."""
    logs = write_runs(tmp_path / "logs")
    (logs / "result_10.txt").mkdir()
    result = cli("check", logs)
    ends_in_one_line(result, "result_10.txt: is a folder, not a regular file; a submission holds plain files only")
    assert "VERDICT: FAIL" in result.output and "11 result logs" in result.output
