"""Opening a file a user named without hanging on it or reading it without end.

A path handed to a command (a shard, a result log, a checkpoint) may name a FIFO (opening it waits for a writer
forever), a device (a symlink to /dev/zero: reading it never ends) or a socket. So a file is opened without
blocking and judged by what the open descriptor is (not by its name, which a symlink can change between a look
and the open), and refused, in a sentence naming what it is, unless it is a regular file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO


class NotRegularFile(OSError):
    """A path that names no regular file: the message says what it is (without the path, which is the
    exception's filename)."""

    def __init__(self, path: str | os.PathLike, kind: str):
        super().__init__(f"is {kind}, not a regular file")
        self.filename, self.kind = str(path), kind

    def __str__(self) -> str:
        return self.args[0]


def file_kind(mode: int) -> str:
    """What a file of `mode` (st_mode) is, in words ("a named pipe (FIFO)")."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def irregular_kind(path: str | os.PathLike) -> str | None:
    """What `path` (followed through symlinks) is when it exists and is no regular file, else None: a look by
    name, for a file that a library opens by its name (h5py)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) else file_kind(mode)


def open_regular(path: str | os.PathLike) -> BinaryIO:
    """`path` opened for reading when it is (or links to) a regular file; NotRegularFile otherwise, and the
    OSError of the open itself (no such file, no permission) as it comes."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotRegularFile(Path(path), file_kind(mode))
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")
