"""Tests for minitf.train (loss, optimiser, schedule, clipping, the loop) and the number task's
run of it (minitf.translator.train_translator, minitf.tasks.NumberTask)."""

import io

import numpy as np
import pytest

import minitf.tasks.numbers as numbers_module
from minitf import tasks
from minitf.generate import greedy_decode
from minitf.gradcheck import numerical_gradient, relative_error
from minitf.layers import Linear
from minitf.tasks import NumberTask, exact_match, number_shape
from minitf.train import (
    Adam,
    clip_grad_norm,
    cooldown_factor,
    cross_entropy,
    global_norm,
    train,
    warmup_schedule,
)
from minitf.translator import new_model, train_translator

TINY = dict(d_model=16, num_heads=2, num_layers=1, d_ff=32)


def logits_and_targets(dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    logits = (rng.standard_normal((2, 5, 7)) * 3).astype(dtype)
    targets = rng.integers(0, 7, size=(2, 5))
    targets[0, 3:] = 0  # padding
    targets[1, 0] = 4
    return logits, targets


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
def test_cross_entropy_loss_matches_direct_formula(smoothing):
    logits, targets = logits_and_targets()
    loss, _ = cross_entropy(logits, targets, ignore_index=0, label_smoothing=smoothing)
    terms = []
    for z, y in zip(logits.reshape(-1, 7), targets.reshape(-1)):
        if y == 0:
            continue
        p = np.exp(z) / np.exp(z).sum()
        q = np.full(7, smoothing / 7)
        q[y] += 1 - smoothing
        terms.append(-(q * np.log(p)).sum())
    assert loss == pytest.approx(np.mean(terms), rel=1e-12)


def test_cross_entropy_ignore_none_counts_every_token():
    logits, targets = logits_and_targets()
    loss, _ = cross_entropy(logits, targets, ignore_index=None)
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    expected = -np.take_along_axis(log_p, targets[..., None], -1).mean()
    assert loss == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_gradient_matches_finite_differences(smoothing):
    logits, targets = logits_and_targets()
    _, dlogits = cross_entropy(logits, targets, label_smoothing=smoothing)
    numeric = numerical_gradient(lambda: cross_entropy(logits, targets,
                                                       label_smoothing=smoothing)[0], logits)
    assert relative_error(dlogits, numeric) < 1e-7
    assert np.all(dlogits[targets == 0] == 0)


def test_cross_entropy_keeps_dtype_and_is_stable():
    logits, targets = logits_and_targets(np.float32)
    logits[0, 0, 0] = 1e4  # exp would overflow without the max shift
    loss, dlogits = cross_entropy(logits, targets, label_smoothing=0.1)
    assert dlogits.dtype == np.float32 and dlogits.shape == logits.shape
    assert np.isfinite(loss) and np.all(np.isfinite(dlogits))


def test_cross_entropy_ignore_index_outside_the_vocabulary():
    logits, targets = logits_and_targets()
    marked = np.where(targets == 0, -100, targets)
    assert cross_entropy(logits, marked, ignore_index=-100)[0] == cross_entropy(logits, targets)[0]
    np.testing.assert_array_equal(cross_entropy(logits, marked, ignore_index=-100)[1],
                                  cross_entropy(logits, targets)[1])


def test_cross_entropy_all_ignored_gives_zero():
    logits, _ = logits_and_targets()
    loss, dlogits = cross_entropy(logits, np.zeros((2, 5), dtype=int))
    assert loss == 0.0 and not dlogits.any()


def test_cross_entropy_rejects_mismatched_targets():
    logits, targets = logits_and_targets()
    with pytest.raises(ValueError, match="do not match"):
        cross_entropy(logits, targets[:, :4])
    with pytest.raises(ValueError, match="0..6"):
        cross_entropy(logits, targets + 7)


def test_adam_two_steps_by_hand():
    layer = Linear(2, 1, dtype=np.float64, rng=0)
    w0 = layer.W.copy()
    g1, g2 = np.array([[0.5], [-2.0]]), np.array([[0.1], [3.0]])
    opt = Adam(layer, lr=0.1, betas=(0.9, 0.98), eps=1e-9)
    for g in (g1, g2):
        layer.zero_grad()
        layer.grads["W"] += g
        opt.step()
    # step 1: m̂ = g1, v̂ = g1², so the step is lr · sign(g1)
    w1 = w0 - 0.1 * g1 / (np.abs(g1) + 1e-9)
    m2 = 0.9 * 0.1 * g1 + 0.1 * g2
    v2 = 0.98 * 0.02 * g1**2 + 0.02 * g2**2
    w2 = w1 - 0.1 * (m2 / (1 - 0.9**2)) / (np.sqrt(v2 / (1 - 0.98**2)) + 1e-9)
    np.testing.assert_allclose(layer.W, w2, rtol=1e-12)
    np.testing.assert_array_equal(layer.b, 0)  # zero gradient, no move


def test_adam_updates_in_place():
    model = new_model(0, **TINY)
    before = {name: p for name, p in model.named_parameters()}
    copies = {name: p.copy() for name, p in before.items()}
    for _, g in model.named_grads():
        g.fill(1.0)
    Adam(model, lr=1e-3).step()
    for name, p in model.named_parameters():
        assert p is before[name] and p.dtype == np.float32
        assert not np.array_equal(p, copies[name])


def test_schedule_peaks_at_warmup():
    steps = np.arange(1, 1001)
    lrs = np.array([warmup_schedule(s, d_model=64, warmup=200, scale=2.0) for s in steps])
    assert steps[lrs.argmax()] == 200
    assert lrs.max() == pytest.approx(2.0 * (64 * 200) ** -0.5)
    np.testing.assert_allclose(lrs[:200], lrs[0] * steps[:200])  # linear rise
    assert lrs[799] == pytest.approx(lrs[199] / 2)  # step^-0.5: 4× the steps, half the rate
    with pytest.raises(ValueError):
        warmup_schedule(0, d_model=64, warmup=10)


def test_clipping_scales_the_global_norm_exactly():
    model = new_model(0, **TINY)
    rng = np.random.default_rng(0)
    for _, g in model.named_grads():
        g[...] = rng.standard_normal(g.shape)
    before = [g.copy() for _, g in model.named_grads()]
    norm = np.sqrt(sum(float((b.astype(np.float64) ** 2).sum()) for b in before))
    assert clip_grad_norm(model, 1.5) == pytest.approx(norm, rel=1e-6)
    assert global_norm(model) == pytest.approx(1.5, rel=1e-5)
    for b, (_, g) in zip(before, model.named_grads()):
        np.testing.assert_allclose(g, b * (1.5 / norm), rtol=1e-5)
    assert clip_grad_norm(model, 10.0) == pytest.approx(1.5, rel=1e-5)  # under: unchanged
    assert global_norm(model) == pytest.approx(1.5, rel=1e-5)


def test_train_history_and_progress_lines():
    model = new_model(0, **TINY)
    out = io.StringIO()
    numbers = (np.arange(100, 300), np.arange(10, 30))
    history = train_translator(model, steps=6, batch_size=8, warmup=2, log_every=3,
                               eval_size=5, numbers=numbers, stream=out)
    assert set(history) == {"step", "loss", "accuracy", "tokens_per_s", "lr"}
    assert history["step"] == [3, 6]
    assert all(len(v) == 2 for v in history.values())
    assert all(0 <= a <= 1 for a in history["accuracy"])
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].startswith("step 3/6") and "held-out" in lines[0]


