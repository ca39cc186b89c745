"""Every public callable refuses a wrongly typed argument with a ValueError or TypeError that
names the argument — never an AttributeError, an IndexError or a numpy traceback from inside.

Each entry below is a valid call; the test replaces one argument at a time with a value of the
wrong kind and checks the error.
"""

import inspect
import re

import numpy as np
import pytest

from minitf import (
    attention,
    fast,
    generate,
    layers,
    multihead,
    positional,
    tasks,
    tokens,
    train,
    translator,
)
from minitf.decoder import Decoder, DecoderLayer
from minitf.encoder import Encoder, EncoderLayer
from minitf.figures import cost
from minitf.gpt import GPT, GPTConfig
from minitf.language import use_language
from minitf.model import Transformer, decoder_mask
from minitf.module import ModuleList, as_rng
from minitf.tasks import referent, sequence
from minitf.translator.checkpoint import check_save_path

RNG = np.random.default_rng(0)
X = RNG.standard_normal((1, 3, 8)).astype(np.float32)
MEMORY = RNG.standard_normal((1, 2, 8)).astype(np.float32)
QKV = tuple(RNG.standard_normal((2, 3, 4)) for _ in range(3))


def tiny_model():
    return Transformer(len(tasks.SOURCE_VOCAB), len(tasks.TARGET_VOCAB), d_model=8, num_heads=2,
                       num_layers=1, d_ff=16, max_len=16, rng=0)


SRC = tasks.make_batch([12, 305])[0]


def tiny_referent_model():
    return referent.ReferentModel(d_model=8, num_heads=2, num_layers=1, d_ff=16, rng=0)


def tiny_gpt():
    return GPT(len(sequence.VOCAB), d_model=8, num_heads=2, num_layers=1, d_ff=16, max_len=16,
               rng=0)


SEQUENCE_TOKENS = sequence.make_batch([12, 305])[0]
PROMPTS = tasks.pad([sequence.prompt_ids("twelve"), sequence.prompt_ids("three hundred five")])
REFERENT_EXAMPLES = referent.sentences(0, 2)
REFERENT_BATCH = referent.make_batch(REFERENT_EXAMPLES)


def forward_of(module, *args):
    module(*args)
    return module


