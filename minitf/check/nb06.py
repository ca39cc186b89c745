"""Exercises of notebook 06: the causal mask, masked attention and the decoder layer (cases,
references, known mistakes)."""

import numpy as np

from ..attention import causal_mask, padding_mask, scaled_dot_product_attention, softmax
from ..decoder import DecoderLayer
from .core import Case, Exercise, Mistake
from .shared import perturb_norms_and_biases

__all__ = ["check_causal_mask", "check_masked_attention", "check_decoder_layer"]


# ---------------------------------------------------------------- causal mask

CAUSAL_MASK = Exercise(
    name="causal_mask", checker="check_causal_mask", args=("n",),
    task="an (n, n) bool array, True on and below the diagonal (row i may see 0..i)",
    cases=lambda: [Case((1,)), Case((2,)), Case((5,))],
    reference=causal_mask,
    mistakes=(
        Mistake("this is the transpose: row i (the query) may see columns 0..i, on and below "
                "the diagonal — np.tril, not np.triu",
                lambda n: np.triu(np.ones((n, n), dtype=bool))),
        Mistake("True and False are swapped: True must mean 'may attend'",
                lambda n: ~causal_mask(n)),
        Mistake("the diagonal is False, but a position may attend to itself",
                lambda n: np.tril(np.ones((n, n), dtype=bool), k=-1)),
        Mistake("masks are boolean: use np.ones((n, n), dtype=bool), or .astype(bool)",
                lambda n: np.tril(np.ones((n, n)))),
    ))


# ------------------------------------------------------------ masked attention

def _scores(q, k):
    return q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])


def _out_and_weights(weights, v):
    return weights @ v, weights


MASKED_ATTENTION = Exercise(
    name="masked_attention", checker="check_masked_attention", args=("q", "k", "v", "mask"),
    task="the pair (out, weights) of softmax(q kᵀ/√d_k) with the masked scores at -inf, as "
         "scaled_dot_product_attention",
    cases=lambda: _masked_attention_cases(),
    reference=scaled_dot_product_attention, labels=("out", "weights"),
    mistakes=(
        Mistake("the masked weights are 0 but the rows no longer sum to 1: mask the scores "
                "with -inf before the softmax, not the weights after it",
                lambda q, k, v, mask: _out_and_weights(softmax(_scores(q, k)) * mask, v)),
        Mistake("masked positions still get weight: a score of 0 gives exp(0) = 1; use -np.inf",
                lambda q, k, v, mask: _out_and_weights(
                    softmax(np.where(mask, _scores(q, k), 0.0)), v)),
        Mistake("the mask was not applied: masked positions must get weight 0",
                lambda q, k, v, mask: _out_and_weights(softmax(_scores(q, k)), v)),
        Mistake("the scores were not divided by √d_k",
                lambda q, k, v, mask: _out_and_weights(
                    softmax(np.where(mask, q @ np.swapaxes(k, -1, -2), -np.inf)), v)),
        Mistake("return the pair (out, weights), not only out",
                lambda q, k, v, mask: scaled_dot_product_attention(q, k, v, mask)[0]),
    ))


def _masked_attention_cases():
    rng = np.random.default_rng(6)
    q, k, v = (rng.standard_normal((4, 3)) for _ in range(3))
    tokens = np.array([[7, 8, 9, 2, 0, 0], [7, 2, 0, 0, 0, 0]])
    return [
        Case((q, k, v, causal_mask(4)), "one sequence with the causal mask"),
        Case((rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 6, 4)),
              rng.standard_normal((2, 6, 3)), padding_mask(tokens)[:, 0]),
             "a batch of 2 with a (2, 1, 6) padding mask"),
        Case((2 * rng.standard_normal((2, 3, 5, 4)), 2 * rng.standard_normal((2, 3, 5, 4)),
              rng.standard_normal((2, 3, 5, 2)), causal_mask(5)),
             "(B, h, L, d_k) like the model, causal mask"),
    ]


