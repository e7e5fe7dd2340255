"""`data prepare`'s exact sampler (bert.prep.exact_instances) against the reference create_pretraining_data.py's
own output, stored in fixtures/ by fixtures/make_reference_fixtures.py (which runs the reference with TensorFlow).
The compiled replay against the Python one: test_replay_kernel.py."""

import numpy as np
import pytest

from bert.data.shards import FIXED_KEYS, read_arrays
from tests.bert.prep.fixtures.make_reference_fixtures import HERE, RUNS

REFERENCE = np.load(HERE / "reference_samples.npz")


@pytest.mark.parametrize("run", sorted(RUNS))
def test_exact_prepare_writes_the_reference_samples_in_the_reference_order(prepare_reference_run, run):
    _, arrays = read_arrays(prepare_reference_run(run))
    for key in FIXED_KEYS:
        want = REFERENCE[f"{run}/{key}"]
        assert np.array_equal(arrays[key].reshape(want.shape), want), key
    assert len(arrays["input_ids"]) > 20


def test_the_python_replay_makes_the_reference_samples_too(prepare_reference_run, monkeypatch):
    import bert.prep.exact_instances

    monkeypatch.setattr(bert.prep.exact_instances, "compiled_library", lambda: None)  # as without a compiler
    _, arrays = read_arrays(prepare_reference_run("sample_text_128"))
    assert all(np.array_equal(arrays[k].reshape(REFERENCE[f"sample_text_128/{k}"].shape),
                              REFERENCE[f"sample_text_128/{k}"]) for k in FIXED_KEYS)


def test_draws_that_run_past_the_stream_window_are_replayed_exactly(prepare_reference_run, monkeypatch):
    import bert.prep.exact_instances
    import bert.prep.py_random

    # The Python replay with a window of a few hundred words: documents and the final shuffle run past it and
    # are replayed.
    monkeypatch.setattr(bert.prep.exact_instances, "compiled_library", lambda: None)
    monkeypatch.setattr(bert.prep.py_random, "GENERATE", 300)
    monkeypatch.setattr(bert.prep.exact_instances, "MARGIN", 200)
    monkeypatch.setattr(bert.prep.exact_instances, "BLOCK", 7)
    _, arrays = read_arrays(prepare_reference_run("sample_text_512"))
    assert all(np.array_equal(arrays[k].reshape(REFERENCE[f"sample_text_512/{k}"].shape),
                              REFERENCE[f"sample_text_512/{k}"]) for k in FIXED_KEYS)


def test_the_fast_sampler_is_another_dataset(prepare_reference_run):
    _, arrays = read_arrays(prepare_reference_run("sample_text_128", exact=False))
    assert not np.array_equal(arrays["masked_lm_positions"], REFERENCE["sample_text_128/masked_lm_positions"])
