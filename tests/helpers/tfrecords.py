"""TFRecord files of pre-training `tf.train.Example`s written byte by byte (the wire format the reference's
TensorFlow writes), so that tests can give `data import` records with chosen values, some of them broken."""

from __future__ import annotations

import struct
from pathlib import Path

from bert.prep.tfrecord import crc32c, masked_crc


def varint(value: int) -> bytes:
    """Protobuf's varint of an int64 (a negative value as its two's complement, 10 bytes)."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def example(features: dict[str, bytes]) -> bytes:
    """A serialised Example whose int64 features hold the given packed values (varints back to back)."""
    entries = b"".join(_field(1, _field(1, name.encode()) + _field(2, _field(3, _field(1, packed))))
                       for name, packed in features.items())
    return _field(1, entries)


SEQ = 16  # tokens of every sample of sample_features


def sample_features(predictions: int = 4, masked: int = 2, token: int = 7) -> dict[str, list[int]]:
    """One full-length pre-training sample, [CLS] A [SEP] B [SEP] ([CLS] 2, [SEP] 3), with its first `masked` of
    `predictions` masked positions listed."""
    return {"input_ids": [2, *[token] * 5, 3, *[token] * (SEQ - 8), 3], "input_mask": [1] * SEQ,
            "segment_ids": [0] * 7 + [1] * (SEQ - 7),
            "masked_lm_positions": [1 + i for i in range(masked)] + [0] * (predictions - masked),
            "masked_lm_ids": [token] * masked + [0] * (predictions - masked), "next_sentence_labels": [0]}


def write_records(path: Path, samples: list[dict[str, list[int] | bytes]]) -> Path:
    """A TFRecord file of one Example per sample; a feature given as bytes is written as those bytes."""
    with open(path, "wb") as f:
        for sample in samples:
            data = example({k: v if isinstance(v, bytes) else b"".join(map(varint, v)) for k, v in sample.items()})
            header = struct.pack("<Q", len(data))
            f.write(header + struct.pack("<I", masked_crc(crc32c(header))) + data
                    + struct.pack("<I", masked_crc(crc32c(data))))
    return path


def write_tf_index_stub(prefix: Path) -> None:
    """`prefix`.index as the smallest file the checkpoint reader's index check accepts: an SSTable footer (48
    bytes ending with TensorFlow's table magic) and nothing else. For tests whose TensorFlow is a stand-in."""
    Path(f"{prefix}.index").write_bytes(bytes(40) + struct.pack("<Q", 0xDB4775248B80FB57))
