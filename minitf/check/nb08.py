"""Exercises of notebook 08: cross-entropy with label smoothing and padding, the backward pass
of log-softmax, one Adam step and the warm-up schedule (cases, references, known mistakes)."""

import numpy as np

from ..attention import log_softmax, softmax
from ..train import cross_entropy, warmup_schedule
from .core import Case, Exercise, Mistake

__all__ = ["check_cross_entropy", "check_log_softmax_backward", "check_adam_step",
           "check_warmup"]


# ------------------------------------------------- cross-entropy with label smoothing

def _smoothed_losses(logits, targets, eps, *, target_share=None, spread=None):
    """−Σ_v q_v log p_v at every position, padding included, with
    q = target_share · onehot(y) + spread on every class (default 1 − ε and ε/V)."""
    log_probs = log_softmax(logits)
    V = logits.shape[-1]
    share = 1 - eps if target_share is None else target_share
    spread = eps / V if spread is None else spread
    picked = np.take_along_axis(log_probs, targets[..., None], axis=-1)[..., 0]
    return -share * picked - spread * log_probs.sum(axis=-1)


def _cross_entropy_cases():
    rng = np.random.default_rng(80)
    targets = np.array([[5, 7, 2, 0], [4, 2, 0, 0]])  # 0 = <pad> after <eos> = 2
    return [
        Case((rng.standard_normal((2, 4, 9)), targets, 0.1, 0),
             {"en": "(B, L, V) with padding, ε 0.1", "zh": "(B, L, V)，有填充，ε 为 0.1"}),
        Case((800 + 10 * rng.standard_normal((3, 6)), np.array([1, 0, 5]), 0.1, 0),
             {"en": "logits around 800, (N, V), ε 0.1",
              "zh": "logits 在 800 左右，(N, V)，ε 为 0.1"}),
        Case((rng.standard_normal((2, 3, 5)), np.array([[1, 2, 3], [4, 0, 1]]), 0.2, -1),
             {"en": "ignore_index -1: no padding, and 0 is a real target; ε 0.2",
              "zh": "ignore_index 为 -1：没有填充，0 是真正的目标；ε 为 0.2"}),
        Case((rng.standard_normal((2, 4, 9)), targets, 0.0, 0),
             {"en": "ε 0: no smoothing, the plain cross-entropy",
              "zh": "ε 为 0：不做平滑，就是普通的交叉熵"}),
    ]


def _kept(logits, targets, eps, ignore_index, **q):
    return _smoothed_losses(logits, targets, eps, **q)[targets != ignore_index]


def _per_sentence(z, y, e, i):
    """The mean of each sentence's mean loss (its positions that are not ignore_index)."""
    losses, kept = _smoothed_losses(z, y, e), y != i
    if y.ndim == 1:
        return losses[kept].mean()
    return np.mean((losses * kept).sum(axis=-1) / kept.sum(axis=-1))


def _naive_smoothed(z, y, e, i):
    probs = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
    log_probs = np.log(probs)
    picked = np.take_along_axis(log_probs, y[..., None], axis=-1)[..., 0]
    losses = -(1 - e) * picked - e / z.shape[-1] * log_probs.sum(axis=-1)
    return losses[y != i].mean()


