"""The decoder alone (仅解码器, GPT-style): one sequence over one vocabulary, each position
predicting the next token from itself and the positions before it.

    x      = E[tokens] · √d_model + PE                     (B, L, d_model)
    h      = block_N(… block_1(x))                         each: masked self-attention + FFN
    logits = h W + b                                       (B, L, V)

A block is the encoder's layer of notebook 05 under the causal mask of notebook 06: with no
encoder there is nothing to cross-attend to, so the decoder's cross-attention is gone and
what is left is exactly an EncoderLayer (as PyTorch users build a GPT from
nn.TransformerEncoderLayer with a causal mask). Post-LN or pre-LN (`norm_first`, then with a
final LayerNorm), as everywhere in the course. Built in notebook 11 §3, trained there in §4.
"""

import dataclasses

import numpy as np

from .encoder import Encoder
from .layers import Linear
from .model import check_config, decoder_mask, require_model_fits
from .module import Module, as_rng
from .positional import EmbeddingWithPositions
from .validation import require_float_dtype, require_instance, require_sequence, require_start


@dataclasses.dataclass(frozen=True)
class GPTConfig:
    """Everything that fixes a GPT's shape: the constructor's arguments, in one place; the
    defaults are stated here only. `GPT.from_config` builds from it. Notebook 11 §3 prints the
    task's, tasks.sequence.GPT_CONFIG, and builds its model from it."""

    vocab_size: int
    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 2
    d_ff: int = 256
    max_len: int = 64
    norm_first: bool = False
    activation: str = "relu"

    def __post_init__(self):
        check_config(self, ("vocab_size",), _num_weights)


def _num_weights(c):
    """The numbers a GPT of config `c` holds in its weights, about."""
    return 2 * c.vocab_size * c.d_model + c.num_layers * (4 * c.d_model ** 2
                                                          + 2 * c.d_model * c.d_ff)


class GPT(Module):
    """A decoder-only Transformer (GPT-style): tokens (B, L) -> next-token logits (B, L, V).
    Built in notebook 11 §3 (by hand from its children, then GPT.forward).

    GPT(vocab_size, d_model=64, num_heads=4, num_layers=2, d_ff=256, max_len=64,
    norm_first=False, activation="relu", *, dtype, rng): the shape arguments are GPTConfig's
    fields, with its defaults (`from_config` takes one).
    Children: `embed` (EmbeddingWithPositions), `decoder` (an Encoder: its layers under the
    causal mask; `decoder.norm` only when norm_first) and `generator` (Linear → vocabulary).
    """

    def __init__(self, vocab_size, *shape, dtype=np.float32, rng=None, **shape_by_name):
        super().__init__()
        self.config = c = GPTConfig(vocab_size, *shape, **shape_by_name)
        self.d_model, self.max_len, self.dtype = c.d_model, c.max_len, require_float_dtype(dtype)
        require_model_fits(c, ("vocab_size",), _num_weights, self.dtype)
        rng = as_rng(rng)
        self.embed = EmbeddingWithPositions(c.vocab_size, c.d_model, c.max_len,
                                            dtype=dtype, rng=rng)
        self.decoder = Encoder(c.num_layers, c.d_model, c.num_heads, c.d_ff, c.norm_first,
                               c.activation, dtype=dtype, rng=rng)  # no cross-attention
        self.generator = Linear(c.d_model, c.vocab_size, dtype=dtype, rng=rng)

    @classmethod
    def from_config(cls, config, *, dtype=np.float32, rng=None):
        """A new model of the shape `config` (a GPTConfig) describes."""
        require_instance(config, GPTConfig, "config")
        return cls(**dataclasses.asdict(config), dtype=dtype, rng=rng)

    def new_cache(self):
        """An empty key/value cache for generation: one dict per block."""
        return [{} for _ in self.decoder.layers]

    def forward(self, tokens, cache=None, start=0):
        """tokens (B, L) ids -> logits (B, L, vocab_size): row t scores the token after t.

        Each position sees itself and the positions before it (causal mask), never padding.
        With a `cache` (see `new_cache`), tokens hold only the newest positions, starting at
        position `start` (the number the cache holds), and earlier keys and values come from
        the cache; tokens then hold no <pad> (generation never feeds one). A forward with a
        cache cannot be followed by backward.
        """
        self.save_for_backward(True)  # its sub-layers keep what backward needs
        start = require_start(start, cache, layers=len(self.decoder.layers))
        tokens = require_sequence(tokens, "tokens", self.max_len, start)
        mask = decoder_mask(tokens, cache is not None, start)  # causal, and not at <pad>
        x = self.embed(tokens, start)  # (B, L, d_model)
        h = self.decoder(x, mask, cache)  # (B, L, d_model)
        return self.generator(h)  # (B, L, vocab_size)

    def backward(self, dlogits):
        """Fills every parameter gradient from dL/dlogits (B, L, V); returns None."""
        self.saved_for_backward(dlogits)
        self.embed.backward(self.decoder.backward(self.generator.backward(dlogits)))
        return None
