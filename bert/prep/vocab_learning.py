"""`mlperf-bert data vocab`: learn an uncased WordPiece vocab.txt from text with the `tokenizers` library.

The normaliser and pre-tokeniser are the library's BERT ones (clean the text, split Chinese characters,
strip accents, lowercase, split on whitespace and punctuation); tokenising for the dataset itself is done by
`bert.prep.tokenizer`, which follows the reference tokenizer exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

from bert.data.vocab import SPECIAL_TOKENS, Vocab, VocabError
from bert.prep.text_parts import read_lines

MAX_WORD_CHARS = 200  # a longer word is [UNK] (the reference tokenizer's limit)


def _bert_pipeline(model: models.Model) -> Tokenizer:
    tokenizer = Tokenizer(model)
    tokenizer.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                      strip_accents=True, lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return tokenizer


def train_vocab(paths: list[Path], size: int, min_frequency: int = 2, show_progress: bool = True) -> Vocab:
    """Learns an uncased WordPiece vocabulary of at most `size` pieces ([PAD] first, then the other
    special tokens) from the sentences of the text parts. The same text always gives the same vocabulary."""
    if size < 100:
        raise VocabError(f"--size {size} is too small; a WordPiece vocabulary needs at least 100 pieces "
                         "(the reference uses 30522)")
    tokenizer = _bert_pipeline(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=MAX_WORD_CHARS))
    # The trainer numbers `##` pieces in hash-map order, and that order breaks ties between equally frequent
    # merges, so two runs could differ (huggingface/tokenizers#1794). Naming every `##` piece up front, in
    # sorted order, makes the result depend on the text alone.
    continuations = [f"##{c}" for c in sorted(_continuation_chars(tokenizer, paths))]
    trainer = trainers.WordPieceTrainer(vocab_size=max(size, len(SPECIAL_TOKENS) + len(continuations)),
                                        min_frequency=min_frequency,
                                        special_tokens=[*SPECIAL_TOKENS, *continuations],
                                        continuing_subword_prefix="##", show_progress=show_progress)
    tokenizer.train_from_iterator(_sentences(paths), trainer=trainer)
    by_id = sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])
    vocab = Vocab(tuple(piece for piece, _ in by_id))
    vocab.check_special_tokens()
    return vocab


def _continuation_chars(tokenizer: Tokenizer, paths: list[Path]) -> set[str]:
    """Every character that appears inside a word (not first), after normalisation."""
    chars: set[str] = set()
    normalize, split = tokenizer.normalizer.normalize_str, tokenizer.pre_tokenizer.pre_tokenize_str
    for sentence in _sentences(paths):
        for word, _ in split(normalize(sentence)):
            chars.update(word[1:])
    return chars


def _sentences(paths: Iterable[Path]) -> Iterator[str]:
    for path in paths:
        empty = True
        for _, line in read_lines(path):
            if line:
                empty = False
                yield line
        if empty:
            raise VocabError(f"{path}: line 1: empty part (no sentences); remove it or fill it")
