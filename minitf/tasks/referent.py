"""What "it" refers to (指代): the notes' sentence as a task a small encoder learns.

    The animal didn't cross the street because it was too tired.   "it" = the animal
    The animal didn't cross the street because it was too wide.    "it" = the street

Sentences are generated from that template with many living nouns, places, verbs and
adjectives that fit only one kind of noun. The nouns also come in the other order (the
passive, "the street wasn't crossed by the animal because …") and after an optional opening
("yesterday …"), so the position of a word says nothing about the answer. The label is the
index of the token that "it" refers to.

The model (`ReferentModel`) is embeddings × √d_model + sinusoidal positions, the encoder of
notebook 05, and a pointer head: one more attention score, from "it" to every position,
whose softmax is the answer. Built in notebook 09.
"""

import dataclasses
import math
import sys
from collections import namedtuple

import numpy as np

from ..attention import padding_mask
from ..encoder import Encoder
from ..language import pick
from ..layers import glorot_uniform
from ..module import Module, as_rng, no_grad
from ..positional import EmbeddingWithPositions
from ..tokens import PAD_ID, pad
from ..train import TrainConfig, train
from ..validation import (
    require_bool,
    require_fits,
    require_float_array,
    require_float_dtype,
    require_instance,
    require_int,
    require_int_array,
    require_sizes,
    require_token_ids,
)
from .vocab import Vocab

# The first noun and adjective of each kind are the notes' own (animal, tired; street, wide).
LIVING = ("animal", "dog", "cat", "horse", "child", "cow", "fox", "sheep", "goat", "boy",
          "girl", "donkey", "rabbit", "man", "woman", "deer")
PLACES = ("street", "road", "river", "bridge", "field", "square", "valley", "stream",
          "highway", "canal", "desert", "lake", "path", "track")
LIVING_ADJECTIVES = ("tired", "scared", "hungry", "weak", "sleepy", "sick", "lazy", "nervous",
                     "exhausted", "frightened")
PLACE_ADJECTIVES = ("wide", "busy", "long", "steep", "crowded", "muddy", "icy", "deep",
                    "slippery", "flooded")
VERBS = (("cross", "crossed"), ("reach", "reached"), ("enter", "entered"), ("use", "used"),
         ("take", "taken"))
OPENERS = ((), ("yesterday",), ("that", "morning"))
BECAUSE = ("because", "since")
HELD_OUT_EVERY = 4  # pair (i, j) of the lists above is held out when (i + j) % 4 == 0

_FRAME = ("the", "didn't", "wasn't", "by", "it", "was", "too")
VOCAB = Vocab(sorted(set(LIVING + PLACES + LIVING_ADJECTIVES + PLACE_ADJECTIVES + _FRAME
                         + BECAUSE + sum(VERBS, ()) + sum(OPENERS, ()))))

Example = namedtuple("Example", "words it referent")
Example.__doc__ = """One sentence of the task: its words (a list), the index of "it", the index
of the word "it" refers to. Notebook 09 §1 uses its fields (`words`, `it`)."""


def sentence(living, place, adjective, verb="cross", passive=False, opener=(),
             because="because"):
    """One sentence as an Example; "it" refers to `living` if `adjective` is one of
    LIVING_ADJECTIVES, to `place` if it is one of PLACE_ADJECTIVES. Notebook 09 §1.

    Active:  [opener] the living didn't cross the place because it was too adjective
    Passive: [opener] the place wasn't crossed by the living because it was too adjective
    """
    forms = dict(VERBS)
    for word, group, name in ((living, LIVING, "living"), (place, PLACES, "place"),
                              (adjective, LIVING_ADJECTIVES + PLACE_ADJECTIVES, "adjective"),
                              (verb, tuple(forms), "verb"), (because, BECAUSE, "because")):
        if not isinstance(word, str) or word not in group:
            raise ValueError(f"{name}={word!r} is not one of {group}")
    passive = require_bool(passive, "passive")
    opener = tuple(opener) if isinstance(opener, (tuple, list)) else opener
    if opener not in OPENERS:
        raise ValueError(f"opener={opener!r} is not one of {OPENERS}")
    if passive:
        main = ["the", place, "wasn't", forms[verb], "by", "the", living]
    else:
        main = ["the", living, "didn't", verb, "the", place]
    words = [*opener, *main, because, "it", "was", "too", adjective]
    noun = living if adjective in LIVING_ADJECTIVES else place
    return Example(words, words.index("it"), words.index(noun))


