"""Exercises of notebook 10: minitf's W_q, W_k, W_v out of torch's stacked in_proj_weight,
the masks in torch's convention (True = may NOT attend), and a training step written in torch
that moves its batch to a device.

Imported as `from minitf.check.nb10 import ...`: notebook 10 needs torch, so its exercises
stay out of `minitf.check.EXERCISES_BY_CHECKER`, whose tests run without it. The in_proj
reference is minitf.pytorch's parameter map, imported only when the checker runs; the
learner's answers may be numpy arrays or torch tensors.
"""

import numpy as np

from ..attention import causal_mask, padding_mask
from ..tokens import PAD_ID
from .core import Case, Exercise, Mistake, describe_difference, got_expected, kind_of
from .messages import pick

__all__ = ["check_split_in_proj", "check_torch_masks", "check_train_step"]


def _numpy(value):
    """A torch tensor (or a tuple of them) -> numpy; anything else as it is."""
    if isinstance(value, (tuple, list)):
        return type(value)(_numpy(v) for v in value)
    detach = getattr(value, "detach", None)
    return np.asarray(detach().cpu()) if callable(detach) else value


def _as_learner_wrote(fn, *args):
    return _numpy(fn(*args))


# ------------------------------------------------------------------ in_proj_weight

def split_in_proj(in_proj_weight):
    """torch's (3d, d) in_proj_weight -> minitf's (W_q, W_k, W_v), each (d, d), by the map
    from_torch uses."""
    from ..pytorch import minitf_arrays, torch_name  # imports torch

    names = [(f"attn.W_{x}", *torch_name(f"attn.W_{x}")) for x in "qkv"]
    d = in_proj_weight.shape[1]
    split = minitf_arrays({"attn.in_proj_weight": in_proj_weight}, d, names)
    return split["attn.W_q"], split["attn.W_k"], split["attn.W_v"]


def _blocks(w):
    """The three (d, d) row blocks of w (3d, d), as torch keeps them (not transposed)."""
    d = w.shape[1]
    return w[:d], w[d:2 * d], w[2 * d:]


def _split_in_proj_cases():
    rng = np.random.default_rng(100)
    return [Case((np.round(rng.standard_normal((3 * d, d)), 2),),
                 {"en": f"d = {d}", "zh": f"d 为 {d}"}) for d in (2, 4)]


SPLIT_IN_PROJ = Exercise(
    name="split_in_proj", checker="check_split_in_proj", args=("in_proj_weight",),
    task={"en": "(W_q, W_k, W_v), each (d, d) as minitf keeps them (y = x W)",
          "zh": "(W_q, W_k, W_v)，每个都是 (d, d)，按 minitf 的存法（y = x W）"},
    cases=_split_in_proj_cases, reference=split_in_proj, labels=("W_q", "W_k", "W_v"),
    run=_as_learner_wrote,
    mistakes=(
        Mistake({"en": "not transposed: torch computes x Wᵀ, so its rows are minitf's columns "
                       "— take each block's .T",
                 "zh": "没有转置：torch 计算的是 x Wᵀ，它的行就是 minitf 的列 —— 每一块都要取 .T"},
                lambda w: _blocks(w)),
        Mistake({"en": "the blocks are in the wrong order: torch stacks queries (rows 0:d), "
                       "keys (d:2d), values (2d:3d)",
                 "zh": "这几块的顺序不对：torch 依次堆叠查询（第 0:d 行）、键（d:2d）、"
                       "值（2d:3d）"},
                lambda w: tuple(b.T for b in _blocks(w))[::-1]),
        Mistake({"en": "keys and values are swapped: torch stacks queries (rows 0:d), keys "
                       "(d:2d), values (2d:3d)",
                 "zh": "键和值弄反了：torch 依次堆叠查询（第 0:d 行）、键（d:2d）、"
                       "值（2d:3d）"},
                lambda w: tuple(_blocks(w)[i].T for i in (0, 2, 1))),
        Mistake({"en": "queries and keys are swapped: torch stacks queries (rows 0:d), keys "
                       "(d:2d), values (2d:3d)",
                 "zh": "查询和键弄反了：torch 依次堆叠查询（第 0:d 行）、键（d:2d）、"
                       "值（2d:3d）"},
                lambda w: tuple(_blocks(w)[i].T for i in (1, 0, 2))),
        Mistake({"en": "torch stacks the three matrices as blocks of ROWS, (3d, d): split along "
                       "axis 0 (np.split(w, 3)), then transpose each block",
                 "zh": "torch 是把三个矩阵按*行*分块堆起来的，形状 (3d, d)：要沿 axis 0 切开"
                       "（np.split(w, 3)），再把每一块转置"},
                lambda w: tuple(np.split(w, 3, axis=1))),
    ))


