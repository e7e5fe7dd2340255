"""Official MLPerf files by their published checksums (bert.prep.official_files): a made-up download with its own md5
list is prepared but never called official, and a closed run's pre-flight refuses what was made from it; a tree
stays official only while its files are the ones made; a checkpoint of another size or form is one line."""

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

import bert.launch.preflight as pf
import bert.prep.official_files as official
from bert.checkpoint import convert
from bert.cli import main
from bert.closed_division import input_problems
from bert.model.config import named_config
from bert.model.pretraining import BertForPreTraining
from bert.prep.published_checksums import FOLDER, PublishedFile, published_files
from bert.system import load_descriptor
from tests.helpers.downloads import official_download

SMALL = ["--max-seq-length", "128", "--max-predictions", "20", "--dupe-factor", "2", "--shards", "6",
         "--eval-samples", "40", "--workers", "1", "--quiet"]


def _cli(*args) -> object:
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


@pytest.fixture(scope="module")
def made_up_tree(text_corpus, tmp_path_factory) -> Path:
    """`data mlperf` of the synthetic download (3 parts, an md5 list of its own), made once; a test that changes it
    changes a copy (copied_tree)."""
    folder = tmp_path_factory.mktemp("made_up")
    download, out = official_download(folder / "download", text_corpus), folder / "data"
    made = _cli("data", "mlperf", download, "--out", out, *SMALL)
    assert made.exit_code == 0, made.output
    parts = len(list((download / "results4").glob("part-*")))
    assert (f"not the official MLPerf dataset: {out} was made from a download that is not the official one: {parts} "
            f"text part(s) (part-00000-of-{parts:05d} ...), the official download has 500 (part-00000-of-00500 ... "
            "part-00499-of-00500)") in made.stdout
    assert "manifest: " in made.stdout  # prepared and verified all the same
    return out


def _closed_gpu_run(data: Path, folder: Path, division: str = "closed"):
    """h200_1x1 (closed, CUDA) on `data`; its checkpoint is not on this machine (the pre-flight's own line)."""
    return load_descriptor("h200_1x1").variant({"dataset.dir": str(data)},
                                               description={"division": division}).write(folder)


def test_a_made_up_download_is_prepared_but_never_official_and_the_closed_pre_flight_refuses_it(made_up_tree,
                                                                                               tmp_path):
    record = json.loads((made_up_tree / official.OFFICIAL_RECORD).read_text())
    assert record["official"] is False and record["checksums"].startswith("mlcommons/training retired_benchmarks/")
    verified = _cli("data", "verify", made_up_tree, "--quiet", "--workers", "1")
    assert verified.exit_code == 0 and "not the official MLPerf dataset: " in verified.stdout
    system = _closed_gpu_run(made_up_tree, tmp_path / "systems")
    (line,) = input_problems(system, None, None)
    assert line.startswith(f"a closed run trains on the official MLPerf dataset, but {made_up_tree} was made from a "
                           "download that is not the official one: 3 text part(s)")
    outcome = pf.preflight(system, 0, "localhost", None, tmp_path / "logs", gpus_needed=1)
    assert line in outcome.problems  # beside this CPU machine's own (no CUDA)
    open_run = _closed_gpu_run(made_up_tree, tmp_path / "open", division="open")
    assert input_problems(open_run, None, None) == []
    rehearsal = load_descriptor("h200_1x1").cpu_variant({"dataset.dir": str(made_up_tree)})
    assert input_problems(rehearsal, None, None) == []  # a CPU rehearsal of a closed descriptor is not judged


