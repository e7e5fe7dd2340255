"""The step's settings (fields of the run block): the precision and loss scaling, what is compiled, the clipping
(bert.distributed.clip_settings), the attention layout and the gradient accumulation, read by bert.step, the
compile warm-up and the simulator."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bert.distributed.clip_settings import ClipSpec
from bert.typed_config import ranged

Precision = Literal["fp32", "bf16", "fp16", "fp8"]
MAX_TOKEN_SIZES = 64


@dataclass(frozen=True, kw_only=True)
class PrecisionSpec:
    precision: Precision = "fp32"
    """The forward's and backward's arithmetic: "fp32", autocast to "bf16" or "fp16" (with dynamic loss
    scaling; CUDA only), or "fp8" (the encoder's Linear layers in FP8: Transformer Engine where importable, else
    torchao's float8 training; bf16 autocast everywhere else)."""
    initial_loss_scale: float = ranged(0, low_open=True, default=1024.0)
    """fp16: the dynamic loss scale to start from (NVIDIA's MLPerf BERT configurations set 1024; torch's 2^16
    overflows in the first steps, and each overflow skips an update)."""
    max_loss_scale_overflows: int = ranged(1, default=24)
    """fp16: more consecutive loss-scale overflows than this abort the run (the scale has fallen 2^N-fold)."""


@dataclass(frozen=True, kw_only=True)
class CompileSpec:
    compile: bool | Literal["required"] = False
    """torch.compile each encoder layer. A part that fails to compile or to run compiled in the warm-up before
    the clock runs eager instead, said in the log and on stderr; "required": such a failure ends the run (exit
    status 2)."""
    token_sizes: int = ranged(0, MAX_TOKEN_SIZES, default=0, note="each size is one more compiled graph")
    """Rounds each micro-batch's unpadded token count up to one of this many sizes with filler sequences that no
    loss reads (bert.model.token_rounding), so that the encoder meets a few fixed shapes; 0: off."""
    cuda_graphs: bool = False
    """Captures the compiled encoder layers under CUDA graphs (torch.compile's "reduce-overhead" mode): one graph
    per token size, replayed without a kernel launch from the host each."""

    def problems(self) -> list[tuple[str, str]]:
        if self.cuda_graphs and self.token_sizes == 0:
            return [("cuda_graphs", "a CUDA graph replays one shape: set run.token_sizes (e.g. 16) so the token "
                                    "counts take a few, or cuda_graphs to false")]
        if self.cuda_graphs and not self.compile:
            return [("cuda_graphs", "captures the compiled encoder layers: set run.compile to true, or cuda_graphs to "
                                    "false")]
        return []


@dataclass(frozen=True, kw_only=True)
class StepSpec(PrecisionSpec, CompileSpec, ClipSpec):
    """Everything one optimizer step reads of the run block."""

    unpadded: bool = True
    """The encoder runs on the real tokens only (variable-length attention), not on sequences padded to the
    batch's longest."""
    gradient_accumulation_steps: int = ranged(1, default=1)
    """Micro-batches per optimizer step, each of the per-process batch. MLPerf key gradient_accumulation_steps."""

    def problems(self) -> list[tuple[str, str]]:
        if self.token_sizes and not self.unpadded:
            return [("token_sizes", "rounds the unpadded layout's token count: set run.unpadded to true, or "
                                    "token_sizes to 0")]
        return []
