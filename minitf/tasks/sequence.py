"""The number task as one sequence (一个序列), for a decoder-only model:

    <bos> one thousand five <sep> 一 千 零 五 <eos>

English word tokens and Chinese character tokens share one vocabulary (VOCAB: the four
special tokens, <sep>, the words, the characters). The prompt is `<bos> words <sep>`; the
model continues it with the answer and <eos>. Training scores only the answer: the targets
of the prompt's positions are <pad>, the ignore_index of cross_entropy. The numbers, their
train/test split and their words and characters are the running task's (tasks.numbers).
Notebook 11 §1–2 builds it, §4 trains on it.
"""

import numpy as np

from ..generate import greedy_continue
from ..gpt import GPTConfig
from ..module import as_rng
from ..tokens import BOS_ID, EOS_ID, PAD_ID, pad
from ..train import TrainConfig
from ..validation import require_int
from .numbers import (
    CHARACTERS,
    NUMBER_WORDS,
    chinese,
    draw_probabilities,
    english,
    require_numbers,
    source_words,
)
from .vocab import Vocab

VOCAB = Vocab(["<sep>", *NUMBER_WORDS, *CHARACTERS])
SEP_ID = VOCAB.id("<sep>")  # 4, right after the special ids
MAX_NEW = 8  # the longest answer, 一千一百一十一 (7 characters), and <eos>


def prompt_ids(text):
    """English number words -> the prompt's ids (L,) int64: <bos>, the words, <sep>.
    ValueError naming the first word that is not one of the task's (tasks.source_words).
    Notebook 11 §1, and §5 feeds it to generation."""
    return np.array([BOS_ID, *VOCAB.encode(source_words(text)), SEP_ID], dtype=np.int64)


def sequence_ids(n):
    """A number in 0..9999 -> its whole sequence's ids (L,) int64: the prompt, then the
    characters of chinese(n) and <eos>. Notebook 11 §1 (by hand, then this)."""
    return np.concatenate([prompt_ids(english(n)), VOCAB.encode(list(chinese(n))), [EOS_ID]])


def make_batch(numbers):
    """Numbers (B,) -> (tokens, targets), int64 (B, L), padded with <pad> = 0.

    tokens are each sequence without its last id; targets are the ids that follow them
    (tokens shifted left by one), with the prompt's targets replaced by <pad> so that only
    the answer is scored:

        tokens   <bos> one thousand five  <sep>  一  千  零  五
        targets  <pad> <pad>  <pad> <pad>  一    千  零  五  <eos>

    Notebook 11 §2; Exercise 1 writes its second step.
    """
    numbers = require_numbers(numbers, "numbers")
    sequences = [sequence_ids(n) for n in numbers.tolist()]
    tokens = pad([s[:-1] for s in sequences])  # (B, L)
    targets = pad([s[1:] for s in sequences])  # (B, L)
    in_prompt = np.arange(tokens.shape[1]) < np.argmax(tokens == SEP_ID, axis=1)[:, None]
    targets[in_prompt] = PAD_ID  # up to <sep>, whose target is the answer's first character
    return tokens, targets


def decode_answer(ids):
    """Answer ids (1-D) -> the characters joined; stops at <eos>, ignores <pad> and <bos>.
    A word or <sep> in the answer shows as it is, so it never equals a number's characters.
    Notebook 11 §5."""
    return "".join(VOCAB.decode(ids))


def exact_match(model, numbers, batch_size=1000):
    """Fraction of `numbers` whose greedy continuation of the prompt (generate.greedy_continue,
    with the KV cache) is exactly chinese(n) followed by <eos>. Notebook 11 §4.
    """
    numbers = require_numbers(numbers, "numbers")
    batch_size = require_int(batch_size, "batch_size", low=1)
    correct = 0
    for i in range(0, len(numbers), batch_size):
        chunk = numbers[i:i + batch_size].tolist()
        prompts = pad([prompt_ids(english(n)) for n in chunk])  # (B, L) the prompts
        answers = greedy_continue(model, prompts, max_new=MAX_NEW)  # (B, T)
        correct += sum(_is_exact(row, n) for row, n in zip(answers, chunk))
    return correct / len(numbers)


def _is_exact(answer, n):
    """True when answer ids (T,) are the characters of chinese(n) then <eos>."""
    expected = VOCAB.encode(list(chinese(n))) + [EOS_ID]
    return answer[:len(expected)].tolist() == expected


class SequenceTask:
    """The number task as one sequence, as `minitf.train.train` takes it: every training
    number encoded once (make_batch), drawn as tasks.NumberTask draws them (a share
    `by_shape` shape by shape), and the exact match on held-out numbers.
    Notebook 11 §4.

    `batch(rng, B)` -> ((tokens,), targets): a batch for GPT.forward, trimmed of the columns
    that are padding in every row. `evaluate(model, final)` is the exact match on `eval_size`
    of the test numbers, drawn from `rng` now, or on all of them when `final`.
    """

    ignore_index = PAD_ID

    def __init__(self, train_numbers, test_numbers, *, by_shape=0.5, eval_size=500, rng=0):
        train_numbers = require_numbers(train_numbers, "train_numbers")
        self.test_numbers = require_numbers(test_numbers, "test_numbers")
        eval_size = require_int(eval_size, "eval_size", low=1)
        self.p = draw_probabilities(train_numbers, by_shape)
        self.eval_numbers = as_rng(rng).permutation(self.test_numbers)[:eval_size]
        self.tokens, self.targets = make_batch(train_numbers)
        self.lengths = (self.tokens != PAD_ID).sum(axis=1)

    def batch(self, rng, batch_size):
        rows = rng.choice(len(self.tokens), size=batch_size, p=self.p)
        L = self.lengths[rows].max()
        return (self.tokens[rows, :L],), self.targets[rows, :L]

    def evaluate(self, model, final=False):
        return exact_match(model, self.test_numbers if final else self.eval_numbers)


# The model and its run in notebook 11, as benchmarks/decoder_only.py measures them: the
# translator's width (TRANSLATOR_CONFIG) in one stack of two blocks, and notebook 08's run
# with twice its learning rate. In float64 on one core, seeds 0–4: exact on 99% of the 2000
# held-out numbers after 70–90 steps (about 2 s of training), on 99.90–99.95% after the 150
# (3–5 s).
GPT_CONFIG = GPTConfig(len(VOCAB), d_model=64, num_heads=4, num_layers=2, d_ff=128,
                       max_len=16)
GPT_TRAINING = TrainConfig(steps=150, batch_size=64, warmup=50, lr_scale=0.5,
                           label_smoothing=0.1, clip_norm=1.0, cooldown=0.25)
