"""A probabilistic grammar that writes a synthetic language for developing BERT pre-training on a CPU.

The language is built so that masked-LM accuracy measures learning, not memorisation of frequencies:
- words are spelled in 1-3 word pieces (`kalo ##mi ##re`), as WordPiece splits real text, so a masked piece
  is often given away by its neighbours, but only to a model that learnt the spellings;
- nouns belong to one of several noun classes and have a grammatical number; the determiner agrees with the
  class, plural nouns take ##s, and the verb agrees with its subject's number and the document's tense;
- each noun has a companion adjective (placed after it) and a preferred preposition, each verb prefers some
  objects and an adverb, and a document keeps one tense and one topic whose nouns and verbs recur;
- a topic has a small lexicon, word choice inside it is Zipf-distributed, and 5% of nouns and verbs come
  from the whole (large) lexicon, so most pieces are rare and a few hundred are common, as in real text.
No piece is frequent enough to be a good blind guess (the most frequent masked piece is well under 25%).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field

from bert.data.vocab import SPECIAL_TOKENS, Vocab

CONSONANTS = "bdfghklmnprstvz"
VOWELS = "aeiou"
PUNCTUATION = (".", ",", ";")
PREPOSITIONS = ("in", "on", "with", "from", "under", "near", "over", "beside", "through", "about")
CONJUNCTIONS = ("and", "but", "while", "because")
AUXILIARIES = {("present", False): "is", ("present", True): "are", ("past", False): "was", ("past", True): "were"}
INFLECTIONS = ("##s", "##ed", "##ing", "##es")
NUM_NOUN_CLASSES = 6
NOUNS_PER_TOPIC, VERBS_PER_TOPIC = 16, 8
TENSES = ("present", "past", "progressive_present", "progressive_past")


@dataclass
class Lexicon:
    vocab: Vocab
    ids: dict[str, int]
    nouns: list[tuple[int, ...]]  # each noun spelled as piece ids
    verbs: list[tuple[int, ...]]
    adjectives: list[tuple[int, ...]]
    adverbs: list[tuple[int, ...]]
    noun_class: list[int]
    noun_plural: list[bool]
    companion_adjective: list[int]  # per noun, an adjective index
    preferred_preposition: list[int]  # per noun, an id
    verb_objects: list[tuple[int, ...]]  # per verb, preferred noun indices
    verb_adverb: list[int]  # per verb, an adverb index
    determiners: list[int]  # per noun class, an id
    topics: list[tuple[list[int], list[int]]] = field(default_factory=list)  # (noun, verb) indices


def _syllables(rng: random.Random) -> list[str]:
    sylls = [c + v for c in CONSONANTS for v in VOWELS] + [c + v + e for c in CONSONANTS for v in VOWELS
                                                           for e in "lnrst"]
    rng.shuffle(sylls)
    return sylls


def build_lexicon(vocab_size: int, seed: int = 0, num_topics: int = 12) -> Lexicon:
    """A vocabulary of exactly `vocab_size` pieces and the words and collocations over it."""
    rng = random.Random(seed)
    sylls = _syllables(rng)
    fixed = [*SPECIAL_TOKENS, *PUNCTUATION, *PREPOSITIONS, *CONJUNCTIONS, *AUXILIARIES.values(), *INFLECTIONS]
    determiners = sylls[:NUM_NOUN_CLASSES]
    # Continuation pieces are common enough that a following piece mostly gives away the word it ends.
    num_continuations = vocab_size // 3
    num_initial = vocab_size - len(fixed) - len(determiners) - num_continuations
    if num_initial < 400:
        raise ValueError(f"vocab_size {vocab_size} is too small for the grammar; use at least 1024")
    rest = sylls[NUM_NOUN_CLASSES:]
    pairs = [a + b for a in rest for b in rest if a + b not in fixed]
    rng.shuffle(pairs)
    continuations = ["##" + p for p in pairs[:num_continuations]]
    initials = pairs[num_continuations: num_continuations + num_initial]
    pieces = tuple(fixed + determiners + continuations + initials)
    ids = {p: i for i, p in enumerate(pieces)}

    def spell(initial: str) -> tuple[int, ...]:
        extra = rng.choices((0, 1, 2), weights=(0.1, 0.6, 0.3))[0]
        return (ids[initial], *(ids[c] for c in rng.sample(continuations, extra)))

    words = [spell(w) for w in initials]
    n = len(words)
    nouns, verbs = words[: n * 50 // 100], words[n * 50 // 100: n * 75 // 100]
    adjectives, adverbs = words[n * 75 // 100: n * 92 // 100], words[n * 92 // 100:]
    lex = Lexicon(
        vocab=Vocab(pieces), ids=ids, nouns=nouns, verbs=verbs, adjectives=adjectives, adverbs=adverbs,
        noun_class=[rng.randrange(NUM_NOUN_CLASSES) for _ in nouns],
        noun_plural=[rng.random() < 0.3 for _ in nouns],
        companion_adjective=[rng.randrange(len(adjectives)) for _ in nouns],
        preferred_preposition=[ids[rng.choice(PREPOSITIONS)] for _ in nouns],
        verb_objects=[tuple(rng.sample(range(len(nouns)), 3)) for _ in verbs],
        verb_adverb=[rng.randrange(len(adverbs)) for _ in verbs],
        determiners=[ids[d] for d in determiners],
    )
    # Topics use a small common lexicon; the rest of the words are rare (see DocumentWriter.RARE).
    noun_order, verb_order = list(range(len(nouns))), list(range(len(verbs)))
    rng.shuffle(noun_order)
    rng.shuffle(verb_order)
    for t in range(num_topics):
        topic_nouns = noun_order[t * NOUNS_PER_TOPIC: (t + 1) * NOUNS_PER_TOPIC]
        lex.topics.append((topic_nouns, verb_order[t * VERBS_PER_TOPIC: (t + 1) * VERBS_PER_TOPIC]))
        for v in lex.topics[-1][1]:
            lex.verb_objects[v] = tuple(rng.sample(topic_nouns, 3))
    return lex


def _zipf_weights(n: int) -> list[float]:
    return list(itertools.accumulate(1.0 / (r + 1) for r in range(n)))


class DocumentWriter:
    """Writes documents (lists of sentences of piece ids) from a Lexicon; one instance per random stream."""

    RARE = 0.05  # share of nouns and verbs drawn from the whole lexicon instead of the document's topic

    def __init__(self, lexicon: Lexicon, rng: random.Random, mean_sentences: float = 8.0):
        self.lex, self.rng = lexicon, rng
        self.stop_prob = 1.0 / mean_sentences
        self._topic_cum = _zipf_weights(len(lexicon.topics))
        self._cum: dict[int, list[float]] = {}
        ids = lexicon.ids
        self.period, self.comma = ids["."], ids[","]
        self.conjunctions = [ids[c] for c in CONJUNCTIONS]
        self.aux = {k: ids[v] for k, v in AUXILIARIES.items()}
        self.plural_s, self.past, self.progressive, self.third_person = (ids[i] for i in INFLECTIONS)

    def _pick(self, items: list[int]) -> int:
        cum = self._cum.get(len(items))
        if cum is None:
            cum = self._cum[len(items)] = _zipf_weights(len(items))
        return self.rng.choices(items, cum_weights=cum)[0]

    def document(self) -> list[list[int]]:
        rng = self.rng
        topic_nouns, topic_verbs = rng.choices(self.lex.topics, cum_weights=self._topic_cum)[0]
        entities = [self._pick(topic_nouns) for _ in range(3)]
        tense = rng.choice(TENSES)
        sentences = [self.sentence(topic_nouns, topic_verbs, entities, tense)]
        while rng.random() > self.stop_prob:
            sentences.append(self.sentence(topic_nouns, topic_verbs, entities, tense))
        return sentences

    def sentence(self, nouns: list[int], verbs: list[int], entities: list[int], tense: str) -> list[int]:
        rng, out = self.rng, []
        form = rng.random()
        if form < 0.15:
            noun = self._noun(nouns, entities)
            out.append(self.lex.preferred_preposition[noun])
            self._noun_phrase(out, noun, nested=True, nouns=nouns, entities=entities)
            out.append(self.comma)
        self._clause(out, nouns, verbs, entities, tense)
        if form > 0.85:
            out.append(rng.choice(self.conjunctions))
            self._clause(out, nouns, verbs, entities, tense)
        out.append(self.period)
        return out

    def _noun(self, nouns: list[int], entities: list[int]) -> int:
        draw = self.rng.random()
        if draw < self.RARE:
            return self.rng.randrange(len(self.lex.nouns))
        return self.rng.choice(entities) if draw < 0.45 else self._pick(nouns)

    def _noun_phrase(self, out: list[int], noun: int, nested: bool, nouns: list[int], entities: list[int]):
        rng, lex = self.rng, self.lex
        out.append(lex.determiners[lex.noun_class[noun]])
        out.extend(lex.nouns[noun])
        if lex.noun_plural[noun]:
            out.append(self.plural_s)
        if rng.random() < 0.5:
            adjective = lex.companion_adjective[noun] if rng.random() < 0.85 else rng.randrange(
                len(lex.adjectives))
            out.extend(lex.adjectives[adjective])
        if not nested and rng.random() < 0.25:
            out.append(lex.preferred_preposition[noun])
            self._noun_phrase(out, self._noun(nouns, entities), nested=True, nouns=nouns, entities=entities)

    def _clause(self, out: list[int], nouns: list[int], verbs: list[int], entities: list[int], tense: str):
        rng, lex = self.rng, self.lex
        subject = self._noun(nouns, entities)
        plural = lex.noun_plural[subject]
        self._noun_phrase(out, subject, nested=False, nouns=nouns, entities=entities)
        verb = self.rng.randrange(len(lex.verbs)) if rng.random() < self.RARE else self._pick(verbs)
        if tense.startswith("progressive"):
            out.append(self.aux[(tense.split("_")[1], plural)])
            out.extend(lex.verbs[verb])
            out.append(self.progressive)
        else:
            out.extend(lex.verbs[verb])
            if tense == "past":
                out.append(self.past)
            elif not plural:
                out.append(self.third_person)
        objects = lex.verb_objects[verb]
        obj = rng.choice(objects) if rng.random() < 0.6 else self._noun(nouns, entities)
        self._noun_phrase(out, obj, nested=False, nouns=nouns, entities=entities)
        if rng.random() < 0.3:
            out.extend(lex.adverbs[lex.verb_adverb[verb]])