class Counting:
    """A task for `train` that is not the number task: every target is token 5, no padding,
    no evaluation; it counts the batches it hands out."""

    ignore_index = None

    def __init__(self):
        self.batches = 0

    def batch(self, rng, batch_size):
        self.batches += 1
        src = rng.integers(4, 10, size=(batch_size, 3))
        tgt_in = np.concatenate([np.ones((batch_size, 1), np.int64), src[:, :-1]], axis=1)
        return (src, tgt_in), np.full_like(src, 5)


def test_the_loop_trains_any_task_and_reports_to_the_caller():
    from minitf.model import Transformer
    model = Transformer(10, 10, d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=8,
                        rng=0)
    task, reports = Counting(), []
    history = train(model, task, steps=60, batch_size=16, warmup=10, lr_scale=1.0,
                    label_smoothing=0.0, log_every=20, rng=0, on_report=reports.append)
    assert task.batches == 60 and history["step"] == [20, 40, 60]
    assert reports == [{key: history[key][i] for key in history} for i in range(3)]
    assert history["accuracy"] == [None] * 3  # the task has no evaluate
    assert history["loss"][-1] < 0.2 * history["loss"][0]  # it learns the answer
    with pytest.raises(TypeError, match=r"batch\(rng, batch_size\)"):
        train(model, object())


