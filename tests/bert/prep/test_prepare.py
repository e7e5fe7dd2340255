import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from bert.data.shards import read_shard
from bert.data.vocab import VocabError, load_vocab
from bert.prep.instances import SampleSpec
from bert.prep.prepare import PrepareOptions, prepare
from bert.prep.shard_check import Limits, verify_shard
from bert.prep.synthetic.text_corpus import TextCorpusSpec, write_text_corpus
from bert.prep.text_parts import TextError

SPEC = SampleSpec(max_seq_length=128, max_predictions=20)


def _prepare(corpus, out, workers=1, mode="new", **changes):
    options = PrepareOptions(corpus / "vocab.txt", out, **{"spec": SPEC, "dupe_factor": 2, **changes})
    return prepare(sorted((corpus / "train").glob("part-*")), options, workers, mode, show_progress=False)


def _bytes(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.hdf5"))}


def _all(folder):
    from bert.data.shards import Samples
    return Samples.concat([read_shard(p) for p in sorted(folder.glob("*.hdf5"))])


def test_one_shard_per_part_with_reference_samples(text_corpus, tmp_path):
    results = _prepare(text_corpus, tmp_path / "out")
    assert [r.shard.name for r in results] == [f"part-0000{i}-of-00003.hdf5" for i in range(3)]
    vocab = load_vocab(text_corpus / "vocab.txt")
    for r in results:
        check = verify_shard(r.shard, vocab, Limits(128, 20))  # layout, segments, masking
        assert check.form == "fixed" and check.problems == [] and check.stats.samples == r.samples > 500
    s = _all(tmp_path / "out")
    assert abs((s.masked_positions > 0).sum() / (len(s.tokens) - 3 * len(s)) - 0.15) < 0.01
    rows, cols = np.nonzero(s.masked_positions)
    shown = s.tokens[s.offsets[rows] + s.masked_positions[rows, cols]]
    labels = s.masked_ids[rows, cols]
    as_mask = np.mean(shown == vocab.mask_id)
    kept = np.mean((shown == labels) & (labels != vocab.mask_id))
    assert abs(as_mask - 0.8) < 0.02 and abs(kept - 0.1) < 0.02 and abs(1 - as_mask - kept - 0.1) < 0.02
    assert 0.4 < s.nsp_labels.mean() < 0.65
    assert s.lengths.max() == 128 and (s.lengths < 64).mean() > 0.05  # full rows and short-sequence draws


def test_same_seed_gives_byte_identical_shards_with_any_worker_count(text_corpus, tmp_path):
    _prepare(text_corpus, tmp_path / "a")
    _prepare(text_corpus, tmp_path / "b", workers=2)
    assert _bytes(tmp_path / "a") == _bytes(tmp_path / "b")
    _prepare(text_corpus, tmp_path / "c", seed=7)
    other = _bytes(tmp_path / "c")
    assert all(other[name] != data for name, data in _bytes(tmp_path / "a").items())


def test_fixed_and_varlen_shards_decode_to_the_same_samples(text_corpus, tmp_path):
    _prepare(text_corpus, tmp_path / "fixed")
    _prepare(text_corpus, tmp_path / "varlen", form="varlen")
    fixed, varlen = _all(tmp_path / "fixed"), _all(tmp_path / "varlen")
    for field in ("tokens", "segments", "offsets", "nsp_labels"):
        assert np.array_equal(getattr(fixed, field), getattr(varlen, field)), field
    width = varlen.max_predictions  # the variable-length form stores no width: its rows are as long as needed
    assert width <= 20 and not fixed.masked_positions[:, width:].any()
    assert np.array_equal(fixed.masked_positions[:, :width], varlen.masked_positions)
    assert np.array_equal(fixed.masked_ids[:, :width], varlen.masked_ids)


def test_an_output_holding_shards_is_refused_unless_overwrite_or_resume(text_corpus, tmp_path):
    _prepare(text_corpus, tmp_path / "out")
    with pytest.raises(FileExistsError, match=r"out: already holds 4 file\(s\) that `mlperf-bert data prepare` "
                                              r"wrote .* pass --resume .* or --overwrite"):
        _prepare(text_corpus, tmp_path / "out")
    assert _prepare(text_corpus, tmp_path / "out", mode="resume") == []
    with pytest.raises(ValueError, match=r"prepare\.json: .* made with other settings: seed; run with the same"):
        _prepare(text_corpus, tmp_path / "out", mode="resume", seed=1)
    assert len(_prepare(text_corpus, tmp_path / "out", mode="overwrite", seed=1)) == 3


def test_an_interrupted_run_resumes_with_only_the_missing_parts(tmp_path, text_corpus):
    corpus = tmp_path / "corpus"
    write_text_corpus(corpus, TextCorpusSpec(megabytes=0.9, parts=3, eval_megabytes=0, seed=5))
    (corpus / "vocab.txt").write_bytes((text_corpus / "vocab.txt").read_bytes())
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "bert.cli", "data", "prepare", "--text", str(corpus / "train"), "--vocab",
           str(corpus / "vocab.txt"), "--out", str(out), "--max-seq-length", "128", "--max-predictions", "20",
           "--dupe-factor", "5", "--workers", "1", "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not list(out.glob("*.hdf5")) or not list(out.glob(".*.tmp*")):  # a part done, the next one half-written
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done = sorted(p.name for p in out.glob("*.hdf5"))
    assert 1 <= len(done) < 3 and list(out.glob(".*.tmp*"))  # the half-written shard has a temporary name
    kept = {name: (out / name).stat().st_mtime_ns for name in done}
    resumed = _prepare(corpus, out, mode="resume", dupe_factor=5)
    assert sorted(r.shard.name for r in resumed) == sorted(
        {f"part-0000{i}-of-00003.hdf5" for i in range(3)} - set(done))
    assert {name: (out / name).stat().st_mtime_ns for name in done} == kept and not list(out.glob(".*.tmp*"))
    _prepare(corpus, tmp_path / "clean", dupe_factor=5)
    assert _bytes(out) == _bytes(tmp_path / "clean")


@pytest.mark.parametrize("content, message", [
    (b"", r"bad\.txt: line 1: empty part"),
    (b"One sentence.\nAnother one.\n", r"bad\.txt: line 2: one document only"),
    (b"Good.\n\nBad \xff byte.\n", r"bad\.txt: line 3: not UTF-8 \(byte 0xff at column 5\)"),
])
def test_bad_parts_fail_with_the_file_and_line(text_corpus, tmp_path, content, message):
    (tmp_path / "bad.txt").write_bytes(content)
    options = PrepareOptions(text_corpus / "vocab.txt", tmp_path / "out", SPEC)
    with pytest.raises(TextError, match=message):
        prepare([tmp_path / "bad.txt"], options, 1, show_progress=False)
    assert not list((tmp_path / "out").glob("*.hdf5"))


def test_a_vocabulary_without_mask_is_refused_before_any_work(text_corpus, tmp_path):
    pieces = [p for p in (text_corpus / "vocab.txt").read_text().splitlines() if p != "[MASK]"]
    (tmp_path / "vocab.txt").write_text("\n".join(pieces) + "\n")
    options = PrepareOptions(tmp_path / "vocab.txt", tmp_path / "out", SPEC)
    with pytest.raises(VocabError, match=r"vocab\.txt: has no \[MASK\] line"):
        prepare(sorted((text_corpus / "train").glob("part-*")), options, 1, show_progress=False)


def test_a_bad_part_in_a_worker_pool_stops_the_run_with_its_message(text_corpus, tmp_path):
    (tmp_path / "bad.txt").write_bytes(b"Good.\n\nBad \xff byte.\n")
    texts = [tmp_path / "bad.txt", *sorted((text_corpus / "train").glob("part-*"))]
    options = PrepareOptions(text_corpus / "vocab.txt", tmp_path / "out", SPEC, dupe_factor=1)
    with pytest.raises(TextError, match=r"bad\.txt: line 3: not UTF-8"):
        prepare(texts, options, 2, show_progress=False)
    assert not list((tmp_path / "out").glob(".*.tmp*"))  # parts that were running finished or cleaned up
    assert all(len(read_shard(p)) > 0 for p in (tmp_path / "out").glob("*.hdf5"))  # what is there is whole
