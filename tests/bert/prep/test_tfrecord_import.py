"""`data import` (bert.prep.tfrecord_import) of the reference's own TFRecord output (fixtures/, made by
fixtures/make_reference_fixtures.py): the shard `data prepare` writes in the reference's exact order.
Values that do not fit a shard: tests/faults/test_exact_imports.py."""

import pytest

from bert.prep.tfrecord_import import import_tfrecords
from tests.bert.prep.fixtures.make_reference_fixtures import HERE


@pytest.mark.parametrize("form", ["fixed", "varlen"])
def test_a_reference_tfrecord_imports_to_the_shard_exact_prepare_writes(tmp_path, reference_records,
                                                                      prepare_reference_run, form):
    vocab_size = len((HERE / "vocab.txt").read_text().splitlines())
    (imported,) = import_tfrecords([reference_records], tmp_path / "imported", form, vocab_size,
                                   show_progress=False)
    prepared = prepare_reference_run("sample_text_128", form=form)
    assert imported.shard.name == "sample_text_128.hdf5" and imported.samples > 100
    assert imported.shard.read_bytes() == prepared.read_bytes()
