"""The one way the compliance commands read a file a submitter handed them (a result log, a system JSON).

A result folder may hold anything under a result's name: a FIFO (opening it waits for a writer forever), a
symlink to /dev/zero (reading it never ends) or a log of gigabytes. So a file is opened without blocking,
judged by what the open descriptor is (not by its name, which a symlink can change between a look and the
open), and read only when it is a regular file no larger than the cap; a file growing while read is cut at
the cap and refused.
"""

from __future__ import annotations

import os
from pathlib import Path

from bert.regular_files import NotRegularFile, open_regular

# A BERT result log is under 1 MiB from one rank and a few MiB when every rank of a large run writes to it (the
# largest published v4.1/v5.0 BERT log is 3.1 MB); a system JSON is a few KiB.
MAX_LOG_BYTES = 64 << 20
MAX_JSON_BYTES = 1 << 20


class UnreadableFile(OSError):
    """Why a file is not read: the message is a sentence about the file (without its path, which is the
    exception's filename) and the fix."""

    def __init__(self, path: Path, message: str):
        super().__init__(message)
        self.filename, self.message = str(path), message

    def __str__(self) -> str:
        return self.message


def read_regular_file(path: Path, limit: int) -> bytes:
    """The bytes of `path` when it is (or links to) a regular file of at most `limit` bytes; UnreadableFile
    saying why not otherwise."""
    try:
        f = open_regular(path)
    except NotRegularFile as e:
        raise UnreadableFile(path, f"{e}; a submission holds plain files only: replace it with the file itself") \
            from None
    except OSError as e:
        raise UnreadableFile(path, f"cannot be opened ({e.strerror or e})") from None
    with f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise UnreadableFile(path, f"is {size:,} bytes, over the {limit:,} bytes such a file can be; it is not "
                                 "read")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise UnreadableFile(path, f"grew past {limit:,} bytes while it was read; it is not read")
    return data
