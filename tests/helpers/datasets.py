"""The small synthetic corpus the session shares (the small_dataset fixture), copies of a dataset for a test that
changes it, and changes that its manifest cannot see."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import h5py

from bert.data.manifest import MANIFEST_FILE
from bert.data.settings import SyntheticDataSpec

SMALL_SYNTH = SyntheticDataSpec(train_samples=2048, eval_samples=256, shards=4, vocab_size=4096,
                                max_seq_length=64, max_predictions=10, seed=7)


def copy_dataset(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def edit_unseen(data: Path, edit: Callable[[h5py.File], None]) -> None:
    """Applies `edit` to every training shard of a verified dataset as a change the manifest cannot see would (a
    flipped bit on disk): each shard keeps its times, and the manifest records its new size. What is left to
    notice it is the loader's own check of every sample it reads."""
    manifest = json.loads((data / MANIFEST_FILE).read_text())
    sizes = {}
    for shard in sorted((data / "train").glob("*.hdf5")):
        times = shard.stat()
        with h5py.File(shard, "r+") as f:
            edit(f)
        os.utime(shard, ns=(times.st_atime_ns, times.st_mtime_ns))
        sizes[shard.relative_to(data).as_posix()] = shard.stat().st_size
    for entry in manifest["files"]:
        entry["size"] = sizes.get(entry["path"], entry["size"])
    (data / MANIFEST_FILE).write_text(json.dumps(manifest))
