"""torch.compile on fake CUDA, traced for real: Dynamo (fullgraph, dynamic as the trainer asks) and, with the
"aot_eager" backend, AOTAutograd (the forward and the backward), whose graphs then run as they are. Only what
needs a GPU is left out: inductor's code generation and the recording of CUDA graphs ("reduce-overhead").

`compile_without_gpu_code` stands in for inductor's code generation while a scenario runs the trainer: it records
the options of each torch.compile call and a summary of every graph Dynamo hands to inductor.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from unittest import mock

import torch
import torch._dynamo
import torch._inductor.compile_fx

from bert.model.varlen_attention import _varlen_attention

VARLEN = _varlen_attention._opoverload  # bert::varlen_attention: (q, k, v, cu_seqlens, max_len, dropout_p)
SYMBOLIC = -1  # an argument that Dynamo traced as a symbol (dynamic shapes), not as a constant


@dataclass(frozen=True)
class TracedGraph:
    """One graph Dynamo traced whole (a graph break under fullgraph=True raises instead)."""

    varlen: tuple[tuple[int | float, ...], ...]  # (max_len, dropout_p) of each bert::varlen_attention call
    foreach_ops: int  # the optimizer's multi-tensor operators (the compiled LAMB update)
    grad_enabled: bool  # traced for training (with a backward) or for eval
    input_devices: tuple[str, ...]  # the devices of the tensors the graph takes (parameters, activations)

    @property
    def kind(self) -> str:
        return "layer" if self.varlen else "lamb" if self.foreach_ops else "other"


def _summary(graph: torch.fx.GraphModule, example_inputs: list) -> TracedGraph:
    calls = [node for node in graph.graph.nodes if node.op == "call_function"]
    varlen = tuple(tuple(arg if isinstance(arg, (int, float)) else SYMBOLIC for arg in node.args[4:6])
                   for node in calls if node.target is VARLEN)
    foreach = sum("_foreach_" in str(node.target) for node in calls)
    devices = tuple(sorted({str(t.device) for t in example_inputs if isinstance(t, torch.Tensor)}))
    return TracedGraph(varlen, foreach, torch.is_grad_enabled(), devices)


def _recorded(graphs: list[TracedGraph], backend: str, graph: torch.fx.GraphModule, example_inputs: list):
    graphs.append(_summary(graph, example_inputs))
    return torch._dynamo.lookup_backend(backend)(graph, example_inputs)


@contextlib.contextmanager
def compile_without_gpu_code(compiles: list[dict], graphs: list[TracedGraph], backend: str = "aot_eager"):
    """While open, torch.compile is the real one, with every option the trainer passes (inductor's wrapper
    checks them and applies the mode), and only inductor's code generation is replaced: each graph Dynamo hands
    to inductor is appended to `graphs` and compiled with `backend` ("eager": Dynamo's graph; "aot_eager":
    AOTAutograd's forward and backward). The options of each torch.compile call are appended to `compiles`."""
    compile = torch.compile

    def recording(model=None, **options):
        compiles.append(options)
        return compile(model, **options)

    def without_gpu_code(graph, example_inputs, **inductor_options):
        return _recorded(graphs, backend, graph, example_inputs)

    with mock.patch.object(torch, "compile", recording), \
            mock.patch.object(torch._inductor.compile_fx, "compile_fx", without_gpu_code):
        yield
