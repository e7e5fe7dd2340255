"""The synthetic language (bert.prep.synthetic.grammar): its lexicon over a vocabulary of the size asked for, and
documents written from it."""

import random

import pytest

from bert.prep.synthetic.grammar import NUM_NOUN_CLASSES, DocumentWriter, build_lexicon


def test_the_lexicon_fills_the_vocabulary_exactly_and_is_reproducible():
    lexicon = build_lexicon(1024, seed=7)
    pieces = lexicon.vocab.pieces
    assert len(pieces) == 1024 and len(set(pieces)) == 1024
    assert pieces[:5] == ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
    assert all(pieces[word[0]][:2] != "##" and all(pieces[p].startswith("##") for p in word[1:])
               for word in lexicon.nouns + lexicon.verbs)  # a word: an initial piece, then continuations
    assert len(lexicon.determiners) == NUM_NOUN_CLASSES and lexicon.topics
    assert build_lexicon(1024, seed=7).vocab.pieces == pieces and build_lexicon(1024, seed=8).vocab.pieces != pieces


def test_a_vocabulary_too_small_for_the_grammar_is_refused():
    with pytest.raises(ValueError, match="vocab_size 600 is too small for the grammar; use at least 1024"):
        build_lexicon(600)


def test_documents_are_sentences_of_the_lexicons_pieces_ending_in_a_period():
    lexicon = build_lexicon(1024, seed=1)
    documents = [DocumentWriter(lexicon, random.Random(3)).document() for _ in range(2)]
    assert documents[0] == documents[1]  # one stream, one document
    period = lexicon.ids["."]
    sentences = [s for d in (DocumentWriter(lexicon, random.Random(4)).document() for _ in range(20)) for s in d]
    assert len(sentences) > 20 and all(s[-1] == period and period not in s[:-1] for s in sentences)
    assert all(0 <= p < len(lexicon.vocab.pieces) for s in sentences for p in s)
