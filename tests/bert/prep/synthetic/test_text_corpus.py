"""The synthetic text corpus (bert.prep.synthetic.text_corpus): the grammar's sentences spelled out as text parts
in the reference layout."""

import pytest

from bert.prep.synthetic.grammar import build_lexicon
from bert.prep.synthetic.text_corpus import TextCorpusSpec, render_sentence, write_text_corpus
from bert.prep.text_parts import read_documents


def test_rendering_joins_word_pieces_into_words():
    pieces = ("[PAD]", "kalo", "##mi", ".", ",", "ras")
    assert render_sentence(pieces, [1, 2, 4, 5, 3]) == "Kalomi, ras."


def test_text_corpus_layout_size_and_determinism(tmp_path):
    spec = TextCorpusSpec(megabytes=0.2, parts=2, eval_megabytes=0.05, seed=4, mean_sentences=6)
    written = write_text_corpus(tmp_path / "a", spec)
    assert [p.relative_to(tmp_path / "a").as_posix() for p in written] == [
        "train/part-00000-of-00002.txt", "train/part-00001-of-00002.txt", "eval.txt"]
    assert all(p.stat().st_size >= 100_000 for p in written[:2]) and written[2].stat().st_size >= 50_000
    documents = list(read_documents(written[0]))
    assert len(documents) > 50 and all(s[0].isupper() and s.endswith(".") for d in documents for s in d)
    again = write_text_corpus(tmp_path / "b", spec)
    assert [p.read_bytes() for p in written] == [p.read_bytes() for p in again]
    train_sentences = {s for p in written[:2] for d in read_documents(p) for s in d}
    long_eval = [s for d in read_documents(written[2]) for s in d if len(s) > 80]
    assert long_eval and sum(s in train_sentences for s in long_eval) < len(long_eval) // 20
    words = {w.strip(".,;").lower() for d in documents for s in d for w in s.split()}
    initials = tuple(p for p in build_lexicon(4096, seed=4).vocab.pieces if p.isalpha())
    assert len(words) > 300 and all(w.startswith(initials) for w in words)  # the grammar's words, spelled out
    with pytest.raises(FileExistsError, match=r"already holds 2 file\(s\) that `mlperf-bert data synth-text` wrote "
                                              r".*; pass --overwrite"):
        write_text_corpus(tmp_path / "a", spec)
