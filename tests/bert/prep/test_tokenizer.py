import numpy as np
import pytest

from bert.data.vocab import Vocab, VocabError, load_vocab
from bert.prep.tokenizer import WordPieceTokenizer

PIECES = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[", "]", ".", ",", "mask", "the", "cafe", "hello",
          "##s", "run", "##ning", "über")


def _ids(tokenizer: WordPieceTokenizer, sentences: list[str]) -> list[list[int]]:
    tokens, lengths = tokenizer.encode(sentences)
    return [row.tolist() for row in np.split(tokens, np.cumsum(lengths)[:-1])]


def test_uncased_bert_tokenisation():
    tokenizer = WordPieceTokenizer(Vocab(PIECES))
    ids = {p: i for i, p in enumerate(PIECES)}
    got = _ids(tokenizer, ["Hellos, THE Café.", "Running [MASK] zzz", "", "\x00\t"])
    assert got[0] == [ids["hello"], ids["##s"], ids[","], ids["the"], ids["cafe"], ids["."]]
    # A literal [MASK] in the text is text, never the special token; an unknown word is [UNK].
    assert got[1] == [ids["run"], ids["##ning"], ids["["], ids["mask"], ids["]"], ids["[UNK]"]]
    assert got[2] == [] and got[3] == []




def test_tokenisation_equals_the_reference_on_tricky_text_and_a_code_point_sweep():
    from bert.prep.text_parts import read_lines
    from tests.bert.prep.fixtures.make_reference_fixtures import HERE, sweep_probes

    # Accents, final sigma, dotted I, CJK, kana, Hangul, RTL scripts, emoji, controls, zero-width and unicode
    # spaces, private use and unassigned code points, combining marks, punctuation, 200+ character words,
    # and every code point of the sweep alone and between letters, as the reference FullTokenizer made them.
    lines = [line for _, line in read_lines(HERE / "tricky_text.txt")] + sweep_probes()
    reference = np.load(HERE / "reference_tokens.npz")
    want = np.split(reference["ids"].astype(np.int32), np.cumsum(reference["lengths"])[:-1])
    ids, lengths = WordPieceTokenizer(load_vocab(HERE / "vocab.txt")).encode(lines)
    got = np.split(ids, np.cumsum(lengths)[:-1])
    wrong = [line for line, g, w in zip(lines, got, want) if not np.array_equal(g, w)]
    assert len(lines) == len(want) > 30000 and wrong == []


def test_a_vocabulary_with_a_repeated_piece_is_refused():
    with pytest.raises(VocabError, match=r"'the' is on lines \[11, 18\]; every word piece must be on one line"):
        WordPieceTokenizer(Vocab((*PIECES, "the")))
