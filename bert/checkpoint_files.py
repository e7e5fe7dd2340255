"""Checkpoint files as published, read into named tensors (a `Source`): the MLPerf phase-1 TensorFlow 1 checkpoint
(read with TensorFlow, an optional extra, after its index is checked here), PyTorch files in NVIDIA's
`{'model': state_dict}` layout or a bare state dict, and safetensors files (read by the small reader below). The
names stay the file's; bert.checkpoint maps them to this model. Every file is opened as a regular file (a FIFO or
a device is refused unread) and every size in a header is checked before it is trusted.
"""

from __future__ import annotations

import json
import os
import struct
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import torch

from bert.regular_files import NotRegularFile, open_regular

TF_INSTALL_HINT = "pip install -e '.[tf]'  (or: pip install tensorflow-cpu)"
_SAFETENSORS_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
    "BOOL": torch.bool,
}
_MAX_SAFETENSORS_HEADER = 100 * 2**20
_MAX_DIM = 2**63 - 1  # torch's sizes are int64
# A TensorFlow checkpoint's .index is an SSTable: its last 8 bytes are this number (little-endian) in a 48-byte
# footer. Checked before TensorFlow reads it, so that a truncated or foreign file is one line even without TF.
_TF_INDEX_MAGIC = 0xDB4775248B80FB57
_TF_FOOTER_BYTES = 48


class CheckpointError(ValueError):
    """A checkpoint that cannot be read or does not fit the model; the message names the file."""


@dataclass
class Source:
    """The tensors of one checkpoint file, under their names in the file."""

    path: Path
    container: str  # tensorflow, safetensors, pytorch, pytorch {'model': ...}
    tensors: dict[str, torch.Tensor]