# name -> (callable, valid keyword arguments). Every argument is passed by keyword so that the
# test can swap one; `self` of a bound method is the object built by the lambda.
CALLS = {
    "softmax": (attention.softmax, dict(x=X, axis=-1)),
    "log_softmax": (attention.log_softmax, dict(x=X)),
    "causal_mask": (attention.causal_mask, dict(n=3)),
    "padding_mask": (attention.padding_mask, dict(tokens=SRC, pad_id=0)),
    "scaled_dot_product_attention": (attention.scaled_dot_product_attention,
                                     dict(q=QKV[0], k=QKV[1], v=QKV[2], mask=None)),
    "scaled_dot_product_attention_backward": (
        attention.scaled_dot_product_attention_backward,
        dict(dout=QKV[2], q=QKV[0], k=QKV[1], v=QKV[2],
             weights=attention.scaled_dot_product_attention(*QKV)[1])),
    "blocked_attention": (fast.blocked_attention, dict(q=QKV[0], k=QKV[1], v=QKV[2], mask=None,
                                                       block_rows=2, block_scores=64,
                                                       bound_from=1)),
    "chunked_attention": (fast.chunked_attention, dict(q=QKV[0], k=QKV[1], v=QKV[2], mask=None,
                                                       chunk_size=2)),
    "blas_threads": (fast.blas_threads, dict(n=1)),
    "chosen_threads": (fast.threads.chosen_threads, dict()),
    "check_save_path": (check_save_path, dict(path="model.npz")),
    "attention_flops": (cost.attention_flops, dict(L_q=4, L_k=5, d_k=8, d_v=8, batch=2)),
    "score_bytes": (cost.score_bytes, dict(L_q=4, L_k=5, batch=2)),
    "random_qkv": (cost.random_qkv, dict(n=4, d=8, batch=(2,), seed=0)),
    "Linear": (layers.Linear, dict(d_in=4, d_out=3, rng=0)),
    "Linear.forward": (lambda x: layers.Linear(8, 3, rng=0).forward(x), dict(x=X)),
    "Embedding": (layers.Embedding, dict(vocab_size=5, d_model=4, rng=0)),
    "Embedding.forward": (lambda tokens: layers.Embedding(40, 4, rng=0).forward(tokens),
                          dict(tokens=SRC)),
    "LayerNorm": (layers.LayerNorm, dict(d_model=4, eps=1e-5)),
    "LayerNorm.forward": (lambda x: layers.LayerNorm(8).forward(x), dict(x=X)),
    "FeedForward": (layers.FeedForward, dict(d_model=4, d_ff=8, activation="relu", rng=0)),
    "FeedForward.forward": (lambda x: layers.FeedForward(8, 16, rng=0).forward(x), dict(x=X)),
    "relu": (layers.relu, dict(x=X)),
    "Dropout": (layers.Dropout, dict(p=0.1, rng=0)),
    "Dropout.forward": (lambda x: layers.Dropout(0.5, rng=0).forward(x), dict(x=X)),
    "gelu": (layers.gelu, dict(x=X)),
    "glorot_uniform": (layers.glorot_uniform, dict(rng=as_rng(0), d_in=3, d_out=4,
                                                   dtype=np.float32)),
    "split_heads": (multihead.split_heads, dict(x=X, num_heads=2)),
    "merge_heads": (multihead.merge_heads, dict(x=X.reshape(1, 3, 2, 4).transpose(0, 2, 1, 3))),
    "MultiHeadAttention": (multihead.MultiHeadAttention, dict(d_model=8, num_heads=2, rng=0)),
    "MultiHeadAttention.forward": (
        lambda x, context, mask: multihead.MultiHeadAttention(8, 2, rng=0).forward(
            x, context=context, mask=mask),
        dict(x=X, context=MEMORY, mask=None)),
    "sinusoidal_encoding": (positional.sinusoidal_encoding, dict(max_len=6, d_model=4)),
    "SinusoidalPositionalEncoding": (positional.SinusoidalPositionalEncoding,
                                     dict(max_len=6, d_model=8)),
    "SinusoidalPositionalEncoding.forward": (
        lambda x, start: positional.SinusoidalPositionalEncoding(6, 8).forward(x, start=start),
        dict(x=X, start=1)),
    "LearnedPositionalEmbedding": (positional.LearnedPositionalEmbedding,
                                   dict(max_len=6, d_model=8, rng=0)),
    "rope": (positional.rope, dict(x=X, positions=np.arange(3), base=10000.0)),
    "EncoderLayer": (EncoderLayer, dict(d_model=8, num_heads=2, d_ff=16, norm_first=False,
                                        activation="relu", rng=0)),
    "EncoderLayer.forward": (lambda x, mask: EncoderLayer(8, 2, 16, rng=0).forward(x, mask),
                             dict(x=X, mask=None)),
    "Encoder": (Encoder, dict(num_layers=1, d_model=8, num_heads=2, d_ff=16, norm_first=True,
                              rng=0)),
    "DecoderLayer": (DecoderLayer, dict(d_model=8, num_heads=2, d_ff=16, rng=0)),
    "DecoderLayer.forward": (
        lambda y, memory: DecoderLayer(8, 2, 16, rng=0).forward(y, memory),
        dict(y=X, memory=MEMORY)),
    "Decoder": (Decoder, dict(num_layers=1, d_model=8, num_heads=2, d_ff=16, rng=0)),
    "Transformer": (Transformer, dict(src_vocab_size=40, tgt_vocab_size=17, d_model=8,
                                      num_heads=2, num_layers=1, d_ff=16, max_len=16,
                                      norm_first=False, activation="relu", dtype=np.float32,
                                      rng=0)),
    "Transformer.forward": (lambda src, tgt_in: tiny_model().forward(src, tgt_in),
                            dict(src=SRC, tgt_in=tasks.make_batch([12, 305])[1])),
    "Transformer.encode": (lambda src: tiny_model().encode(src), dict(src=SRC)),
    "ModuleList": (ModuleList, dict(modules=[layers.LayerNorm(4)])),
    "as_rng": (as_rng, dict(rng=0)),
    "greedy_decode": (generate.greedy_decode, dict(model=tiny_model(), src=SRC, max_len=4,
                                                   bos_id=1, eos_id=2, use_cache=True)),
    "sample": (generate.sample, dict(model=tiny_model(), src=SRC, max_len=4, temperature=0.5,
                                     top_k=3, top_p=0.9, rng=0, use_cache=False)),
    "beam_search": (generate.beam_search, dict(model=tiny_model(), src=SRC, beam_size=2,
                                               max_len=4, length_penalty=0.6,
                                               return_all=False)),
    "top_k_mask": (generate.top_k_mask, dict(logits=X, k=2)),
    "top_p_mask": (generate.top_p_mask, dict(probs=attention.softmax(X), p=0.5)),
    "english": (tasks.english, dict(n=12)),
    "chinese": (tasks.chinese, dict(n=12)),
    "Vocab": (tasks.Vocab, dict(tokens=["a", "b"])),
    "Vocab.decode": (lambda ids, strip_special: tasks.SOURCE_VOCAB.decode(
        ids, strip_special=strip_special), dict(ids=SRC[0], strip_special=True)),
    "Vocab.encode": (lambda tokens: tasks.SOURCE_VOCAB.encode(tokens), dict(tokens=["one"])),
    "source_words": (tasks.source_words, dict(text="one")),
    "canonical_english": (tasks.canonical_english, dict(text="one")),
    "parse_english": (tasks.parse_english, dict(text="one")),
    "target_chars": (tasks.target_chars, dict(text="一")),
    "decode_target": (tasks.decode_target, dict(ids=np.array([4, 5, 2]))),
    "split": (tasks.split, dict(test_fraction=0.2, seed=0)),
    "pad": (tasks.pad, dict(sequences=[[1, 2], [3]], pad_id=0)),
    "make_batch": (tasks.make_batch, dict(numbers=[1, 2])),
    "cross_entropy": (train.cross_entropy, dict(logits=X, targets=np.array([[1, 2, 0]]),
                                                ignore_index=0, label_smoothing=0.1)),
    "warmup_schedule": (train.warmup_schedule, dict(step=3, d_model=8, warmup=10, scale=1.0)),
    "cooldown_factor": (train.cooldown_factor, dict(step=3, steps=8, share=0.25)),
    "number_shape": (tasks.number_shape, dict(n=1005)),
    "global_norm": (train.global_norm, dict(model=tiny_model())),
    "clip_grad_norm": (train.clip_grad_norm, dict(model=tiny_model(), max_norm=1.0)),
    "Adam": (train.Adam, dict(model=tiny_model(), lr=0.01, betas=(0.9, 0.98), eps=1e-9)),
    "new_model": (translator.new_model, dict(seed=0)),
    "translate_ids": (generate.translate_ids, dict(model=tiny_model(), src=SRC, beam_size=1)),
    "exact_match": (tasks.exact_match, dict(model=tiny_model(), numbers=[1, 2], batch_size=2,
                                            beam_size=1)),
    "NumberTask": (tasks.NumberTask, dict(train_numbers=[1, 2, 30], test_numbers=[4, 5],
                                          by_shape=0.5, eval_size=2, rng=0)),
    "TrainConfig": (train.TrainConfig, dict(steps=4, batch_size=2, warmup=2, lr_scale=0.5,
                                            label_smoothing=0.1, clip_norm=1.0, cooldown=0.25)),
    "train": (train.train, dict(model=tiny_model(),
                                task=tasks.NumberTask([1, 2, 30], [4, 5], eval_size=2),
                                steps=1, batch_size=2, rng=0, log_every=1, max_seconds=None)),
    "train_translator": (translator.train_translator, dict(
        model=tiny_model(), numbers=([1, 2, 30], [4, 5]), steps=1, batch_size=2, seed=0,
        by_shape=0.5, eval_size=2, log_every=1, verbose=False)),
    "translate_each": (translator.translate_each, dict(texts=["one"], beam_size=1)),
    "require_train_test": (tasks.require_train_test, dict(numbers=([1, 2, 30], [4, 5]))),
    "EmbeddingWithPositions": (positional.EmbeddingWithPositions,
                               dict(vocab_size=5, d_model=4, max_len=6, rng=0)),
    "EmbeddingWithPositions.forward": (
        lambda tokens, start: positional.EmbeddingWithPositions(40, 4, 16, rng=0).forward(
            tokens, start=start), dict(tokens=SRC, start=1)),
    "ReferentConfig": (referent.ReferentConfig, dict(d_model=8, num_heads=2, num_layers=1,
                                                     d_ff=16, max_len=16, norm_first=False)),
    "sentence": (referent.sentence, dict(living="dog", place="river", adjective="wide",
                                         verb="cross", passive=True, opener=("yesterday",),
                                         because="since")),
    "pairs": (referent.pairs, dict(held_out=True)),
    "sentences": (referent.sentences, dict(rng=0, n=2, held_out=False)),
    "encode": (referent.encode, dict(words=["the", "dog"])),
    "make_batch_referent": (referent.make_batch, dict(examples=REFERENT_EXAMPLES)),
    "PointerHead": (referent.PointerHead, dict(d_model=8, d_k=4, dtype=np.float32, rng=0)),
    "PointerHead.forward": (lambda h, query_index, mask: referent.PointerHead(8, rng=0).forward(
        h, query_index, mask), dict(h=X, query_index=np.array([1]),
                                    mask=np.ones((1, 3), dtype=bool))),
    "ReferentModel": (referent.ReferentModel, dict(d_model=8, num_heads=2, num_layers=1, d_ff=16,
                                                   max_len=16, norm_first=False,
                                                   dtype=np.float32, rng=0)),
    "ReferentModel.forward": (lambda tokens, it: tiny_referent_model().forward(tokens, it),
                              dict(tokens=REFERENT_BATCH[0], it=REFERENT_BATCH[1])),
    "accuracy": (referent.accuracy, dict(model=tiny_referent_model(),
                                         examples=REFERENT_EXAMPLES)),
    "train_referent": (referent.train_referent, dict(model=tiny_referent_model(), steps=1,
                                                     batch_size=2, warmup=1, lr_scale=1.0,
                                                     clip_norm=1.0, seed=0, log_every=1,
                                                     verbose=False)),
    "pad_tokens": (tokens.pad, dict(sequences=[[1, 2], [3]], pad_id=0)),
    "decoder_mask": (decoder_mask, dict(tokens=SEQUENCE_TOKENS, cached=True, start=2)),
    "GPTConfig": (GPTConfig, dict(vocab_size=48, d_model=8, num_heads=2, num_layers=1, d_ff=16,
                                  max_len=16, norm_first=False, activation="relu")),
    "GPT": (GPT, dict(vocab_size=48, d_model=8, num_heads=2, num_layers=1, d_ff=16, max_len=16,
                      norm_first=True, activation="relu", dtype=np.float32, rng=0)),
    "GPT.forward": (lambda tokens, start: tiny_gpt().forward(tokens, start=start),
                    dict(tokens=SEQUENCE_TOKENS, start=0)),
    "GPT.from_config": (lambda config: GPT.from_config(config), dict(config=GPTConfig(48))),
    "greedy_continue": (generate.greedy_continue, dict(model=tiny_gpt(), prompt=PROMPTS,
                                                       max_new=4, eos_id=2, use_cache=True)),
    "draw_probabilities": (tasks.numbers.draw_probabilities, dict(numbers=[1, 2, 30],
                                                                  by_shape=0.5)),
    "prompt_ids": (sequence.prompt_ids, dict(text="one thousand five")),
    "sequence_ids": (sequence.sequence_ids, dict(n=1005)),
    "make_batch_sequence": (sequence.make_batch, dict(numbers=[1, 2])),
    "decode_answer": (sequence.decode_answer, dict(ids=np.array([38, 39, 2]))),
    "exact_match_sequence": (sequence.exact_match, dict(model=tiny_gpt(), numbers=[1, 2],
                                                        batch_size=2)),
    "SequenceTask": (sequence.SequenceTask, dict(train_numbers=[1, 2, 30], test_numbers=[4, 5],
                                                 by_shape=0.5, eval_size=2, rng=0)),
    "use_language": (use_language, dict(language="en")),
    "train_sequence": (train.train, dict(
        model=tiny_gpt(), task=sequence.SequenceTask([1, 2, 30], [4, 5], eval_size=2),
        steps=1, batch_size=2, rng=0, log_every=1, max_seconds=None)),
}


