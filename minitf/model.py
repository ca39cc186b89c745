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
    require_fits,
    require_float_dtype,
    require_instance,
    require_int,
    require_sequence,
    require_sizes,
    require_start,
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
        check_config(self, ("src_vocab_size", "tgt_vocab_size"), _num_weights)


def _num_weights(c):
    """The numbers a Transformer of config `c` holds in its weights, about."""
    return ((c.src_vocab_size + 2 * c.tgt_vocab_size) * c.d_model
            + c.num_layers * (12 * c.d_model ** 2 + 4 * c.d_model * c.d_ff))


_LAYER_SIZES = ("d_model", "num_heads", "num_layers", "d_ff", "max_len")
_LAYER_BYTES = 1 << 15  # the Python objects of an encoder and a decoder layer, measured: 30 KiB


def check_config(config, vocab_sizes, num_weights):
    """Refuses a model's config, with a message naming the field: `vocab_sizes` (the names of
    its vocabulary fields) and d_model, num_heads, num_layers, d_ff, max_len must be ints
    >= 1, norm_first True or False, activation a known one, d_model a multiple of num_heads;
    and the model must fit in memory: about 4 bytes for each of `num_weights(config)`
    weights, their gradients and the positional tables, plus the layers' objects (absurd
    sizes are refused quickly). TransformerConfig and GPTConfig check themselves with it;
    no notebook calls it by name."""
    sizes = (*vocab_sizes, *_LAYER_SIZES)
    for name, size in zip(sizes, require_sizes(**{n: getattr(config, n) for n in sizes})):
        object.__setattr__(config, name, size)  # Python ints, even from numpy's: JSON, no wrap
    object.__setattr__(config, "norm_first", require_bool(config.norm_first, "norm_first"))
    if config.activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, "
                         f"got {config.activation!r}")
    if config.d_model % config.num_heads:
        raise ValueError(f"d_model={config.d_model} is not divisible by "
                         f"num_heads={config.num_heads}")
    require_model_fits(config, vocab_sizes, num_weights)


def require_model_fits(config, vocab_sizes, num_weights, dtype=np.float32):
    """Refuses a model too large to build: its `num_weights(config)` weights of `dtype` and
    their gradients, the two positional tables, the float64 draw of its largest table and
    the layers' Python objects. No notebook calls it by name."""
    itemsize = np.dtype(dtype).itemsize
    sizes = (*vocab_sizes, *_LAYER_SIZES)
    largest = max(config.d_ff, config.d_model, *(getattr(config, n) for n in vocab_sizes))
    nbytes = (itemsize * (2 * num_weights(config) + 2 * config.max_len * config.d_model)
              + 8 * largest * config.d_model + config.num_layers * _LAYER_BYTES)
    require_fits(nbytes, f"the model's {np.dtype(dtype)} weights and layers",
                 **{name: getattr(config, name) for name in sizes if name != "num_heads"})


def decoder_mask(tokens, cached=False, start=0):
    """The mask of a decoder's self-attention for tokens (B, L) at positions start..start+L-1.

    Without a cache: causal and blind to padding, (B, 1, L, L). With one (`cached`, during
    generation, which never feeds <pad>): the new positions see every cached one and the new
    ones up to themselves, (L, start + L); None for a single new token, which sees them all.
    Transformer.decode and GPT.forward use it; no notebook calls it by name.
    """
    tokens = require_token_ids(tokens, name="tokens", ndim=2)
    cached, start = require_bool(cached, "cached"), require_int(start, "start", low=0)
    L = tokens.shape[1]
    if not cached:
        return causal_mask(L) & padding_mask(tokens, PAD_ID)  # (B, 1, L, L)
    if L == 1:
        return None
    return np.tril(np.ones((L, start + L), dtype=bool), k=start)


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
        require_model_fits(c, ("src_vocab_size", "tgt_vocab_size"), _num_weights, self.dtype)
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

    def encode(self, src):
        """src (B, L_s) ids -> memory (B, L_s, d_model); padding (id 0) is masked out."""
        src = require_sequence(src, "src", self.max_len)
        return self.encoder(self.src_embed(src), mask=padding_mask(src, PAD_ID))

    def decode(self, tgt_in, memory, memory_mask=None, *, cache=None, start=0):
        """tgt_in (B, L_t) ids, memory (B, L_s, d_model) -> logits (B, L_t, tgt_vocab_size).

        The target may look only at itself and earlier positions (causal mask) and not at
        padding. With a `cache` (see `new_cache`), tgt_in holds only the newest positions,
        starting at position `start`, and earlier keys and values come from the cache;
        the target is then assumed to hold no <pad> (generation never feeds one).
        """
        start = require_start(start, cache, layers=len(self.decoder.layers))
        tgt_in = require_sequence(tgt_in, "tgt_in", self.max_len, start)
        y = self.decoder(self.tgt_embed(tgt_in, start), memory,
                         decoder_mask(tgt_in, cache is not None, start), memory_mask, cache)
        return self.generator(y)

    def new_cache(self):
        """An empty key/value cache for incremental decoding: one dict per decoder layer."""
        return [{} for _ in self.decoder.layers]

    def forward(self, src, tgt_in):
        """src (B, L_s), tgt_in (B, L_t) ids -> logits (B, L_t, tgt_vocab_size)."""
        self.save_for_backward(True)  # its sub-layers keep what backward needs
        src = require_sequence(src, "src", self.max_len)
        tgt_in = require_sequence(tgt_in, "tgt_in", self.max_len)
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
