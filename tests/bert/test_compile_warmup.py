"""Compiled before the clock (bert.compile_warmup): the warm-up runs every shape of the run through the step, touches no
data, and leaves the run exactly as it was, so that a run with it and one without end with the same weights
(with dropout, token sizes, gradient accumulation, and fp16 loss scaling); a run.compile run logs how long it took,
before run_start. A compiled part that fails there (a code generator that raises, a recompile over Dynamo's limit)
runs eager, said in one line in the log and on stderr, and the run goes on; with run.compile "required" it ends with
exit status 2."""

from __future__ import annotations

import contextlib
import random
from unittest import mock

import numpy as np
import pytest
import torch
import torch._inductor.compile_fx

from bert.compile_warmup import LAYERS, UPDATE, compile_every_shape, shape_batches
from bert.data.batch import collate
from bert.distributed.launch import DistContext
from bert.model.pretraining import BertForPreTraining
from bert.model.token_rounding import token_sizes
from bert.optim.factory import build_optimizer, build_schedule
from bert.step import TrainStep
from bert.system import Descriptor, load_descriptor
from compliance.checkers import compliance_check
from compliance.result_log import read_result_log
from tests.helpers.samples import make_samples

STEPS = 3
DROPOUT = {"hidden_dropout": 0.1, "attention_dropout": 0.1}
SYSTEMS = {
    "bf16, dropout, 3 token sizes, 2 micro-batches": lambda: load_descriptor("cpu_micro").variant(
        {"model_overrides": DROPOUT, "precision": "bf16", "token_sizes": 3, "global_batch_size": 16,
         "gradient_accumulation_steps": 2, "eval.batch_size": 8}),
    "fp16 loss scaling (the CUDA run rehearsed), dynamic shapes": lambda: load_descriptor("h200_1x1").variant(
        {"model": "micro", "model_overrides": DROPOUT, "precision": "fp16", "global_batch_size": 16,
         "compile": False, "optimizer.implementation": "eager",  # what the warm-up does, not what a compiler does
         "gradient_accumulation_steps": 2, "max_seq_length": 64, "max_predictions_per_seq": 10,
         "init_checkpoint": None, "performance": None, "eval.batch_size": 8}).cpu_rehearsal(),
}


def _trained(system: Descriptor, warm: bool) -> dict:
    """STEPS updates of a fresh model on fixed batches, after a warm-up or not; what they leave behind."""
    run = system.run
    torch.manual_seed(0)
    model = BertForPreTraining(system.model_config())
    step = TrainStep(system.run, DistContext(0, 1, 0, 1, torch.device("cpu")), model,
                     build_optimizer(model, run.optimizer), build_schedule(run.optimizer))
    torch.manual_seed(1)  # the dropout stream both runs draw from
    streams = (torch.get_rng_state(), np.random.get_state()[1].copy(), random.getstate())
    calls = []
    model.bert.encoder[0].register_forward_hook(lambda *args: calls.append(torch.is_grad_enabled()))
    warmed = compile_every_shape(step, system.run, shape_batches(system)) if warm else None
    assert torch.equal(torch.get_rng_state(), streams[0]) and np.array_equal(np.random.get_state()[1], streams[1])
    assert random.getstate() == streams[2]
    sizes = token_sizes(run.token_sizes, system.per_process_batch, run.max_seq_length)
    rng = np.random.default_rng(5)
    batches = [collate(make_samples(rng.integers(8, 65, system.per_process_batch), vocab=4096, predictions=10,
                                    seed=k), sizes=sizes) for k in range(STEPS * run.gradient_accumulation_steps)]
    for s in range(STEPS):
        chunk = run.gradient_accumulation_steps
        step(iter(batches[s * chunk:(s + 1) * chunk]), s)
    return {"weights": {n: p.detach().clone() for n, p in model.named_parameters()},
            "moments": [v.clone() for state in step.optimizer.state.values() for v in state.values()],
            "scaler": step.scaler.state_dict(),  # the scale and its growth tracker
            "warm-up forwards": calls[:len(calls) - STEPS * run.gradient_accumulation_steps], "warmed": warmed}


@pytest.mark.parametrize("name", list(SYSTEMS))
def test_a_run_after_the_warm_up_ends_with_the_weights_of_a_run_without(name):
    system = SYSTEMS[name]()
    plain, warmed = _trained(system, warm=False), _trained(system, warm=True)
    for n, w in plain["weights"].items():
        assert torch.equal(warmed["weights"][n], w), n  # bit for bit: dropout masks, moments, scale all the same
    assert len(plain["moments"]) == len(warmed["moments"]) > 0
    assert all(torch.equal(a, b) for a, b in zip(plain["moments"], warmed["moments"]))
    assert plain["scaler"] == warmed["scaler"]
    # The warm-up ran: every training shape (with its backward) and every eval shape went through the layers.
    run, result = system.run, warmed["warmed"]
    expected = (len(token_sizes(run.token_sizes, system.per_process_batch, run.max_seq_length).sizes),
                len(token_sizes(run.token_sizes, run.eval.batch_size, run.max_seq_length).sizes)) \
        if run.token_sizes else (2, 2)
    assert (result.train_shapes, result.eval_shapes) == expected
    assert warmed["warm-up forwards"] == [True] * expected[0] + [False] * expected[1]
    assert plain["warm-up forwards"] == []


