"""Exercises of notebook 00: text to ids, ids to vectors, padding (cases, references,
known mistakes)."""

import numpy as np

from .. import tasks
from .core import Case, Exercise, Mistake

__all__ = ["check_embedding_lookup", "check_encode_source", "check_pad"]


def _pad_left(sequences, pad_id):
    longest = max(len(s) for s in sequences)
    return np.array([[pad_id] * (longest - len(s)) + list(s) for s in sequences])


def _pad_to_first(sequences, pad_id):
    """The width taken from the first sequence (a false pass while every case listed its
    longest sequence first)."""
    out = np.full((len(sequences), len(sequences[0])), pad_id)
    for i, s in enumerate(sequences):
        out[i, :len(s)] = s  # raises when a later sequence is longer
    return out


def _pad_to_first_by_lists(sequences, pad_id):
    width = len(sequences[0])
    return np.array([list(s) + [pad_id] * (width - len(s)) for s in sequences])


def _ids_of(vocab, units, eos):
    return np.array([vocab.id(unit) for unit in units] + [eos])


ENCODE_SOURCE = Exercise(
    name="encode_source", checker="check_encode_source", args=("text",),
    task={"en": "the source ids of text: one id per word, then <eos> (as tasks.encode_source)",
          "zh": "text 的源语言编号：每个单词一个编号，最后是 <eos>（与 tasks.encode_source 相同）"},
    cases=lambda: [Case(("one thousand five",)), Case(("one hundred ten",)),
                   Case(("twelve",), {"en": "one word", "zh": "只有一个单词"}),
                   Case(("nine thousand nine hundred ninety nine",),
                        {"en": "six words", "zh": "六个单词"})],
    reference=tasks.encode_source,
    mistakes=(
        Mistake({"en": "end the ids with <eos> (id 2)",
                 "zh": "编号的最后要加上 <eos>（编号 2）"},
                lambda text: tasks.encode_source(text)[:-1]),
        Mistake({"en": "the source side has no <bos>: words, then <eos> only",
                 "zh": "源语言一侧没有 <bos>：只有各个单词的编号，最后是 <eos>"},
                lambda text: np.concatenate([[tasks.BOS_ID], tasks.encode_source(text)])),
        Mistake({"en": "<eos> is id 2 (tasks.EOS_ID); 3 is <unk>",
                 "zh": "<eos> 的编号是 2（tasks.EOS_ID）；3 是 <unk>"},
                lambda text: _ids_of(tasks.SOURCE_VOCAB, text.split(), 3)),
        Mistake({"en": "the English words are looked up in tasks.SOURCE_VOCAB; TARGET_VOCAB "
                       "holds the Chinese characters",
                 "zh": "英文单词要在 tasks.SOURCE_VOCAB 里查；TARGET_VOCAB 里是中文字符"},
                lambda text: _ids_of(tasks.TARGET_VOCAB, text.split(), tasks.EOS_ID)),
        Mistake({"en": "split the text into words, text.split(): the vocabulary holds words, "
                       "not letters",
                 "zh": "要用 text.split() 把文本切成单词：词表里存的是单词，不是字母"},
                lambda text: _ids_of(tasks.SOURCE_VOCAB, text, tasks.EOS_ID)),
    ))

ROWS_HINT = {"en": "the vectors are the rows of weight (vocab_size, d_model), so pick rows, not "
                   "columns",
             "zh": "向量是 weight (vocab_size, d_model) 的行：要取行，不是取列"}
ONE_HOT_SIZE_HINT = {
    "en": "a one-hot vector has vocab_size entries, one per token of the vocabulary: "
          "np.eye(weight.shape[0])",
    "zh": "独热向量有 vocab_size 个元素，词表中每个词元一个：np.eye(weight.shape[0])"}

