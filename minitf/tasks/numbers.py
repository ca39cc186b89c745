"""The course's running task: English number words -> Chinese numerals, for 0..9999.

`english(1005)` is ``"one thousand five"`` and `chinese(1005)` is ``"一千零五"``.
Source tokens are words, target tokens are characters. Every vocabulary starts with the
four special tokens ``<pad>=0, <bos>=1, <eos>=2, <unk>=3``.
Introduced in notebook 00 §1–2.
"""

import difflib
import re
import unicodedata

import numpy as np

from ..generate import translate_ids
from ..module import as_rng
from ..tokens import BOS_ID, EOS_ID, PAD_ID, pad
from ..validation import require_int, require_int_array, require_real, shorten
from .vocab import Vocab

MAX_NUMBER = 9999

ONES = tuple(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
    " fifteen sixteen seventeen eighteen nineteen".split()
)
TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
NUMBER_WORDS = ONES + TENS + ("hundred", "thousand")

DIGITS = "零一二三四五六七八九"
UNITS = "十百千"
CHARACTERS = DIGITS + UNITS

_WORD_VALUE = {**{w: i for i, w in enumerate(ONES)}, **{w: 20 + 10 * i for i, w in enumerate(TENS)}}
_CHAR_HINTS = {"两": "use '二'", "〇": "use '零'", "壹": "use '一'", "拾": "use '十'"}


def _require_number(n):
    return require_int(n, "n", low=0, high=MAX_NUMBER)


def _below_100_words(n):
    if n < 20:
        return [ONES[n]]
    tens, ones = divmod(n, 10)
    return [TENS[tens - 2]] + ([ONES[ones]] if ones else [])


def english(n):
    """English words for n in 0..9999: ``1234 -> 'one thousand two hundred thirty four'``.
    Notebook 00 §1."""
    n = _require_number(n)
    if n == 0:
        return "zero"
    thousands, hundreds, rest = n // 1000, n // 100 % 10, n % 100
    words = []
    if thousands:
        words += [ONES[thousands], "thousand"]
    if hundreds:
        words += [ONES[hundreds], "hundred"]
    if rest:
        words += _below_100_words(rest)
    return " ".join(words)


def chinese(n):
    """Chinese numeral for n in 0..9999: ``1005 -> '一千零五'``, ``12 -> '十二'``.
    Notebook 00 §1."""
    n = _require_number(n)
    if n == 0:
        return DIGITS[0]
    if 10 <= n < 20:
        return UNITS[0] + (DIGITS[n - 10] if n > 10 else "")
    out, zero_pending = [], False
    for power in (3, 2, 1, 0):
        digit = n // 10**power % 10
        if digit == 0:
            zero_pending = bool(out)
            continue
        if zero_pending:
            out.append(DIGITS[0])
            zero_pending = False
        out.append(DIGITS[digit] + (UNITS[power - 1] if power else ""))
    return "".join(out)


SOURCE_VOCAB = Vocab(NUMBER_WORDS)
TARGET_VOCAB = Vocab(CHARACTERS)


_SCALES = ("hundred", "thousand")
_TOO_LARGE = ("million", "billion", "trillion")
# hyphens (also Unicode's U+2010 and the non-breaking U+2011) and commas part words as spaces do
_SEPARATORS = re.compile(r"[\s,\-\u2010\u2011]+")
_PUNCTUATION = ",-\u2010\u2011"  # the separators that are not spaces: never first or last


def _unknown_word(word):
    shown = shorten(word)
    if re.fullmatch(r"[0-9]+", word):
        example = f", e.g. {english(int(word))!r}" if len(word) <= 4 else ""
        return f"{shown} is written in digits; write the number in words{example}"
    if word in _TOO_LARGE:
        return f"{shown} is too large: this task's numbers are 0..{MAX_NUMBER}"
    close = difflib.get_close_matches(word, NUMBER_WORDS, n=1)
    foreign = sorted({c for c in word if not c.isascii() and c.isalpha()}, key=word.index)
    if close and foreign:  # 'fivе' with a Cyrillic е looks just like 'five'
        letters = ", ".join(f"{c!r} (U+{ord(c):04X} {unicodedata.name(c, 'unnamed')})"
                            for c in foreign[:3])
        plural = "s" if len(foreign) > 1 else ""
        return (f"{shown} is not a number word: it has the non-English letter{plural} "
                f"{letters}; did you mean {close[0]!r}?")
    if close:
        return f"{shown} is not a number word; did you mean {close[0]!r}?"
    return (f"{shown} is not a number word; the known words are zero to nineteen, "
            "twenty to ninety by tens, hundred and thousand")


def _require_str(text):
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return text


