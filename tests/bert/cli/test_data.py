"""The data commands as a user meets them: one-line errors naming the file (and line), and the happy path."""

import h5py
import pytest
from click.testing import CliRunner

from bert.cli import main


def _run(*args: str):
    return CliRunner().invoke(main, ["data", *map(str, args)])


def _error_line(result) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 1 and len(lines) == 1, result.output
    return lines[0]


def _prepare(corpus, out, *extra):
    return _run("prepare", "--text", corpus / "train", "--vocab", corpus / "vocab.txt", "--out", out,
                "--max-seq-length", 64, "--max-predictions", 10, "--dupe-factor", 1, "--workers", 1, "--quiet",
                *extra)


@pytest.mark.parametrize("content, message", [
    (b"", "line 1: empty part (no sentences)"),
    (b"A sentence.\nAnother.\n", "line 2: one document only (no blank line between documents)"),
    (b"Good.\n\n\xc3\x28 bad.\n", "line 3: not UTF-8 (byte 0xc3 at column 1); convert the file to UTF-8"),
])
def test_bad_text_parts(text_corpus, tmp_path, content, message):
    part = tmp_path / "part.txt"
    part.write_bytes(content)
    result = _run("prepare", "--text", part, "--vocab", text_corpus / "vocab.txt", "--out", tmp_path / "out",
                  "--quiet")
    assert _error_line(result).startswith(f"Error: {part}: {message}")


@pytest.mark.parametrize("missing", ["[CLS]", "[SEP]", "[MASK]", "[UNK]"])
def test_vocab_without_a_special_token(text_corpus, tmp_path, missing):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(p + "\n" for p in (text_corpus / "vocab.txt").read_text().split() if p != missing))
    result = _run("prepare", "--text", text_corpus / "train", "--vocab", vocab, "--out", tmp_path / "out")
    assert _error_line(result).startswith(f"Error: {vocab}: has no {missing} line")


def test_output_with_shards_is_refused_then_resumed_or_overwritten(text_corpus, tmp_path):
    first = _prepare(text_corpus, tmp_path / "out")
    assert first.exit_code == 0 and "prepared 3 part(s)" in first.output and "samples/s" in first.output
    assert _error_line(_prepare(text_corpus, tmp_path / "out")) == (
        f"Error: {tmp_path / 'out'}: already holds 4 file(s) that `mlperf-bert data prepare` wrote "
        "(part-00000-of-00003.hdf5, ...); pass --resume to complete the missing parts or --overwrite to replace them")
    (tmp_path / "out" / "part-00001-of-00003.hdf5").unlink()
    resumed = _prepare(text_corpus, tmp_path / "out", "--resume")
    assert resumed.exit_code == 0 and "prepared 1 part(s)" in resumed.output
    assert "2 part(s) already complete" in resumed.output
    both = _prepare(text_corpus, tmp_path / "out", "--resume", "--overwrite")
    assert both.exit_code == 2 and "--overwrite and --resume exclude each other" in both.output


def test_the_whole_chain_and_verify_failures(text_corpus, tmp_path):
    data = tmp_path / "data"
    assert _run("vocab", "--text", *sorted((text_corpus / "train").glob("part-*")), "--size", 600, "--out",
                data / "vocab.txt", "--quiet").exit_code == 0
    assert _prepare(text_corpus, data / "train").exit_code == 0
    # A mistake that caps accuracy: the eval set picked from the training shards.
    assert _run("eval-set", "--input", data / "train", "--out", data / "eval.hdf5", "--samples", 100,
                "--max-seq-length", 64, "--max-predictions", 10, "--quiet").exit_code == 0
    resharded = _run("reshard", "--input", *sorted((data / "train").glob("*.hdf5")), "--out", tmp_path / "rs",
                     "--shards", 5, "--max-seq-length", 64, "--max-predictions", 10, "--quiet")
    assert resharded.exit_code == 0 and "wrote 5 shards" in resharded.output
    # The vocabulary learnt here (600 pieces) is not the one the shards were made with (1500): verify says so.
    bad = _run("verify", data, "--workers", 1, "--quiet")
    assert bad.exit_code == 1 and "token id outside the vocabulary of 600" in bad.output
    (data / "vocab.txt").write_bytes((text_corpus / "vocab.txt").read_bytes())
    leaked = _run("verify", data, "--quiet")
    assert leaked.exit_code == 1 and _problems(leaked) == [
        f"{data / 'eval.hdf5'}: 100 of its 100 eval samples (100.0%) are also in train/ (fixed form); sample 0 is "
        f"also in {data / 'train' / 'part-00000-of-00003.hdf5'}: accuracy on them would be measured on training data; "
        "make the eval set from text kept out of training (`mlperf-bert data eval-set`)"]
    assert _run("prepare", "--text", text_corpus / "eval.txt", "--vocab", text_corpus / "vocab.txt", "--out",
                tmp_path / "eval_parts", "--max-seq-length", 64, "--max-predictions", 10, "--dupe-factor", 1,
                "--workers", 1, "--quiet").exit_code == 0
    assert _run("eval-set", "--input", tmp_path / "eval_parts", "--out", data / "eval.hdf5", "--samples", 100,
                "--max-seq-length", 64, "--max-predictions", 10, "--overwrite", "--quiet").exit_code == 0
    good = _run("verify", data, "--quiet", "--eval-source", tmp_path / "eval_parts")
    assert good.exit_code == 0 and f"manifest: {data / 'manifest.json'}" in good.output
    assert "eval.hdf5: the 100 samples pick_eval_samples.py picks from the " in good.output
    with h5py.File(data / "eval.hdf5", "r+") as f:
        f["next_sentence_labels"][0] = 3
    broken = _run("verify", data, "--workers", 1, "--quiet")
    assert broken.exit_code == 1
    assert _problems(broken) == [f"{data / 'eval.hdf5'}: sample 0: next_sentence_labels is not 0 or 1"]
    assert f"Error: 1 problem(s) found; {data / 'manifest.json'} records them, and training refuses" in broken.output


def _problems(result) -> list[str]:
    """The problem lines a failed verify printed (on stderr, before the closing Error: line)."""
    return [line for line in result.stderr.splitlines() if line.strip() and not line.startswith("Error: ")]