def pairs(held_out):
    """The (noun, adjective) pairs of one split: a noun with an adjective that fits it.
    Notebook 09 §1.

    Pair (i, j) — the i-th noun and j-th adjective of the same kind — is held out when
    (i + j) % HELD_OUT_EVERY == 0: a quarter of each noun's adjectives, every noun and every
    adjective still seen in training. The notes' (animal, tired) and (street, wide) are held
    out.
    """
    held_out = require_bool(held_out, "held_out")
    return [(noun, adjective)
            for nouns, adjectives in ((LIVING, LIVING_ADJECTIVES), (PLACES, PLACE_ADJECTIVES))
            for i, noun in enumerate(nouns) for j, adjective in enumerate(adjectives)
            if ((i + j) % HELD_OUT_EVERY == 0) == held_out]


MAX_SENTENCES = 1_000_000  # sentences one call of sentences() draws (about 15 s of work)


def sentences(rng, n, held_out=False):
    """n random Examples whose (referent, adjective) pair is from the training pairs, or
    from the held-out pairs; the other noun, verb, order and opening drawn at random.
    At most MAX_SENTENCES at once (a batch or a test set is far smaller). Notebook 09 §1."""
    rng = as_rng(rng)
    n = require_int(n, "n", low=0, high=MAX_SENTENCES)
    chosen = pairs(held_out)
    out = []
    for _ in range(n):
        noun, adjective = chosen[rng.integers(len(chosen))]
        if noun in LIVING:
            living, place = noun, PLACES[rng.integers(len(PLACES))]
        else:
            living, place = LIVING[rng.integers(len(LIVING))], noun
        out.append(sentence(living, place, adjective,
                            verb=VERBS[rng.integers(len(VERBS))][0],
                            passive=bool(rng.integers(2)),
                            opener=OPENERS[rng.integers(len(OPENERS))],
                            because=BECAUSE[rng.integers(len(BECAUSE))]))
    return out


def encode(words):
    """A sentence -> int64 ids (L,). `words` is a list of words or a str (lower-cased and
    split on spaces); a word outside VOCAB is a ValueError naming it. Notebook 09 §2."""
    if isinstance(words, str):
        words = words.lower().split()
    if not isinstance(words, (list, tuple)) or not all(isinstance(w, str) for w in words):
        raise TypeError(f"words must be a str or a list of words, got {type(words).__name__}")
    unknown = [w for w in words if w not in VOCAB]
    if unknown:
        raise ValueError(f"words contain {unknown[0]!r}, which is not in the task's "
                         f"vocabulary (referent.VOCAB)")
    return np.array(VOCAB.encode(words), dtype=np.int64)


def make_batch(examples):
    """Examples -> (tokens (B, L) int64 padded with 0, it (B,) int64, referent (B,) int64).
    Notebook 09 §2."""
    if not isinstance(examples, (list, tuple)) or not examples:
        raise ValueError(f"examples must be a non-empty list of Examples, got "
                         f"{type(examples).__name__}{'' if examples else ' (empty)'}")
    if not all(isinstance(e, Example) for e in examples):
        raise TypeError("examples must be Examples (from referent.sentence or referent.sentences)")
    tokens = pad([encode(e.words) for e in examples])
    it = np.array([e.it for e in examples], dtype=np.int64)
    referent = np.array([e.referent for e in examples], dtype=np.int64)
    return tokens, it, referent


