"""The one way the compliance commands read a file a submitter handed them (a result log, a system JSON).

A result folder may hold anything under a result's name: a FIFO (opening it waits for a writer forever), a
symlink to /dev/zero (reading it never ends) or a log of gigabytes. So a file is opened without blocking,
judged by what the open descriptor is (not by its name, which a symlink can change between a look and the
open), and read only when it is a regular file no larger than the cap; a file growing while read is cut at
the cap and refused. JSON read from such a file (`read_json`) is parsed without letting a hostile value end in a
traceback: a document nested deeper than the parser recurses, or an integer of thousands of digits (Python refuses
to convert more than 4,300), is refused in one sentence, and integers too long for a float become infinities, which
the rules that read them refuse as no measurement.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from bert.regular_files import NotRegularFile, open_regular

# A BERT result log is under 1 MiB from one rank and a few MiB when every rank of a large run writes to it (the
# largest published v4.1/v5.0 BERT log is 3.1 MB); a system JSON is a few KiB.
MAX_LOG_BYTES = 64 << 20
MAX_JSON_BYTES = 1 << 20
# Integers of more digits are read as floats: a float holds up to about 308 digits, so a longer one becomes an
# infinity (which no rule takes as a time, an accuracy or a count), and no number ever reaches int()'s limit.
MAX_INT_DIGITS = 300


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


def _parse_int(text: str) -> int | float:
    digits = len(text.lstrip("-"))
    return int(text) if digits <= MAX_INT_DIGITS else float(text)


def parse_json(text: str | bytes) -> Any:
    """`text` as JSON, with integers too long for a float read as infinities; ValueError saying what is wrong
    (not JSON, or nested deeper than the parser recurses) otherwise."""
    try:
        return json.loads(text, parse_int=_parse_int)
    except json.JSONDecodeError as e:
        raise ValueError(f"not valid JSON: {e.msg}, line {e.lineno} column {e.colno}") from None
    except RecursionError:  # the parser recurses once per level of objects and lists
        raise ValueError("nested deeper than a JSON parser follows (objects or lists inside each other a thousand "
                         "levels and more)") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"not UTF-8 text ({e.reason} at byte {e.start})") from None


def read_json(path: Path, limit: int = MAX_JSON_BYTES) -> Any:
    """The JSON document of the file at `path` (read as read_regular_file reads it); UnreadableFile saying why
    not, in a sentence, for a file that cannot be read or parsed (parse_json)."""
    data = read_regular_file(path, limit)
    try:
        return parse_json(data)
    except ValueError as e:
        raise UnreadableFile(path, str(e)) from None