CROSS_ENTROPY = Exercise(
    name="cross_entropy", checker="check_cross_entropy",
    args=("logits", "targets", "eps", "ignore_index"),
    task={"en": "one number: the mean of −Σ_v q_v log softmax(logits)_v, with "
                "q = (1 − eps) onehot(target) + eps / V, over the targets that are not "
                "ignore_index",
          "zh": "一个数：在目标不是 ignore_index 的位置上，−Σ_v q_v log softmax(logits)_v 的"
                "平均值，其中 q = (1 − eps) onehot(target) + eps / V"},
    cases=_cross_entropy_cases,
    reference=lambda logits, targets, eps, ignore_index: cross_entropy(
        logits, targets, ignore_index=ignore_index, label_smoothing=eps)[0],
    mistakes=(
        Mistake({"en": "padding was counted: leave out the positions whose target is "
                       "ignore_index, and divide by the number of the others",
                 "zh": "把填充也算进去了：去掉目标为 ignore_index 的位置，并除以其余位置的个数"},
                lambda z, y, e, i: _smoothed_losses(z, y, e).mean()),
        Mistake({"en": "the padded positions' losses were zeroed but still counted in the "
                       "mean: divide by the number of targets that are not ignore_index, not "
                       "by every position",
                 "zh": "填充位置的损失被置零了，但求平均时仍然算了它们：要除以目标不是 "
                       "ignore_index 的个数，而不是所有位置的个数"},
                lambda z, y, e, i: (_smoothed_losses(z, y, e) * (y != i)).mean()),
        Mistake({"en": "that is the sum; the loss is the mean over the targets that are not "
                       "padding",
                 "zh": "这是总和；损失是非填充目标上的平均值"},
                lambda z, y, e, i: _kept(z, y, e, i).sum()),
        Mistake({"en": "the sign is wrong: the loss is −Σ q log p, a positive number",
                 "zh": "符号反了：损失是 −Σ q log p，是一个正数"},
                lambda z, y, e, i: -_kept(z, y, e, i).mean()),
        Mistake({"en": "0 was left out, not ignore_index: use the argument",
                 "zh": "去掉的是 0，而不是 ignore_index：要用这个参数"},
                lambda z, y, e, i: _kept(z, y, e, 0).mean()),
        Mistake({"en": "no smoothing: with eps > 0 the target is not the one-hot vector but "
                       "q = (1 − eps) onehot + eps / V",
                 "zh": "没有做平滑：eps > 0 时目标不是独热向量，而是 "
                       "q = (1 − eps) onehot + eps / V"},
                lambda z, y, e, i: _kept(z, y, 0.0, i).mean()),
        Mistake({"en": "the target class keeps weight 1: it gets (1 − eps) + eps / V, so that "
                       "q sums to 1",
                 "zh": "目标类别的权重还是 1：它应当得到 (1 − eps) + eps / V，这样 q 之和才是 1"},
                lambda z, y, e, i: _kept(z, y, e, i, target_share=1.0).mean()),
        Mistake({"en": "eps is shared by all V classes: each gets eps / V, not eps",
                 "zh": "eps 由全部 V 个类别分摊：每个类别得到 eps / V，而不是 eps"},
                lambda z, y, e, i: _kept(z, y, e, i, spread=e).mean()),
        Mistake({"en": "np.exp overflowed on large logits: subtract each row's maximum before "
                       "np.exp (the softmax does not change)",
                 "zh": "很大的 logits 让 np.exp 溢出了：在 np.exp 之前减去每一行的最大值"
                       "（softmax 的结果不变）"},
                _naive_smoothed),
        Mistake({"en": "eps is spread over all V classes, the target's included: each gets "
                       "eps / V, not eps / (V − 1) on the others",
                 "zh": "eps 要分摊到全部 V 个类别上，目标类别也算在内：每个类别得到 eps / V，"
                       "而不是其他类别各得 eps / (V − 1)"},
                lambda z, y, e, i: _kept(z, y, e, i, target_share=1 - e - e / (z.shape[-1] - 1),
                                         spread=e / (z.shape[-1] - 1)).mean()),
        Mistake({"en": "the target class gets eps / V too, on top of 1 − eps: q = (1 − eps) "
                       "onehot + eps / V on every class, so that q sums to 1",
                 "zh": "目标类别在 1 − eps 之外也要得到 eps / V：q = (1 − eps) onehot + eps / V "
                       "作用在每个类别上，这样 q 之和才是 1"},
                lambda z, y, e, i: _kept(z, y, e, i, target_share=1 - e - e / z.shape[-1]).mean()),
        Mistake({"en": "that is the mean of each sentence's mean; the loss is the mean over all "
                       "the kept positions together (sentences of different lengths weigh by "
                       "their positions)",
                 "zh": "这是各个句子平均值的平均；损失是所有保留位置放在一起的平均（长度不同的"
                       "句子按位置数计权）"},
                _per_sentence),
    ))


# --------------------------------------------------------- log-softmax backward

def _log_softmax_backward(s, d_logp, *, weights="softmax", total="plain", axis=-1, sign=-1.0):
    """ds = dℓ − softmax(s) · Σ_i dℓ_i along the last axis, ℓ = log softmax(s); the keywords
    make the usual mistakes."""
    alpha = softmax(s) if weights == "softmax" else np.exp(s) / np.exp(s).sum(
        axis=-1, keepdims=True)
    summed = d_logp if total == "plain" else d_logp * alpha
    total = np.sum(summed, axis=axis, keepdims=axis is not None)
    return d_logp + sign * alpha * total


