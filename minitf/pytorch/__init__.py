"""The bridge to PyTorch: the same Transformer in torch's own layers, weights carried over.

Built in notebook 10. This package is the only part of minitf that imports torch (an optional
extra: ``make torch``); `engine` trains the translator with it across processes.

`to_torch(model)` builds a `TorchTransformer` from `nn.TransformerEncoderLayer` and
`nn.TransformerDecoderLayer` (batch first, dropout 0, the same norm_first, activation and
LayerNorm eps) with minitf's weights; its `forward(src, tgt_in)` gives minitf's logits.
`from_torch(module)` turns it back into a minitf `Transformer`, bit for bit.

Where each minitf parameter goes (`parameter_map` yields these rows; `mapping_table` prints
them; {i} is a layer number; d = d_model). torch stores a linear layer's weight as
(d_out, d_in) and computes x Wᵀ, so minitf's W (d_in, d_out) goes in transposed; it keeps a
self- or cross-attention's three input projections as one (3d, d) `in_proj_weight`, queries
in rows 0:d, keys in d:2d, values in 2d:3d (and the biases likewise in `in_proj_bias`):

| minitf | torch | how |
|---|---|---|
| src_embed.weight | src_embed.weight | same |
| tgt_embed.weight | tgt_embed.weight | same |
| encoder.layers.{i}.self_attn.W_q | encoder.layers.{i}.self_attn.in_proj_weight | rows 0:d, transposed |
| encoder.layers.{i}.self_attn.b_q | encoder.layers.{i}.self_attn.in_proj_bias | entries 0:d |
| encoder.layers.{i}.self_attn.W_k | encoder.layers.{i}.self_attn.in_proj_weight | rows d:2d, transposed |
| encoder.layers.{i}.self_attn.b_k | encoder.layers.{i}.self_attn.in_proj_bias | entries d:2d |
| encoder.layers.{i}.self_attn.W_v | encoder.layers.{i}.self_attn.in_proj_weight | rows 2d:3d, transposed |
| encoder.layers.{i}.self_attn.b_v | encoder.layers.{i}.self_attn.in_proj_bias | entries 2d:3d |
| encoder.layers.{i}.self_attn.W_o | encoder.layers.{i}.self_attn.out_proj.weight | transposed |
| encoder.layers.{i}.self_attn.b_o | encoder.layers.{i}.self_attn.out_proj.bias | same |
| encoder.layers.{i}.norm1.gamma | encoder.layers.{i}.norm1.weight | same |
| encoder.layers.{i}.norm1.beta | encoder.layers.{i}.norm1.bias | same |
| encoder.layers.{i}.ffn.W_1 | encoder.layers.{i}.linear1.weight | transposed |
| encoder.layers.{i}.ffn.b_1 | encoder.layers.{i}.linear1.bias | same |
| encoder.layers.{i}.ffn.W_2 | encoder.layers.{i}.linear2.weight | transposed |
| encoder.layers.{i}.ffn.b_2 | encoder.layers.{i}.linear2.bias | same |
| encoder.layers.{i}.norm2.gamma | encoder.layers.{i}.norm2.weight | same |
| encoder.layers.{i}.norm2.beta | encoder.layers.{i}.norm2.bias | same |
| encoder.norm.gamma | encoder.norm.weight | same |
| encoder.norm.beta | encoder.norm.bias | same |
| decoder.layers.{i}.self_attn.W_q | decoder.layers.{i}.self_attn.in_proj_weight | rows 0:d, transposed |
| decoder.layers.{i}.self_attn.b_q | decoder.layers.{i}.self_attn.in_proj_bias | entries 0:d |
| decoder.layers.{i}.self_attn.W_k | decoder.layers.{i}.self_attn.in_proj_weight | rows d:2d, transposed |
| decoder.layers.{i}.self_attn.b_k | decoder.layers.{i}.self_attn.in_proj_bias | entries d:2d |
| decoder.layers.{i}.self_attn.W_v | decoder.layers.{i}.self_attn.in_proj_weight | rows 2d:3d, transposed |
| decoder.layers.{i}.self_attn.b_v | decoder.layers.{i}.self_attn.in_proj_bias | entries 2d:3d |
| decoder.layers.{i}.self_attn.W_o | decoder.layers.{i}.self_attn.out_proj.weight | transposed |
| decoder.layers.{i}.self_attn.b_o | decoder.layers.{i}.self_attn.out_proj.bias | same |
| decoder.layers.{i}.norm1.gamma | decoder.layers.{i}.norm1.weight | same |
| decoder.layers.{i}.norm1.beta | decoder.layers.{i}.norm1.bias | same |
| decoder.layers.{i}.cross_attn.W_q | decoder.layers.{i}.multihead_attn.in_proj_weight | rows 0:d, transposed |
| decoder.layers.{i}.cross_attn.b_q | decoder.layers.{i}.multihead_attn.in_proj_bias | entries 0:d |
| decoder.layers.{i}.cross_attn.W_k | decoder.layers.{i}.multihead_attn.in_proj_weight | rows d:2d, transposed |
| decoder.layers.{i}.cross_attn.b_k | decoder.layers.{i}.multihead_attn.in_proj_bias | entries d:2d |
| decoder.layers.{i}.cross_attn.W_v | decoder.layers.{i}.multihead_attn.in_proj_weight | rows 2d:3d, transposed |
| decoder.layers.{i}.cross_attn.b_v | decoder.layers.{i}.multihead_attn.in_proj_bias | entries 2d:3d |
| decoder.layers.{i}.cross_attn.W_o | decoder.layers.{i}.multihead_attn.out_proj.weight | transposed |
| decoder.layers.{i}.cross_attn.b_o | decoder.layers.{i}.multihead_attn.out_proj.bias | same |
| decoder.layers.{i}.norm2.gamma | decoder.layers.{i}.norm2.weight | same |
| decoder.layers.{i}.norm2.beta | decoder.layers.{i}.norm2.bias | same |
| decoder.layers.{i}.ffn.W_1 | decoder.layers.{i}.linear1.weight | transposed |
| decoder.layers.{i}.ffn.b_1 | decoder.layers.{i}.linear1.bias | same |
| decoder.layers.{i}.ffn.W_2 | decoder.layers.{i}.linear2.weight | transposed |
| decoder.layers.{i}.ffn.b_2 | decoder.layers.{i}.linear2.bias | same |
| decoder.layers.{i}.norm3.gamma | decoder.layers.{i}.norm3.weight | same |
| decoder.layers.{i}.norm3.beta | decoder.layers.{i}.norm3.bias | same |
| decoder.norm.gamma | decoder.norm.weight | same |
| decoder.norm.beta | decoder.norm.bias | same |
| generator.W | generator.weight | transposed |
| generator.b | generator.bias | same |

(`encoder.norm` and `decoder.norm` exist only with norm_first, in both.)

The masks differ in convention: minitf's are True where a query may attend, torch's boolean
masks are True where it may not. Padding (id 0) is masked as keys exactly as in minitf;
padded positions still get outputs, and they equal minitf's too. Two of torch's shortcuts
would break that: the nested-tensor form of `nn.TransformerEncoder` drops padded positions
(it is off), and the inference fast path (eval mode without gradients) gives NaN to a query
that may look at nothing — a source that is all padding, or a target that starts with
padding — where minitf's softmax gives zero weights; encode and decode turn the fast path
off for a batch that holds such a row (torch.backends.mha, restored afterwards). Real batches never
do: every source ends with <eos> and every target starts with <bos>.
"""  # noqa: E501 - the table's rows are as long as the names

