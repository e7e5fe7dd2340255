"""Which code a run ran (bert.provenance): the digest is of the bert package's .py files alone, by content and
path, the same from a checkout on disk and from its commit's archive; outside a git checkout there is no commit."""

import io
import subprocess
import tarfile

from bert.provenance import committed_code, head_commit, running_code, source_digest, tar_files

SOURCE = [("bert/a.py", b"x = 1\n"), ("bert/sub/b.py", b"y = 2\n")]


def test_the_digest_is_of_the_packages_python_files_by_path_and_content():
    digest = source_digest(SOURCE)
    assert source_digest(list(reversed(SOURCE))) == digest  # order of reading does not matter
    assert source_digest([*SOURCE, ("bert/notes.txt", b"n"), ("tests/test_a.py", b"t")]) == digest
    assert source_digest([("bert/a.py", b"x = 2\n"), SOURCE[1]]) != digest
    assert source_digest([("bert/c.py", SOURCE[0][1]), SOURCE[1]]) != digest  # a file renamed is other code


def test_a_tar_gives_its_source_files():
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        for name, content in [*SOURCE, ("bert/README", b"r")]:
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    data.seek(0)
    with tarfile.open(fileobj=data) as tar:
        assert sorted(tar_files(tar)) == SOURCE


def _git(root, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                   capture_output=True)


def test_a_checkouts_code_matches_its_commit_until_it_is_edited(tmp_path):
    assert committed_code(tmp_path) is None and head_commit(tmp_path) is None  # not a git checkout
    for name, content in SOURCE:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(content)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "code")
    running, committed = running_code(tmp_path), committed_code(tmp_path)
    assert running == committed and running.digest == source_digest(SOURCE) and len(running.commit) == 40
    (tmp_path / "bert" / "a.py").write_bytes(b"x = 3\n")
    assert running_code(tmp_path).digest != committed_code(tmp_path).digest
