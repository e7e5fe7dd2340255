import pytest

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