def check_split_in_proj(fn):
    """fn(in_proj_weight (3d, d), as torch keeps an attention layer's input projections)
    -> (W_q, W_k, W_v), each (d, d) as minitf keeps them. Notebook 10 §1."""
    return SPLIT_IN_PROJ.check(fn)


# ------------------------------------------------------------------ masks

def torch_masks(src, tgt_in):
    """(tgt_mask (L_t, L_t), src_key_padding_mask (B, L_s), tgt_key_padding_mask (B, L_t)),
    bool, True where a query may NOT look: minitf's masks, negated and in torch's shapes."""
    return (~causal_mask(tgt_in.shape[1]), ~padding_mask(src, PAD_ID)[:, 0, 0],
            ~padding_mask(tgt_in, PAD_ID)[:, 0, 0])


def _with_tgt_mask(tgt_mask):
    """torch_masks with its first mask replaced by tgt_mask(L)."""
    return lambda src, tgt_in: (tgt_mask(tgt_in.shape[1]), *torch_masks(src, tgt_in)[1:])


def _float_causal_mask(L):
    """torch's nn.Transformer.generate_square_subsequent_mask(L), in numpy: float32, -inf
    above the diagonal and 0 elsewhere."""
    return np.where(np.triu(np.ones((L, L), dtype=bool), k=1), -np.inf, 0.0).astype(np.float32)


def _torch_masks_cases():
    return [
        Case((np.array([[5, 6, 2, 0], [7, 2, 0, 0]]), np.array([[1, 9, 4], [1, 8, 0]])),
             {"en": "padding in both", "zh": "两边都有填充"}),
        Case((np.array([[4, 4, 4, 2]]), np.array([[1, 5, 6, 7, 8]])),
             {"en": "no padding", "zh": "没有填充"}),
    ]