import math
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..model import Transformer, TransformerConfig
from ..positional import sinusoidal_encoding
from ..tokens import BOS_ID, EOS_ID, PAD_ID
from ..validation import require_int, require_token_ids


class How(NamedTuple):
    """How a minitf array sits in its torch tensor: transposed or not, and which third of
    a stacked (3d, …) in_proj tensor (0 queries, 1 keys, 2 values; None: the whole)."""

    transpose: bool
    part: int | None = None

    def __str__(self):
        if self.part is None:
            return "transposed" if self.transpose else "same"
        span = ("0:d", "d:2d", "2d:3d")[self.part]
        return f"rows {span}, transposed" if self.transpose else f"entries {span}"


SAME, TRANSPOSED = How(False), How(True)

# minitf's last name part -> torch's, and how the array is stored there.
_LEAVES = {
    **{f"W_{x}": ("in_proj_weight", How(True, i)) for i, x in enumerate("qkv")},
    **{f"b_{x}": ("in_proj_bias", How(False, i)) for i, x in enumerate("qkv")},
    "W_o": ("out_proj.weight", TRANSPOSED), "b_o": ("out_proj.bias", SAME),
    "W_1": ("linear1.weight", TRANSPOSED), "b_1": ("linear1.bias", SAME),
    "W_2": ("linear2.weight", TRANSPOSED), "b_2": ("linear2.bias", SAME),
    "W": ("weight", TRANSPOSED), "b": ("bias", SAME),
    "gamma": ("weight", SAME), "beta": ("bias", SAME),
    "weight": ("weight", SAME),
}
# minitf's module names that torch calls otherwise ("" : torch has no such level).
_MODULES = {"cross_attn": "multihead_attn", "ffn": ""}