# --------------------------------------------------------------- decoder layer

def _post_ln(y, memory, layer, tgt_mask, memory_mask, *, self_mask=True, from_memory=True,
             residual=True):
    """The post-LN decoder layer, and (with other flags) the usual wrong versions."""
    keep = 1.0 if residual else 0.0
    h = layer.norm1(keep * y + layer.self_attn(y, mask=tgt_mask if self_mask else None))
    cross = (layer.cross_attn(h, memory, mask=memory_mask) if from_memory
             else layer.cross_attn(h))
    h = layer.norm2(keep * h + cross)
    return layer.norm3(keep * h + layer.ffn(h))


def _pre_ln(y, memory, layer, tgt_mask, memory_mask):
    y = y + layer.self_attn(layer.norm1(y), mask=tgt_mask)
    y = y + layer.cross_attn(layer.norm2(y), memory, mask=memory_mask)
    return y + layer.ffn(layer.norm3(y))


def _random_decoder_layer(d_model, num_heads, d_ff, seed):
    layer = DecoderLayer(d_model, num_heads, d_ff, dtype=np.float64, rng=seed)
    return perturb_norms_and_biases(layer, seed + 100)


def _decoder_cases():
    rng = np.random.default_rng(60)
    src = np.array([[5, 6, 7, 2, 0], [8, 2, 0, 0, 0]])
    return [
        Case((rng.standard_normal((2, 4, 8)), rng.standard_normal((2, 5, 8)),
              _random_decoder_layer(8, 2, 16, seed=1), causal_mask(4), padding_mask(src)),
             "a batch of 2, padded sources, d_model = 8"),
        Case((rng.standard_normal((1, 3, 12)), rng.standard_normal((1, 2, 12)),
              _random_decoder_layer(12, 3, 24, seed=2), causal_mask(3), None),
             "one sentence, no memory mask, d_model = 12"),
    ]


DECODER_LAYER = Exercise(
    name="decoder_layer", checker="check_decoder_layer",
    args=("y", "memory", "layer", "tgt_mask", "memory_mask"),
    task="the post-LN decoder layer: norm1(y + self_attn), norm2(· + cross_attn with "
         "memory), norm3(· + ffn)",
    cases=_decoder_cases,
    reference=lambda y, memory, layer, tgt_mask, memory_mask: layer(
        y, memory, tgt_mask, memory_mask),
    mistakes=(
        Mistake("that is the pre-LN order; this exercise is post-LN: y = norm(y + sublayer(y)) "
                "after each sub-layer", _pre_ln),
        Mistake("the cross-attention must take its keys and values from `memory`: "
                "cross_attn(y, memory, mask=memory_mask)",
                lambda *args: _post_ln(*args, from_memory=False)),
        Mistake("the masked self-attention ignores tgt_mask, so it looks at later tokens",
                lambda *args: _post_ln(*args, self_mask=False)),
        Mistake("a residual connection is missing: add the sub-layer's input back before "
                "each norm", lambda *args: _post_ln(*args, residual=False)),
    ))


def check_causal_mask(fn):
    """fn(n) -> (n, n) bool, True on and below the diagonal. An exercise of notebook 06."""
    return CAUSAL_MASK.check(fn)


def check_masked_attention(fn):
    """fn(q, k, v, mask) -> (out, weights), as minitf.attention.scaled_dot_product_attention.
    An exercise of notebook 06."""
    return MASKED_ATTENTION.check(fn)


def check_decoder_layer(fn):
    """fn(y, memory, layer, tgt_mask, memory_mask) -> the post-LN decoder layer's output,
    built from layer.self_attn, layer.norm1, layer.cross_attn, layer.norm2, layer.ffn,
    layer.norm3. An exercise of notebook 06."""
    return DECODER_LAYER.check(fn)


EXERCISES = [CAUSAL_MASK, MASKED_ATTENTION, DECODER_LAYER]
