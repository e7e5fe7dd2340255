"""A problem found in a submission, in plain words: where, what and the fix, and what it does to the verdict.

Every rule (compliance.log_rules, folder_rules, package_rules, provenance) says what it finds as a Finding naming
the file and the fix. An error fails the verdict; a warning is shown and does not. `blocks` marks input on which
the official tools crash or silently check the wrong thing (a division they do not know, a results folder without
its system JSON, a damaged log): those tools are then not run on it, and the verdict fails until the input is
fixed. Findings about one log belong to that log's row; the others are about the folder or the package.
"""

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
