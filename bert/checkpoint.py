"""Model checkpoints: the tensors of a published checkpoint file (bert.checkpoint_files reads them) mapped to this
model's parameters, checked, written and loaded.

Tensor names may be the reference TF names, transformers' names (what NVIDIA's PyTorch implementations use too)
or this model's own. Every name goes through the one table in bert.model.tf_names: TF kernels are transposed
there, and vocabulary tensors gain (or keep) their padding rows.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import torch

from bert.checkpoint_files import CheckpointError, Source, read_source
from bert.model.config import BertConfig
from bert.model.size import meta_model
from bert.model.tf_names import HF_TIED, TensorName, hf_name, tensor_names
from bert.ownership import OwnershipError, claim_file, temporary_path

# Present in published checkpoints but not model parameters; listed by inspect and skipped by convert. The
# reference's TF1 checkpoints (its LAMB: model.ckpt-28252) hold a slot pair per variable, `<var>/LAMB` and
# `<var>/LAMB_1`, and the 0-d `global_step`, `beta1_power`, `beta2_power`. google-research/bert's AdamWeightDecay
# writes `<var>/adam_m`, `<var>/adam_v`; NVIDIA's TF LAMB `lamb_m`/`lamb_v`, tf.train.AdamOptimizer `Adam`/
# `Adam_1`, momentum `Momentum`; NVIDIA's loss scaling `loss_scale`, `current_loss_scale`, `good_steps`,
# `bad_steps`. transformers lists its tied decoder and its position-id buffer.
_IGNORED_SUFFIXES = ("/LAMB", "/LAMB_1", "/adam_m", "/adam_v", "/lamb_m", "/lamb_v", "/Adam", "/Adam_1",
                     "/Momentum", ".position_ids")
_IGNORED_NAMES = frozenset({"global_step", "beta1_power", "beta2_power", "bad_steps", "good_steps", "loss_scale",
                            "current_loss_scale", *HF_TIED})
_WEIGHT_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)  # what weights load from


@dataclass
class CheckpointFit:
    """How a source's tensors meet a model config."""

    naming: str  # tf, huggingface, mlperf-bert
    state: dict[str, torch.Tensor] = field(default_factory=dict)  # this model's names, ready to load
    missing: list[str] = field(default_factory=list)  # model parameters the file lacks (model names)
    unexpected: list[str] = field(default_factory=list)  # file tensors the model has no place for
    ignored: list[str] = field(default_factory=list)  # known non-parameters (optimizer slots, tied copies)
    mismatched: list[str] = field(default_factory=list)  # one line per tensor of the wrong shape

    @property
    def fits(self) -> bool:
        return not (self.missing or self.mismatched)


_NAMINGS: dict[str, Callable[[TensorName], str]] = {
    "mlperf-bert": lambda e: e.torch,
    "mlperf-bert, query/key/value apart": lambda e: e.unfused,  # written before they became one parameter
    "huggingface": lambda e: hf_name(e.tf),
    "tf": lambda e: e.tf,
}


def _naming(names: set[str], table: list[TensorName]) -> str:
    """The naming whose names cover most of the file's tensors."""
    return max(_NAMINGS, key=lambda n: len(names & {_NAMINGS[n](e) for e in table}))


def _ignored(name: str) -> bool:
    return name in _IGNORED_NAMES or name.endswith(_IGNORED_SUFFIXES)


def _fit(entry: TensorName, tensor: torch.Tensor, naming: str, config: BertConfig,
         whole: torch.Size) -> torch.Tensor | None:
    """The file's tensor in this model's layout: TF kernels transposed, vocabulary rows padded with zeros; the
    entry's part of a parameter (of shape `whole`) that holds several reference tensors. None when its shape
    cannot be made the model's (a fused parameter of the wrong shape, a kernel that is no matrix)."""
    if naming == "mlperf-bert" and entry.parts > 1:
        if tensor.shape != whole:
            return None
        tensor = entry.of(tensor)
    if naming == "tf" and entry.transpose:
        if tensor.dim() != 2:
            return None
        tensor = tensor.t()
    if entry.vocab_padded and tensor.dim() > 0 and tensor.shape[0] == config.vocab_size < config.padded_vocab_size:
        pad = tensor.new_zeros((config.padded_vocab_size - config.vocab_size, *tensor.shape[1:]))
        tensor = torch.cat([tensor, pad])
    return tensor.contiguous()


