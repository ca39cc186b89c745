"""The decoder-only model (minitf.gpt) and its generation (generate.greedy_continue): what it
computes, that it is causal, its KV cache, its state dict, dtypes and refusals. Its gradient
checks are in test_gradients.py."""

import numpy as np
import pytest
from test_generate import check_conventions, set_mixed_eos_bias

from minitf import GPT, GPTConfig, greedy_continue
from minitf.attention import causal_mask, padding_mask
from minitf.encoder import Encoder
from minitf.model import Transformer
from minitf.positional import sinusoidal_encoding

V = 12
PAD, BOS, EOS = 0, 1, 2
TOKENS = np.array([[1, 4, 5, 6, 7, 8], [1, 9, 10, 11, 0, 0]])  # the second row is padded


def tiny_gpt(seed=0, **kw):
    args = dict(d_model=16, num_heads=2, num_layers=2, d_ff=32, max_len=20, rng=seed)
    args.update(kw)
    return GPT(V, **args)


def prompts(B, seed=1, L=5):
    """B prompts of lengths 2..L, <bos> first, padded with <pad> after their end."""
    rng = np.random.default_rng(seed)
    rows = np.full((B, L), PAD)
    for i, length in enumerate(rng.integers(2, L + 1, size=B)):
        rows[i, :length] = [BOS, *rng.integers(3, V, size=length - 1)]
    return rows


# ---------------------------------------------------------------- what it computes


@pytest.mark.parametrize("norm_first", [False, True])
def test_gpt_is_embeddings_then_encoder_layers_under_a_causal_mask_then_a_projection(norm_first):
    model = tiny_gpt(norm_first=norm_first, dtype=np.float64)
    x = model.embed.weight[TOKENS] * np.sqrt(16) + sinusoidal_encoding(20, 16, np.float64)[:6]
    stack = Encoder(2, 16, 2, 32, norm_first, dtype=np.float64)
    stack.load_state_dict({name.removeprefix("decoder."): value
                           for name, value in model.state_dict().items()
                           if name.startswith("decoder.")})
    h = stack(x, causal_mask(6) & padding_mask(TOKENS))
    expected = h @ model.generator.W + model.generator.b
    np.testing.assert_allclose(model(TOKENS), expected, rtol=1e-12, atol=1e-12)


def test_config_is_stated_once():
    config = GPTConfig(V, d_model=16, num_heads=2, num_layers=3, d_ff=32, max_len=20,
                       norm_first=True, activation="gelu")
    a, b = GPT.from_config(config, rng=3), GPT(**vars(config), rng=3)
    assert a.config == b.config == config
    np.testing.assert_array_equal(a(TOKENS), b(TOKENS))
    assert GPT(V).config == GPTConfig(V)  # the defaults are the config's
    with pytest.raises(TypeError, match="config must be a GPTConfig"):
        GPT.from_config(Transformer(V, V).config)


@pytest.mark.parametrize("norm_first", [False, True])
def test_a_later_token_never_changes_an_earlier_logit(norm_first):
    model = tiny_gpt(norm_first=norm_first)
    logits = model(TOKENS)
    for t in range(1, 6):
        changed = TOKENS.copy()
        changed[0, t:] = 3
        other = model(changed)
        np.testing.assert_allclose(other[:, :t], logits[:, :t], rtol=1e-5, atol=1e-6)
        assert not np.allclose(other[0, t:], logits[0, t:], atol=1e-4)


def test_padding_after_a_row_changes_none_of_its_logits():
    model = tiny_gpt(norm_first=True)
    alone = model(TOKENS[1:, :4])
    np.testing.assert_allclose(model(TOKENS)[1:, :4], alone, rtol=1e-5, atol=1e-6)
    model.embed.weight[PAD] += 100.0  # whatever a padded position holds, nothing attends to it
    np.testing.assert_allclose(model(TOKENS)[1:, :4], alone, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- the KV cache


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("prefill", [1, 3])
def test_forward_with_the_cache_equals_the_whole_sequence_at_once(norm_first, prefill):
    model = tiny_gpt(norm_first=norm_first)
    tokens = TOKENS[:1]
    full = model(tokens)
    cache = model.new_cache()
    steps = [model(tokens[:, :prefill], cache=cache)]
    steps += [model(tokens[:, t:t + 1], cache=cache, start=t) for t in range(prefill, 6)]
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, rtol=1e-4, atol=1e-5)
    assert cache[1]["self_attn"]["k"].shape == (1, 2, 6, 8)  # (B, h, positions, d_k)


