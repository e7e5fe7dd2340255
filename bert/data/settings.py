"""The dataset's settings: a descriptor's run.dataset block (where the shards are, bert.data.dataset), the
synthetic corpus `mlperf-bert data synth` writes for it (bert.prep.synthetic.hdf5_corpus), and what a run needs
of its dataset (`DatasetNeeds`, which the descriptor composes from its run block)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from bert.data.balance import BalanceStrategy
from bert.mlperf_rules import REFERENCE_PREP
from bert.typed_config import ranged

MAX_SEED = 2**32 - 1  # seeds of runs and corpora: numpy's and torch's generators take any seed from 0 to this


@dataclass(frozen=True, kw_only=True)
class SyntheticDataSpec:
    """The corpus `mlperf-bert data synth` writes (see bert.prep.synthetic.hdf5_corpus)."""

    train_samples: int = ranged(1, default=65536)
    """Training samples, over all shards."""
    eval_samples: int = ranged(1, default=2000)
    """Samples of the eval file."""
    shards: int = ranged(1, default=8)
    """Training shards the samples are cut into."""
    vocab_size: int = ranged(1024, default=4096, note="the grammar's own words need that many pieces")
    """Word pieces of the vocabulary learned from the corpus's text."""
    max_seq_length: int = ranged(5, default=128, note="[CLS] A [SEP] B [SEP] with a token in each segment")
    """Tokens of the longest sequence."""
    max_predictions: int = ranged(1, default=20)
    """Masked positions of a sequence at most."""
    seed: int = ranged(0, MAX_SEED, default=REFERENCE_PREP.random_seed)
    """The seed of the text and of the sample creation (default: the reference's 12345)."""
    form: Literal["fixed", "varlen"] = "fixed"
    """The shards' form: "fixed" (padded rows, as the reference's) or "varlen" (each row cut to its length)."""


@dataclass(frozen=True, kw_only=True)
class DatasetSpec:
    dir: str
    """The dataset folder; a relative path is relative to the descriptor's root (the folder above its systems/
    folder); DATADIR (--data-dir) names another for a run."""
    train_glob: str = "train/*.hdf5"
    """The training shards, a glob below dir ("train/len-*/*.hdf5" for the shard sets of `data stratify`)."""
    eval_file: str = "eval.hdf5"
    """The eval file below dir."""
    vocab_file: str = "vocab.txt"
    """The vocabulary below dir, one word piece a line."""
    synthetic: SyntheticDataSpec | None = None
    """Set: a synthetic corpus that run_and_time.sh writes on first use."""


@dataclass(frozen=True, kw_only=True)
class DatasetNeeds:
    """What a run asks of its dataset, and the names its refusals give the user to fix."""

    root: Path  # the dataset folder, resolved: run.dataset.dir, or DATADIR (--data-dir)
    spec: DatasetSpec  # run.dataset: the files below root
    strategy: BalanceStrategy  # run.balance, which decides whether length-bin shard sets may be read
    length_bins: list[int] | None  # run.length_bins
    max_seq_length: int
    max_predictions_per_seq: int
    eval_samples: int  # run.eval.samples
    global_batch_size: int  # the training samples one step takes
    model: str  # run.model, named when its vocabulary is too small
    vocab_size: int  # the model's
    system: str  # the descriptor's name and file, named in the fix of a missing folder
    descriptor: Path