def source_words(text):
    """Split English text at whitespace into words of the source vocabulary, lower-cased;
    ValueError naming the first word that is not one. These are the model's tokens: no
    hyphens, no "and" (`canonical_english` writes any number phrase with them).
    No notebook calls it by name."""
    words = _require_str(text).lower().split()
    if not words:
        raise ValueError("the text is empty")
    for word in words:
        if word not in _WORD_VALUE and word not in _SCALES:
            raise ValueError(_not_a_token(word, text))
    return words


def _not_a_token(word, text):
    if _SEPARATORS.search(word) or word in ("and", "a"):
        try:
            return (f"{shorten(word)} is not one of the model's words; write "
                    f"{canonical_english(text)!r} (tasks.canonical_english does)")
        except ValueError:
            pass
    return _unknown_word(word)


def _number_words(text):
    """The lower-case words of a number phrase; hyphens and commas part words as spaces do
    ("twenty-one", "one thousand, two hundred"), but cannot start or end it ("twenty-" is
    cut short). "a" stands for "one" before the first 'hundred' or 'thousand' ("a hundred")."""
    stripped = _require_str(text).strip()
    for end, char in (("starts", stripped[:1]), ("ends", stripped[-1:])):
        if char and char in _PUNCTUATION:
            raise ValueError(f"{shorten(text)} {end} with {char!r}: a number phrase cannot "
                             f"{'start' if end == 'starts' else 'end'} with a hyphen or a "
                             "comma (is it cut short?)")
    words = [w for w in _SEPARATORS.split(stripped.lower()) if w]
    if not words:
        raise ValueError("the text is empty")
    for word in words:
        if word not in _WORD_VALUE and word not in _SCALES and word not in ("and", "a"):
            raise ValueError(_unknown_word(word))
    return _a_as_one(words, text)


def _a_as_one(words, text):
    """'a hundred …', 'a thousand …': "a" is "one" only as the first word, before a scale."""
    for i, word in enumerate(words):
        if word == "a" and (i > 0 or words[1:2] not in (["hundred"], ["thousand"])):
            raise ValueError("'a' can only stand for 'one' at the start, before 'hundred' or "
                             f"'thousand', as in 'a hundred and five'; got {shorten(text)}")
    return ["one"] + words[1:] if words[0] == "a" else words


def _misplaced_and(text):
    return ValueError("'and' can only come after 'hundred' or 'thousand', before the last "
                      f"part below a hundred, as in 'one hundred and five'; got {shorten(text)}")


def _below_100(words, text):
    """The value of a phrase below a hundred ("ninety nine", "twelve"; no words is 0)."""
    for i, word in enumerate(words):
        if word == "and":
            raise _misplaced_and(text)
        if word in _SCALES:
            raise ValueError(f"{word!r} is out of place in {shorten(text)}")
        if i == 1 and words[0] in TENS and word in ONES[1:10]:
            continue
        if i > 0:
            raise ValueError(f"{word!r} cannot follow {words[i - 1]!r} in {shorten(text)}")
    return sum(_WORD_VALUE[w] for w in words)


def _after_scale(words, text):
    """The words after 'hundred' or 'thousand' without the "and" that may start them."""
    if words[:1] != ["and"]:
        return words
    words = words[1:]
    if not words or "hundred" in words or "thousand" in words:
        raise _misplaced_and(text)
    return words


def _below_1000(words, text):
    """The value of a phrase below a thousand ("three hundred and five")."""
    if "hundred" not in words:
        return _below_100(words, text)
    k = words.index("hundred")
    if k == 0:
        raise ValueError(f"'hundred' needs one of one..nine before it, in {shorten(text)}")
    if k > 1:
        raise ValueError(f"{' '.join(words[:k])!r} cannot come before 'hundred' "
                         f"in {shorten(text)}")
    if words[0] not in ONES[1:10]:
        raise ValueError(f"only one..nine can come before 'hundred', not {words[0]!r}")
    return 100 * _WORD_VALUE[words[0]] + _below_100(_after_scale(words[2:], text), text)


def parse_english(text):
    """A number phrase as people write it -> its int in 0..9999.

    Any case and spacing, hyphens ("twenty-one"), commas and the British "and" ("one hundred
    and five", "three thousand and twelve") are accepted, and "a" for "one" at the start
    ("a hundred", "a thousand and five"). Anything else is a ValueError that names the
    problem: an unknown word (with the closest known one), a word out of place, a phrase
    that starts or ends with a hyphen or comma ("twenty-", cut short), or a number outside
    0..9999 ("ten thousand").
    No notebook calls it by name.
    """
    words = _number_words(text)
    if "zero" in words:
        if len(words) > 1:
            raise ValueError(f"'zero' must stand alone, got {shorten(text)}")
        return 0
    if words.count("thousand") > 1:
        raise ValueError(f"'thousand' can appear only once, in {shorten(text)}")
    if "thousand" not in words:
        return _below_1000(words, text)
    k = words.index("thousand")
    if k == 0:
        raise ValueError(f"'thousand' needs a number before it, in {shorten(text)}")
    value = 1000 * _below_1000(words[:k], text) + _below_1000(
        _after_scale(words[k + 1:], text), text)
    if value > MAX_NUMBER:
        raise ValueError(f"{shorten(text)} is {value:,}; this task's numbers are "
                         f"0..{MAX_NUMBER}")
    return value