def test_a_terminal_gets_the_same_lines_as_a_log():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    out = Terminal()
    train_translator(new_model(0, **TINY), steps=4, batch_size=4, log_every=2, stream=out,
                     numbers=(np.arange(100, 300), np.arange(10, 15)))
    lines = out.getvalue().splitlines()
    assert [line.split()[1] for line in lines] == ["2/4", "4/4"] and "\r" not in out.getvalue()


def test_train_is_deterministic_given_the_seed():
    numbers = (np.arange(100, 300), np.arange(10, 30))
    runs = []
    for _ in range(2):
        model = new_model(3, **TINY)
        h = train_translator(model, steps=4, batch_size=8, warmup=2, numbers=numbers, seed=5,
                  verbose=False)
        runs.append((h["loss"], model.state_dict()))
    assert runs[0][0] == runs[1][0]
    for name, value in runs[0][1].items():
        np.testing.assert_array_equal(value, runs[1][1][name])


def test_train_stops_after_max_seconds():
    model = new_model(0, **TINY)
    h = train_translator(model, steps=10_000, batch_size=4, max_seconds=0.0, verbose=False,
              numbers=(np.arange(100, 300), np.arange(10, 15)))
    assert h["step"] == [1]


def test_train_writes_nothing_to_stderr_when_quiet(capsys):
    train_translator(new_model(0, **TINY), steps=2, batch_size=4, verbose=False,
          numbers=(np.arange(100, 300), np.arange(10, 15)))
    assert capsys.readouterr() == ("", "")


@pytest.mark.slow
def test_reduced_configuration_learns_the_task():
    model = new_model(1, d_model=32, num_heads=4, num_layers=1, d_ff=64)
    history = train_translator(model, steps=500, batch_size=64, warmup=100, lr_scale=0.5,
                               seed=1, eval_size=200, log_every=100, verbose=False,
                               max_seconds=50)
    # log(17) ≈ 2.8 at the start; label smoothing 0.1 keeps the loss above ≈ 0.55
    assert history["loss"][0] > 1.0 and history["loss"][-1] < 0.65
    assert history["accuracy"][-1] >= 0.97


def test_exact_match_counts_whole_translations(monkeypatch):
    numbers = [0, 7, 12, 1005, 9999]
    model = new_model(0, **TINY)
    src, _, _ = tasks.make_batch(numbers)
    out = greedy_decode(model, src, max_len=model.max_len)
    right = [tasks.decode_target(row) == tasks.chinese(n) for row, n in zip(out, numbers)]
    assert exact_match(model, numbers, batch_size=2) == sum(right) / 5

    def answers(model, src, beam_size=1):  # right but for 1005 -> 一千五
        words = [tasks.decode_source(row) for row in src]
        text = [tasks.chinese(tasks.parse_english(w)) for w in words]
        text = ["一千五" if t == "一千零五" else t for t in text]
        return tasks.pad([tasks.encode_target(t) for t in text])

    monkeypatch.setattr(numbers_module, "translate_ids", answers)
    assert exact_match(model, numbers, batch_size=2) == 0.8


