import pytest

from bert.prep.synthetic.grammar import build_lexicon
from bert.prep.synthetic.text_corpus import TextCorpusSpec, render_sentence, write_text_corpus
from bert.prep.text_parts import TextError, expand_inputs, read_documents


def _write(path, text: str | bytes):
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def test_documents_are_split_at_blank_lines(tmp_path):
    part = _write(tmp_path / "part", "One.\nTwo.\n\n\n  \nThree.\n\nFour.\nFive.\n")
    assert list(read_documents(part)) == [["One.", "Two."], ["Three."], ["Four.", "Five."]]


@pytest.mark.parametrize("content, message", [
    ("", r"part: line 1: empty part \(no sentences\)"),
    ("\n\n  \n", r"part: line 3: empty part"),
    ("One.\nTwo.\nThree.\n", r"part: line 3: one document only \(no blank line between documents\) in 3 lines"),
    ("One.\nTwo.\n\n", r"part: line 3: one document only"),
    (b"Fine.\n\nCaf\xe9 latte.\n", r"part: line 3: not UTF-8 \(byte 0xe9 at column 4\); convert the file"),
])
def test_bad_parts_are_named_with_the_line(tmp_path, content, message):
    part = _write(tmp_path / "part", content)
    with pytest.raises(TextError, match=message):
        list(read_documents(part))


def test_inputs_expand_folders_and_refuse_missing_or_repeated_paths(tmp_path):
    folder = tmp_path / "parts"
    folder.mkdir()
    for name in ("b.txt", "a.txt", ".hidden.txt", "c.hdf5"):
        _write(folder / name, "x\n")
    assert [p.name for p in expand_inputs([folder])] == ["a.txt", "b.txt", "c.hdf5"]
    assert [p.name for p in expand_inputs([folder], suffixes=(".hdf5",))] == ["c.hdf5"]
    with pytest.raises(TextError, match="absent: no such file or folder"):
        expand_inputs([tmp_path / "absent"])
    with pytest.raises(TextError, match=r"a\.txt: given more than once"):
        expand_inputs([folder, folder / "a.txt"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(TextError, match=r"empty: folder holds no files ending in \.hdf5"):
        expand_inputs([tmp_path / "empty"], suffixes=(".hdf5",))


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