def canonical_english(text):
    """A number phrase as people write it -> the words `english` writes for it, which are the
    words the model was trained on: ``"Twenty-One" -> "twenty one"``,
    ``"one hundred and five" -> "one hundred five"``, ``"a hundred" -> "one hundred"``.
    ValueError as parse_english.
    Used by minitf.translate; no notebook calls it by name."""
    return english(parse_english(text))


def target_chars(text):
    """Split Chinese text into known characters (whitespace ignored); ValueError otherwise.
    No notebook calls it by name."""
    chars = [c for c in _require_str(text) if not c.isspace()]
    if not chars:
        raise ValueError("the text is empty")
    for c in chars:
        if c not in CHARACTERS:
            hint = _CHAR_HINTS.get(c, f"known characters are {CHARACTERS}")
            raise ValueError(f"{c!r} is not a Chinese numeral character of this task; {hint}")
    return chars


def encode_source(text):
    """English text -> int64 ids `(L_s,)`, the words followed by <eos>.
    Notebook 00 §2."""
    return np.array(SOURCE_VOCAB.encode(source_words(text)) + [EOS_ID], dtype=np.int64)


def encode_target(text):
    """Chinese text -> int64 ids `(L_t,)`, the characters followed by <eos>.
    Notebook 00 §2."""
    return np.array(TARGET_VOCAB.encode(target_chars(text)) + [EOS_ID], dtype=np.int64)


def decode_source(ids):
    """Source ids `(L,)` -> words joined by spaces; stops at <eos>, ignores <pad>/<bos>.
    No notebook calls it by name."""
    return " ".join(SOURCE_VOCAB.decode(ids))


def decode_target(ids):
    """Target ids `(L,)` -> characters joined; stops at <eos>, ignores <pad>/<bos>.
    Notebook 00 §2."""
    return "".join(TARGET_VOCAB.decode(ids))


def split(test_fraction=0.2, seed=0):
    """Random train/test split of 0..9999 -> (train, test), disjoint sorted int64 arrays.
    Notebook 00 §1."""
    test_fraction = require_real(test_fraction, "test_fraction", 0, 1, low_open=True,
                                 high_open=True)
    rng = np.random.default_rng(require_int(seed, "seed", low=0))
    numbers = rng.permutation(MAX_NUMBER + 1).astype(np.int64)
    n_test = round(len(numbers) * test_fraction)
    return np.sort(numbers[n_test:]), np.sort(numbers[:n_test])


def require_train_test(numbers):
    """`numbers` for training (None: split()) -> (train, test), each a non-empty 1-D
    int array of numbers in 0..9999; anything else is refused before a step is trained.
    minitf.translator.train_translator and the torch engine use it; no notebook calls it by
    name."""
    if numbers is None:
        return split()
    if isinstance(numbers, (str, bytes)) or not isinstance(numbers, (tuple, list)) \
            or len(numbers) != 2:
        raise ValueError(f"numbers must be a pair (train numbers, test numbers), got "
                         f"{shorten(numbers)}")
    return tuple(require_numbers(part, f"numbers[{i}] ({what})")
                 for i, (part, what) in enumerate(zip(numbers, ("train", "test"))))


def make_batch(numbers):
    """Numbers (B,) -> (src, tgt_in, tgt_out), int64, padded with 0.

    src `(B, L_s)` is the English ids + <eos>; tgt_in `(B, L_t)` is <bos> + the Chinese ids;
    tgt_out `(B, L_t)` is the Chinese ids + <eos> (tgt_in shifted left by one).
    Notebook 00 §5; the teacher-forcing shift in notebook 06 §6.
    """
    numbers = np.asarray(numbers)
    if numbers.ndim != 1:
        raise ValueError(f"expected a 1-D list of numbers, got shape {numbers.shape}")
    numbers = [_require_number(n) for n in numbers.tolist()]
    if not numbers:
        raise ValueError("make_batch needs at least one number")
    src = pad([encode_source(english(n)) for n in numbers])
    targets = [encode_target(chinese(n)) for n in numbers]
    tgt_in = pad([np.concatenate([[BOS_ID], t[:-1]]) for t in targets])
    return src, tgt_in, pad(targets)