def torch_name(name):
    """A minitf parameter name -> (torch parameter name, How)."""
    *path, leaf = name.split(".")
    if leaf not in _LEAVES:
        raise ValueError(f"no torch counterpart for the minitf parameter {name!r}")
    torch_leaf, how = _LEAVES[leaf]
    path = [_MODULES.get(part, part) for part in path]
    return ".".join([part for part in path if part] + [torch_leaf]), how


def parameter_map(model):
    """(minitf name, torch name, How) for every parameter of the minitf `model`."""
    for name, _ in model.named_parameters():
        yield (name, *torch_name(name))


def mapping_table(model):
    """The rows of `parameter_map` as a markdown table, layer numbers written as {i}."""
    rows = ["| minitf | torch | how |", "|---|---|---|"]
    for name, tname, how in parameter_map(model):
        row = f"| {_any_layer(name)} | {_any_layer(tname)} | {how} |"
        if row not in rows:
            rows.append(row)
    return "\n".join(rows)


def _any_layer(name):
    return ".".join("{i}" if part.isdigit() else part for part in name.split("."))


def torch_arrays(state, names):
    """minitf-named arrays -> torch-named arrays (numpy), stacking q, k, v into in_proj.

    `names` is `parameter_map(model)`; `state` may hold parameters or their gradients.
    """
    out, parts = {}, {}
    for name, tname, how in names:
        value = state[name].T if how.transpose else state[name]
        if how.part is None:
            out[tname] = value
        else:
            parts.setdefault(tname, [None, None, None])[how.part] = value
    for tname, (q, k, v) in parts.items():
        out[tname] = np.concatenate([q, k, v])  # (3d, d) or (3d,)
    return out


def minitf_arrays(state, d_model, names):
    """torch-named arrays (numpy) -> minitf-named arrays: the inverse of torch_arrays."""
    out = {}
    for name, tname, how in names:
        value = state[tname]
        if how.part is not None:
            value = value[how.part * d_model:(how.part + 1) * d_model]
        out[name] = value.T if how.transpose else value
    return out


def torch_dtype(dtype):
    """numpy dtype -> torch dtype (float32 -> torch.float32, ...)."""
    return torch.from_numpy(np.zeros(0, dtype=dtype)).dtype


def _gelu_tanh(x):
    return F.gelu(x, approximate="tanh")  # minitf's GELU is the tanh approximation


_ACTIVATIONS = {"relu": "relu", "gelu": _gelu_tanh}  # minitf's ACTIVATIONS, in torch


def _require_ids(ids, name, max_len, vocab_size):
    """The numpy side's token-id check (minitf.validation.require_token_ids), on a tensor."""
    ids = torch.as_tensor(ids)
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise ValueError(f"{name} must be an integer array of token ids, got dtype {ids.dtype}")
    require_token_ids(ids.detach().cpu().numpy(), vocab_size, name, ndim=2)
    if ids.shape[1] > max_len:
        raise ValueError(f"{name} has length {ids.shape[1]}, longer than max_len={max_len}")
    return ids.long()


