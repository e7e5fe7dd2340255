"""The trainer starts from run.init_checkpoint: evaluated before run_start, refused before it when it does not fit."""

from pathlib import Path

import torch

from bert.checkpoint import convert
from bert.mllog import INIT_CHECKPOINT_EVAL_ACCURACY
from bert.mlperf_rules import DEFAULT_RULESET
from bert.model.config import named_config
from bert.model.pretraining import BertForPreTraining
from bert.model.tf_names import to_hf_state_dict
from bert.system import load_descriptor
from bert.train import RunRequest, run
from compliance.checkers import compliance_check
from compliance.result_log import read_result_log


def _hf_checkpoint(path: Path, model_name: str) -> Path:
    config = named_config(model_name)
    torch.manual_seed(5)
    torch.save(to_hf_state_dict(BertForPreTraining(config).state_dict(), config), path)
    return path


def test_run_starts_from_the_converted_checkpoint_and_evaluates_it_first(tmp_path, small_dataset, monkeypatch):
    from bert import train as trainer
    from bert.mllog import RunLog
    from bert.system import Descriptor

    seen: list[str] = []  # the eval set read once for the checkpoint eval, once after run_start; the path found once

    class CountedEvalSet(trainer.EvalSet):
        def __init__(self, *args, **kwargs):
            seen.append("eval set read")
            super().__init__(*args, **kwargs)

    def noted(what: str, method):
        def call(*args):
            seen.append(what)
            return method(*args)
        return call

    monkeypatch.setattr(trainer, "EvalSet", CountedEvalSet)
    monkeypatch.setattr(RunLog, "run_start", noted("run_start", RunLog.run_start))
    monkeypatch.setattr(Descriptor, "init_checkpoint_path", noted("checkpoint path", Descriptor.init_checkpoint_path))
    converted = tmp_path / "init.pt"
    convert(_hf_checkpoint(tmp_path / "hf.bin", "micro"), converted, named_config("micro"))
    system = load_descriptor("cpu_micro").variant(
        {"init_checkpoint": str(converted), "max_samples": 512,
         "eval": {"target_accuracy": 0.06, "samples": 256, "interval_samples": 512, "batch_size": 256}},
        name="micro_ckpt")
    log = tmp_path / "result_0.txt"
    run(RunRequest(system, 3, log, small_dataset))
    result = read_result_log(log)
    keys = [x.key for x in result.events]
    assert keys.index(INIT_CHECKPOINT_EVAL_ACCURACY) < keys.index("init_stop") < keys.index("run_start")
    before = result.value(INIT_CHECKPOINT_EVAL_ACCURACY)
    first_eval = result.value("eval_accuracy")
    assert 0.0 <= before < first_eval  # an untrained checkpoint scores below the trained model
    assert keys[-1] == "run_stop"
    assert compliance_check(log, DEFAULT_RULESET).passed
    assert seen == ["checkpoint path", "eval set read", "run_start", "eval set read"]


def test_checkpoint_of_another_model_fails_before_run_start(tmp_path, small_dataset, capsys):
    tiny = _hf_checkpoint(tmp_path / "tiny.bin", "tiny")
    system = load_descriptor("cpu_micro").variant({"init_checkpoint": str(tiny)}, name="micro_bad")
    log = tmp_path / "result_0.txt"
    assert run(RunRequest(system, 3, log, small_dataset)) == 1
    keys = [x.key for x in read_result_log(log).events]
    assert "run_start" not in keys and "init_stop" not in keys
    error = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
    assert len(error) == 1 and "tiny.bin: does not fit the model: tensor bert.embeddings" in error[0]
    assert "[4096, 128]" in error[0] and "[4096, 64]" in error[0]
