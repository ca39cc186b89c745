"""The encoder-decoder Transformer: embeddings × √d_model + sinusoidal positions, the encoder,
the decoder, and a generator (Linear) that turns decoder vectors into next-token logits.
Assembled in notebook 06 §6, trained in notebook 08.
"""

import dataclasses

import numpy as np

from .attention import causal_mask, padding_mask
from .decoder import Decoder
from .encoder import Encoder
from .layers import ACTIVATIONS, Linear
from .module import Module, as_rng
from .positional import EmbeddingWithPositions
from .tokens import PAD_ID
from .validation import (
    require_bool,
    require_cache,
    require_fits,
    require_float_dtype,
    require_instance,
    require_int,
    require_sizes,
    require_token_ids,
)


@dataclasses.dataclass(frozen=True)
class TransformerConfig:
    """Everything that fixes a Transformer's shape: the constructor's arguments, in one place.
    The defaults are stated here only. A checkpoint stores it; `Transformer.from_config`
    builds from it; the translator's is `minitf.translator.TRANSLATOR_CONFIG`. No notebook
    names it: notebooks build models with Transformer(...) or from TRANSLATOR_CONFIG."""

    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 2
    d_ff: int = 256
    max_len: int = 64
    norm_first: bool = False
    activation: str = "relu"

    def __post_init__(self):
        require_sizes(**{name: getattr(self, name) for name in (
            "src_vocab_size", "tgt_vocab_size", "d_model", "num_heads", "num_layers", "d_ff",
            "max_len")})
        require_bool(self.norm_first, "norm_first")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, "
                             f"got {self.activation!r}")
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by "
                             f"num_heads={self.num_heads}")
        require_fits(_bytes_to_build(self), "the model's weights and layers",
                     **{name: getattr(self, name) for name in _SIZES})


_SIZES = ("src_vocab_size", "tgt_vocab_size", "d_model", "num_layers", "d_ff", "max_len")
_LAYER_BYTES = 1 << 15  # the Python objects of an encoder and a decoder layer, measured: 30 KiB


def _bytes_to_build(c):
    """About what a model of config `c` holds in float32: its weight arrays, their gradients
    and the two positional tables, plus the layers' objects. Refuses absurd sizes quickly."""
    weights = ((c.src_vocab_size + 2 * c.tgt_vocab_size) * c.d_model
               + c.num_layers * (12 * c.d_model ** 2 + 4 * c.d_model * c.d_ff))
    return 4 * (2 * weights + 2 * c.max_len * c.d_model) + c.num_layers * _LAYER_BYTES