class PointerHead(Module):
    """Points from one position of each sequence at a position of the same sequence:

        q = h_it W_q,   k_j = h_j W_k,   logit_j = q · k_j / √d_k,   p = softmax(logit)

    forward(h (B, L, d_model), query_index (B,) int, mask (B, L) bool or None; True = may be
    pointed at) -> logits (B, L); a masked position gets -inf (probability 0).
    backward(dlogits) -> dh. No biases: a bias on the keys would add the same number to
    every logit. Built in notebook 09 §3.
    """

    def __init__(self, d_model, d_k=None, *, dtype=np.float32, rng=None):
        super().__init__()
        rng = as_rng(rng)
        self.d_model = require_int(d_model, "d_model", low=1)
        self.d_k = self.d_model if d_k is None else require_int(d_k, "d_k", low=1)
        dtype = require_float_dtype(dtype)
        require_fits((8 + 2 * dtype.itemsize) * 2 * self.d_model * self.d_k,
                     "W_q and W_k (d_model, d_k), their gradients and a float64 draw",
                     d_model=self.d_model, d_k=self.d_k)
        self.add_param("W_q", glorot_uniform(rng, self.d_model, self.d_k, dtype))
        self.add_param("W_k", glorot_uniform(rng, self.d_model, self.d_k, dtype))

    def forward(self, h, query_index, mask=None):
        h = require_float_array(h, "h")
        if h.ndim != 3 or h.shape[-1] != self.d_model:
            raise ValueError(f"h must have shape (B, L, d_model={self.d_model}), got {h.shape}")
        B, L, _ = h.shape
        query_index = require_int_array(query_index, "query_index")
        if query_index.shape != (B,):
            raise ValueError(f"query_index must hold {B} positions, one per sequence; got "
                             f"shape {query_index.shape}")
        if query_index.size and not (0 <= query_index.min() and query_index.max() < L):
            raise ValueError(f"query_index must lie in 0..{L - 1}, got {query_index}")
        if mask is not None:
            mask = np.asarray(mask)
            if mask.dtype != np.bool_ or mask.shape != (B, L):
                raise ValueError(f"mask must be bool of shape (B, L) = {(B, L)}, got "
                                 f"{mask.dtype} of shape {mask.shape}")
        rows = np.arange(B)
        scale = h.dtype.type(1 / math.sqrt(self.d_k))
        h_query = h[rows, query_index]  # (B, d_model)
        q = h_query @ self.W_q  # (B, d_k)
        k = h @ self.W_k  # (B, L, d_k)
        logits = (k @ q[:, :, None])[:, :, 0] * scale  # (B, L)
        if mask is not None:
            logits = np.where(mask, logits, h.dtype.type(-np.inf))
        self.save_for_backward((h, query_index, mask, h_query, q, k, scale))
        return logits

    def backward(self, dlogits):
        h, query_index, mask, h_query, q, k, scale = self.saved_for_backward()
        if mask is not None:
            dlogits = np.where(mask, dlogits, 0)
        ds = dlogits * scale  # (B, L)
        dq = (ds[:, None, :] @ k)[:, 0]  # (B, d_k)
        dk = ds[:, :, None] * q[:, None, :]  # (B, L, d_k)
        self.grads["W_q"] += h_query.T @ dq
        self.grads["W_k"] += h.reshape(-1, self.d_model).T @ dk.reshape(-1, self.d_k)
        dh = dk @ self.W_k.T  # (B, L, d_model)
        dh[np.arange(len(h)), query_index] += dq @ self.W_q.T
        return dh


@dataclasses.dataclass(frozen=True)
class ReferentConfig:
    """The shape of a ReferentModel; the defaults are the model notebook 09 builds with
    ReferentModel(...) (which takes these fields). No notebook names the config itself."""

    d_model: int = 32
    num_heads: int = 4
    num_layers: int = 2
    d_ff: int = 64
    max_len: int = 16
    norm_first: bool = False

    def __post_init__(self):
        names = ("d_model", "num_heads", "num_layers", "d_ff", "max_len")
        for name, size in zip(names, require_sizes(**{n: getattr(self, n) for n in names})):
            object.__setattr__(self, name, size)  # Python ints, even from numpy ints
        require_bool(self.norm_first, "norm_first")
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by "
                             f"num_heads={self.num_heads}")


# How notebook 09 trains it: the loop of notebook 08 with warm-up only, no label smoothing.
REFERENT_TRAINING = TrainConfig(steps=300, batch_size=64, warmup=50, lr_scale=1.0,
                                label_smoothing=0.0, clip_norm=1.0, cooldown=0.0)


