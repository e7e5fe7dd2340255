"""Token ids that do not fit their vocabulary: ids of another vocabulary landing on reserved pieces or on pieces
with capitals, and text turned into [UNK]; each reported by `data verify` with its share and a fix."""

import re

import h5py
import pytest

from bert.data.vocab import Vocab, load_vocab
from bert.prep.verify import verify_dataset
from tests.helpers.datasets import copy_dataset

FREQUENT = range(5, 300)  # the grammar's vocabulary lists its most used pieces first ('.', ',', 'in', ...)


def _rename(data, rename) -> None:
    pieces = list(load_vocab(data / "vocab.txt").pieces)
    for i in FREQUENT:
        pieces[i] = rename(i, pieces[i])
    Vocab(tuple(pieces)).write(data / "vocab.txt")


def _unknown_words(data) -> None:
    """Every '.' of the text made [UNK], as cased text meets an uncased vocabulary (each capitalised word)."""
    vocab = load_vocab(data / "vocab.txt")
    for shard in sorted((data / "train").glob("*.hdf5")):
        with h5py.File(shard, "r+") as f:
            ids, labels = f["input_ids"][:], f["masked_lm_ids"][:]
            ids[ids == vocab.ids["."]] = vocab.id_of("[UNK]")
            labels[labels == vocab.ids["."]] = vocab.id_of("[UNK]")
            f["input_ids"][...], f["masked_lm_ids"][...] = ids, labels


@pytest.mark.parametrize("corrupt, problem", [
    (lambda data: _rename(data, lambda i, piece: f"[unused{i}]"),
     r"vocab\.txt: \d+\.\d\d% of the text's tokens are ids of reserved pieces \(\[unused\.\.\.\], \[PAD\], \[MASK\] "
     r"where nothing is masked\), which no text makes: the shards were made with another vocabulary "
     r"\(the cased one\?\); pass the vocabulary they were made with \(--vocab, run\.dataset\.vocab_file\) or make "
     r"the shards again"),
    (lambda data: _rename(data, lambda i, piece: piece.capitalize()),
     r"vocab\.txt: \d+\.\d\d% of the text's tokens are pieces with capitals: a cased vocabulary or cased ids, but the "
     r"MLPerf reference is uncased; make the shards again with the uncased vocabulary"),
    (_unknown_words, r"vocab\.txt: \d+\.\d\d% of the text's tokens are \[UNK\]: the text's characters or capitals are "
                     r"not in the vocabulary \(cased text through an uncased vocabulary\?\); make the shards again"),
])
def test_ids_that_do_not_fit_the_vocabulary_are_reported_with_their_share(small_dataset, tmp_path, corrupt, problem):
    data = copy_dataset(small_dataset, tmp_path / "data")
    clean = verify_dataset(data, show_progress=False)
    assert clean.problems == [] and clean.checks["vocabulary"]["unk"] == clean.checks["vocabulary"]["cased"] == 0
    assert any(line.startswith("vocabulary: [UNK] 0.000%, reserved pieces 0.000%, pieces with capitals 0.000% of ")
               for line in clean.check_lines)
    corrupt(data)
    report = verify_dataset(data, show_progress=False)
    assert len(report.problems) == 1 and re.search(problem, report.problems[0]), report.problems