def test_the_cache_path_checks_start_and_refuses_backward():
    model = tiny_gpt()
    cache = model.new_cache()
    with pytest.raises(ValueError, match="start=2, but the cache holds 0 positions"):
        model(TOKENS[:, :1], cache=cache, start=2)
    logits = model(TOKENS[:, :3], cache=cache)
    with pytest.raises(ValueError, match="start=2, but the cache holds 3 positions"):
        model(TOKENS[:, 3:4], cache=cache, start=2)
    with pytest.raises(TypeError, match="cache must be a list of 2 dicts, one per decoder layer"):
        model(TOKENS, cache={})
    with pytest.raises(RuntimeError, match="needs a forward without a KV cache"):
        model.backward(np.ones_like(logits))


# ---------------------------------------------------------------- parameters and dtypes


def test_state_dict_names_and_round_trip():
    a, b = tiny_gpt(seed=1), tiny_gpt(seed=2)
    assert not np.allclose(a(TOKENS), b(TOKENS))
    state = a.state_dict()
    assert {"embed.weight", "decoder.layers.1.self_attn.W_q", "decoder.layers.0.norm2.gamma",
            "generator.W", "generator.b"} <= set(state)
    assert not any("cross_attn" in name or name.startswith("decoder.norm") for name in state)
    assert "decoder.norm.gamma" in tiny_gpt(norm_first=True).state_dict()
    b.load_state_dict(state)
    np.testing.assert_array_equal(a(TOKENS), b(TOKENS))
    state["generator.b"][:] = 5  # a copy: changing it leaves the model alone
    assert not np.any(a.generator.b == 5)


def test_load_state_dict_refuses_missing_unexpected_and_misshapen_entries():
    model = tiny_gpt()
    state = model.state_dict()
    missing = dict(state)
    del missing["decoder.layers.0.self_attn.W_k"]
    with pytest.raises(ValueError, match=r"missing: decoder\.layers\.0\.self_attn\.W_k"):
        model.load_state_dict(missing)
    model.load_state_dict(missing, strict=False)
    with pytest.raises(ValueError, match=r"unexpected: decoder\.layers\.0\.cross_attn\.W_q"):
        model.load_state_dict(dict(state, **{"decoder.layers.0.cross_attn.W_q": np.zeros(3)}))
    with pytest.raises(ValueError, match=r"generator\.W: expected \(16, 12\), got \(16, 13\)"):
        model.load_state_dict(dict(state, **{"generator.W": np.zeros((16, 13))}), strict=False)
    with pytest.raises(ValueError, match="missing: .*embed.weight.* unexpected: .*src_embed"):
        model.load_state_dict(Transformer(V, V, d_model=16, num_heads=2, num_layers=2,
                                          d_ff=32, max_len=20).state_dict())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtype_is_kept_in_logits_gradients_and_generation(dtype):
    model = tiny_gpt(dtype=dtype)
    logits = model(TOKENS)
    assert logits.dtype == dtype
    model.backward(np.ones_like(logits))
    assert {g.dtype for _, g in model.named_grads()} == {np.dtype(dtype)}
    assert greedy_continue(model, TOKENS, max_new=3).dtype == np.int64


def test_backward_fills_every_gradient():
    model = tiny_gpt(norm_first=True)
    model.backward(np.random.default_rng(7).standard_normal(model(TOKENS).shape))
    empty = [n for n, g in model.named_grads() if not np.any(g) and not n.endswith("b_k")]
    assert empty == []


@pytest.mark.parametrize("make, message", [
    (lambda: GPT(V, d_model=10, num_heads=4), "d_model=10 is not divisible by num_heads=4"),
    (lambda: GPT(0), "vocab_size must be an int >= 1, got 0"),
    (lambda: GPT(V, activation="tanh"), "activation must be one of"),
    (lambda: GPT(V, max_len=10 ** 12), r"max_len=1000000000000 would need .* for the model"),
    (lambda: tiny_gpt()(np.ones((2, 21), int)), "tokens reaches position 21, longer than "
                                                 "max_len=20"),
    (lambda: tiny_gpt()(TOKENS.astype(float)), "tokens must be an integer array"),
    (lambda: tiny_gpt()(TOKENS + 5), "outside the vocabulary 0..11"),
    (lambda: tiny_gpt()(TOKENS[0]), r"tokens must have shape \(B, L\)"),
    (lambda: tiny_gpt()(TOKENS[:, :0]), r"tokens has no positions \(shape \(2, 0\)\)"),
    (lambda: tiny_gpt()(TOKENS, start=-1), "start must be an int >= 0, got -1"),
])
def test_bad_input_gets_a_clear_error(make, message):
    with pytest.raises(ValueError, match=message):
        make()


