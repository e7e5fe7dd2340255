"""What both samplers share (bert.prep.instances): the sample shape and its checks, documents as flat arrays,
and the assembly of [CLS] A [SEP] B [SEP]."""

import numpy as np
import pytest

from bert.prep.instances import Documents, SampleSpec, SpecialIds, assemble_pairs


def test_documents_drop_empty_sentences_and_documents():
    docs = Documents.from_lists([[[5, 6], []], [[]], [[7], [8, 9]]])
    assert docs.tokens.tolist() == [5, 6, 7, 8, 9]
    assert docs.sentence_offsets.tolist() == [0, 2, 3, 5] and docs.document_offsets.tolist() == [0, 1, 3]


def test_the_masked_count_is_the_references_rounded_share_within_its_bounds():
    spec = SampleSpec(max_seq_length=128, max_predictions=20)
    # 15% rounded half to even (9 * 0.15 = 1.35 -> 1, 30 * 0.15 = 4.5 -> 4), at least 1, at most 20 and the
    # candidates (all tokens but [CLS] and the two [SEP]).
    assert spec.masked_count(np.array([3, 4, 9, 30, 50, 128, 200])).tolist() == [0, 1, 1, 4, 8, 19, 20]


@pytest.mark.parametrize("changes, message", [
    ({"max_seq_length": 4}, r"max_seq_length 4 is too short"),
    ({"max_predictions": 0}, r"max_predictions 0 must be at least 1"),
    ({"masked_lm_prob": 1.0}, r"masked_lm_prob 1.0 must be between 0 and 1"),
    ({"short_seq_prob": -0.1}, r"short_seq_prob -0.1 must be between 0 and 1"),
])
def test_a_sample_shape_out_of_range_is_refused_naming_the_option(changes, message):
    SampleSpec().check()  # the reference's flags
    with pytest.raises(ValueError, match=message):
        SampleSpec(**changes).check()


def test_pairs_are_assembled_as_cls_a_sep_b_sep_with_their_segments():
    tokens = np.array([10, 11, 12, 13, 14, 15], dtype=np.int32)
    special = SpecialIds(cls=2, sep=3, mask=4, vocab_size=100)
    assembled, segments, offsets = assemble_pairs(tokens, np.array([0, 4]), np.array([2, 1]), np.array([3, 0]),
                                                  np.array([3, 2]), special)
    assert assembled.tolist() == [2, 10, 11, 3, 13, 14, 15, 3, 2, 14, 3, 10, 11, 3]
    assert segments.tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1]
    assert offsets.tolist() == [0, 8, 14]