def _log_softmax_backward_cases():
    rng = np.random.default_rng(81)
    return [
        Case((rng.standard_normal(5), rng.standard_normal(5)), {"en": "one row", "zh": "一行"}),
        Case((rng.standard_normal((3, 4)), rng.standard_normal((3, 4))),
             {"en": "(L_q, L_k)", "zh": "形状 (L_q, L_k)"}),
        Case((1000 + rng.standard_normal((2, 2, 4, 5)), rng.standard_normal((2, 2, 4, 5))),
             {"en": "(B, h, L, V), scores around 1000", "zh": "(B, h, L, V)，分数在 1000 左右"}),
    ]


LOG_SOFTMAX_BACKWARD = Exercise(
    name="log_softmax_backward", checker="check_log_softmax_backward", args=("s", "d_logp"),
    task={"en": "ds = ∂L/∂s for logp = log softmax(s) along the last axis, every row at "
                "once",
          "zh": "ds = ∂L/∂s，其中 logp = log softmax(s) 沿最后一个轴计算，所有行一次算完"},
    cases=_log_softmax_backward_cases, reference=_log_softmax_backward,
    mistakes=(
        Mistake({"en": "ds = dℓ only: log softmax(s)_i = s_i − log Σ_j e^(s_j), and the "
                       "second term depends on every score: subtract softmax(s) · Σ_i dℓ_i",
                 "zh": "只有 ds = dℓ：log softmax(s)_i = s_i − log Σ_j e^(s_j)，第二项依赖于"
                       "每一个分数：还要减去 softmax(s) · Σ_i dℓ_i"},
                lambda s, d: d),
        Mistake({"en": "that is the backward pass of softmax, α ⊙ (dℓ − Σ α dℓ); the log "
                       "changes it: ds = dℓ − α · Σ_i dℓ_i",
                 "zh": "这是 softmax 的反向传播 α ⊙ (dℓ − Σ α dℓ)；取对数之后就变了："
                       "ds = dℓ − α · Σ_i dℓ_i"},
                lambda s, d: softmax(s) * (d - np.sum(d * softmax(s), axis=-1, keepdims=True))),
        Mistake({"en": "the sum is the plain Σ_i dℓ_i (every ℓ_i has the same − log Σ e^s), "
                       "not weighted by α",
                 "zh": "求和就是普通的 Σ_i dℓ_i（每个 ℓ_i 都含有同一个 − log Σ e^s），不用 α "
                       "加权"},
                lambda s, d: _log_softmax_backward(s, d, total="weighted")),
        Mistake({"en": "each score gets its own share: ds_j = dℓ_j − α_j Σ_i dℓ_i (the α_j "
                       "is missing)",
                 "zh": "每个分数分到自己的一份：ds_j = dℓ_j − α_j Σ_i dℓ_i（少了 α_j）"},
                lambda s, d: d - np.sum(d, axis=-1, keepdims=True)),
        Mistake({"en": "summed over the wrong axis: the sum runs over the last axis, one "
                       "row's entries (axis=-1, keepdims=True)",
                 "zh": "求和的轴不对：要沿最后一个轴，对一行的元素求和（axis=-1, keepdims=True）"},
                lambda s, d: _log_softmax_backward(s, d, axis=0)),
        Mistake({"en": "summed over the whole array: each row has its own Σ_i dℓ_i "
                       "(axis=-1, keepdims=True)",
                 "zh": "对整个数组求了和：每一行有它自己的 Σ_i dℓ_i（axis=-1, keepdims=True）"},
                lambda s, d: _log_softmax_backward(s, d, axis=None)),
        Mistake({"en": "the sign of the second term is wrong: ds = dℓ − α Σ_i dℓ_i",
                 "zh": "第二项的符号反了：ds = dℓ − α Σ_i dℓ_i"},
                lambda s, d: _log_softmax_backward(s, d, sign=1.0)),
        Mistake({"en": "np.exp overflowed on large scores: compute softmax(s) with each row's "
                       "maximum subtracted first",
                 "zh": "很大的分数让 np.exp 溢出了：计算 softmax(s) 时先减去每一行的最大值"},
                lambda s, d: _log_softmax_backward(s, d, weights="naive")),
        Mistake({"en": "d_logp.sum(axis=-1) has shape (...,), which cannot meet s (..., n): "
                       "keep the axis with keepdims=True",
                 "zh": "d_logp.sum(axis=-1) 的形状是 (...,)，与 s (..., n) 对不齐：用 "
                       "keepdims=True 保留这个轴"},
                lambda s, d: d - softmax(s) * d.sum(axis=-1)),
        Mistake({"en": "the Jacobian was applied transposed: ds_j = Σ_i dℓ_i ∂ℓ_i/∂s_j = dℓ_j − "
                       "α_j Σ_i dℓ_i (J.T @ dℓ, not J @ dℓ)",
                 "zh": "雅可比矩阵用反了（转置了）：ds_j = Σ_i dℓ_i ∂ℓ_i/∂s_j = dℓ_j − "
                       "α_j Σ_i dℓ_i（是 J.T @ dℓ，不是 J @ dℓ）"},
                lambda s, d: d - np.sum(softmax(s) * d, axis=-1, keepdims=True)),
    ))


