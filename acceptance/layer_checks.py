"""The encoder layer's checks of a GPU machine (`python -m acceptance.gpu_check layer|speed|graphs`): which attention
path and kernels one BERT-large layer takes and its output dtype (layer), the compiled layer and the compiled LAMB
update against their eager forms (speed), and a static-shape layer with and without CUDA graphs (graphs). Each
prints what it found and ends with one line `<check>: ok ...` or `<check>: FAILED ...`."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable

import torch

from acceptance.sizes import BERT_DROPOUT, SIZES, Sizes, descriptor_config
from benchmarks.common.lamb_pair import DRIFT_TOLERANCE, LambPair
from benchmarks.common.profiling import profile_once, summary
from benchmarks.common.timing import median_seconds
from bert.model.attention import attention_mask
from bert.model.config import BertConfig
from bert.model.padding import TokenLayout
from bert.model.pretraining import BertForPreTraining, EncoderLayer, choose_kernels, compile_layer
from bert.model.token_rounding import TokenSizes
from bert.simulate.load_balance import named_lengths


def layer_check(device: torch.device) -> bool:
    """One encoder layer of BERT-large in train mode (dropout 0.1) on the unpadded tokens of full-length
    sequences, bf16 autocast: which SDPA backend torch picks for its attention, the kernels of a forward and
    backward, the dtype it hands to the next layer. (The CPU rehearsal's layer is the micro model's: a CPU's
    bf16 weight gradients of BERT-large take a minute.)"""
    sizes = SIZES[device.type]
    config = descriptor_config(sizes.model, **BERT_DROPOUT)
    torch.manual_seed(0)
    layer = EncoderLayer(config).to(device).train()
    layout = TokenLayout.from_lengths(torch.full((sizes.sequences,), sizes.length), sizes.length).to(device)
    x = torch.randn(layout.num_tokens, config.hidden_size, device=device, dtype=torch.bfloat16, requires_grad=True)
    q = torch.randn(sizes.sequences, config.num_heads, sizes.length, config.head_size, device=device,
                    dtype=torch.bfloat16)  # the shapes and dtype the layer's attention gets
    choice = torch._fused_sdp_choice(q, q, q, attention_mask(layout, device), config.attention_dropout, False)
    backend = {int(getattr(torch.nn.attention.SDPBackend, n)): n for n in dir(torch.nn.attention.SDPBackend)
               if n.isupper()}.get(int(choice), str(choice))
    print(f"SDPA backend torch picks for the padded fallback ({sizes.sequences} x {sizes.length}, "
          f"{config.num_heads} heads of {config.head_size}, bf16, boolean key mask, dropout "
          f"{config.attention_dropout}): {backend}")
    choose_kernels(layer, device)  # as TrainStep decides, before the first forward
    flash = layer.attention.flash_kernel
    path = "variable-length flash kernel" if flash else "padded fallback (SDPA with a key mask)"
    print(f"attention path of the training step (bert.model.attention.unpadded_attention): {path}")

    def forward_backward() -> torch.Tensor:
        with torch.autocast(device.type, dtype=torch.bfloat16):
            out = layer(x, layout, None)
        out.float().square().mean().backward()
        return out

    out = forward_backward()  # warm-up: kernel selection, allocations
    prof, wall = profile_once(forward_backward, device)
    print(f"one layer forward + backward, {sizes.sequences} x {sizes.length} tokens:")
    print("\n".join(summary(prof, device, wall)))
    print(f"layer output dtype {out.dtype} (the residual stream under bf16 autocast)")
    varlen_wanted = device.type == "cuda"  # the point of the kernel: on a GPU, training must take it
    ok = out.dtype == torch.bfloat16 and flash == varlen_wanted
    print(f"layer: {'ok' if ok else 'FAILED'}: {path}, output {out.dtype}")
    return ok


TIMED_REPEATS = 5  # calls timed per side, after the one that compiles


def _mlperf_batches(sizes: Sizes, hidden: int, device: torch.device, rounding: TokenSizes | None = None,
                    dtype: torch.dtype = torch.float32) -> list[tuple[torch.Tensor, TokenLayout]]:
    """Three layer inputs of `sizes.sequences` MLPerf-length sequences each (three token counts, or one when
    `rounding` rounds them), with their layouts."""
    batches = []
    for k in range(3):
        lengths = named_lengths("mlperf-wiki", sizes.sequences, seed=k, max_len=sizes.length)
        layout = (TokenLayout.from_lengths(torch.from_numpy(lengths), sizes.length) if rounding is None
                  else rounding.layout(lengths)).to(device)
        batches.append((torch.randn(layout.num_tokens, hidden, device=device, dtype=dtype, requires_grad=True),
                        layout))
    return batches


def _layer_steps(module: torch.nn.Module, batches: list, device: torch.device,
                 graphs: bool = False) -> Callable[[], None]:
    """Forward and backward of `module` over `batches` under bf16 autocast (a new CUDA graph round each, with
    `graphs`)."""
    def run() -> None:
        for x, layout in batches:
            if graphs:
                torch.compiler.cudagraph_mark_step_begin()
            with torch.autocast(device.type, dtype=torch.bfloat16):
                module(x, layout, None).float().square().mean().backward()
    return run


def _layer_twins(device: torch.device, dropout: float) -> tuple[BertConfig, EncoderLayer, EncoderLayer]:
    """An encoder layer of the check's model in train mode, its kernels chosen as TrainStep chooses them, and an
    identical copy of it."""
    config = descriptor_config(SIZES[device.type].model, hidden_dropout=dropout, attention_dropout=dropout)
    torch.manual_seed(0)
    layer = EncoderLayer(config).to(device).train()
    choose_kernels(layer, device)
    return config, layer, copy.deepcopy(layer)


def speed_check(device: torch.device) -> bool:
    """The compiled forms against their eager ones, in one process: an encoder layer (regional compilation,
    dynamic token counts, dropout 0.1) over batches of MLPerf-length sequences, and the LAMB update of the model
    (benchmarks.common.lamb_pair). Prints each one's time and the ratio; the compiled update must stay within
    DRIFT_TOLERANCE of the eager one. Both are the step stage's graphs, which inductor's cache (the check's own,
    TORCHINDUCTOR_CACHE_DIR) holds compiled already: the time this stage adds is Dynamo's tracing."""
    sizes = SIZES[device.type]
    config, layer, compiled_layer = _layer_twins(device, dropout=0.1)
    compile_layer(compiled_layer)
    # Three token counts: the compiled layer must not recompile for each.
    batches = _mlperf_batches(sizes, config.hidden_size, device, dtype=torch.bfloat16)
    start = time.perf_counter()
    _layer_steps(compiled_layer, batches, device)()
    compile_s = time.perf_counter() - start
    eager_s = median_seconds(_layer_steps(layer, batches, device), device, TIMED_REPEATS)
    compiled_s = median_seconds(_layer_steps(compiled_layer, batches, device), device, TIMED_REPEATS)
    tokens = sum(layout.num_tokens for _, layout in batches)
    print(f"encoder layer forward + backward, 3 batches of {sizes.sequences} MLPerf-length sequences ({tokens} "
          f"tokens), bf16, dropout 0.1: eager {eager_s * 1e3:.2f} ms, compiled {compiled_s * 1e3:.2f} ms (compiled "
          f"in {compile_s:.1f} s): compiled_over_eager_layer={compiled_s / eager_s:.3f}")

    with torch.device(device):  # the step stage's model: inductor's cache holds its compiled update already
        model = BertForPreTraining(descriptor_config(sizes.model))
    pair = LambPair(model)
    pair.warm_up(device)
    for r in range(TIMED_REPEATS):
        pair.round(r, 1, device)
    eager_s, compiled_s = (side.seconds_per_update("wall") for side in pair.sides)
    drift, scale = pair.drift()
    print(f"LAMB update of BERT-{sizes.model} with {len(model.bert.encoder)} layers ({pair.parameters:,} parameters): "
          f"eager {eager_s * 1e3:.2f} ms, compiled {compiled_s * 1e3:.2f} ms (compiled in {pair.compile_seconds:.1f} "
          f"s), largest difference after {1 + TIMED_REPEATS} updates {drift:.2g} (at most {DRIFT_TOLERANCE:g} of the "
          f"largest weight, {scale:.3g}): compiled_over_eager_lamb={pair.ratio('wall'):.3f}")
    ok = pair.agree() and all(x.grad is not None and x.grad.isfinite().all() for x, _ in batches)
    print(f"speed: {'ok' if ok else 'FAILED'}")
    return ok


