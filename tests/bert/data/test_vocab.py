"""WordPiece vocabularies (bert.data.vocab): a vocab.txt written and loaded again gives the same pieces and ids;
a file without a special token, without [PAD] first, with empty lines or missing is refused, naming it."""

import re

import pytest

from bert.data.vocab import SPECIAL_TOKENS, Vocab, VocabError, load_vocab

PIECES = (*SPECIAL_TOKENS, "the", "run", "##ning", "über")


@pytest.mark.parametrize("missing", ["[CLS]", "[SEP]", "[MASK]", "[UNK]"])
def test_a_vocabulary_without_a_special_token_is_refused(tmp_path, missing):
    path = tmp_path / "vocab.txt"
    path.write_text("".join(p + "\n" for p in PIECES if p != missing))
    with pytest.raises(VocabError, match=rf"vocab\.txt: has no \{missing[:-1]}\] line; a BERT vocabulary needs"):
        load_vocab(path)


def test_a_vocabulary_without_pad_first_is_refused(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("".join(p + "\n" for p in (*PIECES[1:3], "[PAD]", *PIECES[3:])))
    with pytest.raises(VocabError, match=r"\[PAD\] is on line 3; MLPerf shards pad with id 0"):
        load_vocab(path)


def test_a_written_vocabulary_loads_with_the_same_pieces_and_ids(tmp_path):
    Vocab(PIECES).write(tmp_path / "vocab.txt")
    vocab = load_vocab(tmp_path / "vocab.txt")
    assert vocab.pieces == PIECES and vocab.path == tmp_path / "vocab.txt" and len(vocab) == len(PIECES)
    assert (vocab.pad_id, vocab.cls_id, vocab.sep_id, vocab.mask_id) == (0, 2, 3, 4)
    assert vocab.ids["über"] == len(PIECES) - 1


@pytest.mark.parametrize("content, message", [
    ("[PAD]\n\n[UNK]\n", "has empty lines; every line must hold one word piece"),
    (b"[PAD]\n\xff\n", "not UTF-8 text"),
    (None, "no such vocabulary file"),
])
def test_an_unreadable_vocabulary_is_refused_naming_the_file(tmp_path, content, message):
    path = tmp_path / "vocab.txt"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(VocabError, match=f"^{re.escape(str(path))}: {message}"):
        load_vocab(path)
