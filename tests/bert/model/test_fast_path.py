"""The fast path against plain references: transformers' BertForPreTraining in fp32, autocast and loss scaling
on CPU and the compile switch."""

import numpy as np
import pytest
import torch

from benchmarks.common.host_sync import host_reads_fail
from benchmarks.common.transformers_peer import peer_model, to_hf_batch
from bert.data.batch import collate
from bert.data.shards import read_shard
from bert.distributed.launch import DistContext
from bert.model.config import named_config
from bert.model.pretraining import BertForPreTraining
from bert.model.tf_names import hf_name, tensor_names
from bert.optim.factory import build_optimizer, build_schedule
from bert.step import TrainStep
from bert.system import load_descriptor
from bert.typed_config import ConfigError
from tests.helpers.compile import skip_unless_compile_works

CPU = DistContext(0, 1, 0, 1, torch.device("cpu"))


def _batches(dataset, size: int, count: int):
    samples = read_shard(sorted((dataset / "train").glob("*.hdf5"))[0])
    return [collate(samples.take(np.arange(i * size, (i + 1) * size))) for i in range(count)]


# The second size has a vocabulary that is not a multiple of 8, so our matrices carry padding rows.
@pytest.mark.parametrize("config_name, overrides", [("micro", {}), ("tiny", {"vocab_size": 4100})])
def test_unpadded_fast_path_matches_transformers_in_fp32(config_name, overrides, small_dataset):
    pytest.importorskip("transformers", reason="transformers is in the test extra")
    torch.manual_seed(0)
    config = named_config(config_name, **overrides)
    ours = BertForPreTraining(config)
    peer = peer_model(ours, config)
    ours.train(), peer.train()  # both configs have no dropout, so training mode is deterministic
    (batch,) = _batches(small_dataset, 8, 1)
    assert len(set(batch.layout.cu_seqlens.diff().tolist())) > 1, "the batch should mix sequence lengths"

    out = ours(**batch.model_inputs(unpadded=True))
    out.loss.backward()
    peer_out = peer(**to_hf_batch(batch).inputs)
    peer_out.loss.backward()

    torch.testing.assert_close(out.loss, peer_out.loss, rtol=1e-5, atol=1e-5)
    peer_params, our_params = dict(peer.named_parameters()), dict(ours.named_parameters())
    # Some gradients are zero in exact arithmetic (the key bias cancels in the softmax), so the absolute
    # tolerance follows the largest gradient of the model, not each tensor's own.
    scale = max(p.grad.abs().max().item() for p in peer.parameters())
    for entry in tensor_names(config):
        peer_grad = peer_params[hf_name(entry.tf)].grad
        grad = entry.of(our_params[entry.torch].grad)[: peer_grad.shape[0]]  # without the vocabulary's padding
        torch.testing.assert_close(grad, peer_grad, rtol=1e-4, atol=1e-6 * scale, msg=entry.tf)


def test_unpadded_path_equals_the_padded_path_in_fp32(small_dataset):
    """The fast (unpadded) layout against the plain padded one of the same model: loss and every gradient."""
    torch.manual_seed(0)
    model = BertForPreTraining(named_config("tiny"))
    (batch,) = _batches(small_dataset, 8, 1)
    results = []
    for unpadded in (False, True):
        model.zero_grad()
        out = model(**batch.model_inputs(unpadded))
        out.loss.backward()
        results.append((out.loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}))
    (plain_loss, plain), (fast_loss, fast) = results
    torch.testing.assert_close(fast_loss, plain_loss, rtol=1e-6, atol=1e-6)
    scale = max(g.abs().max().item() for g in plain.values())
    for name, grad in plain.items():
        torch.testing.assert_close(fast[name], grad, rtol=1e-5, atol=1e-6 * scale, msg=name)


def test_bf16_autocast_keeps_the_residual_stream_in_bf16_and_weights_in_fp32(small_dataset):
    torch.manual_seed(0)
    model = BertForPreTraining(named_config("micro"))
    (batch,) = _batches(small_dataset, 8, 1)
    seen = []
    model.bert.encoder[0].register_forward_hook(lambda module, args, out: seen.append((args[0].dtype, out.dtype)))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(**batch.model_inputs(unpadded=True))
    out.loss.backward()
    assert seen == [(torch.bfloat16, torch.bfloat16)] and out.loss.dtype == torch.float32
    assert all(p.dtype == p.grad.dtype == torch.float32 for p in model.parameters())
    model(**batch.model_inputs(unpadded=True))  # without autocast the stream stays fp32
    assert seen[-1] == (torch.float32, torch.float32)


def _step(precision: str, **run_changes) -> tuple[TrainStep, BertForPreTraining]:
    system = load_descriptor("cpu_micro").cpu_variant({"precision": precision, "processes_per_node": 1, **run_changes})
    model = BertForPreTraining(system.model_config())
    run = system.run
    step = TrainStep(system.run, CPU, model, build_optimizer(model, run.optimizer), build_schedule(run.optimizer))
    return step, model


