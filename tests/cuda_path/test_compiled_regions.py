"""Every compiled region of the trainer traced as a GPU traces it: the training step of the real GPU configuration
(BERT-large layer shapes, dropout 0.1, unpadded, 2 micro-batches a step) with run.compile and LAMB's update
compiled, on fake cuda:0 (fake_cuda.py), through torch.compile for real (traced_compile.py): Dynamo with
fullgraph=True, as the trainer asks, and AOTAutograd's forward and backward. Each region must trace whole (a host
query or a data-dependent op in it is a graph break, an error here), every graph must take the GPU's tensors
only, the layer's graph must hold the variable-length flash kernel (with dropout in training, without in eval),
and the recompilations must stay within what the run allows: one graph per token size with run.token_sizes,
one without (dynamic shapes), one LAMB graph per parameter group, all of them before the clock where the
warm-up (bert.compile_warmup) ran. Only inductor's code generation and
CUDA graph recording are left out: they need a GPU (acceptance/gpu_check.sh)."""

from __future__ import annotations

import pytest

from tests.cuda_path.fake_cuda import StepSetup, train_step_record
from tests.cuda_path.traced_compile import SYMBOLIC

REGIONS = {
    "dynamic shapes, bf16, Dynamo's graphs run as traced": StepSetup(layers=1, compile=True, compiled_lamb=True,
                                                                     accumulate=2, backend="eager"),
    "dynamic shapes, fp16, AOTAutograd, warmed up": StepSetup(layers=1, precision="fp16", compile=True,
                                                              compiled_lamb=True, accumulate=2, compile_warmup=True),
    # LAMB's update eager here: the update apex's FusedLAMB would replace where apex is importable.
    "token sizes, fp16, AOTAutograd, apex importable, warmed up": StepSetup(
        layers=1, precision="fp16", compile=True, token_sizes=4, accumulate=2, apex=True, compile_warmup=True),
}


@pytest.fixture(scope="module", params=list(REGIONS))
def traced(request, fake_cuda_run):
    return request.param, REGIONS[request.param], fake_cuda_run(train_step_record, REGIONS[request.param])


def test_every_compiled_region_traces_whole_and_takes_the_gpus_tensors_only(traced):
    name, setup, record = traced
    assert record.error is None, f"{name}: {record.error}"
    assert record.off_device == [] and record.host_syncs == [], (name, record.off_device, record.host_syncs)
    assert {g.kind for g in record.graphs} == {"layer", "lamb"} - ({"lamb"} if not setup.compiled_lamb else set())
    assert all(g.input_devices == ("cuda:0",) for g in record.graphs), (name, record.graphs)
    lamb = [{"fullgraph": True, "dynamic": False}] if setup.compiled_lamb else []
    layers = [{"dynamic": not setup.token_sizes, "fullgraph": True, "mode": None}] * setup.layers
    assert record.compiles == lamb + layers, name


def test_the_layer_graph_holds_the_flash_kernel_with_dropout_in_training_only(traced):
    name, setup, record = traced
    layers = [g for g in record.graphs if g.kind == "layer"]
    training, evaluation = [g for g in layers if g.grad_enabled], [g for g in layers if not g.grad_enabled]
    assert training and evaluation, (name, layers)
    assert all(len(g.varlen) == 1 and g.varlen[0][1] == 0.1 for g in training), (name, training)
    assert all(len(g.varlen) == 1 and g.varlen[0][1] == 0.0 for g in evaluation), (name, evaluation)


def test_recompilations_stay_within_what_the_run_allows(traced):
    name, setup, record = traced
    training = [g for g in record.graphs if g.kind == "layer" and g.grad_enabled]
    lamb = [g for g in record.graphs if g.kind == "lamb"]
    assert len(lamb) == 2 * setup.compiled_lamb, (name, record.graphs)  # one per parameter group (their lists differ)
    if setup.compile_warmup:  # bert.compile_warmup compiled every shape the steps and the eval meet, before them
        warmed = record.graphs_in_compile_warmup
        assert warmed == len(record.graphs), (name, record.graphs[warmed:])
        assert len(training) == (setup.token_sizes or 1), (name, training)
    elif setup.token_sizes:  # one graph per size met
        assert len(training) == len(set(record.token_counts)) > 1, (name, record.token_counts)
    else:  # shapes and the longest sequence as symbols, the model's floats as constants: one graph
        assert len(set(record.token_counts)) > 2 and len(training) == 1, (name, record.token_counts, training)
    if setup.token_sizes:  # each told the one longest sequence a CUDA graph replays
        assert {g.varlen[0][0] for g in training} == {setup.max_length}, (name, training)
    else:
        assert all(g.varlen[0][0] == SYMBOLIC for g in training), (name, training)


def test_with_apex_the_compiled_layers_keep_torchs_layer_norm_and_fp16_never_reads_the_overflow_flag(traced):
    # NVIDIA's containers have apex: its FusedLayerNorm (a CUDA extension call, which Dynamo cannot trace) stays
    # out of the compiled layers, and its FusedLAMB, which takes no overflow flag on the device, is not chosen:
    # GradScaler would read the flag back to the host every fp16 step (a host synchronisation in the record).
    name, setup, record = traced
    if not setup.apex:
        assert record.apex_modules == [], name
        return
    assert record.apex_modules == ["bert.embeddings.layer_norm", "mlm.layer_norm"], record.apex_modules
    assert record.optimizer == "Lamb" and record.error is None and record.host_syncs == [], (record.optimizer,
                                                                                             record.host_syncs)