TORCH_MASKS = Exercise(
    name="torch_masks", checker="check_torch_masks", args=("src", "tgt_in"),
    task={"en": "(tgt_mask (L_t, L_t), src_key_padding_mask (B, L_s), tgt_key_padding_mask "
                "(B, L_t)), bool, True where a query may NOT look",
          "zh": "(tgt_mask (L_t, L_t), src_key_padding_mask (B, L_s), tgt_key_padding_mask "
                "(B, L_t))，都是 bool，查询*不能*看的地方为 True"},
    cases=_torch_masks_cases, reference=torch_masks,
    labels=("tgt_mask", "src_key_padding_mask", "tgt_key_padding_mask"), run=_as_learner_wrote,
    mistakes=(
        Mistake({"en": "these are minitf's masks (True = may look); torch's True means 'may "
                       "NOT look': negate all three",
                 "zh": "这些是 minitf 的掩码（True 表示可以看）；torch 的 True 表示“不能看”："
                       "三个都要取反"},
                lambda s, t: (causal_mask(t.shape[1]), s != PAD_ID, t != PAD_ID)),
        Mistake({"en": "the causal mask is minitf's (True on and below the diagonal); torch's "
                       "marks the future it may NOT see: True above the diagonal, "
                       "np.triu(…, k=1)",
                 "zh": "因果掩码用的是 minitf 的（对角线上及以下为 True）；torch 标出的是不能看的"
                       "未来：对角线以上为 True，即 np.triu(…, k=1)"},
                _with_tgt_mask(causal_mask)),
        Mistake({"en": "the padding masks are minitf's way round; torch's are True at the "
                       "padding (ids == 0)",
                 "zh": "填充掩码还是 minitf 的方向；torch 的填充掩码在填充处为 True（ids == 0）"},
                lambda s, t: (~causal_mask(t.shape[1]), s != PAD_ID, t != PAD_ID)),
        Mistake({"en": "the diagonal is blocked too — a token may look at itself: "
                       "np.triu(…, k=1)",
                 "zh": "对角线也被挡住了 —— 词元可以看它自己：np.triu(…, k=1)"},
                _with_tgt_mask(lambda L: np.triu(np.ones((L, L), dtype=bool)))),
        Mistake({"en": "this blocks the past, not the future: np.triu(…, k=1)",
                 "zh": "这样挡住的是过去，而不是未来：np.triu(…, k=1)"},
                _with_tgt_mask(lambda L: np.tril(np.ones((L, L), dtype=bool), k=-1))),
        Mistake({"en": "that is torch's float mask (−inf where a query may not look, 0 "
                       "elsewhere, added to the scores), as generate_square_subsequent_mask "
                       "gives; torch accepts it, but this exercise asks for the boolean form: "
                       "True where a query may NOT look, np.triu(…, k=1)",
                 "zh": "这是 torch 的浮点掩码（查询不能看的地方为 −inf，其余为 0，加到分数上），"
                       "generate_square_subsequent_mask 给出的就是它；torch 也接受它，但这道"
                       "练习要的是布尔形式：查询不能看的地方为 True，即 np.triu(…, k=1)"},
                _with_tgt_mask(_float_causal_mask)),
        Mistake({"en": "the padding masks have minitf's broadcastable shape (B, 1, 1, L); "
                       "torch wants (B, L)",
                 "zh": "填充掩码用的是 minitf 那种可广播的形状 (B, 1, 1, L)；torch 要的是 (B, L)"},
                lambda s, t: (~causal_mask(t.shape[1]), ~padding_mask(s, PAD_ID),
                              ~padding_mask(t, PAD_ID))),
    ))


def check_torch_masks(fn):
    """fn(src (B, L_s), tgt_in (B, L_t) ids) -> the three masks minitf's model uses, in
    torch's convention and shapes. Notebook 10 §2."""
    return TORCH_MASKS.check(fn)




# ------------------------------------------------------------------ a training step
#
# The learner writes train_step(model, batch, optimizer, device). The checker builds a tiny
# translator in torch (float64, fixed seeds, on the CPU), calls the function twice, on two
# padded batches, as a training loop would, and compares what it returned, which batch tensors
# it sent to `device`, and the weights after the two steps with minitf.pytorch.train_step's.
# On a CPU a move changes nothing, so the moves are recorded as calls: minitf.pytorch.exercise
# (the torch side of this exercise) says how.

STEP_NUMBERS = ((7, 1205, 30), (999, 12, 4000))
BATCH_NAMES = ("src", "tgt_in", "tgt_out")


class _Setup:
    """What one case of the training step is built from: a tiny translator's shape and seed,
    the optimiser, and the numbers of its two batches. Built afresh for every run."""

    def __init__(self, norm_first, seed, optimizer, numbers=STEP_NUMBERS):
        self.norm_first, self.seed, self.optimizer, self.numbers = (
            norm_first, seed, optimizer, numbers)

    def __str__(self):
        shape = "pre-LN" if self.norm_first else "post-LN"
        optimizer = "SGD (lr 0.5)" if self.optimizer == "SGD" else self.optimizer
        batches = pick({"en": " and ", "zh": " 和 "}).join(str(list(n)) for n in self.numbers)
        return pick({"en": f"a tiny {shape} translator in torch (d_model 8, float64, on the "
                           f"CPU), {optimizer}, two steps on the batches of the numbers {batches}",
                     "zh": f"torch 里的一个很小的 {shape} 翻译器（d_model 8，float64，在 CPU 上），"
                           f"{optimizer}，在数 {batches} 组成的两个批次上各走一步"})


