"""Measured proxies of one BERT-large encoder layer's speed, without a GPU: the bytes of activations it saves for
its backward and the kernels its forward and backward launch, eager (the peer) against compiled and FP8 (ours).

One layer of systems/h200_1x1.json's model (dropout 0.1, bf16 autocast, the variable-length flash kernel) runs its
forward and backward on a micro-batch of --sequences MLPerf-length sequences (56: h200_1x1's micro-batch) on fake
CUDA (tests/cuda_path/fake_cuda.py: tensors that claim cuda:0 and compute nothing), in four forms:
- eager: the saved bytes are what autograd's saved-tensor hooks see (each storage once, parameters left out; the
  bf16 copies of the weights autocast makes count), the kernels are counted by tests/cuda_path/kernel_count.py;
- compiled: torch.compile's own inductor pipeline (Dynamo with fullgraph, inductor's decompositions, AOTAutograd
  and inductor's min-cut partitioner, which decides what the backward recomputes), with only inductor's code
  generation left out (it needs a GPU): the saved bytes are the partition's (the backward graph's inputs that are
  not gradients or parameters); the kernels are a model of inductor's: one per matmul or other extern operator,
  and one per group of connected pointwise and reduction operators between them (inductor may split a group, so
  the count is a lower bound);
- fp8 eager and fp8 compiled: the same with the layer's Linear layers in FP8 (bert.model.fp8, torchao's Float8Linear
  on a GPU: torch._scaled_mm).
The last line is `compiled_over_eager_saved_bytes=<x>` (goal: at most 1).

    python -m benchmarks.layer_proxies [--sequences 56] [--no-results]

Results (with date, machine and torch version) go to benchmarks/layer_proxies_results.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import torch
import torch._inductor.config
import torch._inductor.fx_passes.joint_graph
from torch.multiprocessing.reductions import StorageWeakRef

from benchmarks.common.results_file import add_no_results_flag, print_and_record
from bert.model.padding import TokenLayout
from bert.model.pretraining import EncoderLayer, choose_kernels
from bert.simulate.load_balance import named_lengths
from bert.system import load_descriptor

RESULTS = Path(__file__).with_name("layer_proxies_results.md")
FORMS = ("eager", "compiled", "fp8 eager", "fp8 compiled")
MIB = 2**20


@dataclass(frozen=True)
class LayerProxy:
    form: str
    tokens: int
    saved_bytes: int  # activations saved for the backward
    forward_kernels: int
    backward_kernels: int
    graphs: int = 0  # compiled forms: the graphs Dynamo traced (1 for the training layer: no graph break)
    scaled_mm: int | None = None  # compiled forms: the FP8 matmuls (torch._scaled_mm) of the forward graph

    @property
    def bytes_per_token(self) -> float:
        return self.saved_bytes / self.tokens


def _storage(t: torch.Tensor) -> StorageWeakRef:
    return StorageWeakRef(t.untyped_storage())


def _layer_and_input(sequences: int, fp8: bool):
    """The layer on fake cuda:0 (its kernels chosen as TrainStep chooses them), its input and layout."""
    from bert.model.fp8 import encoder_to_fp8
    from tests.cuda_path.fake_cuda import CUDA, FakeCuda

    fake = FakeCuda()
    config = load_descriptor("h200_1x1").model_config()
    with torch.device("meta"):
        layer = EncoderLayer(config)
    layer = fake.module(layer).train()
    choose_kernels(layer, CUDA)
    if fp8:
        encoder_to_fp8(layer, CUDA)
    lengths = named_lengths("mlperf-wiki", sequences, seed=0, max_len=config.max_position_embeddings)
    layout = TokenLayout.from_lengths(torch.from_numpy(lengths), config.max_position_embeddings).map(fake.tensor)
    x = fake.tensor(torch.empty(layout.num_tokens, config.hidden_size, device="meta", dtype=torch.bfloat16))
    return fake, layer, x.requires_grad_(), layout


def _graph_kernels(graph: torch.fx.Graph) -> int:
    """Inductor's kernels for `graph`, modelled: its extern operators (matmuls, attention, custom operators, the
    random seeds) and the groups of connected pointwise and reduction operators between them."""
    from torch._inductor.lowering import lowerings

    calls = [n for n in graph.nodes if n.op == "call_function"]
    # No kernel: views, tuple items, and the device_put that fake CUDA's backward adds (fake_cuda.py).
    views = {n for n in calls if getattr(n.target, "is_view", False) or n.target in (
        torch.ops.aten._unsafe_view.default, torch.ops.prims.device_put.default) or "getitem" in str(n.target)}
    extern = {n for n in calls if n not in views and (n.target not in lowerings or "mm" in str(n.target)
                                                      or n.target is torch.ops.prims.inductor_seeds.default)}
    group = {n: n for n in calls if n not in views and n not in extern}

    def root(n):
        while group[n] is not n:
            n = group[n]
        return n

    for n in group:  # one group with the fused operators it reads (through views)
        stack = list(n.all_input_nodes)
        while stack:
            m = stack.pop()
            if m in views:
                stack.extend(m.all_input_nodes)
            elif m in group:
                group[root(m)] = root(n)
    return len(extern) + len({root(n) for n in group})


def _hint(value: int | torch.SymInt) -> int:
    """A size traced with dynamic shapes, at the sizes the trace saw."""
    return value.node.hint if isinstance(value, torch.SymInt) else int(value)


def _compiled_proxy(form: str, sequences: int) -> LayerProxy:
    from torch._functorch.aot_autograd import make_boxed_func
    from torch._inductor.compile_fx import compile_fx

    fake, layer, x, layout = _layer_and_input(sequences, fp8=form.startswith("fp8"))
    graphs: list[torch.fx.GraphModule] = []  # AOTAutograd's forward and backward, as inductor gets them
    parameters: list[set[str]] = []  # of each Dynamo graph: its inputs that are parameters, as AOTAutograd names them

    def without_gpu_code(gm: torch.fx.GraphModule, example_inputs, **options):
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    def inductor(gm: torch.fx.GraphModule, example_inputs):
        inputs = [n for n in gm.graph.nodes if n.op == "placeholder"]
        parameters.append({f"primals_{i + 1}" for i, n in enumerate(inputs) if "_parameters_" in n.name})
        return compile_fx(gm, example_inputs, inner_compile=without_gpu_code)

    torch._dynamo.reset()
    compiled = torch.compile(layer, backend=inductor, fullgraph=True, dynamic=True)  # as compile_layer asks
    # Without inductor's pattern rewrites (attention written as matmuls and softmax, matmul padding, none of which
    # this layer has): they build their example patterns on a real GPU.
    with fake.mode, torch._dynamo.config.patch(specialize_float=True), \
            torch._inductor.config.patch(pattern_matcher=False), \
            mock.patch.object(torch._inductor.fx_passes.joint_graph, "lazy_init", lambda *args, **kwargs: None):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = compiled(x, layout, None)
        out.backward(torch.ones_like(out))
    forward, backward = graphs
    saved = {_storage(n.meta["val"]): n.meta["val"] for n in backward.graph.nodes if n.op == "placeholder"
             and not n.name.startswith("tangents") and n.name not in parameters[0]
             and isinstance(n.meta.get("val"), torch.Tensor)}  # each storage once: q, k and v are views of one
    saved_bytes = sum(_hint(t.untyped_storage().nbytes()) for t in saved.values())
    scaled = sum(n.target is torch.ops.aten._scaled_mm.default for n in forward.graph.nodes)
    return LayerProxy(form, layout.num_tokens, saved_bytes, _graph_kernels(forward.graph),
                      _graph_kernels(backward.graph), len(parameters), scaled)


def _eager_proxy(form: str, sequences: int) -> LayerProxy:
    from tests.cuda_path.kernel_count import KernelCounter

    fake, layer, x, layout = _layer_and_input(sequences, fp8=form.startswith("fp8"))
    params = {_storage(p) for p in layer.parameters()}
    saved: dict[StorageWeakRef, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        ref = _storage(t)
        if ref not in params:
            saved[ref] = t.untyped_storage().nbytes()
        return t

    with fake.mode:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), KernelCounter() as forward:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                out = layer(x, layout, None)
        with KernelCounter() as backward:
            out.backward(torch.ones_like(out))
    return LayerProxy(form, layout.num_tokens, sum(saved.values()), forward.count.total, backward.count.total)


def layer_proxy(form: str, sequences: int = 56) -> LayerProxy:
    """One of FORMS, measured on fake CUDA (call it in a process that ran tests.cuda_path.fake_cuda.install())."""
    return _compiled_proxy(form, sequences) if form.endswith("compiled") else _eager_proxy(form, sequences)


def _torchao_version() -> str:
    from importlib.metadata import version

    return version("torchao")


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sequences", type=int, default=56, help="sequences in the micro-batch (MLPerf length mix)")
    add_no_results_flag(p)
    return p.parse_args(argv)


def main(argv: list[str]) -> float:
    from tests.cuda_path.fake_cuda import install

    args = parse_args(argv)
    install()
    start = time.perf_counter()
    rows = {form: layer_proxy(form, args.sequences) for form in FORMS}
    eager = rows["eager"]
    lines = [f"one BERT-large encoder layer (h200_1x1: dropout 0.1, bf16 autocast, variable-length flash attention), "
             f"forward and backward of {args.sequences} MLPerf-length sequences ({eager.tokens:,} tokens) on fake "
             f"CUDA; {time.perf_counter() - start:.0f} s",
             f"  {'form':<13} {'saved MiB':>9} {'bytes/token':>11} {'fwd kernels':>11} {'bwd kernels':>11} "
             f"{'FP8 matmuls':>11}"]
    for row in rows.values():
        lines.append(f"  {row.form:<13} {row.saved_bytes / MIB:>9.1f} {row.bytes_per_token:>11,.0f} "
                     f"{row.forward_kernels:>11} {row.backward_kernels:>11} {row.scaled_mm if row.graphs else '-':>11}")
    compiled, fp8 = rows["compiled"], rows["fp8 compiled"]
    kernels = {form: row.forward_kernels + row.backward_kernels for form, row in rows.items()}
    lines += [f"compiled over eager: saved bytes x{compiled.saved_bytes / eager.saved_bytes:.3f}, kernels "
              f"x{kernels['compiled'] / kernels['eager']:.3f}; fp8 compiled over compiled: saved bytes "
              f"x{fp8.saved_bytes / compiled.saved_bytes:.3f}, kernels "
              f"x{kernels['fp8 compiled'] / kernels['compiled']:.3f} (torchao {_torchao_version()})",
              "kernels: eager counted by a model of CUDA's launches (tests/cuda_path/kernel_count.py), compiled "
              "modelled as inductor's extern calls plus fused groups (a lower bound)",
              f"compiled_over_eager_saved_bytes={compiled.saved_bytes / eager.saved_bytes:.3f}"]
    print_and_record(RESULTS, lines, args, argv)
    return compiled.saved_bytes / eager.saved_bytes


if __name__ == "__main__":
    main(sys.argv[1:])
