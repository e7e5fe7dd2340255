"""A folder shaped like the MLCommons download of the MLPerf BERT inputs, made from the tests' text corpus."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from bert.prep.official_inputs import MD5_LIST


def official_download(root: Path, corpus: Path) -> Path:
    """results4/ with the corpus's parts (named as the official ones) and eval.txt, the md5 list and vocab.txt."""
    (root / "results4").mkdir(parents=True)
    parts = sorted((corpus / "train").glob("part-*"))
    for i, part in enumerate(parts):
        shutil.copyfile(part, root / "results4" / f"part-{i:05d}-of-{len(parts):05d}")
    shutil.copyfile(corpus / "eval.txt", root / "results4" / "eval.txt")
    shutil.copyfile(corpus / "vocab.txt", root / "vocab.txt")
    lines = [f"{p.name}\t{hashlib.md5(p.read_bytes()).hexdigest()}" for p in sorted((root / "results4").iterdir())]
    (root / MD5_LIST).write_text("\n".join(lines) + "\n")
    return root
