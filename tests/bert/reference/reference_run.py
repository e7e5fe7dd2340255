"""The MLPerf reference's own run (fixtures/make_reference_fixtures.py ran its TensorFlow code) and this
project's path through the same run: the checkpoint converted by `bert.checkpoint.convert`, the model as
bert/train.py builds it, build_optimizer/build_schedule, TrainStep and EvalSet.accuracy, on the same samples.

TensorFlow is not installed for the tests. Its checkpoint reader is replaced by one that hands over exactly
what the real one returned for the reference's checkpoint (fixtures: the names, the values, and their Python
types: numpy scalars for the 0-d counters and beta powers), so the converter's own work (names, skipped slots,
scalars, transposes) runs on what TensorFlow really gives it. The other way, a reader of TensorFlow's
checkpoint format written here, would be a second implementation of that format to prove (table blocks,
protocol buffers, checksums over gigabytes, sliced variables), where convert only ever uses TensorFlow's.
"""

from __future__ import annotations

import importlib.machinery
import json
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from bert.checkpoint import convert, load_into
from bert.data.batch import Batch, collate
from bert.data.shards import Samples, samples_from_arrays
from bert.distributed.launch import DistContext
from bert.eval import EvalSet
from bert.model.pretraining import BertForPreTraining
from bert.optim.factory import build_optimizer, build_schedule
from bert.prep.shard_writer import write_shard
from bert.step import TrainStep
from bert.system import Descriptor, load_descriptor
from tests.helpers.tfrecords import write_tf_index_stub

FIXTURES = Path(__file__).resolve().parent / "fixtures"
RUN = json.loads((FIXTURES / "reference_run.json").read_text())
ARRAYS = np.load(FIXTURES / "reference_run.npz")
CPU = DistContext(0, 1, 0, 1, torch.device("cpu"))
CHECKPOINT_NAME = f"model.ckpt-{RUN['phase1_steps']}"


def reference_checkpoint() -> dict[str, object]:
    """Every name of the reference's checkpoint with the object TensorFlow's reader returned for it."""
    values = {}
    for name, described in RUN["checkpoint"].items():
        value = ARRAYS[f"checkpoint/{name}"]
        values[name] = value[()] if described["numpy_scalar"] else value  # value[()]: the numpy scalar
    return values


def install_tf_reader(monkeypatch, folder: Path) -> Path:
    """Makes `folder/model.ckpt-N` a TensorFlow checkpoint prefix (its .index file) whose reader returns what
    TensorFlow's returned for the reference's; returns the prefix."""
    values = reference_checkpoint()

    class Reader:
        def get_variable_to_shape_map(self) -> dict[str, list[int]]:
            return {name: list(np.shape(v)) for name, v in values.items()}

        def get_tensor(self, name: str):
            value = values[name]
            return value.copy() if isinstance(value, np.ndarray) else value

    tf = types.ModuleType("tensorflow")
    tf.__spec__ = importlib.machinery.ModuleSpec("tensorflow", None)  # what torch._dynamo's import probe reads
    tf.train = types.SimpleNamespace(load_checkpoint=lambda prefix: Reader())
    monkeypatch.setitem(sys.modules, "tensorflow", tf)
    prefix = folder / CHECKPOINT_NAME
    write_tf_index_stub(prefix)
    return prefix


def samples(first: int, stop: int) -> Samples:
    """The reference's samples `first`..`stop`-1 (fixed-length arrays) as the project reads a shard."""
    rows = slice(first, stop)
    arrays = {k: ARRAYS[f"samples/{k}"][rows] for k in ("input_ids", "input_mask", "segment_ids",
                                                         "masked_lm_positions", "masked_lm_ids",
                                                         "next_sentence_labels")}
    return samples_from_arrays(FIXTURES / "reference_run.npz", "fixed", arrays)


