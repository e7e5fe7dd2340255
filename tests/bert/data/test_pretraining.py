import random

import numpy as np

from bert.data.pretraining import SampleSpec, SpecialIds, instances_from_document, mask_tokens, truncate_pair

SPECIAL = SpecialIds(cls=2, sep=3, mask=4, vocab_size=1000)


def _documents(n: int, rng: random.Random) -> list[list[list[int]]]:
    return [[[rng.randint(10, 999) for _ in range(rng.randint(4, 15))] for _ in range(rng.randint(1, 12))]
            for _ in range(n)]


def test_masking_counts_and_the_80_10_10_split():
    rng = random.Random(0)
    spec = SampleSpec(max_seq_length=128, max_predictions=20)
    kinds = {"mask": 0, "same": 0, "random": 0}
    for _ in range(3000):
        tokens = [SPECIAL.cls, *[rng.randint(10, 999) for _ in range(rng.randint(3, 120))], SPECIAL.sep]
        out, positions, labels = mask_tokens(tokens, spec, SPECIAL, rng)
        assert len(positions) == min(20, max(1, round(len(tokens) * 0.15)))
        assert positions == sorted(positions) and 0 not in positions and len(tokens) - 1 not in positions
        assert labels == [tokens[p] for p in positions]
        for p in positions:
            kinds["mask" if out[p] == SPECIAL.mask else "same" if out[p] == tokens[p] else "random"] += 1
        untouched = set(range(len(tokens))) - set(positions)
        assert all(out[i] == tokens[i] for i in untouched)
    total = sum(kinds.values())
    assert abs(kinds["mask"] / total - 0.8) < 0.02
    assert abs(kinds["same"] / total - 0.1) < 0.02  # includes random draws that hit the same id
    assert abs(kinds["random"] / total - 0.1) < 0.02


def test_truncation_keeps_the_pair_within_the_limit():
    rng = random.Random(1)
    a, b = list(range(50)), list(range(100, 110))
    truncate_pair(a, b, 30, rng)
    assert len(a) + len(b) == 30 and len(b) == 10  # only the longer segment lost tokens
    assert a == list(range(a[0], a[0] + len(a)))  # cut at the ends, never in the middle


def test_instances_have_the_reference_layout_and_balanced_nsp():
    rng = random.Random(2)
    docs = _documents(200, rng)
    spec = SampleSpec(max_seq_length=64, max_predictions=10)
    instances = [x for i in range(len(docs)) for x in instances_from_document(docs, i, spec, SPECIAL, rng)]
    assert len(instances) > 300
    for x in instances:
        assert len(x.tokens) <= 64 and x.tokens[0] == SPECIAL.cls and x.tokens[-1] == SPECIAL.sep
        seps = [i for i, t in enumerate(x.tokens) if t == SPECIAL.sep]
        first_b = x.segment_ids.index(1)
        assert seps[0] == first_b - 1 and set(x.segment_ids[:first_b]) == {0}
        assert set(x.segment_ids[first_b:]) == {1}
    random_next = np.mean([x.is_random_next for x in instances])
    assert 0.4 < random_next < 0.65  # single-sentence chunks always take a random next sentence
