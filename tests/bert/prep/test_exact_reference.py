"""`data prepare` (exact) and `data import` against the reference create_pretraining_data.py's own output,
stored in fixtures/ by fixtures/make_reference_fixtures.py (which runs the reference with TensorFlow)."""

import gzip
import random
import shutil

import numpy as np
import pytest

from bert.data.shards import FIXED_KEYS, read_arrays
from bert.prep.instances import Documents, SampleSpec, SpecialIds
from bert.prep.prepare import PrepareOptions, prepare
from bert.prep.py_random import Cursor, WordWindow, random_cut
from bert.prep.replay_kernel import compiled_library
from bert.prep.tfrecord import RecordError, crc32c, read_records
from bert.prep.tfrecord_import import import_tfrecords
from tests.bert.prep.fixtures.make_reference_fixtures import HERE, RUNS

REFERENCE = np.load(HERE / "reference_samples.npz")


def _prepared(tmp_path, run, **changes):
    text, length, predictions, dupe = RUNS[run]
    options = PrepareOptions(HERE / "vocab.txt", tmp_path / run, SampleSpec(length, predictions), "fixed", dupe)
    options = PrepareOptions(**{**options.__dict__, **changes})
    (result,) = prepare([HERE / text], options, 1, show_progress=False)
    return result.shard


@pytest.mark.parametrize("run", sorted(RUNS))
def test_exact_prepare_writes_the_reference_samples_in_the_reference_order(tmp_path, run):
    _, arrays = read_arrays(_prepared(tmp_path, run))
    for key in FIXED_KEYS:
        want = REFERENCE[f"{run}/{key}"]
        assert np.array_equal(arrays[key].reshape(want.shape), want), key
    assert len(arrays["input_ids"]) > 20


def test_the_python_replay_makes_the_reference_samples_too(tmp_path, monkeypatch):
    import bert.prep.exact_instances

    monkeypatch.setattr(bert.prep.exact_instances, "compiled_library", lambda: None)  # as without a compiler
    _, arrays = read_arrays(_prepared(tmp_path, "sample_text_128"))
    assert all(np.array_equal(arrays[k].reshape(REFERENCE[f"sample_text_128/{k}"].shape),
                              REFERENCE[f"sample_text_128/{k}"]) for k in FIXED_KEYS)


def test_draws_that_run_past_the_stream_window_are_replayed_exactly(tmp_path, monkeypatch):
    import bert.prep.exact_instances
    import bert.prep.py_random

    # The Python replay with a window of a few hundred words: documents and the final shuffle run past it and
    # are replayed.
    monkeypatch.setattr(bert.prep.exact_instances, "compiled_library", lambda: None)
    monkeypatch.setattr(bert.prep.py_random, "GENERATE", 300)
    monkeypatch.setattr(bert.prep.exact_instances, "MARGIN", 200)
    monkeypatch.setattr(bert.prep.exact_instances, "BLOCK", 7)
    _, arrays = read_arrays(_prepared(tmp_path, "sample_text_512"))
    assert all(np.array_equal(arrays[k].reshape(REFERENCE[f"sample_text_512/{k}"].shape),
                              REFERENCE[f"sample_text_512/{k}"]) for k in FIXED_KEYS)


def test_the_fast_sampler_is_another_dataset(tmp_path):
    _, arrays = read_arrays(_prepared(tmp_path, "sample_text_128", exact=False))
    assert not np.array_equal(arrays["masked_lm_positions"], REFERENCE["sample_text_128/masked_lm_positions"])


@pytest.fixture
def reference_records(tmp_path):
    path = tmp_path / "records" / "sample_text_128.tfrecord"
    path.parent.mkdir()
    path.write_bytes(gzip.decompress((HERE / "sample_text_128.tfrecord.gz").read_bytes()))
    return path


@pytest.mark.parametrize("form", ["fixed", "varlen"])
def test_a_reference_tfrecord_imports_to_the_shard_exact_prepare_writes(tmp_path, reference_records, form):
    vocab_size = len((HERE / "vocab.txt").read_text().splitlines())
    (imported,) = import_tfrecords([reference_records], tmp_path / "imported", form, vocab_size,
                                   show_progress=False)
    prepared = _prepared(tmp_path, "sample_text_128", form=form)
    assert imported.shard.name == "sample_text_128.hdf5" and imported.samples > 100
    assert imported.shard.read_bytes() == prepared.read_bytes()


def _record_offsets(data: bytes) -> list[int]:
    offsets, at = [], 0
    while at < len(data):
        offsets.append(at)
        at += 16 + int.from_bytes(data[at:at + 8], "little")
    return offsets