def _stand_in_triton_error(graph, example_inputs, **options):
    raise RuntimeError("stand-in for inductor's code generation: no kernel image is available for this GPU")


def _run_in_process(tmp_path, system: Descriptor, data) -> tuple[int, list]:
    """One run of `system` in this process (bert.train.run, as `mlperf-bert train` calls it); its exit code and
    log events."""
    from bert.train import RunRequest, run

    torch._dynamo.reset()  # a run's process compiles afresh
    log = tmp_path / "result_0.txt"
    code = run(RunRequest(system, seed=3, log_path=log, data_dir=data))
    return code, log


# Both compiled parts, and a sample cap (32 updates) where the run stops as aborted, a log the open division accepts.
FALLBACK_SYSTEM = {"compile": True, "optimizer.implementation": "compiled", "max_samples": 1024}


def test_a_compiled_run_logs_its_warm_up_before_run_start(tmp_path, small_dataset, capsys):
    from tests.cuda_path.traced_compile import compile_without_gpu_code

    # Dynamo for real, its graphs run as traced: inductor's CPU code generation (a minute here) is tested by
    # tests/bert/model/test_regional_compile.py and tests/bert/optim/test_lamb.py.
    with compile_without_gpu_code([], [], "eager"):
        code, log = _run_in_process(tmp_path, load_descriptor("cpu_micro").variant(FALLBACK_SYSTEM), small_dataset)
    result = read_result_log(log)
    keys = [x.key for x in result.events]
    assert "compile_warmup_seconds" in keys and "compile_fallback" not in keys, keys
    assert keys.index("init_start") < keys.index("compile_warmup_seconds") < keys.index("init_stop") \
        < keys.index("run_start")
    warm = result.first("compile_warmup_seconds")
    assert warm.value > 0 and warm.metadata["train_shapes"] == 2 and warm.metadata["eval_shapes"] == 2
    assert "compiled before the clock in" in capsys.readouterr().out
    assert compliance_check(log, "5.0.0").passed


@pytest.mark.parametrize("failure", ["a backend that raises", "a recompile limit of 1"])
def test_a_part_that_fails_to_compile_runs_eager_and_the_log_and_stderr_say_so(failure, tmp_path, small_dataset,
                                                                               capsys):
    from tests.cuda_path.traced_compile import compile_without_gpu_code

    system = load_descriptor("cpu_micro").variant(FALLBACK_SYSTEM)
    with contextlib.ExitStack() as stack:
        if failure == "a backend that raises":  # the real torch.compile; inductor's code generation raises
            stack.enter_context(mock.patch.object(torch._inductor.compile_fx, "compile_fx", _stand_in_triton_error))
        else:  # Dynamo traces for real (its graphs run as traced, in place of inductor's code); the second graph of a
            # frame (the layer's eval graph, the update's second parameter group) is one recompile over the limit
            stack.enter_context(compile_without_gpu_code([], [], "eager"))
            stack.enter_context(torch._dynamo.config.patch(recompile_limit=1))
        code, log = _run_in_process(tmp_path, system, small_dataset)
    err = capsys.readouterr().err
    result = read_result_log(log)
    lines = {x.metadata["part"]: x.value for x in result.events if x.key == "compile_fallback"}
    assert set(lines) == {LAYERS, UPDATE}, (lines, err[-3000:])
    expected = "RuntimeError: stand-in for inductor" if "raises" in failure else "FailOnRecompileLimitHit"
    for part, line in lines.items():
        assert line.startswith(f"{part} run eager: compiling failed before the clock: ") and expected in line, line
        assert "\n" not in line and f"warning (rank 0): {line}\n" in err  # one line each, in the log and on stderr
    keys = [x.key for x in result.events]
    assert keys.index("compile_warmup_seconds") < keys.index("compile_fallback") < keys.index("init_stop") \
        < keys.index("run_start")
    stop = result.first("run_stop").metadata  # the run went on to its end: the sample cap
    assert code == 1 and stop["reason"].startswith("sample cap run.max_samples = 1024 reached"), (stop, err[-2000:])
    assert compliance_check(log, "5.0.0").passed


def test_with_compile_required_a_failure_to_compile_ends_the_run_with_status_2(tmp_path, small_dataset, capsys):
    system = load_descriptor("cpu_micro").variant({**FALLBACK_SYSTEM, "compile": "required"})
    with mock.patch.object(torch._inductor.compile_fx, "compile_fx", _stand_in_triton_error):
        code, log = _run_in_process(tmp_path, system, small_dataset)
    stop = read_result_log(log).first("run_stop")
    assert code == 2 and stop.metadata["status"] == "aborted", stop.metadata
    assert f"{LAYERS} failed to compile and run.compile is \"required\"" in stop.metadata["reason"]
    assert "no kernel image is available" in capsys.readouterr().err
