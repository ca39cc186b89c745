import numpy as np
import pytest

import minitf.layers
from minitf.attention import padding_mask, scaled_dot_product_attention
from minitf.decoder import DecoderLayer
from minitf.encoder import Encoder, EncoderLayer
from minitf.layers import Embedding, FeedForward, LayerNorm, Linear, matmul_rows
from minitf.model import Transformer
from minitf.multihead import MultiHeadAttention
from minitf.positional import (
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
    rope,
    sinusoidal_encoding,
)


def small_model(**kw):
    args = dict(d_model=16, num_heads=4, num_layers=2, d_ff=32, max_len=12, rng=0)
    args.update(kw)
    return Transformer(11, 9, **args)


SRC = np.array([[4, 5, 6, 7, 2, 0], [8, 9, 10, 2, 0, 0]])
TGT = np.array([[1, 4, 5, 6, 7], [1, 8, 3, 0, 0]])


def test_mha_equals_independent_heads_concatenated():
    rng = np.random.default_rng(0)
    mha = MultiHeadAttention(12, 3, dtype=np.float64, rng=1)
    x = rng.standard_normal((2, 5, 12))
    heads = []
    for i in range(3):
        cols = slice(i * 4, (i + 1) * 4)
        q = x @ mha.W_q[:, cols] + mha.b_q[cols]
        k = x @ mha.W_k[:, cols] + mha.b_k[cols]
        v = x @ mha.W_v[:, cols] + mha.b_v[cols]
        heads.append(scaled_dot_product_attention(q, k, v)[0])
    expected = np.concatenate(heads, axis=-1) @ mha.W_o + mha.b_o
    np.testing.assert_allclose(mha(x), expected, rtol=1e-12, atol=1e-12)
    assert mha.attn_weights.shape == (2, 3, 5, 5)


def test_post_ln_and_pre_ln_formulas():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4, 8))
    post = EncoderLayer(8, 2, 16, norm_first=False, dtype=np.float64, rng=2)
    a = post.norm1(x + post.self_attn(x))
    np.testing.assert_allclose(post(x), post.norm2(a + post.ffn(a)), rtol=1e-12)
    pre = EncoderLayer(8, 2, 16, norm_first=True, dtype=np.float64, rng=2)
    b = x + pre.self_attn(pre.norm1(x))
    np.testing.assert_allclose(pre(x), b + pre.ffn(pre.norm2(b)), rtol=1e-12)
    assert not np.allclose(pre(x), post(x))


def test_layernorm_normalises_with_biased_variance():
    x = np.random.default_rng(2).standard_normal((3, 7)) * 5 + 2
    y = LayerNorm(7, dtype=np.float64)(x)
    np.testing.assert_allclose(y.mean(-1), 0, atol=1e-12)
    np.testing.assert_allclose(y.var(-1), 1 - 1e-5 / (x.var(-1) + 1e-5), rtol=1e-9)


def test_self_attention_is_permutation_equivariant_without_positions():
    # "cat bites mouse" vs "mouse bites cat": same words, other order -> rows only swap
    emb = Embedding(10, 16, rng=3)
    encoder = Encoder(2, 16, 4, 32, rng=4)
    cat_bites_mouse = np.array([[5, 6, 7]])
    mouse_bites_cat = cat_bites_mouse[:, ::-1]
    out1, out2 = encoder(emb(cat_bites_mouse)), encoder(emb(mouse_bites_cat))
    np.testing.assert_allclose(out2, out1[:, ::-1], rtol=1e-5, atol=1e-5)
    pe = SinusoidalPositionalEncoding(10, 16)
    out1, out2 = encoder(pe(emb(cat_bites_mouse))), encoder(pe(emb(mouse_bites_cat)))
    assert not np.allclose(out2, out1[:, ::-1], atol=1e-3)


def test_sinusoidal_table_matches_formula():
    pe = sinusoidal_encoding(50, 8, np.float64)
    pos, i = 17, 3
    assert pe[pos, 2 * i] == pytest.approx(np.sin(pos / 10000 ** (2 * i / 8)))
    assert pe[pos, 2 * i + 1] == pytest.approx(np.cos(pos / 10000 ** (2 * i / 8)))


def test_rope_dot_product_depends_only_on_offset():
    rng = np.random.default_rng(5)
    q, k = rng.standard_normal(8), rng.standard_normal(8)
    def score(m, n):
        return rope(q[None], [m]) @ rope(k[None], [n]).T
    np.testing.assert_allclose(score(3, 1), score(10, 8), rtol=1e-10)
    assert not np.allclose(score(3, 1), score(3, 2))


