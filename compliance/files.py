"""The one way the compliance commands read a file a submitter handed them (a result log, a system JSON).

A result folder may hold anything under a result's name: a FIFO (opening it waits for a writer forever), a
symlink to /dev/zero (reading it never ends) or a log of gigabytes. So a file is opened without blocking,
judged by what the open descriptor is (not by its name, which a symlink can change between a look and the
open), and read only when it is a regular file no larger than the cap; a file growing while read is cut at
the cap and refused.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

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


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_regular_file(path: Path, limit: int) -> bytes:
    """The bytes of `path` when it is (or links to) a regular file of at most `limit` bytes; UnreadableFile
    saying why not otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise UnreadableFile(path, f"cannot be opened ({e.strerror or e})") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        mode, size = info.st_mode, info.st_size
        if not stat.S_ISREG(mode):
            raise UnreadableFile(path, f"is {_kind(mode)}, not a regular file; a submission holds plain files "
                                 "only: replace it with the file itself")
        if size > limit:
            raise UnreadableFile(path, f"is {size:,} bytes, over the {limit:,} bytes such a file can be; it is not "
                                 "read")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise UnreadableFile(path, f"grew past {limit:,} bytes while it was read; it is not read")
    return data
