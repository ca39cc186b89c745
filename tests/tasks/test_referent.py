"""The "what it refers to" task of notebook 09: its sentences, split, pointer head and training."""

import io
import itertools

import numpy as np
import pytest

from minitf.gradcheck import gradient_check
from minitf.tasks import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from minitf.tasks import referent as R

TOL = 1e-6
NOUNS = set(R.LIVING) | set(R.PLACES)


# ---------------------------------------------------------------- sentences

def test_the_notes_sentence_and_its_twin():
    tired = R.sentence("animal", "street", "tired")
    assert " ".join(tired.words) == "the animal didn't cross the street because it was too tired"
    assert (tired.it, tired.referent) == (7, 1)
    wide = R.sentence("animal", "street", "wide")
    assert wide.words[wide.referent] == "street" and wide.referent == 5


def test_passive_puts_the_place_first():
    e = R.sentence("dog", "river", "hungry", verb="take", passive=True, opener=("yesterday",),
                   because="since")
    assert " ".join(e.words) == ("yesterday the river wasn't taken by the dog since it was too "
                                 "hungry")
    assert e.words[e.referent] == "dog" and e.referent == 7 and e.words[e.it] == "it"
    e = R.sentence("dog", "river", "deep", passive=True)
    assert e.words[e.referent] == "river" and e.referent == 1


@pytest.mark.parametrize("kwargs, word", [
    (dict(living="street", place="river", adjective="tired"), "living='street'"),
    (dict(living="dog", place="cat", adjective="tired"), "place='cat'"),
    (dict(living="dog", place="river", adjective="old"), "adjective='old'"),
    (dict(living=5, place="river", adjective="old"), "living=5"),
    (dict(living="dog", place="river", adjective="wide", verb="jump"), "verb='jump'"),
    (dict(living="dog", place="river", adjective="wide", opener=("today",)), "opener"),
])
def test_sentence_refuses_unknown_words(kwargs, word):
    with pytest.raises(ValueError, match=word):
        R.sentence(**kwargs)


def test_vocab_starts_with_the_special_tokens_and_has_every_word():
    assert [R.VOCAB.id(t) for t in ("<pad>", "<bos>", "<eos>", "<unk>")] == [
        PAD_ID, BOS_ID, EOS_ID, UNK_ID]
    words = {w for e in R.sentences(0, 300) + R.sentences(1, 300, held_out=True) for w in e.words}
    assert words <= set(R.VOCAB.tokens)
    assert NOUNS | set(R.LIVING_ADJECTIVES) | set(R.PLACE_ADJECTIVES) <= words


def test_adjectives_fit_one_kind_only():
    assert not set(R.LIVING_ADJECTIVES) & set(R.PLACE_ADJECTIVES)
    assert not set(R.LIVING) & set(R.PLACES)


def test_encode_a_string_and_name_an_unknown_word():
    ids = R.encode("The animal didn't cross the street because it was too tired")
    assert ids.dtype == np.int64 and ids.shape == (11,)
    assert R.VOCAB.decode(ids) == R.sentence("animal", "street", "tired").words
    with pytest.raises(ValueError, match="words contain 'old'"):
        R.encode("the dog was too old")
    with pytest.raises(TypeError, match="words must be a str or a list"):
        R.encode(5)


# ------------------------------------------------------------------- split

def test_pairs_split_every_fitting_pair_in_two():
    train, held = set(R.pairs(held_out=False)), set(R.pairs(held_out=True))
    every = set(itertools.product(R.LIVING, R.LIVING_ADJECTIVES)) | set(
        itertools.product(R.PLACES, R.PLACE_ADJECTIVES))
    assert not train & held and train | held == every
    assert 0.2 < len(held) / len(every) < 0.3
    assert {("animal", "tired"), ("street", "wide")} <= held
    # every noun and every adjective still meets several partners in training
    for word in NOUNS | set(R.LIVING_ADJECTIVES) | set(R.PLACE_ADJECTIVES):
        assert sum(word in pair for pair in train) >= 5, word


def test_sample_is_deterministic_and_keeps_to_its_pairs():
    assert R.sentences(3, 50) == R.sentences(np.random.default_rng(3), 50)
    assert R.sentences(3, 50) != R.sentences(4, 50)
    for held_out in (False, True):
        allowed = set(R.pairs(held_out))
        for e in R.sentences(5, 400, held_out=held_out):
            assert (e.words[e.referent], e.words[-1]) in allowed
            assert e.words[e.it] == "it" and e.words.count("it") == 1


def test_position_is_no_shortcut():
    examples = R.sentences(6, 2000)
    for adjectives in (R.LIVING_ADJECTIVES, R.PLACE_ADJECTIVES):
        positions = {e.referent for e in examples if e.words[-1] in adjectives}
        assert len(positions) >= 4, positions  # both orders, three openings
    first_noun = [next(i for i, w in enumerate(e.words) if w in NOUNS) for e in examples]
    share = np.mean([f == e.referent for f, e in zip(first_noun, examples)])
    assert 0.4 < share < 0.6


def test_make_batch_pads_with_zero():
    examples = [R.sentence("cat", "road", "busy"),
                R.sentence("cat", "road", "busy", passive=True, opener=("that", "morning"))]
    tokens, it, referent = R.make_batch(examples)
    assert tokens.shape == (2, 14) and tokens.dtype == np.int64
    assert (tokens[0, 11:] == PAD_ID).all() and (tokens[1] != PAD_ID).all()
    assert it.tolist() == [7, 10] and referent.tolist() == [5, 3]
    with pytest.raises(ValueError, match="non-empty list of Examples"):
        R.make_batch([])