class Transformer(Module):
    """The encoder-decoder Transformer. Assembled in notebook 06 §6, trained in notebook 08.

    Transformer(src_vocab_size, tgt_vocab_size, d_model=64, num_heads=4, num_layers=2,
    d_ff=256, max_len=64, norm_first=False, activation="relu", *, dtype, rng): the shape
    arguments are TransformerConfig's fields, with its defaults (`from_config` takes one).
    """

    def __init__(self, src_vocab_size, tgt_vocab_size, *shape, dtype=np.float32, rng=None,
                 **shape_by_name):
        super().__init__()
        self.config = c = TransformerConfig(src_vocab_size, tgt_vocab_size, *shape,
                                            **shape_by_name)
        self.d_model, self.max_len, self.dtype = c.d_model, c.max_len, require_float_dtype(dtype)
        rng = as_rng(rng)
        layer_args = (c.num_layers, c.d_model, c.num_heads, c.d_ff, c.norm_first, c.activation)
        self.src_embed = EmbeddingWithPositions(c.src_vocab_size, c.d_model, c.max_len,
                                                dtype=dtype, rng=rng)
        self.tgt_embed = EmbeddingWithPositions(c.tgt_vocab_size, c.d_model, c.max_len,
                                                dtype=dtype, rng=rng)
        self.encoder = Encoder(*layer_args, dtype=dtype, rng=rng)
        self.decoder = Decoder(*layer_args, dtype=dtype, rng=rng)
        self.generator = Linear(c.d_model, c.tgt_vocab_size, dtype=dtype, rng=rng)

    @classmethod
    def from_config(cls, config, *, dtype=np.float32, rng=None):
        """A new model of the shape `config` (a TransformerConfig) describes."""
        require_instance(config, TransformerConfig, "config")
        return cls(**dataclasses.asdict(config), dtype=dtype, rng=rng)

    @property
    def pe(self):
        """The sinusoidal table (max_len, d_model) both embeddings add."""
        return self.src_embed.pe

    def _require_tokens(self, tokens, name, start=0):
        tokens = require_token_ids(tokens, name=name, ndim=2)
        if tokens.shape[1] == 0:
            raise ValueError(f"{name} has no positions (shape {tokens.shape}): a sequence needs "
                             "at least one token")
        if start + tokens.shape[1] > self.max_len:
            raise ValueError(f"{name} reaches position {start + tokens.shape[1]}, longer than "
                             f"max_len={self.max_len}")
        return tokens

    def encode(self, src):
        """src (B, L_s) ids -> memory (B, L_s, d_model); padding (id 0) is masked out."""
        src = self._require_tokens(src, "src")
        return self.encoder(self.src_embed(src), mask=padding_mask(src, PAD_ID))

    def decode(self, tgt_in, memory, memory_mask=None, *, cache=None, start=0):
        """tgt_in (B, L_t) ids, memory (B, L_s, d_model) -> logits (B, L_t, tgt_vocab_size).

        The target may look only at itself and earlier positions (causal mask) and not at
        padding. With a `cache` (see `new_cache`), tgt_in holds only the newest positions,
        starting at position `start`, and earlier keys and values come from the cache;
        the target is then assumed to hold no <pad> (generation never feeds one).
        """
        tgt_in = self._require_tokens(tgt_in, "tgt_in", self._require_start(cache, start))
        L = tgt_in.shape[1]
        if cache is None:
            tgt_mask = causal_mask(L) & padding_mask(tgt_in, PAD_ID)  # (B, 1, L, L)
        elif L == 1:
            tgt_mask = None  # one new token may see every cached position
        else:
            tgt_mask = np.tril(np.ones((L, start + L), dtype=bool), k=start)
        y = self.decoder(self.tgt_embed(tgt_in, start), memory,
                         tgt_mask, memory_mask, cache)
        return self.generator(y)

    def _require_start(self, cache, start):
        """start, an int >= 0 and, with a cache, the number of positions the cache holds."""
        start = require_int(start, "start", low=0)
        if cache is None:
            return start
        cached = require_cache(cache, layers=len(self.decoder.layers))[0].get("self_attn", {})
        held = cached["k"].shape[2] if "k" in cached else 0
        if start != held:
            raise ValueError(f"start={start}, but the cache holds {held} positions: the new "
                             f"tokens start at position {held}")
        return start

    def new_cache(self):
        """An empty key/value cache for incremental decoding: one dict per decoder layer."""
        return [{} for _ in self.decoder.layers]

    def forward(self, src, tgt_in):
        """src (B, L_s), tgt_in (B, L_t) ids -> logits (B, L_t, tgt_vocab_size)."""
        self.save_for_backward(True)  # its sub-layers keep what backward needs
        src = self._require_tokens(src, "src")
        tgt_in = self._require_tokens(tgt_in, "tgt_in")
        if src.shape[0] != tgt_in.shape[0]:
            raise ValueError(f"src has batch size {src.shape[0]} but tgt_in has "
                             f"{tgt_in.shape[0]}")
        memory = self.encode(src)
        return self.decode(tgt_in, memory, padding_mask(src, PAD_ID))

    def backward(self, dlogits):
        """Fills every parameter gradient from dL/dlogits (B, L_t, V); returns None."""
        self.saved_for_backward(dlogits)
        dy, d_memory = self.decoder.backward(self.generator.backward(dlogits))
        self.tgt_embed.backward(dy)
        self.src_embed.backward(self.encoder.backward(d_memory))
        return None