# -------------------------------------------------------------------- Adam step

def _adam_step(param, grad, m, v, t, lr, beta1, beta2, eps, *, correct_m=True, correct_v=True,
               m_rule="ema", v_rule="ema", sqrt=True, sign=-1.0, eps_inside=False, t_shift=0,
               hats_as_state=False, step_with_grad=False, paper_alpha=False):
    """One Adam update -> (param, m, v), new arrays; the flags make the usual mistakes."""
    t = t + t_shift
    m = {"ema": beta1 * m + (1 - beta1) * grad, "no 1-b": beta1 * m + grad,
         "swapped": (1 - beta1) * m + beta1 * grad}[m_rule]
    v = {"ema": beta2 * v + (1 - beta2) * grad ** 2, "not squared": beta2 * v + (1 - beta2) * grad,
         "swapped": (1 - beta2) * v + beta2 * grad ** 2}[v_rule]
    if paper_alpha:  # Kingma & Ba's α_t: ε is added to √v, before the correction
        alpha = lr * np.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
        return param - alpha * m / (np.sqrt(v) + eps), m, v
    m_hat = m / (1 - beta1 ** t) if correct_m else m
    v_hat = v / (1 - beta2 ** t) if correct_v else v
    state = (m_hat, v_hat) if hats_as_state else (m, v)
    top = grad if step_with_grad else m_hat
    if eps_inside:
        return param + sign * lr * top / np.sqrt(v_hat + eps), *state
    root = np.sqrt(v_hat) if sqrt else v_hat
    return param + sign * lr * top / (root + eps), *state


def _adam_cases():
    rng = np.random.default_rng(82)
    first = (rng.standard_normal(4), rng.standard_normal(4), np.zeros(4), np.zeros(4),
             1, 0.01, 0.9, 0.98, 1e-9)
    m, v = 0.1 * rng.standard_normal((2, 3)), 0.05 * rng.random((2, 3))
    third = (rng.standard_normal((2, 3)), rng.standard_normal((2, 3)), m, v,
             3, 0.001, 0.9, 0.999, 1e-8)
    m, v = 0.2 * rng.standard_normal(5), 0.1 * rng.random(5)
    late = (rng.standard_normal(5), 0.5 * rng.standard_normal(5), m, v,
            40, 0.05, 0.8, 0.9, 1e-6)
    m, v = 0.1 * rng.standard_normal(4), 1e-4 * rng.random(4)
    large_eps = (rng.standard_normal(4), 0.1 * rng.standard_normal(4), m, v,
                 5, 0.01, 0.9, 0.999, 1e-2)
    return [Case(first, {"en": "the very first step: m = v = 0, t = 1",
                         "zh": "最开始的一步：m = v = 0，t = 1"}),
            Case(third, {"en": "step 3", "zh": "第 3 步"}),
            Case(late, {"en": "step 40", "zh": "第 40 步"}),
            Case(large_eps, {"en": "step 5, a large ε = 0.01", "zh": "第 5 步，ε = 0.01 较大"})]


def _adam_variant(**flags):
    return lambda *args: _adam_step(*args, **flags)


