"""TFRecord files of `tf.train.Example`s, read without TensorFlow, every record's checksums verified.

A record is: the data length (uint64, little-endian), the masked CRC32C of those 8 bytes (uint32), the data,
the masked CRC32C of the data; masking rotates the CRC right by 15 bits and adds 0xa282ead8. CRC32C
(Castagnoli) is linear over GF(2), so the CRC of a message is the XOR over its bytes of a table entry chosen
by the byte's value and its distance from the end (with the initial register folded into the first four
bytes): a block of records is checked with one gather and one XOR reduction. An Example is decoded from the
protobuf wire format: Example.features (1) -> Features.feature (1, map entries of key (1) and Feature (2))
-> Feature.int64_list (3) -> Int64List.value (1, packed varints or one varint per field).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from bert.data.shards import concat_ranges

_POLY = 0x82F63B78  # CRC32C, reflected
_MASK_DELTA = 0xA282EAD8
_RECORDS_PER_BLOCK = 4096
_MAX_TABLE_ROWS = 1 << 14  # longer messages are checked a table's length at a time
_MAX_VARINT_BYTES = 10  # 64 bits, 7 a byte


class RecordError(ValueError):
    """A TFRecord file that cannot be read; the message names the file, the record and what is wrong."""


def _byte_table() -> np.ndarray:
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ _POLY, table >> 1).astype(np.uint32)
    return table


class _Crc32c:
    """rows[d][b]: the CRC register contribution of byte b followed by d bytes (zero initial register)."""

    def __init__(self):
        self.byte = _byte_table()
        self.rows = self.byte[None, :].copy()

    def _grow(self, count: int) -> None:
        count = min(max(count, 2 * len(self.rows)), _MAX_TABLE_ROWS)
        rows = [self.rows]
        last = self.rows[-1]
        for _ in range(count - len(self.rows)):
            last = (last >> 8) ^ self.byte[last & 0xFF]  # one more zero byte
            rows.append(last[None, :])
        self.rows = np.concatenate(rows)

    def _contribution(self, flat: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """XOR over each message of rows[distance to its end][byte] (all lengths >= 1 and in the table)."""
        starts = np.cumsum(lengths) - lengths
        distance = np.repeat(starts + lengths - 1, lengths) - np.arange(len(flat))
        return np.bitwise_xor.reduceat(self.rows[distance, flat], starts)

    def of_many(self, flat: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """CRC32C of consecutive messages of `flat` (uint8) with the given lengths."""
        lengths = np.asarray(lengths, dtype=np.int64)
        out = np.zeros(len(lengths), dtype=np.uint32)
        starts = np.cumsum(lengths) - lengths
        fits = (lengths >= 4) & (lengths <= _MAX_TABLE_ROWS)
        if fits.any():
            self._grow(int(lengths[fits].max()))
            sizes = lengths[fits]
            data = flat[concat_ranges(starts[fits], sizes)]
            data[((np.cumsum(sizes) - sizes)[:, None] + np.arange(4)).ravel()] ^= 0xFF  # the initial register
            out[fits] = ~self._contribution(data, lengths[fits])
        for i in np.flatnonzero(~fits):
            out[i] = self.of(flat[starts[i]:starts[i] + lengths[i]].tobytes())
        return out

    def of(self, data: bytes) -> int:
        """CRC32C of one message of any length."""
        state = 0xFFFFFFFF
        if len(data) < 4:
            for b in data:
                state = int(self.byte[(state ^ b) & 0xFF]) ^ (state >> 8)
            return state ^ 0xFFFFFFFF
        self._grow(_MAX_TABLE_ROWS)
        array = np.frombuffer(data, dtype=np.uint8)
        for first in range(0, len(array), _MAX_TABLE_ROWS):
            chunk = array[first:first + _MAX_TABLE_ROWS]
            if len(chunk) < 4:
                for b in chunk.tolist():
                    state = int(self.byte[(state ^ b) & 0xFF]) ^ (state >> 8)
                continue
            head = np.frombuffer(state.to_bytes(4, "little"), dtype=np.uint8)
            chunk = np.concatenate([chunk[:4] ^ head, chunk[4:]])  # the register, folded into the bytes
            state = int(self._contribution(chunk, np.array([len(chunk)]))[0])
        return state ^ 0xFFFFFFFF


_CRC = _Crc32c()


def masked_crc(crc: np.ndarray | int) -> np.ndarray | int:
    crc = np.asarray(crc, dtype=np.uint64)
    return ((((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF).astype(np.uint32)


def crc32c(data: bytes) -> int:
    return _CRC.of(data)


def read_records(path: Path) -> Iterator[list[bytes]]:
    """The records of a TFRecord file, a block at a time, each one's checksums verified. Raises RecordError
    naming the file and the record (counted from 0) for a truncated or corrupt record."""
    size = os.path.getsize(path)
    number = 0
    with open(path, "rb") as f:
        while f.tell() < size:
            headers, records = [], []
            while len(records) < _RECORDS_PER_BLOCK and f.tell() < size:
                header = f.read(12)
                at = number + len(records)
                if len(header) < 12:
                    raise RecordError(f"{path}: record {at}: truncated header ({len(header)} of 12 bytes); the "
                                      "file was cut short")
                length, _ = struct.unpack("<QI", header)
                if length > size - f.tell() - 4:
                    raise RecordError(f"{path}: record {at}: truncated (its header says {length} bytes of "
                                      f"data, {max(0, size - f.tell() - 4)} follow) or a corrupt length")
                data = f.read(length)
                footer = f.read(4)
                headers.append(header)
                records.append(data + footer)
            _verify(path, number, headers, records)
            number += len(records)
            yield [r[:-4] for r in records]


def _verify(path: Path, first: int, headers: list[bytes], records: list[bytes]) -> None:
    head = np.frombuffer(b"".join(headers), dtype=np.uint8).reshape(-1, 12)
    want = head[:, 8:12].copy().view("<u4").ravel()
    got = masked_crc(_CRC.of_many(head[:, :8].ravel(), np.full(len(headers), 8)))
    bad = np.flatnonzero(got != want)
    if len(bad):
        raise RecordError(f"{path}: record {first + bad[0]}: the length's checksum does not match (corrupt)")
    lengths = np.array([len(r) - 4 for r in records], dtype=np.int64)
    flat = np.frombuffer(b"".join(records), dtype=np.uint8)
    ends = np.cumsum(lengths + 4)
    want = flat[(ends - 4)[:, None] + np.arange(4)].copy().view("<u4").ravel()
    data = np.delete(flat, ((ends - 4)[:, None] + np.arange(4)).ravel())
    got = np.zeros(len(records), dtype=np.uint32)
    nonempty = lengths > 0
    got[nonempty] = masked_crc(_CRC.of_many(data, lengths[nonempty]))
    got[~nonempty] = masked_crc(crc32c(b""))
    bad = np.flatnonzero(got != want)
    if len(bad):
        raise RecordError(f"{path}: record {first + bad[0]}: the data's checksum does not match (corrupt)")


def _varint(buf: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = buf[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if byte < 0x80:
            return value, at
        shift += 7


def _fields(buf: bytes, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, start, end) of each field of a protobuf message: the payload of a
    length-delimited field, the bytes of a varint, the 4 or 8 bytes of a fixed-width value."""
    at, end = start, len(buf) if end is None else end
    while at < end:
        key, at = _varint(buf, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, value_end = _varint(buf, at)
            yield number, wire, at, value_end
            at = value_end
        elif wire == 2:
            length, at = _varint(buf, at)
            yield number, wire, at, at + length
            at += length
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            yield number, wire, at, at + width
            at += width
        else:
            raise ValueError(f"wire type {wire} is not used by tf.train.Example")
        if at > end:
            raise ValueError("a field runs past the end of its message")


def _int64_bytes(record: bytes) -> dict[str, list[bytes]]:
    """Per int64 feature of a serialised tf.train.Example, the bytes of its values: varints back to back
    (packed lists as they are, unpacked values one by one)."""
    out: dict[str, list[bytes]] = {}
    for number, wire, start, end in _fields(record):
        if number != 1 or wire != 2:  # Example.features
            continue
        for entry, entry_wire, entry_start, entry_end in _fields(record, start, end):
            if entry != 1 or entry_wire != 2:  # Features.feature (a map entry)
                continue
            key, values = None, None
            for part, part_wire, part_start, part_end in _fields(record, entry_start, entry_end):
                if part == 1 and part_wire == 2:
                    key = record[part_start:part_end].decode("utf-8")
                elif part == 2 and part_wire == 2:
                    values = _int64_list(record, part_start, part_end)
            if key is not None and values is not None:
                out[key] = values
    return out


def _int64_list(record: bytes, start: int, end: int) -> list[bytes] | None:
    for kind, wire, kind_start, kind_end in _fields(record, start, end):
        if kind == 3 and wire == 2:  # Feature.int64_list
            return [record[a:b] for field, value_wire, a, b in _fields(record, kind_start, kind_end)
                    if field == 1 and value_wire in (0, 2)]
    return None


def _decode_varints(data: np.ndarray) -> np.ndarray:
    """The varints of `data` (uint8, back to back) as int64 (two's complement, as protobuf's int64)."""
    if len(data) == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate([[True], data[:-1] < 0x80]))
    shift = 7 * (np.arange(len(data)) - np.repeat(starts, np.diff(np.append(starts, len(data)))))
    parts = (data & 0x7F).astype(np.uint64) << shift.astype(np.uint64)
    return np.add.reduceat(parts, starts).view(np.int64)