def map_to_model(source: Source, config: BertConfig, shapes: Mapping[str, torch.Size]) -> CheckpointFit:
    """Maps the file's tensors onto the model's parameters (names -> `shapes`), collecting every problem."""
    table = tensor_names(config)
    naming = _naming(set(source.tensors), table)
    name_of = _NAMINGS[naming]
    result = CheckpointFit(naming)
    used, refused = set(), set()
    parts: dict[str, list[torch.Tensor]] = {}
    for entry in table:
        name = name_of(entry)
        if name not in source.tensors:
            if entry.torch not in result.missing:  # once for a parameter of several parts
                result.missing.append(entry.torch)
            continue
        if name in refused:  # a later part of a parameter that this file holds whole, already refused
            continue
        used.add(name)
        tensor = _fit(entry, source.tensors[name], naming, config, shapes[entry.torch])
        needed = entry.of(torch.empty(shapes[entry.torch], device="meta")).shape
        if tensor is None or tensor.shape != needed:
            whole_in_file = naming == "mlperf-bert"  # this model's names: the file holds the whole parameter
            part = f" (part {entry.part + 1} of {entry.parts})" if entry.parts > 1 and not whole_in_file else ""
            result.mismatched.append(f"tensor {name} has shape {list(source.tensors[name].shape)}, the model's "
                                     f"{entry.torch} needs {list(shapes[entry.torch] if whole_in_file else needed)}"
                                     f"{part}")
            refused.add(name)
            continue
        parts.setdefault(entry.torch, []).append(tensor)
    whole = Counter(entry.torch for entry in table)  # the parts of each parameter
    result.state = {name: torch.cat(tensors) if len(tensors) > 1 else tensors[0]
                    for name, tensors in parts.items() if len(tensors) == whole[name]}
    for name in source.tensors:
        if name not in used:
            (result.ignored if _ignored(name) else result.unexpected).append(name)
    return result


def model_shapes(config: BertConfig) -> dict[str, torch.Size]:
    """Every parameter's shape, from a model built on the meta device (no memory, no initialisation)."""
    return {name: p.shape for name, p in meta_model(config).state_dict().items()}


def fit_error(where: Path, mapping: CheckpointFit) -> CheckpointError:
    """One line naming the file, the first offending tensor and the shapes (or the missing parameters)."""
    if mapping.mismatched:
        more = f" (and {len(mapping.mismatched) - 1} more)" if len(mapping.mismatched) > 1 else ""
        return CheckpointError(f"{where}: does not fit the model: {mapping.mismatched[0]}{more}")
    shown = ", ".join(mapping.missing[:3]) + (f" and {len(mapping.missing) - 3} more" if len(mapping.missing) > 3
                                               else "")
    return CheckpointError(f"{where}: does not fit the model: {len(mapping.missing)} parameter(s) missing "
                           f"({mapping.naming} names): {shown}")


def _refuse_unusable(where: Path, mapping: CheckpointFit) -> None:
    """Weights are floating point and finite: anything else is not a model to start from (one line)."""
    for name, tensor in mapping.state.items():
        if not tensor.is_floating_point():
            raise CheckpointError(f"{where}: tensor for {name} holds {str(tensor.dtype).removeprefix('torch.')}, "
                                  "not floating-point weights; this is not a model checkpoint")
        if tensor.dtype not in _WEIGHT_DTYPES:
            raise CheckpointError(f"{where}: tensor for {name} holds {str(tensor.dtype).removeprefix('torch.')}; "
                                  "weights load from float32, float16, bfloat16 or float64: save them in one")
        if not bool(torch.isfinite(tensor).all()):
            raise CheckpointError(f"{where}: tensor for {name} holds NaN or infinite values; the checkpoint is "
                                  "damaged (or saved from a diverged run)")


