"""Nothing the harness did not write is ever deleted: a dataset folder given as DATADIR, a report folder that
holds other files. The harness's own folders are still completed and replaced."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bert.cli import main
from bert.ownership import RECORD_FILE
from bert.prep.synthetic.hdf5_corpus import COMPLETE_MARKER, LEGACY_OWNER_MARKER, is_complete, synthesize
from bert.system import load_descriptor
from tests.compliance.fakes import write_package
from tests.helpers.datasets import SMALL_SYNTH
from tests.helpers.faults import single_line_error, wrapper
from tests.helpers.processes import gone_pid


def _users_dataset(folder: Path) -> dict[Path, bytes]:
    """A folder of someone's data: what must still be there, byte for byte, afterwards."""
    files = {folder / "train" / "part-0.hdf5": b"a real shard", folder / "vocab.txt": b"[PAD]\n",
             folder / "notes.txt": b"downloaded on Monday"}
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return files


def _cli(*args) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def test_run_and_time_refuses_a_dataset_folder_it_did_not_write(tmp_path, cpu_env):
    data = tmp_path / "bert_data"
    kept = _users_dataset(data)
    env = dict(cpu_env, NEXP="1", SEED="1", LOGDIR=str(tmp_path / "logs"), DATADIR=str(data))
    proc = wrapper("cpu_micro", env)
    assert proc.returncode == 2, proc.stderr[-3000:]
    line = single_line_error(proc.stderr)
    assert f"{data}: holds files that `mlperf-bert data synth` did not write" in line
    assert "choose another folder for the synthetic corpus (DATADIR, --out), or empty this one yourself" in line
    assert {path: path.read_bytes() for path in kept} == kept
    assert sorted(p.name for p in data.iterdir()) == ["notes.txt", "train", "vocab.txt"]
    assert not list((tmp_path / "logs").rglob("result_*"))


def test_synth_never_touches_a_foreign_folder_even_with_overwrite(tmp_path):
    data = tmp_path / "bert_data"
    kept = _users_dataset(data)
    for flag in ("--overwrite", "--if-missing"):
        code, output = _cli("data", "synth", "--system", "cpu_micro", "--out", data, flag)
        assert code == 1 and f"{data}: holds files that `mlperf-bert data synth` did not write" in output
    assert {path: path.read_bytes() for path in kept} == kept


def test_its_own_interrupted_corpus_is_completed_and_its_own_complete_one_replaced(tmp_path):
    system = load_descriptor("cpu_micro").variant({"dataset": {"dir": str(tmp_path / "data"), "synthetic": {
        "train_samples": 512, "eval_samples": 256, "shards": 2, "max_seq_length": 64, "max_predictions": 10}}},
        name="small").write(tmp_path / "systems").path
    data = tmp_path / "data"
    data.mkdir()
    (data / LEGACY_OWNER_MARKER).write_text("written by mlperf-bert data synth\n")  # an interrupted synthesis
    (data / "train").mkdir()
    (data / "train" / f".part-00000-of-00002.hdf5.tmp{gone_pid()}").write_bytes(b"half a shard")
    code, output = _cli("data", "synth", "--system", system, "--if-missing")
    assert code == 0, output
    assert is_complete(data) and sorted(p.name for p in (data / "train").iterdir()) == [
        RECORD_FILE, "part-00000-of-00002.hdf5", "part-00001-of-00002.hdf5"]
    code, output = _cli("data", "synth", "--system", system, "--if-missing")
    assert code == 0 and "already complete" in output
    code, output = _cli("data", "synth", "--system", system)
    assert code == 1 and "pass --overwrite to replace the corpus" in output
    code, output = _cli("data", "synth", "--system", system, "--overwrite")
    assert code == 0 and is_complete(data), output


def test_a_corpus_written_before_the_owner_mark_is_still_recognised(tmp_path):
    data = synthesize(tmp_path / "data", SMALL_SYNTH)
    (data / RECORD_FILE).unlink()  # as the earliest writer left it: only its completion mark, holding the spec
    assert (data / COMPLETE_MARKER).read_text().startswith("SyntheticDataSpec(")
    assert is_complete(data)
    (data / COMPLETE_MARKER).write_text("done\n")  # someone else's marker of the same name is no proof
    assert not is_complete(data)


def _holding(folder: Path, files: dict[str, bytes]) -> Path:
    folder.mkdir(exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


@pytest.mark.parametrize("files, first", [
    ({"report.md": b"# an earlier report\n\n![accuracy](cpu_micro_accuracy.png)\n", "cpu_micro_accuracy.png": b"x",
      "thesis.tex": b"months of work"}, "cpu_micro_accuracy.png"),
    # A report.md is anyone's to write: the files it shows are no proof of who wrote them.
    ({"report.md": b"# notes\n\n![x](my_db.sqlite)\n", "my_db.sqlite": b"a database"}, "my_db.sqlite"),
])
def test_report_removes_only_what_it_wrote_never_what_a_report_md_names(tmp_path, files, first):
    org = write_package(tmp_path / "Org")
    out = _holding(tmp_path / "out", files)
    code, output = _cli("report", org, "-o", out)
    assert code == 1
    assert f"{out}: holds files that `mlperf-bert report` did not write ({first}); nothing is written there: choose " \
        "another -o folder, or move those files away" in " ".join(output.split())
    assert all((out / name).read_bytes() == data for name, data in files.items())
    for name in files:
        (out / name).unlink()
    assert _cli("report", org, "-o", out)[0] == 0  # its own folder: written, then replaced
    _holding(out, {"report.md": (out / "report.md").read_bytes() + b"\n![x](my_db.sqlite)\n", "my_db.sqlite": b"db"})
    code, output = _cli("report", org, "-o", out)
    assert code == 1 and "(my_db.sqlite)" in output and (out / "my_db.sqlite").read_bytes() == b"db"
