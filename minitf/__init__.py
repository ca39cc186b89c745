"""minitf: attention and the Transformer from first principles, in numpy."""

from .attention import causal_mask, padding_mask, scaled_dot_product_attention, softmax
from .decoder import Decoder, DecoderLayer
from .encoder import Encoder, EncoderLayer
from .generate import beam_search, greedy_decode, sample
from .layers import Dropout, Embedding, FeedForward, LayerNorm, Linear
from .model import Transformer
from .module import Module
from .multihead import MultiHeadAttention
from .translate import translate

__all__ = [
    "Decoder", "DecoderLayer", "Dropout", "Embedding", "Encoder", "EncoderLayer", "FeedForward",
    "LayerNorm", "Linear", "Module", "MultiHeadAttention", "Transformer", "beam_search",
    "causal_mask", "greedy_decode", "padding_mask", "sample", "scaled_dot_product_attention",
    "softmax", "translate",
]
__version__ = "0.1.0"