def test_an_official_tree_stays_so_only_while_its_files_are_those_made(made_up_tree, tmp_path):
    """official.json forged to say official: the verdict then rests on the files (a test's stand-in for a tree
    made from the real download, which no test machine holds)."""
    made_up_tree = Path(shutil.copytree(made_up_tree, tmp_path / "copy", ignore=shutil.ignore_patterns(".work")))
    record_path = made_up_tree / official.OFFICIAL_RECORD
    record = json.loads(record_path.read_text())
    record_path.write_text(json.dumps({**record, "official": True, "reason": "stand-in"}))
    assert official.dataset_verdict(made_up_tree).official
    system = _closed_gpu_run(made_up_tree, tmp_path / "systems")
    assert input_problems(system, None, None) == []
    shard = made_up_tree / "train" / "part-00002-of-00006.hdf5"
    shutil.copyfile(made_up_tree / "train" / "part-00003-of-00006.hdf5", shard)  # another shard's samples
    verified = _cli("data", "verify", made_up_tree, "--quiet", "--workers", "1")
    assert (f"not the official MLPerf dataset: {shard}: changed since `data mlperf` made the tree from the official "
            "download") in verified.stdout
    assert not official.dataset_verdict(made_up_tree).official  # the manifest data verify wrote says so too


def _download_of(folder: Path, parts: int = official.PARTS) -> tuple[list[Path], Path, Path]:
    texts = folder / "results4"
    texts.mkdir(parents=True)
    paths = []
    for i in range(parts):
        path = texts / f"part-{i:05d}-of-{parts:05d}"
        path.write_text(f"sentence {i} of a part.\nanother one.\n\nsecond article {i}.\n\n")
        paths.append(path)
    (texts / "eval.txt").write_text("".join(f"eval article {i}.\nits second line.\n\n" for i in range(5)))
    (folder / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n")
    return paths, texts / "eval.txt", folder / "vocab.txt"


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def _reference_for(monkeypatch, parts: list[Path], eval_text: Path, vocab: Path) -> None:
    """A stand-in for dataset.md's table (and eval.md5) whose entries are these files' own: a test of the verdict's
    logic, the one thing no test machine can give the real files for."""
    section = "Files in <bert>/results directory"
    chosen = [parts[i] for i in (0, 1, 2, -3, -2, -1)] + [eval_text]
    table = tuple(f for f in published_files() if f.name not in {p.name for p in chosen} | {"vocab.txt"})
    table += tuple(PublishedFile(p.name, None, p.stat().st_size, _md5(p), section) for p in chosen)
    table += (PublishedFile("vocab.txt", None, vocab.stat().st_size, _md5(vocab), "MD5sums of provided files"),)
    monkeypatch.setattr("bert.prep.published_checksums.published_files", lambda: table)
    articles = [a for a in eval_text.read_text().split("\n\n") if a.strip()]
    monkeypatch.setattr(official, "eval_article_md5s",
                        lambda: tuple(hashlib.md5(a.rstrip().encode()).hexdigest() for a in articles))


def test_every_published_checksum_matching_is_official_and_one_that_differs_is_named(tmp_path, monkeypatch):
    parts, eval_text, vocab = _download_of(tmp_path / "download")
    _reference_for(monkeypatch, parts, eval_text, vocab)
    listed = {p.name: _md5(p) for p in [*parts, eval_text]}
    verdict = official.judge_download(parts, eval_text, vocab, listed)
    assert verdict.official and verdict.line("dataset").startswith("official MLPerf dataset: 500 parts, eval.txt")
    published_md5 = listed[parts[499].name]
    parts[499].write_text(parts[499].read_text().replace("second", "SECOND"))  # the same size, another md5
    listed[parts[499].name] = _md5(parts[499])  # its own md5 list agrees with it, as a made-up one does
    differs = official.judge_download(parts, eval_text, vocab, listed)
    assert not differs.official
    assert differs.reason.startswith(f"{parts[499]} has md5 {listed[parts[499].name]}, the published "
                                     f"part-00499-of-00500 {published_md5}")
    size = vocab.stat().st_size
    vocab.write_text(vocab.read_text() + "extra\n")
    parts[499].write_text(parts[499].read_text().replace("SECOND", "second"))
    listed[parts[499].name] = published_md5
    assert official.judge_download(parts, eval_text, vocab, listed).reason.startswith(
        f"{vocab} is {size + 6} bytes, the published vocab.txt {size} (mlcommons/training")


def test_a_changed_eval_article_is_named_by_its_place(tmp_path, monkeypatch):
    parts, eval_text, vocab = _download_of(tmp_path / "download")
    _reference_for(monkeypatch, parts, eval_text, vocab)
    eval_text.write_text(eval_text.read_text().replace("eval article 3.", "eval article Z."))  # the same size
    listed = {p.name: _md5(p) for p in [*parts, eval_text]}
    verdict = official.judge_download(parts, eval_text, vocab, listed)
    assert not verdict.official
    assert verdict.reason.startswith(f"{eval_text} has md5 {listed['eval.txt']}, the published eval.txt ")
    assert verdict.reason.endswith("; its article 4 of 5 differs from the reference's (eval.md5)")


def test_the_vendored_eval_md5_is_itself_an_official_file():
    path = FOLDER / "eval.md5"
    assert official._differs(path, "eval.md5", path.stat().st_size, None) is None


def test_a_checkpoint_of_the_wrong_size_or_form_is_one_line(tmp_path):
    prefix = tmp_path / "model.ckpt-28252"
    Path(f"{prefix}.data-00000-of-00001").write_bytes(b"\0" * 1234)
    Path(f"{prefix}.index").write_bytes(b"\0" * 6420)
    verdict = official.judge_tf_checkpoint(prefix)
    assert verdict.line("phase-1 checkpoint") == (
        f"not the official MLPerf phase-1 checkpoint: {prefix}.data-00000-of-00001 is 1,234 bytes, the published "
        "phase-1 checkpoint's 4,034,713,312 (TF1) or 1,344,982,997 (TF2) (mlcommons/training "
        f"retired_benchmarks/bert/dataset.md at {official.source_text().split(' at ')[1]})")
    with open(f"{prefix}.data-00000-of-00001", "r+b") as f:  # the TF2 file's size, sparse: only the index is read
        f.truncate(1_344_982_997)
    verdict, zeros = official.judge_tf_checkpoint(prefix), hashlib.md5(bytes(6420)).hexdigest()
    assert verdict.reason.startswith(f"{prefix}.index has md5 {zeros}, the "
                                     "published model.ckpt-28252.index (TF2) fc34dd7a54afc07f2d8e9d64471dc672")
    other = official.judge_tf_checkpoint(tmp_path / "model.ckpt-1000")
    assert "is not model.ckpt-28252 in one data file" in other.reason


def test_a_converted_checkpoint_keeps_its_verdict_and_the_closed_pre_flight_reads_it(tmp_path):
    config = named_config("micro")
    torch.manual_seed(0)
    source = tmp_path / "phase1.pt"
    torch.save(BertForPreTraining(config).state_dict(), source)
    converted = _cli("checkpoint", "convert", source, tmp_path / "phase1" / "model.pt", "--model", "micro")
    assert converted.exit_code == 0, converted.output
    assert (f"not the official MLPerf phase-1 checkpoint: {source} is a pytorch file; the reference publishes the "
            "checksums of its TensorFlow checkpoint model.ckpt-28252") in converted.stdout
    out = tmp_path / "phase1" / "model.pt"
    assert official.checkpoint_verdict(out) == official.Verdict(False, converted.stdout.splitlines()[-1].split(
        "checkpoint: ", 1)[1])
    convert(source, out, config)  # what convert writes loads for training as before
    system = load_descriptor("h200_1x1").variant({"init_checkpoint": str(out)})
    lines = input_problems(system, None, None)
    assert f"a closed run starts from the official MLPerf phase-1 checkpoint, but {source} is a pytorch file" in \
        lines[-1]
    (tmp_path / "noise.pt").write_bytes(os.urandom(4096))
    assert "cannot be read as a checkpoint" in official.checkpoint_verdict(tmp_path / "noise.pt").reason
    os.mkfifo(tmp_path / "fifo.pt")
    assert official.checkpoint_verdict(tmp_path / "fifo.pt").reason.endswith("is not a regular file")


def test_an_import_of_tfrecords_is_never_called_official(reference_records, tmp_path):
    imported = _cli("data", "import", "--input", reference_records, "--out", tmp_path / "shards", "--quiet",
                    "--workers", "1")
    assert imported.exit_code == 0, imported.output
    assert imported.stdout.splitlines()[-1].startswith(
        "not the official MLPerf dataset: the reference publishes the checksums of its text, vocabulary and "
        "checkpoint, not of TFRecord files")