def wrong_values(name, value):
    """Values of the wrong kind for an argument whose valid value is `value`."""
    if isinstance(value, str):
        return [5]
    if value is None or callable(value) and not isinstance(value, np.ndarray):
        return ["oops"]
    if isinstance(value, bool):
        return ["yes"]
    if isinstance(value, (int, np.integer)):
        return ["3", 2.5]
    if isinstance(value, float):
        return ["0.5"]
    return ["oops"]


CASES = [
    pytest.param(name, arg, bad, id=f"{name}-{arg}={bad!r}")
    for name, (fn, kwargs) in CALLS.items()
    for arg, value in kwargs.items()
    for bad in wrong_values(arg, value)
    if value is not None  # None means "not given" here (mask, context, d_v)
]


@pytest.mark.parametrize("name, arg, bad", CASES)
def test_a_wrongly_typed_argument_is_named(name, arg, bad):
    fn, kwargs = CALLS[name]
    with pytest.raises((TypeError, ValueError)) as error:
        fn(**{**kwargs, arg: bad})
    assert re.search(rf"(?<![\w.]){re.escape(arg)}\b", str(error.value)), (
        f"{name}({arg}={bad!r}): {error.value!r} does not name {arg}")


@pytest.mark.parametrize("name", sorted(CALLS))
def test_the_valid_call_works(name):
    fn, kwargs = CALLS[name]
    fn(**kwargs)


