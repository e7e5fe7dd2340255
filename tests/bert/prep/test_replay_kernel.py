"""The compiled replay (bert.prep.replay_kernel, replay_kernel.c) against the Python replay of
bert.prep.exact_instances that defines it."""

import random
import shutil

import numpy as np
import pytest

from bert.prep.instances import Documents, SampleSpec, SpecialIds
from bert.prep.replay_kernel import compiled_library


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
