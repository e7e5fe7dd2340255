import random

import numpy as np

from bert.prep.fast_instances import build_samples, plan_instances, truncated_lengths
from bert.prep.instances import Documents, SampleSpec, SpecialIds

SPECIAL = SpecialIds(cls=2, sep=3, mask=4, vocab_size=1000)


def _documents(n: int, rng: random.Random) -> Documents:
    return Documents.from_lists([[[rng.randint(10, 999) for _ in range(rng.randint(4, 15))]
                                  for _ in range(rng.randint(1, 12))] for _ in range(n)])


def _samples(spec: SampleSpec, seed: int = 0, documents: int = 300):
    docs = _documents(documents, random.Random(seed))
    plans = plan_instances(docs, spec, random.Random(seed))
    return docs, plans, build_samples(docs.tokens, plans, spec, SPECIAL, np.random.default_rng(seed))


def _reference_truncation(a: int, b: int, max_tokens: int) -> tuple[int, int]:
    """The reference loop, one token at a time from the longer segment (B on a tie)."""
    while a + b > max_tokens:
        if a > b:
            a -= 1
        else:
            b -= 1
    return a, b


def test_truncation_leaves_the_reference_lengths():
    a, b = np.meshgrid(np.arange(1, 60), np.arange(1, 60))
    a, b = a.ravel(), b.ravel()
    for max_tokens in (2, 7, 30, 61, 200):
        got_a, got_b = truncated_lengths(a, b, max_tokens)
        want = [_reference_truncation(x, y, max_tokens) for x, y in zip(a.tolist(), b.tolist())]
        assert list(zip(got_a.tolist(), got_b.tolist())) == want


def test_masking_counts_positions_and_the_80_10_10_split():
    spec = SampleSpec(max_seq_length=128, max_predictions=20)
    docs, plans, s = _samples(spec, documents=1000)
    # The same seed draws the same truncation, so this is the same text with one masked position per sample.
    originals = build_samples(docs.tokens, plans, SampleSpec(128, 20, masked_lm_prob=1e-9), SPECIAL,
                              np.random.default_rng(0))
    kinds = {"mask": 0, "same": 0, "random": 0}
    for i in range(len(s)):
        row = s.tokens[s.offsets[i]: s.offsets[i + 1]]
        seg = s.segments[s.offsets[i]: s.offsets[i + 1]]
        original = originals.tokens[originals.offsets[i]: originals.offsets[i + 1]].copy()
        original[originals.masked_positions[i, 0]] = originals.masked_ids[i, 0]
        count = int((s.masked_positions[i] > 0).sum())
        assert count == min(20, max(1, round(len(row) * 0.15)), len(row) - 3)
        positions = s.masked_positions[i, :count]
        specials = {0, int(np.argmax(seg)) - 1, len(row) - 1}  # [CLS] and the two [SEP]s
        assert list(positions) == sorted(set(positions.tolist())) and not specials & set(positions.tolist())
        assert (s.masked_ids[i, :count] == original[positions]).all() and (s.masked_ids[i, count:] == 0).all()
        untouched = np.setdiff1d(np.arange(len(row)), positions)
        assert (row[untouched] == original[untouched]).all()
        for p in positions:
            kinds["mask" if row[p] == SPECIAL.mask else "same" if row[p] == original[p] else "random"] += 1
    total = sum(kinds.values())
    assert total > 15000
    assert abs(kinds["mask"] / total - 0.8) < 0.02
    assert abs(kinds["same"] / total - 0.1) < 0.02  # includes random draws that hit the same id
    assert abs(kinds["random"] / total - 0.1) < 0.02


def test_fifteen_percent_of_the_non_special_tokens_are_selected():
    _, _, s = _samples(SampleSpec(max_seq_length=128, max_predictions=20), documents=600)
    selected = (s.masked_positions > 0).sum()
    assert abs(selected / (len(s.tokens) - 3 * len(s)) - 0.15) < 0.01


def test_layout_and_balanced_next_sentence_labels():
    _, plans, s = _samples(SampleSpec(max_seq_length=64, max_predictions=10))
    assert len(s) > 300 and s.lengths.max() <= 64
    for i in range(len(s)):
        row = s.tokens[s.offsets[i]: s.offsets[i + 1]]
        seg = s.segments[s.offsets[i]: s.offsets[i + 1]]
        first_b = int(np.argmax(seg))
        assert first_b >= 2 and (seg[:first_b] == 0).all() and (seg[first_b:] == 1).all()
        assert row[0] == SPECIAL.cls and row[first_b - 1] == SPECIAL.sep and row[-1] == SPECIAL.sep
    assert 0.4 < s.nsp_labels.mean() < 0.65  # single-sentence chunks always take a random next sentence
    assert (s.nsp_labels == plans[:, 4]).all()


def test_one_pass_covers_every_sentence_once_and_random_next_comes_from_another_document():
    docs = _documents(200, random.Random(3))
    plans = plan_instances(docs, SampleSpec(max_seq_length=64), random.Random(3))
    covered = np.zeros(len(docs.tokens), dtype=int)
    for a0, a1, b0, b1, random_next in plans.tolist():
        covered[a0:a1] += 1
        if not random_next:
            assert b0 == a1  # B continues A in the same document
            covered[b0:b1] += 1
        else:
            token_doc = np.searchsorted(docs.sentence_offsets[docs.document_offsets], [a0, b0], side="right")
            assert token_doc[0] != token_doc[1]
    assert (covered == 1).all()
    twice = plan_instances(docs, SampleSpec(max_seq_length=64), random.Random(3), dupe_factor=2)
    assert len(twice) > len(plans) * 1.5


def test_same_seed_same_samples_other_seed_differs():
    spec = SampleSpec(max_seq_length=64, max_predictions=10)
    _, _, a = _samples(spec, seed=5)
    _, _, b = _samples(spec, seed=5)
    docs, plans, _ = _samples(spec, seed=5)
    c = build_samples(docs.tokens, plans, spec, SPECIAL, np.random.default_rng(6))
    assert np.array_equal(a.tokens, b.tokens) and np.array_equal(a.masked_positions, b.masked_positions)
    assert not np.array_equal(a.masked_positions, c.masked_positions)