def int64_features(path: Path, first: int, records: list[bytes], keys: tuple[str, ...]
                   ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """For each key: (the values of all records, concatenated; the number of values of each record).
    Raises RecordError naming the file and the record (numbered from `first`) that is not an Example with
    those int64 features."""
    pieces: dict[str, list[bytes]] = {k: [] for k in keys}
    sizes: dict[str, list[int]] = {k: [] for k in keys}
    for i, record in enumerate(records):
        try:
            features = _int64_bytes(record)
        except (ValueError, IndexError, UnicodeDecodeError) as e:
            raise RecordError(f"{path}: record {first + i}: not a tf.train.Example ({e})") from None
        for key in keys:
            if key not in features:
                raise RecordError(f"{path}: record {first + i}: has no int64 feature {key!r}; a pre-training "
                                  f"record has {', '.join(keys)}")
            joined = b"".join(features[key])
            if joined and joined[-1] >= 0x80:
                raise RecordError(f"{path}: record {first + i}: feature {key!r} ends inside a number (corrupt)")
            pieces[key].append(joined)
            sizes[key].append(len(joined))
    out = {}
    for key in keys:
        data = np.frombuffer(b"".join(pieces[key]), dtype=np.uint8)
        ends = np.concatenate([[0], np.cumsum(np.array(data < 0x80, dtype=np.int64))])
        bounds = np.concatenate([[0], np.cumsum(sizes[key])])
        _refuse_long_varints(path, first, key, data, bounds)
        out[key] = _decode_varints(data), np.diff(ends[bounds])
    return out


def _refuse_long_varints(path: Path, first: int, key: str, data: np.ndarray, bounds: np.ndarray) -> None:
    """A varint holds at most 64 bits: 10 bytes, the last of them 0 or 1. Raises RecordError naming the file
    and the record of a longer one (which would decode to a wrong number)."""
    last = np.flatnonzero(data < 0x80)
    lengths = np.diff(last, prepend=-1)
    bad = (lengths > _MAX_VARINT_BYTES) | ((lengths == _MAX_VARINT_BYTES) & (data[last] > 1))
    if bad.any():
        record = int(np.searchsorted(bounds, last[np.argmax(bad)], side="right")) - 1
        raise RecordError(f"{path}: record {first + record}: feature {key!r} holds a number of more than 64 bits "
                          "(an over-long varint): the record is corrupt")