class TorchTransformer(nn.Module):
    """minitf's Transformer made of torch's layers, for a minitf TransformerConfig.

    Built in notebook 10 §2. forward(src (B, L_s), tgt_in (B, L_t) ids) -> logits
    (B, L_t, tgt_vocab_size), with the same masks as minitf (padding id 0, causal target).
    """

    def __init__(self, config, *, dtype=torch.float32, device=None):
        super().__init__()
        if not isinstance(config, TransformerConfig):
            raise TypeError(f"config must be a minitf TransformerConfig, got "
                            f"{type(config).__name__}")
        self.config = config
        d_model = self.d_model = config.d_model
        self.max_len = config.max_len
        kw = dict(dtype=dtype, device=device)
        layer = dict(d_model=d_model, nhead=config.num_heads, dim_feedforward=config.d_ff,
                     dropout=0.0, activation=_ACTIVATIONS[config.activation],
                     layer_norm_eps=1e-5, batch_first=True, norm_first=config.norm_first, **kw)
        final_norm = (lambda: nn.LayerNorm(d_model, eps=1e-5, **kw)) if config.norm_first \
            else (lambda: None)
        self.src_embed = nn.Embedding(config.src_vocab_size, d_model, **kw)
        self.tgt_embed = nn.Embedding(config.tgt_vocab_size, d_model, **kw)
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(**layer), config.num_layers, norm=final_norm(),
            enable_nested_tensor=False)
        self.decoder = nn.TransformerDecoder(
            nn.TransformerDecoderLayer(**layer), config.num_layers, norm=final_norm())
        self.generator = nn.Linear(d_model, config.tgt_vocab_size, **kw)
        pe = torch.from_numpy(sinusoidal_encoding(config.max_len, d_model, np.float64))
        self.register_buffer("pe", pe.to(**kw), persistent=False)  # (max_len, d_model)

    def _embed(self, embedding, ids):
        return embedding(ids) * math.sqrt(self.d_model) + self.pe[:ids.shape[1]]

    def _ids(self, ids, name):
        vocab = self.config.src_vocab_size if name == "src" else self.config.tgt_vocab_size
        return _require_ids(ids, name, self.max_len, vocab).to(self.generator.weight.device)

    def encode(self, src):
        """src (B, L_s) ids -> memory (B, L_s, d_model); padding (id 0) is masked out."""
        src = self._ids(src, "src")
        if src.shape[0] == 0:  # batch 0: torch's attention cannot reshape it; nothing to do
            return self._embed(self.src_embed, src)  # (0, L_s, d_model)
        pad = src == PAD_ID  # (B, L_s); torch's masks say True where a query may NOT look
        with _fast_path(enabled=not pad.all(dim=1).any()):
            return self.encoder(self._embed(self.src_embed, src), src_key_padding_mask=pad)

    def decode(self, tgt_in, memory, src):
        """tgt_in (B, L_t) ids, memory (B, L_s, d_model) of src (B, L_s) -> logits
        (B, L_t, tgt_vocab_size): causal self-attention, no padding as keys."""
        tgt_in, src = self._ids(tgt_in, "tgt_in"), self._ids(src, "src")
        if not src.shape[0] == tgt_in.shape[0] == memory.shape[0]:
            raise ValueError(f"src, tgt_in and memory have batch sizes {src.shape[0]}, "
                             f"{tgt_in.shape[0]} and {memory.shape[0]}")
        if tgt_in.shape[0] == 0:  # batch 0, as in encode
            return self.generator(self._embed(self.tgt_embed, tgt_in))  # (0, L_t, V)
        L = tgt_in.shape[1]
        future = torch.ones(L, L, dtype=torch.bool, device=tgt_in.device).triu(1)  # (L_t, L_t)
        pad = tgt_in == PAD_ID  # (B, L_t)
        with _fast_path(enabled=not pad[:, :1].any()):
            y = self.decoder(self._embed(self.tgt_embed, tgt_in), memory, tgt_mask=future,
                             tgt_key_padding_mask=pad, memory_key_padding_mask=src == PAD_ID)
        return self.generator(y)  # (B, L_t, V)

    def forward(self, src, tgt_in):
        """src (B, L_s), tgt_in (B, L_t) ids -> logits (B, L_t, tgt_vocab_size)."""
        return self.decode(tgt_in, self.encode(src), src)


@contextmanager
def _fast_path(enabled):
    """Leave torch's inference fast path as it is, or turn it off for the block."""
    before = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(before and enabled)
    try:
        yield
    finally:
        torch.backends.mha.set_fastpath_enabled(before)


def _unwrap(module):
    """The TorchTransformer inside `module` (itself, or one wrapped by DistributedDataParallel)."""
    inner = getattr(module, "module", module)
    if not isinstance(inner, TorchTransformer):
        raise ValueError(f"module: expected a TorchTransformer built by to_torch, got "
                         f"{type(module).__name__}")
    return inner


def to_torch(model, device=None):
    """A minitf Transformer -> a TorchTransformer with the same weights, dtype and logits.

    Built in notebook 10 §2.
    """
    if not isinstance(model, Transformer):
        raise ValueError(f"to_torch expects a minitf Transformer, got {type(model).__name__}")
    if device is not None and torch.device(device).type == "meta":
        raise ValueError("device='meta' holds shapes but no weights, so the module would not "
                         "be this model; give 'cpu' or 'cuda'")
    module = TorchTransformer(model.config, dtype=torch_dtype(model.dtype), device=device)
    arrays = torch_arrays(model.state_dict(), parameter_map(model))
    module.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v))
                            for k, v in arrays.items()})
    return module


