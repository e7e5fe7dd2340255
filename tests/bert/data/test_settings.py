"""The dataset's settings (bert.data.settings): a good run.dataset block loads, with a synthetic corpus or
without; a bad value is refused with a message naming the field."""

from __future__ import annotations

import re

import pytest

from bert.data.settings import MAX_SEED, DatasetSpec, SyntheticDataSpec
from bert.typed_config import ConfigError, from_dict


def test_a_good_block_loads_with_its_defaults():
    spec = from_dict(DatasetSpec, {"dir": "data/synth", "synthetic": {"shards": 2, "form": "varlen"}},
                     "sys.json", "run.dataset")
    assert (spec.dir, spec.train_glob, spec.eval_file, spec.vocab_file) == (
        "data/synth", "train/*.hdf5", "eval.hdf5", "vocab.txt")
    assert spec.synthetic == SyntheticDataSpec(shards=2, form="varlen") and spec.synthetic.seed == 12345
    assert from_dict(DatasetSpec, {"dir": "/data"}, "sys.json", "run.dataset").synthetic is None


@pytest.mark.parametrize("block, message", [
    ({}, "run.dataset.dir: missing"),
    ({"dir": "d", "eval": "eval.hdf5"}, "run.dataset.eval: unknown field; did you mean 'eval_file'?"),
    ({"dir": "d", "synthetic": {"vocab_size": 512}}, "run.dataset.synthetic.vocab_size: "),
    ({"dir": "d", "synthetic": {"max_seq_length": 4}}, "run.dataset.synthetic.max_seq_length: "),
    ({"dir": "d", "synthetic": {"seed": MAX_SEED + 1}}, "run.dataset.synthetic.seed: "),
    ({"dir": "d", "synthetic": {"form": "packed"}}, "run.dataset.synthetic.form: expected one of 'fixed', 'varlen'"),
])
def test_a_bad_value_is_refused_naming_the_field(block, message):
    with pytest.raises(ConfigError, match=f"^sys.json: {re.escape(message)}"):
        from_dict(DatasetSpec, block, "sys.json", "run.dataset")