# ------------------------------------------------------------- pointer head

def test_pointer_head_is_the_formula():
    rng = np.random.default_rng(0)
    head = R.PointerHead(6, 3, dtype=np.float64, rng=1)
    h = rng.standard_normal((2, 5, 6))
    it = np.array([3, 1])
    mask = np.array([[True] * 5, [True, True, True, False, False]])
    logits = head(h, it, mask)
    for b in range(2):
        q = h[b, it[b]] @ head.W_q
        expected = np.array([q @ (h[b, j] @ head.W_k) / np.sqrt(3) for j in range(5)])
        np.testing.assert_allclose(logits[b][mask[b]], expected[mask[b]], rtol=1e-12)
    assert (logits[1, 3:] == -np.inf).all()


def test_pointer_head_keeps_float32():
    head = R.PointerHead(4, rng=0)
    assert head(np.ones((1, 3, 4), np.float32), np.array([0])).dtype == np.float32


def test_pointer_head_gradients_with_a_mask():
    head = R.PointerHead(6, 4, dtype=np.float64, rng=2)
    h = np.random.default_rng(3).standard_normal((3, 5, 6))
    it = np.array([0, 4, 2])  # twice the same position in row 2 is fine, too
    mask = np.ones((3, 5), dtype=bool)
    mask[1, 0] = mask[2, 3:] = False
    # masked logits are -inf: leave them out of the checked sum
    errors = gradient_check(head, [h], forward=lambda x: np.where(mask, head(x, it, mask), 0))
    assert set(errors) == {"input0", "W_q", "W_k"}
    assert all(err < TOL for err in errors.values()), errors


def test_masked_logits_get_no_gradient():
    head = R.PointerHead(4, dtype=np.float64, rng=4)
    h = np.random.default_rng(5).standard_normal((1, 3, 4))
    head(h, np.array([0]), np.array([[True, True, False]]))
    dh = head.backward(np.array([[0.0, 0.0, 1.0]]))
    assert not dh.any() and not head.grads["W_q"].any()


@pytest.mark.parametrize("h_shape, it, mask_shape, message", [
    ((2, 5), [0, 1], None, "h must have shape"),
    ((2, 5, 3), [0, 1], None, "d_model=4"),
    ((2, 5, 4), [0], None, "query_index must hold 2 positions"),
    ((2, 5, 4), [0.0, 1.0], None, "integer"),
    ((2, 5, 4), [0, 5], None, "0..4"),
    ((2, 5, 4), [0, 1], (2, 4), r"mask must be bool of shape \(B, L\) = \(2, 5\)"),
])
def test_pointer_head_names_bad_input(h_shape, it, mask_shape, message):
    head = R.PointerHead(4, rng=0)
    mask = None if mask_shape is None else np.ones(mask_shape, dtype=bool)
    with pytest.raises(ValueError, match=message):
        head(np.zeros(h_shape, np.float32), np.array(it), mask)


def test_pointer_backward_before_forward():
    with pytest.raises(RuntimeError, match="before forward"):
        R.PointerHead(4, rng=0).backward(np.zeros((1, 3)))


# ------------------------------------------------------------------- model

@pytest.mark.parametrize("norm_first", [False, True])
def test_whole_model_gradients(norm_first):
    model = R.ReferentModel(d_model=8, num_heads=2, num_layers=2, d_ff=12,
                            norm_first=norm_first, dtype=np.float64, rng=6)
    tokens, it, _ = R.make_batch(R.sentences(7, 3))
    not_pad = tokens != PAD_ID
    errors = gradient_check(model, [], forward=lambda: np.where(not_pad, model(tokens, it), 0),
                          max_entries=8)
    assert len(errors) == len(model.state_dict())
    assert all(err < TOL for err in errors.values()), errors


def test_model_never_points_at_padding():
    model = R.ReferentModel(rng=0)
    tokens, it, _ = R.make_batch([R.sentence("cat", "road", "busy"),
                                  R.sentence("cat", "road", "busy", opener=("yesterday",))])
    logits = model(tokens, it)
    assert logits.shape == tokens.shape and logits.dtype == np.float32
    assert logits[0, -1] == -np.inf and np.isfinite(logits[1]).all()


def test_model_refuses_a_sentence_longer_than_max_len():
    with pytest.raises(ValueError, match="max_len=8"):
        R.ReferentModel(max_len=8, rng=0)(np.ones((1, 11), np.int64), np.array([7]))


def test_training_learns_the_task():
    model = R.ReferentModel(dtype=np.float64, rng=0)
    log = io.StringIO()
    losses = R.train_referent(model, steps=120, seed=0, log_every=60, stream=log)
    assert losses.shape == (120,)
    assert losses[:10].mean() > 1.0 and losses[-10:].mean() < 0.1
    assert R.accuracy(model, R.sentences(1, 300, held_out=True)) > 0.9
    assert log.getvalue().count("\n") == 2 and "step  120" in log.getvalue()


def test_training_is_deterministic_for_a_seed():
    def run(seed):
        model = R.ReferentModel(d_model=8, num_heads=2, d_ff=16, dtype=np.float64, rng=0)
        return R.train_referent(model, steps=5, seed=seed, verbose=False)

    np.testing.assert_array_equal(run(0), run(0))
    assert not np.array_equal(run(0), run(1))