class _Tensor:
    """Stands for a tensor the function returned where a float was asked for."""

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, _Tensor) and (
            self.value == other.value or np.isclose(self.value, other.value, rtol=1e-9))

    def __repr__(self):
        return "a tensor"


class _Steps:
    """What the function did in one case: what each call returned (a float, a _Tensor or
    whatever it was), whether each batch tensor was sent to `device` in every call, and the
    model's weights after the calls (name -> array), or why they cannot be read."""

    def __init__(self, returned, moved, weights):
        self.returned, self.moved, self.weights = returned, moved, weights


def _returned(value):
    detach = getattr(value, "detach", None)
    if callable(detach) and hasattr(value, "numel"):  # a torch tensor
        try:
            return _Tensor(float(detach().cpu().double().sum()))
        except Exception:  # noqa: BLE001 - an odd tensor: still a tensor
            return _Tensor(float("nan"))
    if isinstance(value, (float, np.floating)) or (
            isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))):
        return float(value)
    return value


def _run_steps(fn, setup):
    """Build the case, call fn(model, batch, optimizer, device) once per batch, and say what it
    did (a _Steps)."""
    from ..pytorch.exercise import build_case, run_recording_moves, weights  # imports torch

    model, batches, optimizer, device = build_case(setup.norm_first, setup.seed,
                                                   setup.optimizer, setup.numbers)
    returned, moved = run_recording_moves(fn, model, batches, optimizer, device)
    try:
        after = weights(model)
    except Exception as error:  # noqa: BLE001 - a model the function spoilt: reported
        after = f"the model's weights cannot be read back ({type(error).__name__}: {error})"
    return _Steps(tuple(_returned(r) for r in returned), moved, after)


def _compare_steps(got, want, rtol=1e-6, atol=1e-9):
    """None when two runs did the same; otherwise what differs, the most telling first."""
    if not isinstance(got, _Steps) or not isinstance(want, _Steps):
        return "differs"
    for k, (g, w) in enumerate(zip(got.returned, want.returned), 1):
        if isinstance(w, float):
            if isinstance(g, _Tensor):
                return pick({"en": f"step {k} returned a tensor, expected the loss as a "
                                   f"Python float (loss.item())",
                             "zh": f"第 {k} 步返回了一个张量，应当把损失作为 Python 的 float "
                                   f"返回（loss.item()）"})
            if g is None:
                return pick({"en": f"step {k} returned None — did you forget `return`?",
                             "zh": f"第 {k} 步返回了 None——是不是忘了写 `return`？"})
            if not isinstance(g, float):
                return pick({"en": f"step {k} returned {kind_of(g)}, expected the loss as a "
                                   f"float",
                             "zh": f"第 {k} 步返回了 {kind_of(g)}，应当返回 float 类型的损失"})
            if not (g == w or np.isclose(g, w, rtol=rtol, atol=atol)):
                return pick({"en": f"step {k}'s loss: ", "zh": f"第 {k} 步的损失："}) + (
                    got_expected(g, w))
        elif not (g == w if isinstance(w, _Tensor) else g is w or g == w):
            return pick({"en": f"step {k} returned {kind_of(g)}, not {kind_of(w)}",
                         "zh": f"第 {k} 步返回了 {kind_of(g)}，而不是 {kind_of(w)}"})
    if got.moved != want.moved:
        left = [n for n, g, w in zip(BATCH_NAMES, got.moved, want.moved) if w and not g]
        if left:
            names = ", ".join(left)
            return pick({"en": f"{names} {'was' if len(left) == 1 else 'were'} not sent to "
                               f"`device` (no .to(device) on {'it' if len(left) == 1 else 'them'})",
                         "zh": f"{names} 没有送到 `device` 上（没有对它调用 .to(device)）"})
        return pick({"en": "the batch was moved differently", "zh": "批次的移动方式不一样"})
    if isinstance(want.weights, str) or isinstance(got.weights, str):
        return None if got.weights == want.weights else (
            got.weights if isinstance(got.weights, str) else "differs")
    if list(got.weights) != list(want.weights):
        return pick({"en": "the model's parameters are not the ones it had: keep the model's "
                           "layers",
                     "zh": "模型的参数已经不是原来那些了：请保留模型原有的层"})
    wrong = [n for n in want.weights
             if describe_difference(got.weights[n], want.weights[n], rtol, atol)]
    if wrong:
        first = describe_difference(got.weights[wrong[0]], want.weights[wrong[0]], rtol, atol)
        return pick({"en": f"after the steps, {len(wrong)} of {len(want.weights)} weight "
                           f"arrays differ; {wrong[0]}: {first}",
                     "zh": f"走完这两步后，{len(want.weights)} 个权重数组中有 {len(wrong)} 个"
                           f"不同；{wrong[0]}：{first}"})
    return None