ADAM_STEP = Exercise(
    name="adam_step", checker="check_adam_step",
    args=("param", "grad", "m", "v", "t", "lr", "beta1", "beta2", "eps"),
    task={"en": "(new_param, new_m, new_v) after one Adam step with bias correction (t "
                "counts from 1)",
          "zh": "做一步带偏差修正的 Adam 之后的 (new_param, new_m, new_v)（t 从 1 开始数）"},
    cases=_adam_cases, reference=_adam_step, labels=("param", "m", "v"),
    mistakes=(
        Mistake({"en": "m ← β₁ m + (1 − β₁) g: the (1 − β₁) is missing",
                 "zh": "m ← β₁ m + (1 − β₁) g：少了 (1 − β₁)"}, _adam_variant(m_rule="no 1-b")),
        Mistake({"en": "β₁ and 1 − β₁ are swapped: m ← β₁ m + (1 − β₁) g",
                 "zh": "β₁ 和 1 − β₁ 弄反了：m ← β₁ m + (1 − β₁) g"},
                _adam_variant(m_rule="swapped")),
        Mistake({"en": "v is the average of the squared gradient g²",
                 "zh": "v 是梯度平方 g² 的平均"}, _adam_variant(v_rule="not squared")),
        Mistake({"en": "β₂ and 1 − β₂ are swapped: v ← β₂ v + (1 − β₂) g²",
                 "zh": "β₂ 和 1 − β₂ 弄反了：v ← β₂ v + (1 − β₂) g²"},
                _adam_variant(v_rule="swapped")),
        Mistake({"en": "no bias correction: divide m by 1 − β₁ᵗ and v by 1 − β₂ᵗ (both start "
                       "at 0, so early averages are too small)",
                 "zh": "没有做偏差修正：m 要除以 1 − β₁ᵗ，v 要除以 1 − β₂ᵗ（两者都从 0 开始，"
                       "所以早期的平均值偏小）"},
                _adam_variant(correct_m=False, correct_v=False)),
        Mistake({"en": "only m was bias-corrected: v̂ = v / (1 − β₂ᵗ) too",
                 "zh": "只对 m 做了偏差修正：还要 v̂ = v / (1 − β₂ᵗ)"},
                _adam_variant(correct_v=False)),
        Mistake({"en": "only v was bias-corrected: m̂ = m / (1 − β₁ᵗ) too",
                 "zh": "只对 v 做了偏差修正：还要 m̂ = m / (1 − β₁ᵗ)"},
                _adam_variant(correct_m=False)),
        Mistake({"en": "the square root of v̂ is missing", "zh": "少了 v̂ 的平方根"},
                _adam_variant(sqrt=False)),
        Mistake({"en": "the step goes uphill: subtract lr · m̂ / (√v̂ + ε)",
                 "zh": "这一步在往上坡走：要减去 lr · m̂ / (√v̂ + ε)"}, _adam_variant(sign=1.0)),
        Mistake({"en": "ε goes outside the square root: lr · m̂ / (√v̂ + ε), not √(v̂ + ε)",
                 "zh": "ε 要放在平方根外面：lr · m̂ / (√v̂ + ε)，而不是 √(v̂ + ε)"},
                _adam_variant(eps_inside=True)),
        Mistake({"en": "that is the paper's shortcut, α_t = lr · √(1 − β₂ᵗ) / (1 − β₁ᵗ), which "
                       "adds ε to √v; here ε is added after the bias correction, "
                       "lr · m̂ / (√v̂ + ε), as torch.optim.Adam does",
                 "zh": "这是论文里的简便写法 α_t = lr · √(1 − β₂ᵗ) / (1 − β₁ᵗ)，它把 ε 加在 √v "
                       "上；这里 ε 是在偏差修正之后才加的，lr · m̂ / (√v̂ + ε)，和 "
                       "torch.optim.Adam 一样"},
                _adam_variant(paper_alpha=True)),
        Mistake({"en": "t is this step's number, counted from 1: correct by 1 − β₁ᵗ, not "
                       "1 − β₁ᵗ⁺¹",
                 "zh": "t 就是这一步的序号，从 1 开始数：修正用 1 − β₁ᵗ，而不是 1 − β₁ᵗ⁺¹"},
                _adam_variant(t_shift=1)),
        Mistake({"en": "t counts from 1: the first step has t = 1 (with t − 1 the first "
                       "correction divides by 1 − β⁰ = 0)",
                 "zh": "t 从 1 开始数：第一步 t = 1（用 t − 1 的话，第一步的修正会除以 "
                       "1 − β⁰ = 0）"},
                _adam_variant(t_shift=-1)),
        Mistake({"en": "return the running averages m and v themselves, not the corrected m̂ "
                       "and v̂ (those are recomputed from m and v at every step)",
                 "zh": "要返回滑动平均 m 和 v 本身，而不是修正后的 m̂ 和 v̂（它们每一步都由 m 和 "
                       "v 重新算出）"},
                _adam_variant(hats_as_state=True)),
        Mistake({"en": "the step uses the average m̂, not this step's gradient g: "
                       "lr · m̂ / (√v̂ + ε)",
                 "zh": "这一步用的是平均值 m̂，而不是这一步的梯度 g：lr · m̂ / (√v̂ + ε)"},
                _adam_variant(step_with_grad=True)),
    ))


