"""Learning a WordPiece vocabulary from text parts (bert.prep.vocab_learning)."""

import pytest

from bert.data.vocab import VocabError
from bert.prep.tokenizer import WordPieceTokenizer
from bert.prep.vocab_learning import train_vocab


def test_learnt_vocabulary_has_the_special_tokens_first_and_is_reproducible(text_corpus):
    parts = sorted((text_corpus / "train").glob("part-*"))
    first = train_vocab(parts, 800, show_progress=False)
    assert first.pieces[:5] == ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]") and len(first) <= 800
    assert train_vocab(parts, 800, show_progress=False).pieces == first.pieces
    tokens, _ = WordPieceTokenizer(first).encode([s.strip() for s in parts[0].open() if s.strip()][:200])
    assert (tokens == first.ids["[UNK]"]).mean() < 0.01


def test_learning_from_an_empty_part_is_refused(tmp_path):
    (tmp_path / "empty.txt").write_text("\n\n")
    with pytest.raises(VocabError, match=r"empty\.txt: line 1: empty part"):
        train_vocab([tmp_path / "empty.txt"], 500, show_progress=False)
