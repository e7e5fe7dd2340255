"""The TFRecord reader (bert.prep.tfrecord): its checksum, and a damaged file named down to the record."""

import random

import pytest

from bert.prep.tfrecord import RecordError, crc32c, read_records


def _record_offsets(data: bytes) -> list[int]:
    offsets, at = [], 0
    while at < len(data):
        offsets.append(at)
        at += 16 + int.from_bytes(data[at:at + 8], "little")
    return offsets


@pytest.mark.parametrize("where, message", [
    ("data", r"record 7: the data's checksum does not match"),
    ("length crc", r"record 7: the length's checksum does not match"),
    ("cut", r"record 7: truncated \(its header says \d+ bytes of data, \d+ follow\)"),
    ("cut header", r"record 7: truncated header \(5 of 12 bytes\)"),
])
def test_a_corrupt_or_truncated_record_names_the_file_and_the_record(reference_records, where, message):
    data = bytearray(reference_records.read_bytes())
    at = _record_offsets(bytes(data))[7]
    if where == "data":
        data[at + 12 + 40] ^= 0x01
    elif where == "length crc":
        data[at + 9] ^= 0x10
    else:
        data = data[:at + (5 if where == "cut header" else 100)]
    reference_records.write_bytes(bytes(data))
    with pytest.raises(RecordError, match=rf"sample_text_128\.tfrecord: {message}"):
        for _ in read_records(reference_records):
            pass


def test_crc32c_matches_the_bitwise_definition_at_every_length():
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    rng = random.Random(1)
    for length in (0, 1, 3, 4, 5, 100, 16384, 16385, 40000):
        data = bytes(rng.randrange(256) for _ in range(length))
        crc = 0xFFFFFFFF
        for byte in data:
            crc ^= byte
            for _ in range(8):
                crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
        assert crc32c(data) == crc ^ 0xFFFFFFFF, length