def system(weight_decay: float, **changes: object) -> Descriptor:
    """cpu_micro with the reference run's model (its tanh GELU), batch and LAMB settings; `changes` are run
    fields by their dotted paths."""
    config, flags = RUN["config"], RUN["flags"]
    overrides = {"vocab_size": config["vocab_size"], "hidden_size": config["hidden_size"],
                 "num_layers": config["num_hidden_layers"], "num_heads": config["num_attention_heads"],
                 "intermediate_size": config["intermediate_size"],
                 "max_position_embeddings": config["max_position_embeddings"], "gelu": "tanh"}
    optimizer = {"name": "lamb", "base_learning_rate": flags["learning_rate"], "beta_1": flags["lamb_beta_1"],
                 "beta_2": flags["lamb_beta_2"], "epsilon": 10 ** flags["log_epsilon"],
                 "weight_decay_rate": weight_decay, "warmup_steps": flags["num_warmup_steps"],
                 "start_warmup_step": flags["start_warmup_step"], "training_steps": flags["num_train_steps"],
                 "poly_power": flags["poly_power"], "end_learning_rate": 0.0}
    run = {"model_overrides": overrides, "optimizer": optimizer, "global_batch_size": RUN["batch"],
           "max_seq_length": 128, "max_predictions_per_seq": 20, "precision": "fp32", "init_checkpoint": None,
           **changes}
    return load_descriptor("cpu_micro").variant(run)


@dataclass
class ProjectRun:
    """Per step: the loss, the learning rate, the gradient's global norm; the model afterwards."""

    model: BertForPreTraining
    loss: list[float] = field(default_factory=list)
    learning_rate: list[float] = field(default_factory=list)
    gradient_norm: list[float] = field(default_factory=list)

    def parameters(self) -> dict[str, torch.Tensor]:
        return {name: p.detach() for name, p in self.model.named_parameters()}


def converted_model(checkpoint: Path, spec: Descriptor, folder: Path) -> BertForPreTraining:
    """The reference's checkpoint converted by `mlperf-bert checkpoint convert`'s function, loaded into the
    model as bert/train.py builds it."""
    config = spec.model_config()
    convert(checkpoint, folder / "model.pt", config)
    model = BertForPreTraining(config)
    load_into(model, folder / "model.pt", config)
    return model


def train(model: BertForPreTraining, spec: Descriptor, steps: int, dtype: torch.dtype = torch.float32,
          edit_optimizer: Callable[[torch.optim.Optimizer], None] | None = None) -> ProjectRun:
    """`steps` TrainStep updates on the reference's training batches, in order. `dtype`: float64 measures the
    float32 floor of the same math; `edit_optimizer` lets a negative test break the optimizer."""
    model = model.to(dtype)
    optimizer = build_optimizer(model, spec.run.optimizer)
    if edit_optimizer is not None:
        edit_optimizer(optimizer)
    step = TrainStep(spec.run, CPU, model, optimizer, build_schedule(spec.run.optimizer))
    run = ProjectRun(model)
    finish = step.clipping.finish

    def recording_finish(opt):
        norm = finish(opt)
        run.gradient_norm.append(norm.item())
        return norm

    step.clipping.finish = recording_finish
    batch = RUN["batch"]
    batches: Iterator[Batch] = iter(collate(samples(i * batch, (i + 1) * batch)) for i in range(steps))
    for i in range(steps):
        step(batches, i)
        run.loss.append(step.pop_loss_and_tokens()[0])
        run.learning_rate.append(optimizer.param_groups[0]["lr"])
    return run


def eval_counts(model: BertForPreTraining, spec: Descriptor, folder: Path) -> dict[str, int]:
    """EvalSet.accuracy over the reference's eval samples (written as a shard), as masked-token counts."""
    count = RUN["eval_samples"]
    total_rows = len(ARRAYS["samples/input_ids"])
    eval_file = folder / "eval.hdf5"
    if not eval_file.exists():
        write_shard(eval_file, samples(total_rows - count, total_rows), "fixed", 128, 20)
    eval_set = EvalSet(eval_file, count, CPU, RUN["batch"])
    total = sum(b.mlm_labels.numel() for b in eval_set.batches)
    accuracy = eval_set.accuracy(model, spec.run.unpadded, torch.autocast("cpu", enabled=False))
    return {"correct": round(accuracy * total), "total": total}