def _numpy(tensors):
    return {k: v.detach().cpu().numpy() for k, v in tensors.items()}


def from_torch(module):
    """A TorchTransformer (or one wrapped in DistributedDataParallel) -> the minitf
    Transformer with exactly its weights. Built in notebook 10 §2."""
    module = _unwrap(module)
    state = _numpy(module.state_dict())
    dtype = state["generator.weight"].dtype
    model = Transformer.from_config(module.config, dtype=dtype, rng=0)
    model.load_state_dict(minitf_arrays(state, model.d_model, parameter_map(model)))
    return model


def minitf_grads(model):
    """The gradients minitf's backward left in `model`, by parameter name (notebook 10 §3)."""
    return dict(model.named_grads())


def torch_grads(module):
    """The gradients autograd left in `module`'s .grad, by minitf name (a parameter
    without one gets zeros). Built in notebook 10 §3."""
    module = _unwrap(module)
    grads = {name: torch.zeros_like(p) if p.grad is None else p.grad
             for name, p in module.named_parameters()}
    names = parameter_map(Transformer.from_config(module.config, rng=0))
    return minitf_arrays(_numpy(grads), module.d_model, names)


def train_step(model, batch, optimizer, device, *, clip_norm=1.0, label_smoothing=0.1):
    """One training step of notebook 08 in torch, on `device`: batch (src, tgt_in, tgt_out) id
    tensors -> the loss before the step, a float. The batch is moved to `device` (where the
    model's weights are); the loss is cross-entropy over the targets that are not <pad>, with
    label smoothing; the gradients are cleared, back-propagated, clipped to a global norm of
    `clip_norm` (None: not clipped) and used by `optimizer.step()`.

    Built in notebook 10 §6 (the solution of its exercise on a training step).
    """
    src, tgt_in, tgt_out = (torch.as_tensor(t).to(device) for t in batch)
    logits = model(src, tgt_in)  # (B, L_t, V)
    loss = F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD_ID,
                           label_smoothing=label_smoothing)
    optimizer.zero_grad()
    loss.backward()
    if clip_norm is not None:
        nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
    optimizer.step()
    return loss.item()


@torch.no_grad()
def greedy_decode(module, src, *, max_len, bos_id=BOS_ID, eos_id=EOS_ID):
    """src (B, L_s) ids -> (B, T) LongTensor, T ≤ max_len: minitf.generate.greedy_decode in
    torch (the source encoded once; the whole prefix decoded again each step, no cache).

    Built in notebook 10 §2.
    """
    module = _unwrap(module)  # DataParallel and DistributedDataParallel have no encode
    max_len, bos_id, eos_id = _require_decode_options(module, max_len, bos_id, eos_id)
    src = torch.as_tensor(src)
    memory = module.encode(src)
    ys = torch.full((src.shape[0], max_len + 1), PAD_ID, dtype=torch.long)  # <bos> + tokens
    ys[:, 0] = bos_id
    done = torch.zeros(src.shape[0], dtype=torch.bool)
    for t in range(max_len):
        logits = module.decode(ys[:, :t + 1], memory, src)[:, -1].cpu()  # (B, V)
        logits[:, PAD_ID] = -math.inf  # <pad> only fills the places after <eos>
        ys[:, t + 1] = torch.where(done, PAD_ID, logits.argmax(dim=-1))
        if eos_id is not None:
            done |= ys[:, t + 1] == eos_id
            if done.all():
                break
    return ys[:, 1:t + 2]


def _require_decode_options(module, max_len, bos_id, eos_id):
    """greedy_decode's max_len, bos_id and eos_id, checked as minitf.generate checks them."""
    max_len = require_int(max_len, "max_len", low=1)
    if max_len > module.max_len:
        raise ValueError(f"max_len={max_len} would feed the decoder positions 0..{max_len - 1} "
                         f"(<bos> at 0), but the model has {module.max_len} positions; use "
                         f"max_len <= {module.max_len}")
    last = module.config.tgt_vocab_size - 1
    bos_id = require_int(bos_id, "bos_id", 0, last)
    eos_id = None if eos_id is None else require_int(eos_id, "eos_id", 0, last)
    return max_len, bos_id, eos_id
