"""The reference's published checksums (bert.prep.published_checksums): verbatim copies of mlcommons/training's
dataset.md and eval.md5, each still the blob its SOURCE.json names, parsed into the entries they publish."""

import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest

from bert.prep.published_checksums import (
    FOLDER,
    checkpoint_files,
    eval_article_md5s,
    parse_tables,
    published,
    published_files,
    source,
    source_text,
    text_files,
)

MIRROR = Path("/work/.mirror/mlcommons+training/repo")  # where the reference was fetched on the machine it was made


def _git_blob(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def test_the_vendored_files_are_the_blobs_their_source_names():
    origin = source()
    assert origin["repository"] == "https://github.com/mlcommons/training" and len(origin["commit"]) == 40
    for name, entry in origin["files"].items():
        assert _git_blob((FOLDER / name).read_bytes()) == entry["git_blob"], name
    assert source_text() == f"mlcommons/training retired_benchmarks/bert/dataset.md at {origin['commit'][:12]}"


@pytest.mark.skipif(not MIRROR.is_dir(), reason="no local mirror of mlcommons/training here")
def test_the_vendored_files_are_the_references_own_at_that_commit():
    origin = source()
    for name, entry in origin["files"].items():
        shown = subprocess.run(["git", f"--git-dir={MIRROR}", "show", f"{origin['commit']}:{entry['path']}"],
                               capture_output=True, check=True).stdout
        assert shown == (FOLDER / name).read_bytes(), name


def test_the_parse_gives_the_published_entries():
    vocab = published("vocab.txt")
    assert (vocab.size, vocab.md5) == (231_508, "64800d5d8528ce344256daf115d4965e")
    tf1, tf2 = checkpoint_files("tf1"), checkpoint_files("tf2")
    assert sorted(tf1) == ["model.ckpt-28252.data-00000-of-00001", "model.ckpt-28252.index", "model.ckpt-28252.meta"]
    assert tf1["model.ckpt-28252.data-00000-of-00001"].size == 4_034_713_312
    assert tf1["model.ckpt-28252.data-00000-of-00001"].md5 == "50797acd537880bfb5a7ade80d976129"
    assert sorted(tf2) == ["model.ckpt-28252.data-00000-of-00001", "model.ckpt-28252.index"]
    assert tf2["model.ckpt-28252.index"].md5 == "fc34dd7a54afc07f2d8e9d64471dc672"
    text = text_files()
    assert sorted(text) == ["eval.md5", "eval.txt", *(f"part-{i:05d}-of-00500" for i in (0, 1, 2, 497, 498, 499))]
    assert (text["eval.txt"].size, text["eval.txt"].md5) == (32_851_144, "2a220f790517261547b1b45ed3ada07a")
    assert text["part-00499-of-00500"].md5 == "b3b087ad24e3770d879a351664cebc5a"
    rows_with_an_md5 = re.findall(r"^\|.*\|\s*[0-9a-f]{32}\s*\|\s*$", (FOLDER / "dataset.md").read_text(), re.M)
    assert len(published_files()) == len(rows_with_an_md5) == 35  # dataset.md's three tables, without "..."
    md5s = eval_article_md5s()
    assert len(md5s) == 10_000 and md5s[0] == "e4515c4f17370f7418328077c61404a3"


def test_the_two_vendored_files_agree_with_each_other():
    """dataset.md publishes eval.md5's own size and md5: the vendored eval.md5 is that file."""
    data = (FOLDER / "eval.md5").read_bytes()
    assert (len(data), hashlib.md5(data).hexdigest()) == (published("eval.md5").size, published("eval.md5").md5)


def test_a_table_row_with_a_variant_and_thousands_separators_parses():
    rows = parse_tables("### Files:\n| f.index (tf2) |  6,420 | fc34dd7a54afc07f2d8e9d64471dc672 | \n| ... | | |\n")
    assert [(r.name, r.variant, r.size, r.section) for r in rows] == [("f.index", "tf2", 6420, "Files")]
    assert json.loads((FOLDER / "SOURCE.json").read_text())["files"]["eval.md5"]["path"].endswith("eval.md5")