def train_step(model, batch, optimizer, device):
    """minitf.pytorch.train_step with notebook 10's settings: the reference."""
    from ..pytorch import train_step as step  # imports torch

    return step(model, batch, optimizer, device)


def _step_mistake(hint, **changed):
    def wrong(model, batch, optimizer, device):
        from ..pytorch.exercise import step_variant  # imports torch

        return step_variant(model, batch, optimizer, device, **changed)

    return Mistake(hint, wrong)


class _StepExercise(Exercise):
    """An Exercise whose case is a _Setup: described in words, run by _run_steps."""

    def describe_case(self, case):
        return str(case.args[0])


def _train_step_cases():
    return [Case((_Setup(False, 3, "SGD"),), {"en": "the gradient's norm is above 1",
                                               "zh": "梯度的范数大于 1"}),
            Case((_Setup(True, 4, "Adam"),), {"en": "Adam, as the notebook trains",
                                              "zh": "Adam，和笔记本里训练时一样"})]


TRAIN_STEP = _StepExercise(
    name="train_step", checker="check_train_step", args=("setup",),
    signature=("model", "batch", "optimizer", "device"),
    task={"en": "the loss of the step as a float, having moved the batch to device and "
                "updated the weights: zero_grad, backward, clip to norm 1, step",
          "zh": "这一步的损失（float），在此之前要把批次送到 device 上并更新权重：zero_grad、"
                "backward、把范数裁剪到 1、step"},
    cases=_train_step_cases, reference=train_step, run=_run_steps, compare=_compare_steps,
    time_limit=10.0,  # a case is two steps of a real model, about 0.1 s; more on a busy machine
    mistakes=(
        _step_mistake({"en": "the batch stayed where it was: send each tensor to the model's "
                             "device, src.to(device) and so on; on a GPU the weights are there, "
                             "and a tensor on the CPU cannot meet them",
                       "zh": "批次留在了原处：要把每个张量送到模型所在的设备上，src.to(device) "
                             "等等；在 GPU 上权重就在那里，留在 CPU 上的张量没法和它们一起计算"},
                      move=()),
        _step_mistake({"en": "tgt_out stayed where it was: the loss compares the logits, "
                             "which are on device, with the targets, so send tgt_out there too",
                       "zh": "tgt_out 留在了原处：损失要把 device 上的 logits 和目标比较，"
                             "所以 tgt_out 也要送过去"},
                      move=("src", "tgt_in")),
        _step_mistake({"en": ".cuda() sends a tensor to the GPU whatever `device` says (and "
                             "fails where there is none): use .to(device), and the same code "
                             "runs on a CPU",
                       "zh": "不管 `device` 是什么，.cuda() 都把张量送到 GPU（没有 GPU 时就会"
                             "出错）：用 .to(device)，同一份代码在 CPU 上也能运行"},
                      cuda=True),
        _step_mistake({"en": "the padding was counted in the loss: pass ignore_index=0 to "
                             "F.cross_entropy, so the <pad> targets are left out",
                       "zh": "填充也算进了损失：给 F.cross_entropy 传 ignore_index=0，"
                             "这样 <pad> 目标就不计入"}, loss="pad"),
        _step_mistake({"en": "no label smoothing: notebook 08 trains with label_smoothing=0.1",
                       "zh": "没有标签平滑：笔记本 08 训练时用的是 label_smoothing=0.1"},
                      loss="smoothing"),
        _step_mistake({"en": "softmax was applied before F.cross_entropy, which takes the "
                             "logits and applies log-softmax itself",
                       "zh": "在 F.cross_entropy 之前先做了 softmax；它接收的是 logits，"
                             "自己会做 log-softmax"}, loss="softmax"),
        _step_mistake({"en": "F.cross_entropy reads axis 1 as the classes: give it (N, V) "
                             "logits and (N,) targets, logits.flatten(0, 1) and "
                             "tgt_out.flatten()",
                       "zh": "F.cross_entropy 把第 1 轴当作类别：要给它 (N, V) 的 logits 和 "
                             "(N,) 的目标，即 logits.flatten(0, 1) 和 tgt_out.flatten()"},
                      loss="3d"),
        _step_mistake({"en": "the gradients piled up from one step to the next: backward adds "
                             "into .grad, so call optimizer.zero_grad() before loss.backward()",
                       "zh": "梯度一步一步累加起来了：backward 是往 .grad 里累加，所以要在 "
                             "loss.backward() 之前调用 optimizer.zero_grad()"},
                      order="bcs"),
        _step_mistake({"en": "the weights never moved: optimizer.step() found no gradient. "
                             "The order is zero_grad, backward, step — zero_grad after backward "
                             "erases the gradient, and a step before backward has none yet",
                       "zh": "权重一直没动：optimizer.step() 没有找到梯度。顺序是 zero_grad、"
                             "backward、step——在 backward 之后调用 zero_grad 会把梯度清掉，"
                             "在 backward 之前调用 step 时还没有梯度"}, order="bzcs"),
        _step_mistake({"en": "each step used the previous batch's gradient: optimizer.step() "
                             "ran before loss.backward(); the order is zero_grad, backward, step",
                       "zh": "每一步用的是上一个批次的梯度：optimizer.step() 在 loss.backward() "
                             "之前运行了；顺序是 zero_grad、backward、step"},
                      order="szbc"),
        _step_mistake({"en": "the gradient was not clipped before the step: call "
                             "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0) between "
                             "loss.backward() and optimizer.step()",
                       "zh": "更新之前没有裁剪梯度：在 loss.backward() 和 optimizer.step() "
                             "之间调用 torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"},
                      order="zbs"),
        _step_mistake({"en": "it returned the loss tensor (which keeps its graph, and on a GPU "
                             "stays there): return loss.item(), a Python float, for the log",
                       "zh": "返回的是损失张量（它还连着计算图，在 GPU 上时也留在 GPU 上）："
                             "要返回 loss.item()，一个 Python float，用来记录"}, item=False),
    ))


def check_train_step(fn):
    """fn(model, batch (src, tgt_in, tgt_out) id tensors, optimizer, device) -> the loss, a
    float: one training step, the batch moved to `device`. Notebook 10 §6."""
    return TRAIN_STEP.check(fn)

EXERCISES = (SPLIT_IN_PROJ, TORCH_MASKS, TRAIN_STEP)