# Training on the task: batches drawn shape by shape, and the exact match it is judged by.

def number_shape(n):
    """The shape of a number: its digits with every nonzero one written x, and teens marked,
    because Chinese writes them differently (十二, not 一十二): 7 -> 'x', 40 -> 'x0',
    12 -> 'xx teen', 1005 -> 'x00x', 0 -> '0'. There are 18 shapes in 0..9999.
    Notebook 08 §6 (sampling the training numbers)."""
    n = require_int(n, "n", 0, MAX_NUMBER)
    digits = "".join("0" if c == "0" else "x" for c in str(n))
    return digits + (" teen" if 10 <= n < 20 else "")


def require_numbers(numbers, name):
    """`numbers` as a non-empty 1-D int64 array of numbers in 0..9999; anything else is a
    ValueError naming `name`. The task's functions check their numbers with it; no notebook
    calls it by name."""
    numbers = require_int_array(numbers, name)
    if numbers.ndim != 1 or numbers.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D list of numbers, got shape "
                         f"{numbers.shape}: the task needs at least one number")
    if numbers.min() < 0 or numbers.max() > MAX_NUMBER:
        bad = numbers.min() if numbers.min() < 0 else numbers.max()
        raise ValueError(f"{name} must hold numbers in 0..{MAX_NUMBER}, got {bad}")
    return numbers


def draw_probabilities(numbers, by_shape):
    """numbers (N,) -> (N,) the probability of drawing each into a training batch: a share
    `by_shape` of the draws picks a shape (number_shape) uniformly, then a number of that
    shape; the rest are uniform. NumberTask and tasks.sequence.SequenceTask draw with it;
    no notebook calls it by name."""
    numbers = require_numbers(numbers, "numbers")
    by_shape = require_real(by_shape, "by_shape", 0, 1)
    shapes = [number_shape(n) for n in numbers.tolist()]
    _, shape_of, shape_sizes = np.unique(shapes, return_inverse=True, return_counts=True)
    return ((1 - by_shape) / len(shapes)
            + by_shape / (len(shape_sizes) * shape_sizes[shape_of]))  # (N,), sums to 1


def exact_match(model, numbers, batch_size=500, beam_size=1):
    """Fraction of `numbers` whose greedy (or beam) translation equals chinese(n).
    NumberTask.evaluate uses it; no notebook calls it by name."""
    numbers = require_numbers(numbers, "numbers")
    batch_size = require_int(batch_size, "batch_size", low=1)
    correct = 0
    for i in range(0, len(numbers), batch_size):
        chunk = numbers[i:i + batch_size]
        src, _, _ = make_batch(chunk)
        out = translate_ids(model, src, beam_size)
        correct += sum(decode_target(row) == chinese(int(n)) for row, n in zip(out, chunk))
    return correct / len(numbers)


class NumberTask:
    """The number task as `minitf.train.train` takes it: training pairs, each encoded once,
    and held-out numbers to measure the exact match on. Notebook 08 §6.

    `batch(rng, B)` draws a batch, trimmed of the columns that are padding in every row.
    A uniform draw would rarely show the short numbers people type first: 0..99 are 1% of
    0..9999 and the round thousands 0.09%. So a share `by_shape` of the draws picks a shape
    (number_shape) uniformly, then a number of that shape; the rest are uniform.
    `evaluate(model, final)` is the exact match on `eval_size` of the test numbers, drawn
    from `rng` now, or on all of them when `final`.
    """

    ignore_index = PAD_ID

    def __init__(self, train_numbers, test_numbers, *, by_shape=0.5, eval_size=500, rng=0):
        by_shape = require_real(by_shape, "by_shape", 0, 1)
        eval_size = require_int(eval_size, "eval_size", low=1)
        train_numbers = require_numbers(train_numbers, "train_numbers")
        self.test_numbers = require_numbers(test_numbers, "test_numbers")
        self.eval_numbers = as_rng(rng).permutation(self.test_numbers)[:eval_size]
        self.src, self.tgt_in, self.tgt_out = make_batch(train_numbers)
        self.src_len = (self.src != PAD_ID).sum(axis=1)
        self.tgt_len = (self.tgt_out != PAD_ID).sum(axis=1)
        self.p = draw_probabilities(train_numbers, by_shape)

    def batch(self, rng, batch_size):
        rows = rng.choice(len(self.src), size=batch_size, p=self.p)
        ls, lt = self.src_len[rows].max(), self.tgt_len[rows].max()
        return (self.src[rows, :ls], self.tgt_in[rows, :lt]), self.tgt_out[rows, :lt]

    def evaluate(self, model, final=False):
        return exact_match(model, self.test_numbers if final else self.eval_numbers)