def _usable_state(path: str | os.PathLike, config: BertConfig, mmap: bool = False) -> tuple[Source, CheckpointFit]:
    """The checkpoint at `path` mapped onto BertForPreTraining(config): it fits, and its weights are finite
    floats (CheckpointError in one line otherwise)."""
    source = read_source(path, mmap)
    mapping = map_to_model(source, config, model_shapes(config))
    if not mapping.fits:
        raise fit_error(source.path, mapping)
    _refuse_unusable(source.path, mapping)
    return source, mapping


def check_usable(path: str | os.PathLike, config: BertConfig) -> None:
    """What load_state refuses, refused (CheckpointError) without keeping the weights: the pre-flight's check of
    run.init_checkpoint, which maps the file instead of reading it into memory."""
    _usable_state(path, config, mmap=True)


def load_state(path: str | os.PathLike, config: BertConfig) -> dict[str, torch.Tensor]:
    """The checkpoint at `path` as a state dict of BertForPreTraining(config), refused as convert refuses it."""
    return _usable_state(path, config)[1].state


def convert(src: str | os.PathLike, out: str | os.PathLike, config: BertConfig, force: bool = False) -> CheckpointFit:
    """Writes the checkpoint at `src` as this model's state dict in NVIDIA's `{'model': ...}` layout.

    Written to a temporary name and renamed, so `out` is either complete or absent. An existing `out` is
    replaced only when convert wrote it (bert.ownership), or with `force`.
    """
    from bert.prep.official_files import judge_checkpoint_source

    source, mapping = _usable_state(src, config)
    # Whether it is the published phase-1 checkpoint, kept in the file: a closed run's pre-flight reads it there.
    official = dataclasses.asdict(judge_checkpoint_source(source.path, source.container))
    try:
        with claim_file(out, "checkpoint convert", [source.path], replace=True, force=force,
                        foreign_hint="pass --force to replace it, or choose another OUT") as out:
            tmp = temporary_path(out)
            try:
                torch.save({"model": mapping.state, "converted_from": str(source.path), "official": official}, tmp)
                os.replace(tmp, out)
            except (OSError, RuntimeError) as e:  # torch.save says "unexpected pos" when the disk fills
                free = shutil.disk_usage(out.parent).free / 2**20
                raise CheckpointError(f"{out}: cannot be written ({str(e).splitlines()[0]}; {free:.1f} MiB free "
                                      "there); nothing was replaced: free space there, or choose another OUT") from None
            finally:
                tmp.unlink(missing_ok=True)
    except OwnershipError as e:
        raise CheckpointError(str(e)) from None
    return mapping


def load_into(model: torch.nn.Module, path: str | os.PathLike, config: BertConfig) -> None:
    """Loads the checkpoint into `model` (on any device); a file that does not fit raises CheckpointError."""
    state = load_state(path, config)
    # The padding rows of the vocabulary are never targets; the file may carry zeros or anything there.
    model.load_state_dict(state, strict=True)


def describe(source: Source, fit: CheckpointFit) -> list[str]:
    """What `mlperf-bert checkpoint inspect` prints: every tensor, then how the file meets the model."""
    lines = [f"{source.path}: {source.container}, {len(source.tensors)} tensors, {fit.naming} names"]
    width = max((len(n) for n in source.tensors), default=0)
    for name, tensor in source.tensors.items():
        lines.append(f"  {name:<{width}}  {str(tensor.dtype).removeprefix('torch.'):<8}  {list(tensor.shape)}")
    total = len(fit.state) + len(fit.missing) + len(fit.mismatched)
    lines.append(f"model parameters found: {len(fit.state)} of {total}")
    for title, names in (("missing", fit.missing), ("shape mismatch", fit.mismatched),
                         ("unexpected", fit.unexpected), ("ignored (not parameters)", fit.ignored)):
        lines.append(f"{title}: {len(names)}")
        lines += [f"  {n}" for n in names]
    return lines