# ---------------------------------------------------------------- warm-up schedule

def _lr(step, d_model, warmup, scale, *, rise_power=-1.5, combine=min, model_power=-0.5):
    decay, rise = step ** -0.5, step * warmup ** rise_power
    return scale * d_model ** model_power * combine(decay, rise)


def _warmup_cases():
    def where(step, warmup):
        side = "before" if step < warmup else "after" if step > warmup else "at"
        return {"en": f"step {step}, {side} the peak at step {warmup}",
                "zh": f"第 {step} 步，" + {"before": "在第 {w} 步的峰值之前",
                                          "after": "在第 {w} 步的峰值之后",
                                          "at": "正是第 {w} 步的峰值"}[side].format(w=warmup)}

    return [Case(c, where(c[0], c[2])) for c in [
        (1, 512, 4000, 1.0), (4000, 512, 4000, 1.0), (20000, 512, 4000, 1.0),
        (30, 64, 100, 0.25), (400, 64, 100, 0.25)]]


WARMUP = Exercise(
    name="warmup", checker="check_warmup", args=("step", "d_model", "warmup", "scale"),
    task={"en": "scale · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)",
          "zh": "学习率 scale · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)"},
    cases=_warmup_cases,
    reference=lambda step, d_model, warmup, scale: warmup_schedule(
        step, d_model=d_model, warmup=warmup, scale=scale),
    mistakes=(
        Mistake({"en": "max instead of min: the rate is the smaller of the rise "
                       "step · warmup^-1.5 and the decay step^-0.5",
                 "zh": "用了 max 而不是 min：学习率取上升段 step · warmup^-1.5 和衰减段 "
                       "step^-0.5 中较小的那个"},
                lambda *a: _lr(*a, combine=max)),
        Mistake({"en": "the rising part is step · warmup^-1.5 (so that it meets step^-0.5 at "
                       "the peak)",
                 "zh": "上升段是 step · warmup^-1.5（这样它才会在峰值处与 step^-0.5 相接）"},
                lambda *a: _lr(*a, rise_power=-0.5)),
        Mistake({"en": "the factor d_model^-0.5 is missing", "zh": "少了因子 d_model^-0.5"},
                lambda *a: _lr(*a, model_power=0.0)),
        Mistake({"en": "d_model^-0.5 means 1 / √d_model", "zh": "d_model^-0.5 的意思是 "
                                                               "1 / √d_model"},
                lambda *a: _lr(*a, model_power=0.5)),
        Mistake({"en": "multiply by `scale`", "zh": "还要乘以 `scale`"},
                lambda step, d, w, scale: _lr(step, d, w, 1.0)),
        Mistake({"en": "step counts from 1, as in the formula: use step itself, not step − 1",
                 "zh": "step 从 1 开始数，和公式里一样：直接用 step，不要用 step − 1"},
                lambda step, d, w, scale: _lr(step - 1, d, w, scale) if step > 1 else 0.0),
    ))


def check_cross_entropy(fn):
    """fn(logits (..., V), targets (...) int, eps, ignore_index) -> the mean cross-entropy
    against the smoothed target q = (1 − eps) onehot + eps / V over the targets that are not
    ignore_index, as minitf.train.cross_entropy's loss with label_smoothing=eps.
    An exercise of notebook 08 §1."""
    return CROSS_ENTROPY.check(fn)


def check_log_softmax_backward(fn):
    """fn(s, d_logp) -> ds, where logp = log softmax(s) along the last axis and
    d_logp = ∂L/∂logp; ds = ∂L/∂s has s's shape. An exercise of notebook 08 §3."""
    return LOG_SOFTMAX_BACKWARD.check(fn)


def check_adam_step(fn):
    """fn(param, grad, m, v, t, lr, beta1, beta2, eps) -> (new_param, new_m, new_v): one
    Adam step with bias correction (t counts from 1), as minitf.train.Adam.
    An exercise of notebook 08 §4."""
    return ADAM_STEP.check(fn)


def check_warmup(fn):
    """fn(step, d_model, warmup, scale) -> the learning rate
    scale · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5). An exercise of notebook 08 §5."""
    return WARMUP.check(fn)


EXERCISES = [CROSS_ENTROPY, LOG_SOFTMAX_BACKWARD, ADAM_STEP, WARMUP]
