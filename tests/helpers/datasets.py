"""The small synthetic corpus the session shares (the small_dataset fixture), and copies of a dataset for a
test that changes it."""

from __future__ import annotations

import shutil
from pathlib import Path

from bert.system import SyntheticDataSpec

SMALL_SYNTH = SyntheticDataSpec(train_samples=2048, eval_samples=256, shards=4, vocab_size=4096,
                                max_seq_length=64, max_predictions=10, seed=7)


def copy_dataset(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst
