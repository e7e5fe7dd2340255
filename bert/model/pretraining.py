"""BERT for pre-training: embeddings, post-LayerNorm encoder, masked-LM head (tied decoder) and NSP head.

One model, two token layouts. `unpadded=True` (the default) runs the whole encoder on the real tokens only
(see bert.model.padding); `unpadded=False` runs it on [B, L] with a key mask. Either way the masked-LM head runs on
the masked positions alone, gathered by indices the data pipeline computed on the host, so no step waits on the
device.

Parameters are one tensor per reference TF variable (see bert.model.tf_names), except the attention's query, key and
value, stacked in one [3H, H] parameter (and one [3H] bias) so that the QKV matmul takes it as it is: no
concatenation every micro-batch. bert.model.tf_names names each third, and LAMB keeps one trust ratio per third, as
the reference has one per variable (bert.optim.lamb). The encoder's LayerNorms are torch's, run in the residual
stream's dtype (`norm_into`); the embeddings' and the masked-LM head's are apex's fused kernel where apex is
importable (bert.model.fused). `compile_encoder` compiles each encoder layer with torch.compile.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from bert.model.attention import attention_mask, padded_attention, unpadded_attention
from bert.model.config import BertConfig
from bert.model.fused import is_layer_norm, layer_norm
from bert.model.padding import TokenLayout, gather_rows, unpad
from bert.model.varlen_attention import flash_kernel_usable


@dataclass
class PretrainingOutput:
    loss: torch.Tensor
    mlm_loss: torch.Tensor
    nsp_loss: torch.Tensor
    mlm_correct: torch.Tensor  # number of masked tokens predicted right (a 0-d tensor)
    mlm_count: int  # number of masked tokens, known on the host


class Embeddings(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.padded_vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.layer_norm = layer_norm(config.hidden_size, config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout)

    def forward(self, input_ids: torch.Tensor, segment_ids: torch.Tensor, positions: torch.Tensor):
        x = self.word_embeddings(input_ids) + self.position_embeddings(positions)
        x = x + self.token_type_embeddings(segment_ids)
        return self.dropout(self.layer_norm(x).to(_activation_dtype(x)))


def _activation_dtype(x: torch.Tensor) -> torch.dtype:
    """Under autocast the residual stream is kept in the autocast dtype, as apex's mixed precision keeps it:
    an fp32 stream would make every residual sum fp32 and every following matmul cast its input back. The
    LayerNorms still accumulate in fp32 inside their kernels, and the weights stay fp32. The embeddings set
    the stream's dtype; every encoder LayerNorm runs in it (`norm_into`)."""
    device = x.device.type
    return torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else x.dtype


