"""minitf: attention and the Transformer from first principles, in numpy.

This package's root is the reference Transformer the notebooks build; `fast/` holds the same
computations made fast. Everything the course or an app needs besides lives in a room of its
own: `tasks` (what the course trains on), `check` (the exercises' checkers), `figures`
(diagrams and plots), `translator` (the app, its checkpoints and command line) and `pytorch`
(the bridge to torch). See CONTRIBUTING.md.
"""

from .attention import causal_mask, padding_mask, scaled_dot_product_attention, softmax
from .decoder import Decoder, DecoderLayer
from .encoder import Encoder, EncoderLayer
from .generate import beam_search, greedy_continue, greedy_decode, sample
from .gpt import GPT, GPTConfig
from .layers import Dropout, Embedding, FeedForward, LayerNorm, Linear
from .model import Transformer, TransformerConfig
from .module import Module
from .multihead import MultiHeadAttention

__all__ = [
    "Decoder", "DecoderLayer", "Dropout", "Embedding", "Encoder", "EncoderLayer",
    "FeedForward", "GPT", "GPTConfig", "LayerNorm", "Linear", "Module", "MultiHeadAttention",
    "Transformer", "TransformerConfig", "beam_search", "causal_mask", "greedy_continue",
    "greedy_decode", "padding_mask", "sample",
    "scaled_dot_product_attention", "softmax", "translate",
]
__version__ = "0.1.0"


def __getattr__(name):
    # `minitf.translate` is the translator app's function; it is loaded on first use, so that
    # importing the reference loads nothing of the app.
    if name == "translate":
        from .translator import translate
        return translate
    raise AttributeError(f"module 'minitf' has no attribute {name!r}")