def test_decoder_is_causal():
    model = small_model()
    logits = model(SRC, TGT)
    changed = TGT.copy()
    changed[:, 3:] = [[8, 8], [8, 8]]
    logits2 = model(SRC, changed)
    np.testing.assert_allclose(logits2[:, :3], logits[:, :3], rtol=1e-5, atol=1e-6)
    assert not np.allclose(logits2[:, 3:], logits[:, 3:])


def test_padded_source_tokens_do_not_matter():
    model = small_model(norm_first=True)
    logits = model(SRC, TGT)
    # whatever vector stands at a padded position, nothing may attend to it
    model.src_embed.weight[0] += 100.0
    np.testing.assert_allclose(model(SRC, TGT), logits, rtol=1e-5, atol=1e-5)
    # and a longer padding tail changes nothing either
    src_longer = np.pad(SRC, ((0, 0), (0, 3)))
    np.testing.assert_allclose(model(src_longer, TGT), logits, rtol=1e-5, atol=1e-5)


def test_float32_in_float32_out_everywhere():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 8)).astype(np.float32)
    memory = rng.standard_normal((2, 4, 8)).astype(np.float32)
    assert Linear(8, 5, rng=0)(x).dtype == np.float32
    assert LayerNorm(8)(x).dtype == np.float32
    assert FeedForward(8, 16, "gelu", rng=0)(x).dtype == np.float32
    assert MultiHeadAttention(8, 2, rng=0)(x).dtype == np.float32
    assert MultiHeadAttention(8, 2, rng=0)(x, memory).dtype == np.float32
    assert EncoderLayer(8, 2, 16, norm_first=True, rng=0)(x).dtype == np.float32
    assert DecoderLayer(8, 2, 16, rng=0)(x, memory).dtype == np.float32
    assert SinusoidalPositionalEncoding(10, 8)(x).dtype == np.float32
    assert LearnedPositionalEmbedding(10, 8, rng=0)(x).dtype == np.float32
    assert Embedding(5, 8, rng=0)(np.array([[1, 2]])).dtype == np.float32
    model = small_model()
    logits = model(SRC, TGT)
    assert logits.dtype == np.float32
    model.backward(np.ones_like(logits))
    assert all(g.dtype == np.float32 for _, g in model.named_grads())


def test_backward_fills_every_gradient():
    model = small_model()
    model.backward(np.random.default_rng(7).standard_normal(model(SRC, TGT).shape))
    empty = [n for n, g in model.named_grads() if not np.any(g) and not n.endswith("b_k")]
    assert empty == []


def test_state_dict_round_trip():
    a, b = small_model(rng=1), small_model(rng=2)
    assert not np.allclose(a(SRC, TGT), b(SRC, TGT))
    state = a.state_dict()
    assert "encoder.layers.0.self_attn.W_q" in state
    assert "decoder.layers.1.norm3.gamma" in state and "generator.W" in state
    assert "encoder.norm.gamma" not in state
    assert "encoder.norm.gamma" in small_model(norm_first=True).state_dict()
    b.load_state_dict(state)
    np.testing.assert_array_equal(a(SRC, TGT), b(SRC, TGT))
    state["generator.b"][:] = 5  # a copy: changing it leaves the model alone
    assert not np.any(a.generator.b == 5)


def test_load_state_dict_refuses_bad_entries():
    model = small_model()
    state = model.state_dict()
    missing = dict(state)
    del missing["decoder.layers.0.cross_attn.W_k"]
    with pytest.raises(ValueError, match=r"missing: decoder\.layers\.0\.cross_attn\.W_k"):
        model.load_state_dict(missing)
    model.load_state_dict(missing, strict=False)
    extra = dict(state, **{"encoder.layers.5.ffn.W_1": np.zeros(3)})
    with pytest.raises(ValueError, match=r"unexpected: encoder\.layers\.5\.ffn\.W_1"):
        model.load_state_dict(extra)
    wrong = dict(state, **{"generator.W": np.zeros((16, 10))})
    with pytest.raises(ValueError, match=r"generator\.W: expected \(16, 9\), got \(16, 10\)"):
        model.load_state_dict(wrong, strict=False)