def norm_into(layer_norm: nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
    """layer_norm(x) computed and returned in x's dtype (the residual stream's): torch's LayerNorm with its weight
    and bias cast to that dtype, outside autocast. CUDA's autocast runs LayerNorm in fp32, a cast of x up and of
    the output back down around it, forward and backward (in bf16, 272 of the 1,545 MiB a BERT-large layer moves
    for a 4,096-token micro-batch); the kernel accumulates its statistics in fp32 either way. Torch's op, never
    apex's extension: it is what Dynamo traces and inductor fuses in a compiled layer."""
    with torch.autocast(x.device.type, enabled=False):
        return F.layer_norm(x, layer_norm.normalized_shape, layer_norm.weight.to(x.dtype),
                            layer_norm.bias.to(x.dtype), layer_norm.eps)


class SelfAttention(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        h = config.hidden_size
        self.num_heads, self.head_size = config.num_heads, config.head_size
        self.qkv = nn.Linear(h, 3 * h)  # query, key and value stacked: three reference tensors (bert.model.tf_names)
        self.output = nn.Linear(h, h)
        self.layer_norm = nn.LayerNorm(h, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout)
        self.attention_dropout = config.attention_dropout
        self.flash_kernel = False  # set by choose_kernels for the device the layer runs on

    def forward(self, x: torch.Tensor, layout: TokenLayout, mask: torch.Tensor | None) -> torch.Tensor:
        qkv = self.qkv(x)
        dropout_p = self.attention_dropout if self.training else 0.0
        if mask is None:  # unpadded: x is [T, H]
            qkv = qkv.view(-1, 3, self.num_heads, self.head_size)
            context = unpadded_attention(qkv, layout, dropout_p, self.flash_kernel).flatten(1)
        else:  # padded: x is [B, L, H]
            b, s, _ = x.shape
            q, k, v = qkv.view(b, s, 3, self.num_heads, self.head_size).permute(2, 0, 3, 1, 4).unbind(0)
            context = padded_attention(q, k, v, mask, dropout_p).transpose(1, 2).flatten(2)
        return norm_into(self.layer_norm, x + self.dropout(self.output(context)))


class EncoderLayer(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.attention = SelfAttention(config)
        self.intermediate = nn.Linear(config.hidden_size, config.intermediate_size)
        self.output = nn.Linear(config.intermediate_size, config.hidden_size)
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout)
        self.gelu = gelu_of(config)

    def forward(self, x: torch.Tensor, layout: TokenLayout, mask: torch.Tensor | None) -> torch.Tensor:
        x = self.attention(x, layout, mask)
        return norm_into(self.layer_norm, x + self.dropout(self.output(self.gelu(self.intermediate(x)))))


def gelu_of(config: BertConfig) -> nn.GELU:
    """The model's GELU (config.gelu): the reference's tanh approximation or the exact erf form."""
    return nn.GELU(approximate="tanh" if config.gelu == "tanh" else "none")


class BertModel(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.embeddings = Embeddings(config)
        self.encoder = nn.ModuleList(EncoderLayer(config) for _ in range(config.num_layers))
        self.pooler = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(
        self, input_ids: torch.Tensor, segment_ids: torch.Tensor, layout: TokenLayout, unpadded: bool
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Returns (token states, pooled [CLS] states): [T, H] if unpadded else [B*L, H]; and [B, H]."""
        if layout.packed:
            positions = layout.positions
        else:
            positions = torch.arange(layout.padded_len, device=input_ids.device).expand_as(input_ids)
        if unpadded:
            mask = None
            x = self.embeddings(*(unpad(t, layout) for t in (input_ids, segment_ids, positions)))
        else:
            mask = attention_mask(layout, input_ids.device)
            x = self.embeddings(input_ids, segment_ids, positions)
        for layer in self.encoder:
            x = layer(x, layout, mask)
        first_tokens = layout.sequence_starts.long()
        if unpadded:
            cls_states, tokens = gather_rows(x, first_tokens), x
        elif layout.packed:
            tokens = x.flatten(0, 1)
            cls_states = tokens.index_select(0, layout.indices.index_select(0, first_tokens))
        else:
            cls_states, tokens = x[:, 0], x.flatten(0, 1)
        return tokens, torch.tanh(self.pooler(cls_states))


class MaskedLMHead(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.transform = nn.Linear(config.hidden_size, config.hidden_size)
        self.layer_norm = layer_norm(config.hidden_size, config.layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(config.padded_vocab_size))
        self.vocab_size = config.vocab_size
        self.gelu = gelu_of(config)  # the reference's transform uses the encoder's activation

    def forward(self, states: torch.Tensor, decoder_weight: torch.Tensor) -> torch.Tensor:
        """decoder_weight: the word embeddings, tied as in the reference."""
        h = self.layer_norm(self.gelu(self.transform(states)))
        # The rows past vocab_size only pad the matrix for tensor cores; they are not tokens.
        return F.linear(h, decoder_weight, self.bias)[:, : self.vocab_size]


class BertForPreTraining(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.bert = BertModel(config)
        self.mlm = MaskedLMHead(config)
        self.nsp = nn.Linear(config.hidden_size, 2)
        self.apply(self._init_weights)

    def _init_weights(self, module: nn.Module) -> None:
        std = self.config.initializer_range
        if isinstance(module, (nn.Linear, nn.Embedding)):
            # The reference draws from a normal truncated at two standard deviations.
            nn.init.trunc_normal_(module.weight, std=std, a=-2 * std, b=2 * std)
            if getattr(module, "bias", None) is not None:
                nn.init.zeros_(module.bias)
        elif is_layer_norm(module):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)

    def forward(
        self,
        input_ids: torch.Tensor,
        segment_ids: torch.Tensor,
        layout: TokenLayout,
        mlm_index: torch.Tensor,
        mlm_labels: torch.Tensor,
        nsp_labels: torch.Tensor,
        unpadded: bool = True,
    ) -> PretrainingOutput:
        """mlm_index: [M] rows of the masked tokens in the layout's token order (cu_seqlens[b]+pos if unpadded,
        b*L+pos if not); mlm_labels: [M] their original ids; nsp_labels: [B]."""
        tokens, pooled = self.bert(input_ids, segment_ids, layout, unpadded)
        decoder_weight = self.bert.embeddings.word_embeddings.weight
        mlm_logits = self.mlm(gather_rows(tokens, mlm_index), decoder_weight)
        nsp_logits = self.nsp(pooled)
        # The mean over the masked tokens; the reference divides their sum by their count + 1e-5: 1e-5/count
        # relative, below float32's resolution of the loss from about 100 masked tokens a batch.
        mlm_loss = F.cross_entropy(mlm_logits.float(), mlm_labels)
        nsp_loss = F.cross_entropy(nsp_logits.float(), nsp_labels)
        with torch.no_grad():
            correct = (mlm_logits.argmax(-1) == mlm_labels).sum()
        return PretrainingOutput(mlm_loss + nsp_loss, mlm_loss, nsp_loss, correct, mlm_labels.numel())


def choose_kernels(module: nn.Module, device: torch.device) -> None:
    """Decides once, on the host, which kernels `module`'s attention layers run on `device` (the variable-length
    flash kernel where bert.model.varlen_attention.flash_kernel_usable says so, else the padded path) and sets the
    choice on each layer as a constant: a compiled layer then asks the host nothing. Call it after moving the
    model to its device and before its first forward (TrainStep does)."""
    for layer in module.modules():
        if isinstance(layer, SelfAttention):
            layer.flash_kernel = flash_kernel_usable(device, layer.head_size)


def compile_encoder(model: BertForPreTraining, token_sizes: int = 0, cuda_graphs: bool = False) -> None:
    """Compiles every encoder layer in place with torch.compile (regional compilation): inductor fuses each
    layer's elementwise work (bias + GeLU, bias + dropout + residual add, LayerNorm) around the matmuls and the
    attention operator. Parameter names do not change. The layers share one compiled graph per shape (their
    parameters are its inputs); fullgraph: a graph break is an error here, not a silent split
    (tests/bert/model/test_regional_compile.py counts graphs and recompiles).

    Without `token_sizes` the shapes are dynamic from the start: the unpadded token count (and the batch's
    sequence count, padded length and longest sequence) change with every batch, and recompiling for each would
    cost more than the compiled layer saves. The model's floats (dropout rates, LayerNorm's eps) stay constants
    (compile_layer). With token sizes (run.token_sizes, bert.model.token_rounding) every batch has one of a few
    shapes, and each is compiled for itself: at most `token_sizes` graphs for training and as many for eval,
    which the recompile limit must allow. `cuda_graphs` records each under a CUDA graph (torch.compile's
    "reduce-overhead"); each forward of the model starts a new round of replays, so the graphs' outputs of the
    last batch may be overwritten (nothing keeps them: its backward has run, or it was an eval forward).
    """
    for layer in model.bert.encoder:
        compile_layer(layer, static=token_sizes > 0, cuda_graphs=cuda_graphs)
    if token_sizes:
        import torch._dynamo

        torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 2 * token_sizes)
    if cuda_graphs:
        model.register_forward_pre_hook(lambda module, args: torch.compiler.cudagraph_mark_step_begin())


def uncompile_encoder(model: BertForPreTraining) -> None:
    """Undoes compile_encoder: every encoder layer runs eager from its next call (bert.compile_warmup's fallback).
    nn.Module.compile keeps the compiled call in `_compiled_call_impl`, which it calls instead of the module's
    own while set."""
    for layer in model.bert.encoder:
        layer._compiled_call_impl = None


def compile_layer(layer: EncoderLayer, static: bool = False, cuda_graphs: bool = False) -> None:
    """One encoder layer compiled in place, as compile_encoder compiles each: for fixed shapes if `static`,
    recorded under CUDA graphs if `cuda_graphs`. Floats are constants of a compiled graph: with dynamic shapes
    Dynamo would otherwise make every float it reads (the dropout rates, LayerNorm's eps) a host tensor read
    with `.item()` inside the graph (tests/cuda_path/test_compiled_regions.py); none of them ever changes."""
    import torch._dynamo

    torch._dynamo.config.specialize_float = True
    layer.compile(dynamic=not static, fullgraph=True, mode="reduce-overhead" if cuda_graphs else None)
