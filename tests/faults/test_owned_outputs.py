"""Every command that writes a folder owns it the way `data synth` does: a user's file in it is never deleted,
replaced or taken as the command's own work, `--overwrite` removes only what the command wrote, a second run
into the same folder is refused before it touches anything, and an output equal to or inside an input is
refused. Each refusal is one line naming the file."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.compliance import cli
from tests.helpers.downloads import official_download

SHAPE = ("--max-seq-length", 64, "--max-predictions", 10)


def _one_line(result) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 1 and len(lines) == 1, result.output
    return lines[0]


def _prepare(corpus: Path, out: Path, *extra):
    return cli("data", "prepare", "--text", corpus / "train", "--vocab", corpus / "vocab.txt", "--out", out, *SHAPE,
               "--dupe-factor", 1, "--workers", 1, "--quiet", *extra)


@pytest.mark.parametrize("users_file", ["train/ablation_run7.hdf5", "eval.hdf5"])
def test_mlperf_never_deletes_nor_adopts_a_users_file_in_its_output(tmp_path, text_corpus, users_file):
    out = tmp_path / "out"
    (out / users_file).parent.mkdir(parents=True, exist_ok=True)
    (out / users_file).write_bytes(b"a user's shard")
    result = cli("data", "mlperf", official_download(tmp_path / "download", text_corpus), "--out", out, *SHAPE,
                 "--dupe-factor", 1, "--shards", 2, "--eval-samples", 10, "--workers", 1, "--quiet")
    first = users_file.split("/")[0]
    assert _one_line(result) == (f"Error: {out}: holds files that `mlperf-bert data mlperf` did not write ({first}); "
                                 "nothing is written there: choose another --out, or move those files away yourself")
    assert (out / users_file).read_bytes() == b"a user's shard"
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == sorted({first, users_file})


def test_prepare_and_reshard_overwrite_only_what_they_wrote(tmp_path, text_corpus, small_dataset):
    prepared, resharded = tmp_path / "prepared", tmp_path / "resharded"
    assert _prepare(text_corpus, prepared).exit_code == 0
    reshard = ("data", "reshard", "--input", small_dataset / "train", "--out", resharded, "--shards", 2, *SHAPE,
               "--workers", 1, "--quiet")
    assert cli(*reshard).exit_code == 0
    for out in (prepared, resharded):
        (out / "experiment_2019.hdf5").write_bytes(b"months of work")
        before = {p.name: p.read_bytes() for p in out.glob("*.hdf5")}
        result = _prepare(text_corpus, out, "--overwrite") if out == prepared else cli(*reshard, "--overwrite")
        writer = "data prepare" if out == prepared else "data reshard"
        assert f"{out}: holds files that `mlperf-bert {writer}` did not write (experiment_2019.hdf5)" \
            in _one_line(result)
        assert {p.name: p.read_bytes() for p in out.glob("*.hdf5")} == before  # nothing removed, nothing written
        (out / "experiment_2019.hdf5").unlink()
    assert _prepare(text_corpus, prepared, "--overwrite").exit_code == 0  # its own output alone: replaced
    assert cli(*reshard, "--overwrite").exit_code == 0


def test_a_second_prepare_into_a_folder_being_written_is_refused_and_harms_nothing(tmp_path, text_corpus, cpu_env):
    out = tmp_path / "out"
    command = [sys.executable, "-m", "bert.cli", "data", "prepare", "--text", str(text_corpus / "train"), "--vocab",
               str(text_corpus / "vocab.txt"), "--out", str(out), "--max-seq-length", "128", "--max-predictions",
               "20", "--dupe-factor", "5", "--workers", "1", "--quiet"]
    first = subprocess.Popen(command, env=cpu_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not list(out.glob(".part-*.tmp*")):  # the first run is writing a shard
            assert first.poll() is None and time.monotonic() < deadline, first.communicate()
            time.sleep(0.002)
        os.kill(first.pid, signal.SIGSTOP)
        temporaries = sorted(out.glob(".part-*.tmp*"))
        second = subprocess.run(command, env=cpu_env, capture_output=True, text=True, timeout=60)
        assert sorted(out.glob(".part-*.tmp*")) == temporaries  # the running one's work is untouched
    finally:
        os.kill(first.pid, signal.SIGCONT)
    assert second.returncode == 1 and "Traceback" not in second.stderr
    assert f"Error: {out}: `mlperf-bert data prepare` (pid {first.pid} on " in second.stderr
    assert "is writing here; wait for it to end, or choose another folder" in second.stderr
    stdout, stderr = first.communicate(timeout=120)
    assert first.returncode == 0, stderr
    assert len(list(out.glob("part-*.hdf5"))) == 3 and not list(out.glob(".*.tmp*"))


def test_outputs_equal_to_or_inside_an_input_are_refused(tmp_path, text_corpus, small_dataset):
    parts = tmp_path / "parts"
    shutil.copytree(text_corpus / "train", parts)
    kept = {p: p.read_bytes() for p in parts.iterdir()}
    result = cli("data", "prepare", "--text", parts, "--vocab", text_corpus / "vocab.txt", "--out", parts, *SHAPE,
                 "--overwrite", "--quiet")
    assert _one_line(result) == f"Error: {parts}: is the input {parts}; write the output elsewhere"
    assert {p: p.read_bytes() for p in parts.iterdir()} == kept
    inside = cli("data", "prepare", "--text", parts, "--vocab", text_corpus / "vocab.txt", "--out", parts / "shards",
                 *SHAPE, "--quiet")
    assert _one_line(inside) == f"Error: {parts / 'shards'}: lies inside the input {parts}; write the output elsewhere"
    assert {p: p.read_bytes() for p in parts.iterdir()} == kept
    shard = tmp_path / "shards" / "part-0.hdf5"
    shard.parent.mkdir()
    shutil.copyfile(sorted((small_dataset / "train").glob("*.hdf5"))[0], shard)
    before = shard.read_bytes()
    result = cli("data", "eval-set", "--input", shard, "--out", shard, "--samples", 10, *SHAPE, "--overwrite",
                 "--quiet")
    assert _one_line(result) == f"Error: {shard}: is the input {shard}; write the output elsewhere"
    assert shard.read_bytes() == before


@pytest.mark.parametrize("link", ["symlink", "hard link"])
def test_a_lock_planted_as_a_link_to_a_users_file_is_refused_and_the_file_kept(tmp_path, link):
    """The classic attack on a shared folder: the lock's name links to the victim's file, which the holder line
    would overwrite."""
    precious, out = tmp_path / "precious.txt", tmp_path / "out"
    precious.write_text("precious\n")
    out.mkdir()
    (out / ".mlperf-bert.lock").symlink_to(precious) if link == "symlink" else os.link(precious,
                                                                                          out / ".mlperf-bert.lock")
    line = _one_line(cli("data", "synth", "--system", "cpu_micro", "--out", out))
    assert line.startswith("Error: "), line
    assert ".mlperf-bert.lock" in line and "nothing is written" in line, line
    assert precious.read_text() == "precious\n"
    assert sorted(p.name for p in out.iterdir()) == [".mlperf-bert.lock"]