def test_incremental_decoding_with_cache_matches_full_decoding():
    for norm_first in (False, True):
        model = small_model(norm_first=norm_first)
        memory = model.encode(SRC)
        mem_mask = padding_mask(SRC)
        full = model.decode(TGT, memory, mem_mask)
        cache = model.new_cache()
        first = model.decode(TGT[:, :2], memory, mem_mask, cache=cache)  # a 2-token prefill
        steps = [first] + [model.decode(TGT[:, t:t + 1], memory, mem_mask, cache=cache, start=t)
                           for t in range(2, TGT.shape[1])]
        # target padding is not masked in the cache path; compare the non-padded positions
        incremental = np.concatenate(steps, axis=1)
        real = TGT != 0
        np.testing.assert_allclose(incremental[real], full[real], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: MultiHeadAttention(10, 3), "d_model=10 is not divisible by num_heads=3"),
        (lambda: Transformer(5, 5, d_model=10, num_heads=4), "not divisible"),
        (lambda: MultiHeadAttention(8, 2)(np.ones((1, 3, 6))), "last dimension 6 but d_model=8"),
        (lambda: MultiHeadAttention(8, 2)(np.ones((3, 8))), r"shape \(B, L, d_model\)"),
        (lambda: MultiHeadAttention(8, 2)(np.ones((1, 3, 8)), np.ones((1, 4, 7))),
         "context has last dimension 7"),
        (lambda: LayerNorm(8)(np.ones((2, 4))), "last dimension 4 but d_model=8"),
        (lambda: FeedForward(8, 4)(np.ones((2, 3))), "last dimension 3 but d_model=8"),
        (lambda: Linear(3, 4)(np.ones((2, 5))), "last dimension 5 but d_in=3"),
        (lambda: Embedding(5, 4)(np.array([[1, 5]])), "id 5, outside the vocabulary 0..4"),
        (lambda: Embedding(5, 4)(np.array([[1, -1]])), "id -1, outside"),
        (lambda: Embedding(5, 4)(np.array([[1.0, 2.0]])), "integer array"),
        (lambda: small_model()(SRC, np.ones((2, 13), int)), "position 13, longer than max_len=12"),
        (lambda: small_model()(SRC.astype(float), TGT), "src must be an integer array"),
        (lambda: small_model()(SRC, TGT + 5), "outside the vocabulary 0..8"),
        (lambda: small_model()(SRC, TGT[:1]), "src has batch size 2 but tgt_in has 1"),
        (lambda: small_model()(SRC[0], TGT), r"src must have shape \(B, L\)"),
        (lambda: SinusoidalPositionalEncoding(4, 8)(np.ones((1, 5, 8))), "exceed max_len=4"),
        (lambda: rope(np.ones((5, 4)), positions=3), r"positions must have shape \(L,\) = \(5,\)"),
        (lambda: rope(np.ones((5, 4)), positions=[3]), r"got shape \(1,\)"),
        (lambda: FeedForward(8, 4, "tanh"), "activation must be one of"),
    ],
)
def test_bad_input_gets_a_clear_error(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_matmul_rows_is_the_row_vector_product():
    rng = np.random.default_rng(0)
    W = rng.standard_normal((6, 5))
    for shape in [(6,), (3, 6), (2, 3, 6), (2, 1, 4, 6), (0, 6)]:
        x = rng.standard_normal(shape)
        np.testing.assert_allclose(matmul_rows(x, W), x @ W, rtol=1e-12, atol=1e-12)
        assert matmul_rows(x, W).shape == shape[:-1] + (5,)


def test_embedding_backward_is_the_same_both_ways(monkeypatch):
    """The one-hot product and np.add.at (used for large vocabularies) give one gradient."""
    tokens = np.array([[1, 2, 2, 6], [0, 6, 3, 3]])
    dout = np.random.default_rng(0).standard_normal((2, 4, 5))
    grads = []
    for limit in (1 << 22, 0):
        monkeypatch.setattr(minitf.layers, "_ONE_HOT_LIMIT", limit)
        emb = Embedding(7, 5, dtype=np.float64, rng=0)
        emb(tokens)
        emb.backward(dout)
        grads.append(emb.grads["weight"])
    expected = np.zeros((7, 5))
    for t, row in zip(tokens.reshape(-1), dout.reshape(-1, 5)):
        expected[t] += row
    np.testing.assert_allclose(grads[0], expected, rtol=1e-12)
    np.testing.assert_allclose(grads[1], expected, rtol=1e-12)
