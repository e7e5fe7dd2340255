"""One training step of the real GPU configuration (BERT-large layer shapes, dropout 0.1, unpadded, LAMB; bf16,
then fp16 with loss scaling; DDP with the bucket-wise clip hook, and with the gradient sent in bf16) on fake
cuda:0 (see fake_cuda.py): every tensor stays on the GPU, the residual stream between encoder layers is bf16,
the step never waits for the GPU, the attention is the variable-length kernel, and each rank seeds its own
dropout. With run.token_sizes and run.cuda_graphs, the batches take a few token counts, the kernel is told one
longest sequence, torch.compile is asked for CUDA graphs over static shapes (and traces the layers for real,
traced_compile.py), and the gradients stay in place."""

from __future__ import annotations

import pytest

from bert.model.token_rounding import token_sizes
from tests.cuda_path.fake_cuda import AttentionCall, StepSetup, cuda_seeds, train_step_record

SETUPS = {
    "bf16": StepSetup(precision="bf16"),
    "fp16": StepSetup(precision="fp16", accumulate=2),
    "ddp bucket-wise clip": StepSetup(precision="bf16", world_size=2, clip="bucketwise_before_allreduce", steps=1),
    "ddp bf16 gradient": StepSetup(precision="bf16", world_size=2, grad_comm_dtype="bf16", steps=1),
    "static shapes, CUDA graphs": StepSetup(precision="bf16", token_sizes=4, cuda_graphs=True, accumulate=2,
                                            compile_warmup=True),
}


@pytest.fixture(scope="module", params=list(SETUPS))
def step(request, fake_cuda_run):
    return request.param, fake_cuda_run(train_step_record, SETUPS[request.param])


def test_the_step_runs_and_every_tensor_stays_on_the_gpu(step):
    name, record = step
    assert record.off_device == [], f"{name}: tensors off cuda:0:\n" + "\n".join(record.off_device[:10])
    assert record.error is None, f"{name}: the step stopped: {record.error}"
    assert record.ops > 500, f"{name}: the step recorded only {record.ops} operators"
    assert record.data_parallel == (SETUPS[name].world_size > 1)


def test_the_step_never_waits_for_the_gpu(step):
    name, record = step
    assert record.host_syncs == [], f"{name}: host synchronisations:\n" + "\n".join(record.host_syncs)


def test_the_residual_stream_between_encoder_layers_is_in_the_autocast_dtype(step):
    name, record = step
    dtype = "float16" if name == "fp16" else "bfloat16"
    assert record.layer_dtypes == [(dtype, dtype)] * 2, f"{name}: (input, output) of each layer"


def test_training_and_eval_attention_is_the_variable_length_kernel_with_dropout_in_training(step):
    # Training (dropout 0.1) and eval (none) both run bert::varlen_attention on the unpadded tokens: on an H200,
    # the flash kernel with cumulative sequence lengths; no padded tile, no mask.
    name, record = step
    dtype = "float16" if name == "fp16" else "bfloat16"
    setup = SETUPS[name]
    why = f"{name} ({record.error or 'ran to the end'})"
    assert record.attention == [AttentionCall("varlen_attention", dtype, 0.1, False)] * (
        setup.layers * setup.steps * setup.accumulate), why
    assert record.eval_attention == [AttentionCall("varlen_attention", dtype, 0.0, False)] * setup.layers, why


def test_each_rank_seeds_the_gpu_dropout_stream_with_its_own_seed(fake_cuda_run):
    seeds = fake_cuda_run(cuda_seeds, 1234, 4)
    assert all(len(s) == 1 for s in seeds), seeds  # every rank seeds every GPU's generator once
    assert len({s[0] for s in seeds}) == 4, seeds


def test_static_shapes_compile_under_cuda_graphs_and_tell_the_kernel_one_longest_sequence(step):
    name, record = step
    setup = SETUPS[name]
    if not setup.cuda_graphs:
        assert record.compiles == [] and not record.grads_kept, name  # run.compile is off in the other setups
        return
    assert record.error is None, record.error
    sizes = token_sizes(setup.token_sizes, setup.sequences, setup.max_length)
    assert set(record.token_counts) <= set(sizes.sizes)
    # The batches' longest sequences differ, below max_length, yet every call passes the same constant: a
    # CUDA graph replays the max_seqlen it was recorded with.
    assert min(record.longest) < setup.max_length and len(set(record.longest)) > 1, record.longest
    calls = setup.layers * (setup.steps * setup.accumulate + 1)  # and the eval forward
    assert record.max_lens == [setup.max_length] * calls
    assert record.compiles == [{"dynamic": False, "fullgraph": True, "mode": "reduce-overhead"}] * setup.layers
    # The gradients keep their memory, zeroed in place: a .grad the backward graph allocated would be
    # overwritten by the next micro-batch's replay.
    assert record.grads_kept