def test_bf16_autocast_step_trains_on_cpu(small_dataset):
    torch.manual_seed(0)
    step, model = _step("bf16")
    batches = iter(_batches(small_dataset, 16, 6))
    before = [p.detach().clone() for p in model.parameters()]
    for i in range(6):
        step(batches, i + 10)  # past the warm-up, so the learning rate is not zero
    loss, tokens = step.pop_loss_and_tokens()
    assert np.isfinite(loss) and tokens > 0
    assert all(p.dtype == torch.float32 for p in model.parameters())  # the master weights stay fp32
    assert sum(not torch.equal(a, b) for a, b in zip(before, model.parameters())) == len(before)


def _cpu_fp16_autocast_works() -> bool:
    try:
        with torch.autocast("cpu", dtype=torch.float16):
            torch.nn.functional.linear(torch.randn(2, 4), torch.randn(3, 4))
        return True
    except RuntimeError:
        return False


@pytest.mark.skipif(not _cpu_fp16_autocast_works(), reason=f"torch {torch.__version__} has no fp16 autocast on CPU")
def test_fp16_dynamic_loss_scaling_skips_overflowing_steps(small_dataset):
    torch.manual_seed(0)
    step, model = _step("fp16")
    assert step.scaler.is_enabled()
    batches = iter(_batches(small_dataset, 16, 3))
    step(batches, 10)
    scale = step.scaler.get_scale()
    before = [p.detach().clone() for p in model.parameters()]
    step(batches, 11)
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))

    # A loss scale past fp16's range makes the gradients overflow: the update is skipped, the scale backs off.
    step.scaler.update(new_scale=6e4 * 2.0**100)
    huge = step.scaler.get_scale()
    before = [p.detach().clone() for p in model.parameters()]
    step(batches, 12)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert step.scaler.get_scale() == huge * 0.5 and scale > 0


def test_fp16_loss_scaling_starts_at_the_descriptors_scale():
    assert _step("fp16")[0].scaler.get_scale() == 1024.0  # run.initial_loss_scale's default, NVIDIA's start
    assert _step("fp16", initial_loss_scale=32.0)[0].scaler.get_scale() == 32.0
    with pytest.raises(ConfigError, match="run.initial_loss_scale: must be positive"):
        load_descriptor("cpu_micro").variant({"initial_loss_scale": 0})


def test_compile_switch_compiles_the_encoder_and_matches_eager(small_dataset):
    skip_unless_compile_works()
    assert load_descriptor("cpu_micro").variant({"compile": True}).run.compile
    losses = []
    for compile_encoder in (False, True):
        torch.manual_seed(0)
        step, model = _step("fp32", compile=compile_encoder)
        batches = iter(_batches(small_dataset, 16, 3))
        for i in range(3):
            step(batches, i + 10)
        losses.append(step.pop_loss_and_tokens()[0])
    assert model.bert.encoder[0]._compiled_call_impl is not None
    assert losses[1] == pytest.approx(losses[0], rel=1e-4)


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="GPU-only: acceptance/gpu_check.sh runs them on a CUDA machine")


@needs_cuda
def test_cuda_step_does_not_synchronise_with_the_host(small_dataset):
    cuda = DistContext(0, 1, 0, 1, torch.device("cuda"))
    system = load_descriptor("cpu_micro").variant({"device": "cuda", "precision": "bf16", "processes_per_node": 1})
    run = system.run
    torch.manual_seed(0)
    model = BertForPreTraining(system.model_config()).cuda()
    step = TrainStep(system.run, cuda, model, build_optimizer(model, run.optimizer), build_schedule(run.optimizer))
    batches = [b.to(cuda.device) for b in _batches(small_dataset, 16, 4)]
    step(iter(batches[:1]), 10)  # the first step may allocate and set up kernels
    with host_reads_fail(cuda.device):
        step(iter(batches[1:]), 11)
        step(iter(batches[2:]), 12)
    loss, _ = step.pop_loss_and_tokens()
    assert np.isfinite(loss)


@needs_cuda
def test_cuda_unpadded_bf16_matches_padded_attention(small_dataset):
    torch.manual_seed(0)
    model = BertForPreTraining(named_config("tiny")).cuda()
    (batch,) = _batches(small_dataset, 16, 1)
    batch = batch.to(torch.device("cuda"))
    losses = []
    with torch.autocast("cuda", dtype=torch.bfloat16):
        for unpadded in (False, True):
            losses.append(model(**batch.model_inputs(unpadded)).loss.float().item())
    assert losses[1] == pytest.approx(losses[0], rel=2e-2)


def test_the_step_reads_nothing_back_from_the_device(small_dataset):
    """On CPU the CUDA sync detector cannot run; instead every read of a tensor back to Python fails inside the
    step (reads inside torch's C++ code are tests/cuda_path's and the CUDA test's to catch)."""
    torch.manual_seed(0)
    step, _ = _step("bf16", clip="after_allreduce")
    batches = iter(_batches(small_dataset, 16, 2))
    with host_reads_fail(torch.device("cpu")):
        step(batches, 10)
        step(batches, 11)
    loss, _ = step.pop_loss_and_tokens()  # the only read, at the print interval
    assert np.isfinite(loss)
