"""A sample's fingerprint (bert.prep.sample_hashes), what `data verify` finds duplicates by."""

import numpy as np

from bert.data.shards import Samples, read_shard
from bert.prep.sample_hashes import sample_hashes
from bert.prep.shard_writer import write_shard

SHARD = "train/part-{:05d}-of-00004.hdf5"


def test_a_fingerprint_is_the_same_in_both_forms_and_changes_with_every_field(small_dataset, tmp_path):
    s = read_shard(small_dataset / SHARD.format(0))
    write_shard(tmp_path / "varlen.hdf5", s, "varlen", 64, 10)
    prints = sample_hashes(s)
    assert np.array_equal(sample_hashes(read_shard(tmp_path / "varlen.hdf5")), prints)
    assert len(np.unique(prints)) == len(s)
    row, start = 5, int(s.offsets[5])
    for change in (lambda c: c.tokens.__setitem__(start + 1, c.tokens[start + 1] + 1),
                   lambda c: c.segments.__setitem__(start + 1, 1 - c.segments[start + 1]),
                   lambda c: c.masked_positions.__setitem__((row, 0), c.masked_positions[row, 0] + 1),
                   lambda c: c.masked_ids.__setitem__((row, 0), c.masked_ids[row, 0] + 1),
                   lambda c: c.nsp_labels.__setitem__(row, 1 - c.nsp_labels[row])):
        changed = Samples.concat([s])
        change(changed)
        assert np.flatnonzero(sample_hashes(changed) != prints).tolist() == [row]