class ReferentModel(Module):
    """tokens (B, L), it (B,) -> pointer logits (B, L): where "it" points.

    embeddings × √d_model + sinusoidal positions -> Encoder (padding masked) -> PointerHead
    from the position of "it". The shape arguments are ReferentConfig's fields, with its
    defaults. Built in notebook 09 §3.
    """

    def __init__(self, *shape, dtype=np.float32, rng=None, **shape_by_name):
        super().__init__()
        self.config = c = ReferentConfig(*shape, **shape_by_name)
        rng = as_rng(rng)
        self.d_model, self.max_len, self.dtype = c.d_model, c.max_len, require_float_dtype(dtype)
        self.embed = EmbeddingWithPositions(len(VOCAB), c.d_model, c.max_len, dtype=dtype,
                                            rng=rng)
        self.encoder = Encoder(c.num_layers, c.d_model, c.num_heads, c.d_ff, c.norm_first,
                               dtype=dtype, rng=rng)
        self.pointer = PointerHead(c.d_model, c.d_model // c.num_heads, dtype=dtype, rng=rng)

    def forward(self, tokens, it):
        tokens = require_token_ids(tokens, len(VOCAB))
        if tokens.ndim != 2 or tokens.shape[1] > self.max_len:
            raise ValueError(f"tokens must have shape (B, L) with L <= max_len={self.max_len}, "
                             f"got {tokens.shape}")
        it = require_int_array(it, "it")
        if it.shape != tokens.shape[:1] or (it.size and not 0 <= it.min() <= it.max()
                                            < tokens.shape[1]):
            raise ValueError(f"it must hold one position in 0..{tokens.shape[1] - 1} per "
                             f"sentence, {tokens.shape[0]} in all; got {it}")
        self.save_for_backward(True)  # its parts keep what backward needs
        h = self.encoder(self.embed(tokens), mask=padding_mask(tokens, PAD_ID))  # (B, L, d)
        return self.pointer(h, it, mask=tokens != PAD_ID)

    def backward(self, dlogits):
        """Fills every parameter gradient from dL/dlogits (B, L); returns None."""
        self.saved_for_backward()
        self.embed.backward(self.encoder.backward(self.pointer.backward(dlogits)))


def accuracy(model, examples):
    """Fraction of examples whose referent gets the largest pointer logit. Notebook 09 §4."""
    require_instance(model, ReferentModel, "model")
    tokens, it, referent = make_batch(examples)
    with no_grad():  # a look: nothing is kept for a backward
        return float(np.mean(model(tokens, it).argmax(axis=1) == referent))


class ReferentTask:
    """The task as `minitf.train.train` takes it: fresh training sentences every batch; the
    target is the index of the referent, and every sentence is scored. train_referent uses
    it; no notebook names it."""

    ignore_index = None

    def batch(self, rng, batch_size):
        tokens, it, referent = make_batch(sentences(rng, batch_size))
        return (tokens, it), referent


def train_referent(model, config=REFERENT_TRAINING, *, seed=0, log_every=100, verbose=True,
                   stream=None, **changes):
    """Train `model` in place on fresh training sentences; returns the loss of every step as
    an array. `minitf.train.train` with REFERENT_TRAINING (keyword `changes` replace its
    fields), printing the mean loss every `log_every` steps when `verbose`. Notebook 09 §4."""
    require_instance(model, ReferentModel, "model")
    log_every = require_int(log_every, "log_every", low=1)
    verbose = require_bool(verbose, "verbose")
    config = dataclasses.replace(config, **changes)
    stream = stream or sys.stdout
    losses = []

    def report(entry):
        losses.append(entry["loss"])
        if verbose and (entry["step"] % log_every == 0 or entry["step"] == config.steps):
            line = pick({"en": "step {step:4d}  mean loss of the last {n} steps {loss:.4f}",
                         "zh": "第 {step} 步：最近 {n} 步的平均损失 {loss:.4f}"})
            stream.write(line.format(step=entry["step"], n=log_every,
                                     loss=np.mean(losses[-log_every:])) + "\n")

    train(model, ReferentTask(), config, rng=require_int(seed, "seed", low=0), log_every=1,
          on_report=report)
    return np.array(losses)
