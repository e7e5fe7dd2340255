"""A problem found in a submission, in plain words: where, what and the fix, and what it does to the verdict."""

from __future__ import annotations

from dataclasses import dataclass

ERROR, WARNING = "error", "warning"


@dataclass(frozen=True)
class Finding:
    where: str
    message: str
    level: str = ERROR  # an error fails the verdict; a warning is shown and does not
    blocks: bool = False  # the official tools are not run on this input

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"
