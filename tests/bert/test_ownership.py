"""bert.ownership: the claims every writing command makes, on the cases the commands' own tests do not reach."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from bert.ownership import LOCK_FILE, RECORD_FILE, OwnershipError, claim_file, claim_folder
from tests.helpers.processes import gone_pid

_HOLD = """
import sys, time
from bert.ownership import claim_folder
with claim_folder(sys.argv[1], "data prepare", mode="resume"):
    print("held", flush=True)
    time.sleep(60)
"""


def test_a_killed_holders_lock_does_not_block_the_next_claim(tmp_path):
    out = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(OwnershipError, match=rf"`mlperf-bert data prepare` \(pid {holder.pid} on .*\) is "
                                                 "writing here"):
            with claim_folder(out, "data prepare", mode="resume"):
                pass
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    assert (out / LOCK_FILE).exists()  # left by the killed holder, but no longer locked
    with claim_folder(out, "data prepare", mode="resume") as folder:
        folder.record("a.hdf5")
    assert not (out / LOCK_FILE).exists()


def test_a_temporary_is_removed_only_once_its_writer_is_gone(tmp_path):
    out = tmp_path / "out"
    with claim_folder(out, "data reshard") as folder:
        folder.record("part-0.hdf5")
    stale = out / f".part-0.hdf5.tmp{gone_pid()}"
    stale.write_bytes(b"half")
    with claim_folder(out, "data reshard", mode="resume"):
        assert not stale.exists()
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        live = out / f".part-0.hdf5.tmp{sleeper.pid}"
        live.write_bytes(b"half")
        with pytest.raises(OwnershipError, match=rf"being written by process {sleeper.pid}, which still runs"):
            with claim_folder(out, "data reshard", mode="resume"):
                pass
        assert live.exists()
    finally:
        sleeper.kill()
        sleeper.wait()


def test_overwrite_removes_nothing_when_a_folder_of_its_own_holds_a_foreign_file(tmp_path):
    out = tmp_path / "out"
    with claim_folder(out, "data stratify") as folder:
        folder.record("notes.txt")
        (out / "notes.txt").write_text("mine")
        with folder.subfolder("len-0001-0064") as bin_folder:
            bin_folder.record("part-0.hdf5")
            (out / "len-0001-0064" / "part-0.hdf5").write_bytes(b"shard")
    (out / "len-0001-0064" / "thesis.tex").write_text("months of work")
    with pytest.raises(OwnershipError, match=r"len-0001-0064: holds files that `mlperf-bert data stratify` did not "
                                             r"write \(thesis\.tex\)"):
        with claim_folder(out, "data stratify", mode="overwrite"):
            pass
    assert (out / "notes.txt").read_text() == "mine" and (out / "len-0001-0064" / "part-0.hdf5").exists()


def test_a_file_claim_replaces_only_its_own_file_and_records_it_beside_it(tmp_path):
    target = tmp_path / "eval.hdf5"
    with claim_file(target, "data eval-set"):
        target.write_bytes(b"first")
    assert (tmp_path / RECORD_FILE).is_file()
    with pytest.raises(OwnershipError, match="already exists; pass --overwrite to replace it"):
        with claim_file(target, "data eval-set"):
            pass
    with claim_file(target, "data eval-set", replace=True):
        target.write_bytes(b"second")
    with pytest.raises(OwnershipError, match="already exists and `mlperf-bert data vocab` did not write it"):
        with claim_file(target, "data vocab", replace=True):
            pass
    assert target.read_bytes() == b"second"


def test_a_claim_inside_a_claim_of_the_same_process_is_not_refused(tmp_path):
    with claim_folder(tmp_path / "out", "data mlperf", mode="resume") as tree:
        tree.record("eval.hdf5")
        with claim_file(tmp_path / "out" / "eval.hdf5", "data mlperf"):  # the same folder's lock, held here
            (tmp_path / "out" / "eval.hdf5").write_bytes(b"eval")
        assert (tmp_path / "out" / LOCK_FILE).exists()  # still held by the outer claim
    assert not (tmp_path / "out" / LOCK_FILE).exists()


@pytest.mark.parametrize("planted", ["symlink", "hard link", "fifo"])
def test_a_file_claim_never_writes_through_a_planted_lock(tmp_path, planted):
    """claim_file (checkpoint convert, data verify's manifest, the vocabulary) takes the folder's lock without
    the folder check that claim_folder makes first: the lock's own open must refuse what is no lock file."""
    precious, lock = tmp_path / "precious.txt", tmp_path / "out" / LOCK_FILE
    precious.write_text("precious\n")
    lock.parent.mkdir()
    {"symlink": lambda: lock.symlink_to(precious), "hard link": lambda: os.link(precious, lock),
     "fifo": lambda: os.mkfifo(lock)}[planted]()
    kind = {"symlink": "a symbolic link", "hard link": "a hard link to another file", "fifo": "not a regular file"}
    with pytest.raises(OwnershipError, match=f"{LOCK_FILE}: is {kind[planted]}, not the lock mlperf-bert writes"):
        with claim_file(lock.parent / "model.pt", "checkpoint convert"):
            pass
    assert precious.read_text() == "precious\n"
    assert not (lock.parent / RECORD_FILE).exists()
