"""benchmarks/layer_proxies.py on one BERT-large encoder layer at 56 MLPerf-length sequences, on fake CUDA: the
compiled layer (inductor's own partition of forward and backward) saves no more for its backward than the eager one
and launches fewer kernels; the FP8 layer (torchao's Float8Linear, as a GPU runs it: torch._scaled_mm) traces whole
with Dynamo (fullgraph, one graph), as the bf16 layer does, with its four matmuls in FP8, and saves less."""

import pytest

from benchmarks.layer_proxies import FORMS, layer_proxy


@pytest.fixture(scope="module")
def proxies(fake_cuda_run):
    return {form: fake_cuda_run(layer_proxy, form) for form in FORMS if form != "fp8 eager"}  # the others compare


def test_the_compiled_layer_saves_at_most_what_the_eager_one_saves_and_launches_fewer_kernels(proxies):
    eager, compiled = proxies["eager"], proxies["compiled"]
    assert compiled.tokens == eager.tokens > 10_000
    assert compiled.saved_bytes <= eager.saved_bytes, (compiled, eager)
    assert compiled.forward_kernels + compiled.backward_kernels < eager.forward_kernels + eager.backward_kernels


def test_the_fp8_layer_traces_whole_with_its_matmuls_in_fp8_and_saves_less(proxies):
    compiled, fp8 = proxies["compiled"], proxies["fp8 compiled"]
    assert (compiled.graphs, fp8.graphs) == (1, 1)  # fullgraph: a graph break would have raised
    assert (compiled.scaled_mm, fp8.scaled_mm) == (0, 4)  # query/key/value, attention output, intermediate, output
    assert fp8.saved_bytes < compiled.saved_bytes, (fp8, compiled)