# ---------------------------------------------------------------- generation


def continue_greedily(model, prompt, max_new):
    return greedy_continue(model, prompt, max_new=max_new)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("B", [1, 4])
@pytest.mark.parametrize("eos_id", [None, EOS])
def test_greedy_continue_with_the_cache_equals_recomputing(norm_first, B, eos_id):
    model, prompt = tiny_gpt(seed=B, norm_first=norm_first), prompts(B, seed=B)
    if B > 1:
        set_mixed_eos_bias(model, prompt, 12, decode=continue_greedily)
    with_cache = greedy_continue(model, prompt, max_new=12, eos_id=eos_id)
    without = greedy_continue(model, prompt, max_new=12, eos_id=eos_id, use_cache=False)
    np.testing.assert_array_equal(with_cache, without)
    stopped = check_conventions(with_cache, 12, eos_id)
    if eos_id is not None and B > 1:
        assert stopped.any() and not stopped.all()


def test_each_step_is_the_argmax_of_the_whole_sequence_so_far():
    model, prompt = tiny_gpt(seed=5), prompts(1, seed=5, L=4)[:, :3]
    out = greedy_continue(model, prompt, max_new=5, eos_id=None)
    assert out.shape == (1, 5)
    sequence = prompt
    for t in range(5):
        logits = model(sequence)[0, -1]
        logits[PAD] = -np.inf
        assert out[0, t] == logits.argmax()
        sequence = np.concatenate([sequence, out[:, t:t + 1]], axis=1)


def test_prompts_of_different_lengths_get_what_each_gets_alone():
    model, prompt = tiny_gpt(seed=6), prompts(6, seed=6)
    lengths = (prompt != PAD).sum(axis=1)
    assert len(set(lengths)) > 2
    together = greedy_continue(model, prompt, max_new=6, eos_id=None)
    for row, length, out in zip(prompt, lengths, together):
        np.testing.assert_array_equal(out, greedy_continue(model, row[None, :length],
                                                           max_new=6, eos_id=None)[0])


def test_rows_stop_at_eos_and_the_loop_when_all_have():
    model, prompt = tiny_gpt(seed=7), prompts(5, seed=7)
    model.generator.b[EOS] = 30.0  # every row ends at once
    np.testing.assert_array_equal(greedy_continue(model, prompt, max_new=6),
                                  np.full((5, 1), EOS))
    out = greedy_continue(model, prompt, max_new=6, eos_id=None)
    assert out.shape == (5, 6) and (out == EOS).all()


def test_the_longest_prompt_may_just_fill_the_positional_table():
    model = tiny_gpt()
    prompt = np.ones((2, 15), int)
    assert greedy_continue(model, prompt, max_new=6, eos_id=None).shape == (2, 6)
    with pytest.raises(ValueError, match=r"a prompt of 15 tokens and max_new=7 would feed "
                                         r"positions 0\.\.20, .* 20 positions; use max_new <= 6"):
        greedy_continue(model, prompt, max_new=7)


@pytest.mark.parametrize("call, error, message", [
    (lambda m, p: greedy_continue(Transformer(V, V), p, max_new=3), TypeError,
     "model must be a GPT, got .*Transformer"),
    (lambda m, p: greedy_continue(m, p, max_new=0), ValueError, "max_new must be an int >= 1"),
    (lambda m, p: greedy_continue(m, p, max_new=2.0), TypeError, "max_new must be an int"),
    (lambda m, p: greedy_continue(m, p, max_new=3, eos_id=V), ValueError,
     r"eos_id must be an int in 0\.\.11"),
    (lambda m, p: greedy_continue(m, p[0], max_new=3), ValueError,
     r"prompt must have shape \(B, L\)"),
    (lambda m, p: greedy_continue(m, p + V, max_new=3), ValueError,
     "prompt contain id 13, outside the vocabulary 0..11"),
    (lambda m, p: greedy_continue(m, np.array([[1, 0, 5]]), max_new=3), ValueError,
     "prompt row 0 has <pad> inside it"),
    (lambda m, p: greedy_continue(m, np.array([[1, 5], [0, 0]]), max_new=3), ValueError,
     "prompt row 1 is all <pad>"),
    (lambda m, p: greedy_continue(m, p, max_new=3, use_cache="yes"), TypeError,
     "use_cache must be True or False"),
])
def test_bad_arguments_are_refused_before_any_work(call, error, message):
    model = tiny_gpt()
    with pytest.raises(error, match=message):
        call(model, prompts(2))
