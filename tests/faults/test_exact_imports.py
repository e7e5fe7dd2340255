"""Imports are exact or refused: a value that does not fit where it is stored, or an over-long varint, stops
`data import` naming the file and the record; a shard holding a value its reader would wrap is never signed
off by `data verify`; odd but valid records (one masked position each) import; a bad md5 list names itself."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from bert.data.manifest import MANIFEST_FILE
from bert.data.shards import read_shard
from bert.prep.official_inputs import MD5_LIST
from tests.helpers.compliance import cli
from tests.helpers.tfrecords import SEQ, sample_features, write_records


def _import(records, out, *extra):
    return cli("data", "import", "--input", records, "--out", out, "--workers", 1, "--quiet", *extra)


def _one_line(result) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 1 and len(lines) == 1, result.output
    return lines[0]


@pytest.mark.parametrize("feature, value, message", [
    ("input_ids", [2**32 + 54] * SEQ, "input_ids holds 4294967350, outside 0..2147483647, what the shard stores it "
                                      "as (int32)"),
    ("input_ids", [-5] * SEQ, "input_ids holds -5, outside 0..2147483647, what the shard stores it as (int32)"),
    ("masked_lm_ids", [40000, 7, 0, 0], "masked_lm_ids holds 40000, outside the vocabulary of 30 pieces (--vocab)"),
    ("segment_ids", [256] * SEQ, "segment_ids holds 256, outside 0..127, what the shard stores it as (int8)"),
    ("masked_lm_positions", b"\xff" * 10 + b"\x01" + b"\x00" * 3,
     "feature 'masked_lm_positions' holds a number of more than 64 bits (an over-long varint): the record is "
     "corrupt"),
])
def test_a_value_that_does_not_fit_stops_the_import_naming_the_record(tmp_path, feature, value, message):
    records = write_records(tmp_path / "part.tfrecord", [sample_features(), sample_features(),
                                                         {**sample_features(), feature: value}])
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(f"[{p}]\n" for p in ("PAD", "UNK", "CLS", "SEP", "MASK"))
                     + "".join(f"w{i}\n" for i in range(25)))
    result = _import(records, tmp_path / "out", *(("--vocab", vocab) if "--vocab" in message else ()))
    assert _one_line(result) == f"Error: {records}: record 2: {message}" + (
        "" if "varint" in message else "; the records are not pre-training samples of this vocabulary")
    assert not list((tmp_path / "out").glob("*.hdf5"))


def test_one_masked_position_per_sample_imports(tmp_path):
    records = write_records(tmp_path / "part.tfrecord", [sample_features(predictions=1, masked=1)] * 3)
    result = _import(records, tmp_path / "out")
    assert result.exit_code == 0, result.output
    imported = read_shard(tmp_path / "out" / "part.hdf5")
    assert imported.masked_positions.tolist() == [[1]] * 3 and imported.masked_ids.tolist() == [[7]] * 3


def test_verify_never_signs_off_an_id_its_reader_would_wrap(tmp_path, small_dataset):
    data = tmp_path / "data"
    (data / "train").mkdir(parents=True)
    (data / "vocab.txt").write_bytes((small_dataset / "vocab.txt").read_bytes())
    shard = data / "train" / "part-0.hdf5"
    shard.write_bytes(sorted((small_dataset / "train").glob("*.hdf5"))[0].read_bytes())
    with h5py.File(shard, "r+") as f:  # 64-bit ids, one of them 2**32 more than a good id: 32 bits would wrap it
        ids = f["input_ids"][:].astype(np.int64)
        ids[2, 3] += 2**32
        wrapped = int(ids[2, 3])
        del f["input_ids"]
        f["input_ids"] = ids
    result = cli("data", "verify", data, "--workers", 1, "--quiet")
    assert result.exit_code == 1
    assert f"{shard}: input_ids holds {wrapped}, which int32 cannot hold" in result.output
    assert json.loads((data / MANIFEST_FILE).read_text())["verdict"] == "failed"  # training refuses it


def test_an_md5_list_that_is_not_text_is_named(tmp_path, text_corpus):
    root = tmp_path / "download"
    (root / "results4").mkdir(parents=True)
    (root / "results4" / "part-00000-of-00001").write_bytes((text_corpus / "eval.txt").read_bytes())
    (root / "results4" / "eval.txt").write_bytes((text_corpus / "eval.txt").read_bytes())
    (root / "vocab.txt").write_bytes((text_corpus / "vocab.txt").read_bytes())
    (root / MD5_LIST).write_bytes(b"part-00000-of-00001 0123456789abcdef0123456789abcdef\neval.txt \xff\xfe\n")
    result = cli("data", "mlperf", root, "--out", tmp_path / "out", "--workers", 1, "--quiet")
    errors = [line for line in result.output.splitlines() if line.startswith("Error")]
    assert result.exit_code == 1 and errors == [f"Error: {root / MD5_LIST}: line 2: not UTF-8 (byte 0xff); the md5 "
                                                "list is a text file of names and md5s: download it again"]