def graphs_check(device: torch.device) -> bool:
    """An encoder layer compiled for static shapes (run.token_sizes) against the same layer
    recorded under CUDA graphs (run.cuda_graphs), forward and backward in train mode over micro-batches rounded
    to one size, so that each side compiles once. On a CPU, reduce-overhead records no graph: the rehearsal runs
    the code path only. Both sides must give the same gradient (the graph replays the same kernels)."""
    sizes = SIZES[device.type]
    config, static, graphed = _layer_twins(device, dropout=0.0)
    for p in (*static.parameters(), *graphed.parameters()):  # kept in place, as the step keeps them under graphs
        p.grad = torch.zeros_like(p)
    compile_layer(static, static=True)
    # On a CPU reduce-overhead records no graph and both sides run the same kernels: compiled alike, inductor's cache
    # compiles them once (tests/cuda_path traces the CUDA graphs' compile options).
    compile_layer(graphed, static=True, cuda_graphs=device.type == "cuda")
    rounding = TokenSizes.spread(1, sizes.sequences, sizes.length)  # one size: every batch has one shape
    batches = _mlperf_batches(sizes, config.hidden_size, device, rounding)
    timings = {}
    for name, module, graphs in (("static", static, False), ("graphs", graphed, True)):
        for x, _ in batches:
            x.grad = None
        start = time.perf_counter()
        _layer_steps(module, batches, device, graphs)()
        compile_s = time.perf_counter() - start
        timings[name] = (median_seconds(_layer_steps(module, batches, device, graphs), device, TIMED_REPEATS),
                         compile_s)
    grads = [p.grad for p in static.parameters()], [p.grad for p in graphed.parameters()]
    agree = all(torch.allclose(a, b, rtol=1e-2, atol=1e-3) for a, b in zip(*grads))
    (static_s, static_compile), (graphs_s, graphs_compile) = timings["static"], timings["graphs"]
    print(f"encoder layer forward + backward, 3 batches of {sizes.sequences} rounded to {rounding.sizes[0]} tokens, "
          f"bf16: compiled {static_s * 1e3:.2f} ms (compiled in {static_compile:.1f} s), under CUDA graphs "
          f"{graphs_s * 1e3:.2f} ms (in {graphs_compile:.1f} s): cuda_graphs_over_compiled_layer="
          f"{graphs_s / static_s:.3f}")
    print(f"graphs: {'ok' if agree else 'FAILED: the gradients differ'}")
    return agree