EMBEDDING_LOOKUP = Exercise(
    name={"en": "embedding lookup", "zh": "嵌入查找"}, checker="check_embedding_lookup",
    args=("weight", "ids"),
    task={"en": "weight[ids]: one row of weight per id, shape ids.shape + (d_model,)",
          "zh": "weight[ids]：每个编号取 weight 的一行，形状为 ids.shape + (d_model,)"},
    cases=lambda: _embedding_cases(),
    reference=lambda weight, ids: weight[ids],
    mistakes=(
        Mistake(ROWS_HINT, lambda weight, ids: weight.T[..., ids]),
        Mistake(ROWS_HINT, lambda weight, ids: weight[:, ids]),
        Mistake({"en": "the one-hot array needs the shape ids.shape + (vocab_size,): one 1 "
                       "per id",
                 "zh": "独热数组的形状应为 ids.shape + (vocab_size,)：每个编号对应一个 1"},
                lambda weight, ids: np.eye(weight.shape[0])[ids.reshape(-1)] @ weight),
        Mistake({"en": "multiply the one-hot array by weight itself, (..., vocab_size) @ "
                       "(vocab_size, d_model), not by weight.T",
                 "zh": "独热数组要乘以 weight 本身，(..., vocab_size) @ (vocab_size, d_model)，"
                       "而不是 weight.T"},
                lambda weight, ids: np.eye(weight.shape[0])[ids] @ weight.T),
        Mistake(ONE_HOT_SIZE_HINT, lambda weight, ids: np.eye(weight.shape[1])[ids] @ weight),
        Mistake(ONE_HOT_SIZE_HINT, lambda weight, ids: np.eye(len(ids))[ids] @ weight),
    ))


def _embedding_cases():
    rng = np.random.default_rng(4)
    weight = rng.normal(size=(10, 3))
    return [Case((weight, np.array([1, 5, 5, 2])), {"en": "one sentence", "zh": "一个句子"}),
            Case((weight, np.array([[1, 7, 2, 0], [9, 2, 0, 0]])),
                 {"en": "a batch of two", "zh": "含两个句子的批次"}),
            Case((rng.normal(size=(34, 8)), np.array([[5, 33, 9, 2]])),
                 {"en": "a batch of one", "zh": "只含一个句子的批次"})]


WIDTH_HINT = {"en": "the width is the longest sequence's length, "
                    "max(len(s) for s in sequences), not the first one's",
              "zh": "宽度是最长那个序列的长度 max(len(s) for s in sequences)，而不是第一个序列"
                    "的长度"}

PAD = Exercise(
    name="pad", checker="check_pad", args=("sequences", "pad_id"),
    task={"en": "a (B, max_len) int array, each row's ids first, pad_id filling the rest",
          "zh": "形状为 (B, max_len) 的整数数组：每行先放这一行的编号，其余位置填 pad_id"},
    cases=lambda: [Case(([[5, 33, 8, 2], [5, 32, 14, 2], [16, 2]], 0)),
                   Case(([[1, 2, 3], [4]], 9), {"en": "pad_id 9", "zh": "pad_id 为 9"}),
                   Case(([[7, 7]], 0), {"en": "one sequence", "zh": "只有一个序列"}),
                   Case(([[16, 2], [5, 33, 9, 2]], 0), {"en": "the longest sequence last",
                                                        "zh": "最长的序列在最后"}),
                   Case(([[9, 2], [5, 33, 8, 2], [16, 2]], 0),
                        {"en": "the longest sequence in the middle",
                         "zh": "最长的序列在中间"})],
    reference=tasks.pad,
    mistakes=(
        Mistake({"en": "put the padding at the end of each row, after its <eos>",
                 "zh": "填充要放在每一行的末尾，也就是 <eos> 之后"}, _pad_left),
        Mistake({"en": "fill with the pad_id argument, not always 0",
                 "zh": "用参数 pad_id 来填充，而不是总用 0"},
                lambda sequences, pad_id: tasks.pad(sequences, 0)),
        Mistake(WIDTH_HINT, _pad_to_first),
        Mistake(WIDTH_HINT, _pad_to_first_by_lists),
        Mistake({"en": "one column too many: the width is the longest sequence's length, with "
                       "no extra column",
                 "zh": "多了一列：宽度就是最长那个序列的长度，不需要额外的一列"},
                lambda sequences, pad_id: np.pad(tasks.pad(sequences, pad_id), ((0, 0), (0, 1)),
                                                 constant_values=pad_id)),
    ))


def check_encode_source(fn):
    """fn(text) -> the source ids of `text`: one id per word, then <eos> (tasks.encode_source).
    An exercise of notebook 00 (§2)."""
    return ENCODE_SOURCE.check(fn)


def check_embedding_lookup(fn):
    """fn(weight, ids) -> weight[ids]: one row of `weight` per id, shape ids.shape + (d_model,).
    An exercise of notebook 00 (§3)."""
    return EMBEDDING_LOOKUP.check(fn)


def check_pad(fn):
    """fn(sequences, pad_id) -> (B, max_len) int array, shorter rows filled at the end.
    An exercise of notebook 00 (§2)."""
    return PAD.check(fn)


EXERCISES = [ENCODE_SOURCE, EMBEDDING_LOOKUP, PAD]