@pytest.mark.parametrize("where, message", [
    ("data", r"record 7: the data's checksum does not match"),
    ("length crc", r"record 7: the length's checksum does not match"),
    ("cut", r"record 7: truncated \(its header says \d+ bytes of data, \d+ follow\)"),
    ("cut header", r"record 7: truncated header \(5 of 12 bytes\)"),
])
def test_a_corrupt_or_truncated_record_names_the_file_and_the_record(reference_records, where, message):
    data = bytearray(reference_records.read_bytes())
    at = _record_offsets(bytes(data))[7]
    if where == "data":
        data[at + 12 + 40] ^= 0x01
    elif where == "length crc":
        data[at + 9] ^= 0x10
    else:
        data = data[:at + (5 if where == "cut header" else 100)]
    reference_records.write_bytes(bytes(data))
    with pytest.raises(RecordError, match=rf"sample_text_128\.tfrecord: {message}"):
        for _ in read_records(reference_records):
            pass


def test_crc32c_matches_the_bitwise_definition_at_every_length():
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    rng = random.Random(1)
    for length in (0, 1, 3, 4, 5, 100, 16384, 16385, 40000):
        data = bytes(rng.randrange(256) for _ in range(length))
        crc = 0xFFFFFFFF
        for byte in data:
            crc ^= byte
            for _ in range(8):
                crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
        assert crc32c(data) == crc ^ 0xFFFFFFFF, length


def test_the_word_stream_replays_python_random_call_for_call():
    reference, window = random.Random(12345), WordWindow(12345)
    window.ensure(200_000)
    cursor = Cursor(window)
    lo, hi = random_cut(0.8)  # the first word alone decides random() < 0.8 outside [lo, hi)
    for step in range(3000):
        kind = step % 6
        if kind == 0:
            word, value = window.scalar[cursor.pos], cursor.random()
            assert value == reference.random()
            assert (word >= lo or value < 0.8) and (word < hi or value >= 0.8)
        elif kind == 1:
            assert cursor.randint(0, step) == reference.randint(0, step)
        elif kind == 2:
            n = 1 << (step % 12)  # powers of two waste half their words
            assert cursor.randint(5, 5 + n - 1) == reference.randint(5, 5 + n - 1)
        elif kind == 3:
            assert cursor.randint(7, 7) == reference.randint(7, 7)  # still takes words
        elif kind == 4:
            order = list(range(step % 40))
            reference.shuffle(order)
            assert cursor.shuffled(len(order)).tolist() == order
        else:
            assert cursor.randbelow(30522) == reference.randrange(30522)


def _documents(rng: random.Random, count: int) -> Documents:
    """Documents of one to 30 sentences of 1 to 40 tokens, some of 300 (longer than a short sequence)."""
    return Documents.from_lists([[[rng.randint(5, 999)] * rng.choice([rng.randint(1, 40), 300])
                                  for _ in range(rng.randint(1, 30))] for _ in range(count)])


def test_the_compiler_builds_the_compiled_replay_where_there_is_one():
    if shutil.which("cc") is None:
        pytest.skip("no C compiler: the Python replay is the one in use")
    assert compiled_library() is not None


@pytest.mark.parametrize("seed, spec, vocab_size, block", [
    (12345, SampleSpec(128, 20), 1000, 4096),
    (7, SampleSpec(512, 76), 30522, 4096),
    (1, SampleSpec(16, 3, 0.3, 0.5), 32768, 5),  # instances cut in every block, documents cut across blocks
    (2, SampleSpec(64, 10, 0.15, 1.0), 5, 64),
])
def test_the_compiled_replay_makes_the_python_replays_instances_and_samples(monkeypatch, seed, spec, vocab_size, block):
    import bert.prep.exact_instances as exact

    if compiled_library() is None:
        pytest.skip("no C compiler: the Python replay is the one in use")
    documents, special = _documents(random.Random(seed), 40), SpecialIds(2, 3, 4, vocab_size)
    monkeypatch.setattr(exact, "COMPILED_BLOCK", block)
    shares = []
    compiled = exact.create_instances(documents, spec, special, seed, 3, shares.append)
    rows = np.random.default_rng(seed).permutation(len(compiled))[:500]
    compiled_samples = exact.build_samples(documents.tokens, compiled, rows, special, spec.max_predictions)
    monkeypatch.setattr(exact, "compiled_library", lambda: None)
    python = exact.create_instances(documents, spec, special, seed, 3)
    assert len(python) > 100 and sum(shares) == pytest.approx(1.0)
    for field in ("spans", "nsp", "mask_offsets", "mask_positions", "replacements", "order"):
        assert np.array_equal(getattr(compiled, field), getattr(python, field)), field
    python_samples = exact.build_samples(documents.tokens, python, rows, special, spec.max_predictions)
    for field in ("tokens", "segments", "offsets", "masked_positions", "masked_ids", "nsp_labels"):
        assert np.array_equal(getattr(compiled_samples, field), getattr(python_samples, field)), field
