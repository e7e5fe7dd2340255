import collections
import subprocess
import sys

import numpy as np

from bert.data.settings import SyntheticDataSpec
from bert.data.shards import read_shard
from bert.data.vocab import load_vocab
from bert.prep.synthetic.hdf5_corpus import is_complete, synthesize, synthesize_if_missing
from tests.helpers.datasets import SMALL_SYNTH


def test_corpus_layout_vocab_and_shapes(small_dataset):
    vocab = load_vocab(small_dataset / "vocab.txt")
    assert len(vocab) == 4096 and vocab.pad_id == 0
    shards = sorted((small_dataset / "train").glob("*.hdf5"))
    assert len(shards) == 4
    train = [read_shard(p) for p in shards]
    assert sum(len(s) for s in train) == SMALL_SYNTH.train_samples
    evaluation = read_shard(small_dataset / "eval.hdf5")
    assert len(evaluation) == SMALL_SYNTH.eval_samples
    lengths = np.concatenate([s.lengths for s in train])
    assert lengths.max() <= 64 and lengths.min() < 32  # documents of varied length give short samples
    nsp = np.concatenate([s.nsp_labels for s in train])
    assert 0.4 < nsp.mean() < 0.65


def test_same_seed_gives_identical_corpus_other_seed_differs(tmp_path, small_dataset):
    again = synthesize(tmp_path / "again", SMALL_SYNTH)
    a, b = read_shard(small_dataset / "eval.hdf5"), read_shard(again / "eval.hdf5")
    assert np.array_equal(a.tokens, b.tokens) and np.array_equal(a.masked_ids, b.masked_ids)
    from dataclasses import replace
    other = synthesize(tmp_path / "other", replace(SMALL_SYNTH, seed=8))
    c = read_shard(other / "eval.hdf5")
    assert len(a.tokens) != len(c.tokens) or not np.array_equal(a.tokens, c.tokens)


def test_eval_is_disjoint_from_training_and_not_guessable(small_dataset):
    evaluation = read_shard(small_dataset / "eval.hdf5")
    train = [read_shard(p) for p in sorted((small_dataset / "train").glob("*.hdf5"))]

    def segment_a(s, i):
        row, seg = s.tokens[s.offsets[i]: s.offsets[i + 1]], s.segments[s.offsets[i]: s.offsets[i + 1]]
        return row[seg == 0].tobytes()

    # Long segments cannot coincide by chance; one shared with training would mean a shared document.
    train_rows = {segment_a(s, i) for s in train for i in range(len(s))}
    long_eval = [segment_a(evaluation, i) for i in range(len(evaluation))]
    long_eval = [row for row in long_eval if len(row) >= 16 * 4]
    assert len(long_eval) > 50 and not any(row in train_rows for row in long_eval)
    labels = evaluation.masked_ids[evaluation.masked_positions > 0]
    most_common = collections.Counter(labels.tolist()).most_common(1)[0][1]
    assert most_common / len(labels) < 0.25


_WRITE_SLOWLY = """
import sys, time
from bert.ownership import claim_folder
from bert.prep.synthetic.hdf5_corpus import WRITER, _write
from bert.data.settings import SyntheticDataSpec
with claim_folder(sys.argv[1], WRITER, mode="resume") as folder:
    print("writing", flush=True)
    time.sleep(1)
    _write(folder, SyntheticDataSpec(train_samples=64, eval_samples=16, shards=1, vocab_size=1024,
                                     max_seq_length=32, max_predictions=4))
"""


def test_if_missing_waits_for_another_writer_and_takes_its_corpus(tmp_path):
    """Two wrappers (or two nodes on a shared file system) on an empty corpus folder at once: the second waits
    for the first instead of failing, and finds the corpus complete."""
    out = tmp_path / "corpus"
    first = subprocess.Popen([sys.executable, "-c", _WRITE_SLOWLY, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert first.stdout.readline() == "writing\n"
        waits = []
        spec = SyntheticDataSpec(train_samples=64, eval_samples=16, shards=1, vocab_size=1024, max_seq_length=32,
                                 max_predictions=4)
        assert synthesize_if_missing(out, spec, on_wait=waits.append) is False
    finally:
        assert first.wait(timeout=60) == 0
    assert len(waits) == 1 and waits[0].startswith(f"{out}: `mlperf-bert data synth` (pid {first.pid} on ")
    assert waits[0].endswith("is writing here; waiting for it to end")
    assert is_complete(out)
