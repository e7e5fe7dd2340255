"""WordPiece vocabularies (`vocab.txt`, one piece per line, the line number is the id)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from bert.ownership import write_text_atomically

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


class VocabError(ValueError):
    """A vocabulary file that cannot be used; the message names the file and the fix."""


@dataclass(frozen=True)
class Vocab:
    pieces: tuple[str, ...]
    path: Path | None = None

    def __len__(self) -> int:
        return len(self.pieces)

    @property
    def ids(self) -> dict[str, int]:
        return {p: i for i, p in enumerate(self.pieces)}

    def id_of(self, piece: str) -> int:
        try:
            return self.pieces.index(piece)
        except ValueError:
            where = self.path or "the vocabulary"
            raise VocabError(f"{where}: has no {piece} line; a BERT vocabulary needs "
                             f"{', '.join(SPECIAL_TOKENS)}") from None

    @property
    def pad_id(self) -> int:
        return self.id_of("[PAD]")

    @property
    def cls_id(self) -> int:
        return self.id_of("[CLS]")

    @property
    def sep_id(self) -> int:
        return self.id_of("[SEP]")

    @property
    def mask_id(self) -> int:
        return self.id_of("[MASK]")

    def check_special_tokens(self) -> None:
        for piece in SPECIAL_TOKENS:
            self.id_of(piece)
        if self.pad_id != 0:
            raise VocabError(f"{self.path}: [PAD] is on line {self.pad_id + 1}; MLPerf shards pad with id 0, "
                             "so [PAD] must be the first line")

    def write(self, path: str | os.PathLike) -> None:
        write_text_atomically(Path(path), "".join(p + "\n" for p in self.pieces))


def load_vocab(path: str | os.PathLike) -> Vocab:
    path = Path(path)
    if not path.is_file():
        raise VocabError(f"{path}: no such vocabulary file")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as e:
        raise VocabError(f"{path}: not UTF-8 text ({e})") from e
    pieces = tuple(line.strip() for line in lines if line.strip())
    if len(pieces) != len(lines):
        raise VocabError(f"{path}: has empty lines; every line must hold one word piece")
    vocab = Vocab(pieces, path)
    vocab.check_special_tokens()
    return vocab