def read_safetensors(path: Path) -> dict[str, torch.Tensor]:
    """A safetensors file: an 8-byte little-endian header length, a JSON header, raw little-endian tensors."""
    with _open_checkpoint_file(path) as f:
        data = bytearray(f.read())
    if len(data) < 8:
        raise CheckpointError(f"{path}: too short for a safetensors file ({len(data)} bytes)")
    (header_len,) = struct.unpack("<Q", data[:8])
    if header_len > min(_MAX_SAFETENSORS_HEADER, len(data) - 8):
        raise CheckpointError(f"{path}: not a safetensors file (header length {header_len} of {len(data)} bytes)")
    try:
        header = json.loads(data[8:8 + header_len])
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{path}: safetensors header is not valid JSON: {e}") from None
    except RecursionError:
        raise CheckpointError(f"{path}: safetensors header is nested too deeply to be one") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: safetensors header is a JSON {type(header).__name__}, not an object of "
                              "tensors")
    body = memoryview(data)[8 + header_len:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype, shape, begin, end = _header_entry(path, name, info)
        expected = dtype.itemsize * _numel(shape)
        if not 0 <= begin <= end <= len(body) or end - begin != expected:
            raise CheckpointError(f"{path}: tensor {name}: data offsets {begin}..{end} do not hold "
                                  f"{shape} of {info['dtype']} ({expected} bytes) in a {len(body)}-byte body")
        flat = torch.frombuffer(body[begin:end], dtype=dtype) if expected else torch.empty(0, dtype=dtype)
        tensors[name] = flat.reshape(shape)
    if sys.byteorder != "little":
        tensors = {k: _from_little_endian(v) for k, v in tensors.items()}
    return tensors


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_DIM


def _header_entry(path: Path, name: str, info: object) -> tuple[torch.dtype, list[int], int, int]:
    """(dtype, shape, begin, end) of one tensor of a safetensors header; CheckpointError for a malformed entry."""
    where = f"{path}: tensor {name}"
    if not isinstance(info, dict):
        raise CheckpointError(f"{where}: its header entry is {type(info).__name__}, not an object with dtype, "
                              "shape and data_offsets")
    dtype = _SAFETENSORS_DTYPES.get(info.get("dtype")) if isinstance(info.get("dtype"), str) else None
    if dtype is None:
        raise CheckpointError(f"{where}: unsupported dtype {info.get('dtype')!r}")
    shape, offsets = info.get("shape"), info.get("data_offsets")
    if not isinstance(shape, list) or not all(_whole(d) for d in shape):
        raise CheckpointError(f"{where}: shape {shape!r} is not a list of whole numbers from 0 to 2^63 - 1")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(_whole(o) for o in offsets):
        raise CheckpointError(f"{where}: data_offsets {offsets!r} are not two whole numbers")
    return dtype, shape, offsets[0], offsets[1]


def _numel(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _from_little_endian(t: torch.Tensor) -> torch.Tensor:
    if t.element_size() == 1:
        return t
    raw = t.contiguous().view(torch.uint8).view(-1, t.element_size()).flip(1)
    return raw.contiguous().view(t.dtype).reshape(t.shape)


def tf_checkpoint_prefix(path: Path) -> Path | None:
    """The TF checkpoint prefix (`model.ckpt-28252`) that `path` names, or None if it names none."""
    if path.is_dir():
        index = sorted(path.glob("*.index"))
        return index[-1].with_suffix("") if index else None
    if path.suffix == ".index" or path.name.endswith(".meta") or ".data-" in path.name:
        return path.parent / path.name.split(".data-")[0].removesuffix(".index").removesuffix(".meta")
    return path if Path(f"{path}.index").is_file() else None


def _read_tensorflow(prefix: Path) -> dict[str, torch.Tensor]:
    _check_tf_index(prefix)
    try:
        import tensorflow as tf
    except ModuleNotFoundError:
        raise CheckpointError(f"{prefix}: reading a TensorFlow checkpoint needs TensorFlow: "
                              f"{TF_INSTALL_HINT}") from None
    try:
        reader = tf.train.load_checkpoint(str(prefix))
        # A 0-d variable (global_step, the beta powers) comes back as a numpy scalar, not an array.
        return {name: torch.from_numpy(np.array(reader.get_tensor(name)))
                for name in sorted(reader.get_variable_to_shape_map())}
    except Exception as e:  # TensorFlow raises OpError, IndexError, ... for a data file cut short or missing
        first = (getattr(e, "message", None) or str(e)).strip().splitlines()
        raise CheckpointError(f"{prefix}: TensorFlow cannot read this checkpoint ({type(e).__name__}: "
                              f"{first[0] if first else ''}); it is damaged or incomplete: copy it again") from None


def _check_tf_index(prefix: Path) -> None:
    """CheckpointError unless `prefix`.index ends with the footer of an SSTable (what TensorFlow writes)."""
    index = Path(f"{prefix}.index")
    try:
        with _open_checkpoint_file(index) as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(size - 8, 0))
            tail = f.read(8)
    except OSError as e:
        raise CheckpointError(f"{index}: cannot be read ({e.strerror or e})") from None
    if size < _TF_FOOTER_BYTES or struct.unpack("<Q", tail)[0] != _TF_INDEX_MAGIC:
        raise CheckpointError(f"{index}: not the index of a TensorFlow checkpoint ({size} bytes, without its "
                              "footer): the file is cut short or something else; copy the checkpoint again")


def _read_pytorch(path: Path, mmap: bool = False) -> tuple[str, dict[str, torch.Tensor]]:
    """The tensors of a torch.save file; `mmap`: mapped, not read (a file of the older format is read)."""
    try:
        try:
            obj = torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
        except Exception:
            if not mmap:
                raise
            obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises many types for a file that is not a torch archive
        raise CheckpointError(f"{path}: not a PyTorch checkpoint, safetensors file or TensorFlow checkpoint "
                              f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})") from None
    container = "pytorch"
    if isinstance(obj, Mapping) and isinstance(obj.get("model"), Mapping):
        obj, container = obj["model"], "pytorch {'model': ...}"
    if not isinstance(obj, Mapping) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise CheckpointError(f"{path}: expected a state dict (name -> tensor) or {{'model': state dict}}")
    for name, tensor in obj.items():
        if tensor.layout != torch.strided:
            raise CheckpointError(f"{path}: tensor {name} is {str(tensor.layout).removeprefix('torch.')}, not a "
                                  "dense tensor; save the weights dense (tensor.to_dense())")
        if tensor.is_meta:
            raise CheckpointError(f"{path}: tensor {name} is on the meta device and holds no values (saved from a "
                                  "model that was never given weights)")
    # DistributedDataParallel's wrapper adds `module.` in front of every name.
    return container, {k.removeprefix("module."): v for k, v in obj.items()}


_GIVE = "give a .pt/.bin, a .safetensors file or a TensorFlow checkpoint prefix such as model.ckpt-28252"


def _open_checkpoint_file(path: Path) -> BinaryIO:
    """`path` opened for reading; CheckpointError in one line for a FIFO or a device (which would block or never
    end) and for a file that cannot be opened."""
    try:
        return open_regular(path)
    except NotRegularFile as e:
        raise CheckpointError(f"{path}: is {e.kind}, not a checkpoint file ({_GIVE})") from None
    except OSError as e:
        raise CheckpointError(f"{path}: cannot be read ({e.strerror or e})") from None


def read_source(path: str | os.PathLike, mmap: bool = False) -> Source:
    """The tensors of the checkpoint at `path`; `mmap`: a torch.save file is mapped, not read into memory."""
    path = Path(path)
    prefix = tf_checkpoint_prefix(path)
    if prefix is not None:
        return Source(prefix, "tensorflow", _read_tensorflow(prefix))
    if path.exists() or path.is_symlink():
        _open_checkpoint_file(path).close()  # torch.load opens it by name: a FIFO would block that open
    else:
        raise CheckpointError(f"{path}: no such checkpoint file ({_GIVE})")
    if path.suffix == ".safetensors":
        return Source(path, "safetensors", read_safetensors(path))
    container, tensors = _read_pytorch(path, mmap)
    return Source(path, container, tensors)