def test_number_shapes():
    numbers = [0, 7, 10, 12, 40, 99, 300, 1005, 2000, 9999]
    assert [number_shape(n) for n in numbers] == [
        "0", "x", "x0 teen", "xx teen", "x0", "xx", "x00", "x00x", "x000", "xxxx"]
    assert len({number_shape(n) for n in range(10_000)}) == 18


def drawn_numbers(numbers, by_shape, size=20_000):
    task = NumberTask(numbers, [1], by_shape=by_shape)
    (src, _), _ = task.batch(np.random.default_rng(0), size)
    return np.array([tasks.parse_english(tasks.decode_source(row)) for row in src])


def test_short_and_round_numbers_are_not_rare_in_training():
    drawn = drawn_numbers(np.arange(10_000), by_shape=0.5)
    shapes, counts = np.unique([number_shape(n) for n in drawn], return_counts=True)
    assert len(shapes) == 18
    # half the draws go shape by shape: each of the 18 shapes gets at least 1/36 of them
    assert counts.min() >= 0.8 * len(drawn) / 36, dict(zip(shapes, counts))
    assert np.mean(drawn < 10) > 0.05 and np.mean(drawn % 1000 == 0) > 0.025
    uniform = drawn_numbers(np.arange(10_000), by_shape=0.0)
    assert np.mean(uniform < 10) < 0.005


def test_drawing_by_shape_keeps_to_the_training_numbers():
    train_numbers, test_numbers = tasks.split()
    drawn = drawn_numbers(train_numbers, by_shape=1.0, size=5000)
    assert np.isin(drawn, train_numbers).all() and not np.isin(drawn, test_numbers).any()


def test_progress_names_what_it_measures():
    out = io.StringIO()
    train_translator(new_model(0, **TINY), steps=2, batch_size=4, log_every=1, stream=out,
                     eval_name="all", numbers=(np.arange(100, 300), np.arange(100, 105)))
    assert all("  all " in line for line in out.getvalue().splitlines())


def test_cooldown_brings_the_rate_down_over_the_last_steps():
    factors = [cooldown_factor(step, 400, 0.25) for step in range(1, 401)]
    assert factors[:300] == [1.0] * 300
    np.testing.assert_allclose(factors[300:], np.arange(100, 0, -1) / 101)
    assert [cooldown_factor(s, 10, 0.0) for s in range(1, 11)] == [1.0] * 10


def test_train_follows_warmup_times_cooldown():
    history = train_translator(new_model(0, **TINY), steps=8, batch_size=4, warmup=2,
                               lr_scale=0.5,
                    cooldown=0.5, log_every=1, eval_size=2, verbose=False,
                    numbers=(np.arange(100, 300), np.arange(10, 12)))
    expected = [warmup_schedule(s, d_model=16, warmup=2, scale=0.5) * min(1, (9 - s) / 5)
                for s in range(1, 9)]
    np.testing.assert_allclose(history["lr"], expected)


def test_adam_agrees_with_the_exercise_reference():
    # check_adam_step judges learners against check.nb08's reference; it must be the update
    # minitf.train.Adam makes, step after step.
    from minitf.check.nb08 import _adam_step
    from minitf.module import Module

    class One(Module):
        def __init__(self, p):
            super().__init__()
            self.add_param("p", p)

    rng = np.random.default_rng(0)
    model = One(rng.standard_normal(6))
    opt = Adam(model, lr=0.01, betas=(0.9, 0.98), eps=1e-9)
    p, m, v = model.p.copy(), np.zeros(6), np.zeros(6)
    for t in range(1, 4):
        model.grads["p"][:] = rng.standard_normal(6)
        opt.step()
        p, m, v = _adam_step(p, model.grads["p"], m, v, t, 0.01, 0.9, 0.98, 1e-9)
        np.testing.assert_allclose(model.p, p, rtol=1e-12)


def test_warmup_agrees_with_the_exercise_reference():
    from minitf.check.nb08 import _lr

    for step in (1, 50, 100, 101, 4000):
        assert warmup_schedule(step, d_model=64, warmup=100, scale=0.5) == pytest.approx(
            _lr(step, 64, 100, 0.5))