def test_every_public_callable_is_listed():
    import importlib
    import pkgutil

    import minitf

    listed = {name.split(".")[0] for name in CALLS}
    missing = []
    not_swept = {"peak_memory", "time_attention", "numerical_gradient", "relative_error",
                 "gradient_check", "relu_backward", "gelu_backward", "use_cjk_font",
                 "plot_matrix", "attention_heatmap", "TransformerConfig", "Module",
                 "encode_source", "encode_target", "decode_source", "load_translator",
                 "translate", "Example", "report_line", "save_translator", "no_grad",
                 "ReferentTask", "save_checkpoint", "load_checkpoint", "main",
                 "with_chosen_threads",
                 # called by the configs' own checks and the task's functions, with names
                 # and functions of the package's own, never a learner's
                 "check_config", "require_model_fits", "require_numbers",
                 "matmul_rows",  # the layers call it on arrays they have checked
                 "is_grad_enabled", "current_language",  # take no argument
                 # read the package's own texts (minitf.language, minitf.figures.labels), never
                 # a learner's
                 "pick", "spaced", "label"}
    for info in pkgutil.walk_packages(minitf.__path__, "minitf."):
        # the checkers never raise; the figures of viz and diagrams are tested by looking
        if info.name.startswith(("minitf.check", "minitf.__main__", "minitf.validation",
                                 "minitf.pytorch", "minitf.figures.diagrams",
                                 "minitf.figures.viz", "minitf.translator.cli")):
            continue
        module = importlib.import_module(info.name)
        for n, obj in vars(module).items():
            if (not n.startswith("_") and (inspect.isfunction(obj) or inspect.isclass(obj))
                    and obj.__module__ == module.__name__ and n not in listed | not_swept):
                missing.append(f"{info.name}.{n}")
    assert not missing, f"add these to CALLS: {missing}"
