"""Tests for minitf.tasks: English number words -> Chinese numerals.

Expected values are written by hand or recomputed here by readers independent of the module.
"""

import itertools

import numpy as np
import pytest

from minitf.tasks import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    SOURCE_VOCAB,
    SPECIAL_TOKENS,
    TARGET_VOCAB,
    UNK_ID,
    Vocab,
    canonical_english,
    chinese,
    decode_source,
    decode_target,
    encode_source,
    encode_target,
    english,
    make_batch,
    pad,
    parse_english,
    source_words,
    split,
)

ALL = range(10000)

UNITS_AND_TEENS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
    " fifteen sixteen seventeen eighteen nineteen"
).split()
DECADES = "twenty thirty forty fifty sixty seventy eighty ninety".split()
SMALL = {word: i for i, word in enumerate(UNITS_AND_TEENS)}
SMALL.update({word: 10 * i for i, word in enumerate(DECADES, start=2)})
WORDS = list(SMALL) + ["hundred", "thousand"]
CHARS = "零一二三四五六七八九十百千"


def read_english(text):
    """Accumulate small values; 'hundred' multiplies, 'thousand' closes a group."""
    total = current = 0
    for word in text.split(" "):
        if word == "hundred":
            current *= 100
        elif word == "thousand":
            total += current * 1000
            current = 0
        else:
            current += SMALL[word]
    return total + current


def read_chinese(text):
    """A digit multiplies the unit after it (1 if none); a last bare digit is added."""
    total, digit = 0, None
    for c in text:
        if c in "零一二三四五六七八九":
            digit = "零一二三四五六七八九".index(c)
        else:
            total += (1 if digit is None else digit) * {"十": 10, "百": 100, "千": 1000}[c]
            digit = None
    return total + (digit or 0)


def as_people_write(n, *, hyphen=False, british=False, shout=False):
    """n in words as people write it: 'Two Thousand and Twenty-One', built from the digits
    here, not from minitf.tasks."""
    if n == 0:
        return "ZERO" if shout else "zero"
    thousands, hundreds, rest = n // 1000, n // 100 % 10, n % 100
    words = []
    if thousands:
        words += [UNITS_AND_TEENS[thousands], "thousand"]
    if hundreds:
        words += [UNITS_AND_TEENS[hundreds], "hundred"]
    if rest and words and british:
        words.append("and")
    if 0 < rest < 20:
        words.append(UNITS_AND_TEENS[rest])
    elif rest:
        tens = DECADES[rest // 10 - 2]
        ones = UNITS_AND_TEENS[rest % 10] if rest % 10 else ""
        words += [f"{tens}-{ones}"] if hyphen and ones else [tens] + ([ones] if ones else [])
    text = "  ".join(words) if shout else " ".join(words)
    return text.title() if shout else text


def inner_zero_runs(n):
    return len([run for run in str(n).rstrip("0").split("0")[1:] if run]) if n else 0


ENGLISH_EXAMPLES = [
    (0, "zero"),
    (5, "five"),
    (10, "ten"),
    (11, "eleven"),
    (12, "twelve"),
    (19, "nineteen"),
    (20, "twenty"),
    (40, "forty"),
    (99, "ninety nine"),
    (100, "one hundred"),
    (101, "one hundred one"),
    (105, "one hundred five"),
    (110, "one hundred ten"),
    (111, "one hundred eleven"),
    (1000, "one thousand"),
    (1001, "one thousand one"),
    (1005, "one thousand five"),
    (1010, "one thousand ten"),
    (1011, "one thousand eleven"),
    (1100, "one thousand one hundred"),
    (1234, "one thousand two hundred thirty four"),
    (2000, "two thousand"),
    (2005, "two thousand five"),
    (2010, "two thousand ten"),
    (9999, "nine thousand nine hundred ninety nine"),
]

CHINESE_EXAMPLES = [
    (0, "零"),
    (2, "二"),
    (10, "十"),
    (11, "十一"),
    (12, "十二"),
    (19, "十九"),
    (20, "二十"),
    (22, "二十二"),
    (100, "一百"),
    (101, "一百零一"),
    (105, "一百零五"),
    (110, "一百一十"),
    (111, "一百一十一"),
    (200, "二百"),
    (1000, "一千"),
    (1001, "一千零一"),
    (1005, "一千零五"),
    (1010, "一千零一十"),
    (1011, "一千零一十一"),
    (1050, "一千零五十"),
    (1100, "一千一百"),
    (1234, "一千二百三十四"),
    (2000, "二千"),
    (2005, "二千零五"),
    (2222, "二千二百二十二"),
    (9999, "九千九百九十九"),
]


@pytest.mark.parametrize(("n", "text"), ENGLISH_EXAMPLES)
def test_english_examples(n, text):
    assert english(n) == text


@pytest.mark.parametrize(("n", "text"), CHINESE_EXAMPLES)
def test_chinese_examples(n, text):
    assert chinese(n) == text


@pytest.mark.parametrize(("n", "text"), ENGLISH_EXAMPLES)
def test_parse_english_examples(n, text):
    assert parse_english(text) == n


def test_english_reads_back_for_every_number():
    for n in ALL:
        text = english(n)
        assert read_english(text) == n, text
        assert text == " ".join(text.split()) and text.islower(), text
        assert "and" not in text.split() and "-" not in text, text
        assert ("zero" in text.split()) == (n == 0), text


def test_parse_english_round_trips_every_number():
    assert [parse_english(english(n)) for n in ALL] == list(ALL)


@pytest.mark.parametrize("style", [dict(hyphen=True), dict(british=True),
                                   dict(hyphen=True, british=True, shout=True)])
def test_numbers_as_people_write_them_read_back_for_every_number(style):
    written = [as_people_write(n, **style) for n in ALL]
    assert [parse_english(text) for text in written] == list(ALL)
    assert [canonical_english(text) for text in written] == [english(n) for n in ALL]


@pytest.mark.parametrize(("text", "n"), [
    ("twenty-one", 21),
    ("Twenty-One", 21),
    ("one hundred and five", 105),
    ("three thousand and twelve", 3012),
    ("two thousand one hundred and ninety-nine", 2199),
    ("Nine Thousand Nine Hundred And Ninety-Nine", 9999),
    ("one thousand, two hundred and thirty-four", 1234),
    ("  ONE\tthousand\n five ", 1005),
    ("Zero", 0),
    (" zero ", 0),
    ("forty\u2011two", 42),  # the non-breaking hyphen of word processors
])
def test_parse_english_reads_numbers_as_people_write_them(text, n):
    assert parse_english(text) == n
    assert canonical_english(text) == english(n)


@pytest.mark.parametrize("text", ["ten thousand", "twelve thousand", "Ninety-Nine Thousand",
                                  "one hundred thousand", "one hundred and five thousand",
                                  "ninety nine thousand nine hundred ninety nine"])
def test_numbers_beyond_9999_say_the_range(text):
    with pytest.raises(ValueError, match=r"^'.*' is [\d,]+; this task's numbers are 0\.\.9999$"):
        parse_english(text)


@pytest.mark.parametrize(("text", "message"), [
    ("one million", "'million' is too large: this task's numbers are 0..9999"),
    ("42", "'42' is written in digits; write the number in words, e.g. 'forty two'"),
    ("1005", "e.g. 'one thousand five'"),
    ("123456", "'123456' is written in digits; write the number in words$"),
])
def test_words_that_are_not_number_words_get_a_hint(text, message):
    with pytest.raises(ValueError, match=message):
        parse_english(text)


@pytest.mark.parametrize("text", ["and five", "one and five", "twenty and one", "one hundred and",
                                  "one thousand and", "one thousand and five hundred",
                                  "one hundred and and five", "five hundred and thousand"])
def test_and_only_before_the_last_part(text):
    with pytest.raises(ValueError, match="'and' can only come after 'hundred' or 'thousand'"):
        parse_english(text)


def test_messages_about_long_input_are_short():
    for text in ("one " * 10_000, "fourty" * 10_000, "one thousand " + "x" * 50_000,
                 "nine thousand " * 5000):
        with pytest.raises(ValueError) as error:
            parse_english(text)
        assert len(str(error.value)) < 300 and "…" in str(error.value), str(error.value)[:300]


def test_chinese_reads_back_for_every_number():
    for n in ALL:
        text = chinese(n)
        assert read_chinese(text) == n, text
        assert set(text) <= set(CHARS), text
        assert "两" not in text
        assert text.count("零") == inner_zero_runs(n) + (n == 0), text
        assert text.startswith("十") == (10 <= n <= 19), text
        assert (n == 0) or not text.endswith("零"), text


def test_every_string_is_distinct():
    assert len({english(n) for n in ALL}) == 10000
    assert len({chinese(n) for n in ALL}) == 10000


def test_vocabularies_hold_exactly_the_tokens_used():
    words = {w for n in ALL for w in english(n).split()}
    chars = {c for n in ALL for c in chinese(n)}
    assert words == set(WORDS)
    assert chars == set(CHARS)
    assert SOURCE_VOCAB.tokens == list(SPECIAL_TOKENS) + WORDS
    assert TARGET_VOCAB.tokens == list(SPECIAL_TOKENS) + list(CHARS)


def test_parse_english_accepts_exactly_the_canonical_phrases():
    canonical = {english(n): n for n in ALL}
    for length in (1, 2, 3):
        for words in itertools.product(WORDS, repeat=length):
            text = " ".join(words)
            if text in canonical:
                assert parse_english(text) == canonical[text]
            else:
                with pytest.raises(ValueError):
                    parse_english(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hundred five", "'hundred' needs one of one..nine before it"),
        ("five five", "'five' cannot follow 'five'"),
        ("twenty ten", "'ten' cannot follow 'twenty'"),
        ("twenty one two", "'two' cannot follow 'one'"),
        ("one zero", "'zero' must stand alone"),
        ("eleven hundred", "not 'eleven'"),
        ("one hundred hundred", "'hundred' is out of place"),
        ("thousand five", "'thousand' needs a number before it"),
        ("one thousand thousand", "'thousand' can appear only once"),
        ("one thousand one thousand", "'thousand' can appear only once"),
        ("zero thousand", "'zero' must stand alone"),
        ("twenty-ten", "'ten' cannot follow 'twenty'"),
    ],
)
def test_parse_english_names_the_problem(text, message):
    with pytest.raises(ValueError, match=message):
        parse_english(text)




@pytest.mark.parametrize("function", [encode_source, parse_english])
def test_unknown_word_suggests_the_closest(function):
    message = r"^'fourty' is not a number word; did you mean 'forty'\?$"
    with pytest.raises(ValueError, match=message):
        function("fourty two")
    with pytest.raises(ValueError, match="did you mean 'fifteen'"):
        function("one hundred fifteeen")


def test_unknown_word_without_a_close_match_lists_known_words():
    with pytest.raises(ValueError, match="'banana' is not a number word; the known words are"):
        encode_source("banana")


def test_the_tokenizer_points_hyphens_and_and_to_the_words_the_model_reads():
    with pytest.raises(ValueError, match="^'twenty-one' is not one of the model's words; "
                                         "write 'twenty one'"):
        encode_source("twenty-one")
    with pytest.raises(ValueError, match="^'and' is not one of the model's words; "
                                         "write 'one hundred five'"):
        encode_source("one hundred and five")
    assert source_words("Twenty One") == ["twenty", "one"]


@pytest.mark.parametrize("function", [encode_source, encode_target, parse_english])
@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty_text_is_refused(function, text):
    with pytest.raises(ValueError, match="empty"):
        function(text)


def test_unknown_chinese_character_is_named():
    with pytest.raises(ValueError, match="'两'.*use '二'"):
        encode_target("两千")
    with pytest.raises(ValueError, match="'x'"):
        encode_target("一x")


@pytest.mark.parametrize("bad", [-1, 10000])
@pytest.mark.parametrize("function", [english, chinese])
def test_numbers_outside_the_task_are_refused(function, bad):
    with pytest.raises(ValueError, match=f"n must be an int in 0..9999, got {bad}"):
        function(bad)


@pytest.mark.parametrize("bad", [1.5, 5.0, "5", None, True])
@pytest.mark.parametrize("function", [english, chinese])
def test_numbers_that_are_not_ints_are_refused(function, bad):
    with pytest.raises(TypeError, match="n must be an int"):
        function(bad)


def test_numpy_integers_are_accepted():
    assert english(np.int64(1005)) == "one thousand five"
    assert chinese(np.int32(1005)) == "一千零五"


def test_special_ids():
    assert (PAD_ID, BOS_ID, EOS_ID, UNK_ID) == (0, 1, 2, 3)
    assert SPECIAL_TOKENS == ("<pad>", "<bos>", "<eos>", "<unk>")
    for vocab in (SOURCE_VOCAB, TARGET_VOCAB):
        assert [vocab.id(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3]
    assert (len(SOURCE_VOCAB), len(TARGET_VOCAB)) == (34, 17)


def test_encode_source_ids_and_tolerance():
    ids = encode_source("One  Thousand five")
    assert ids.dtype == np.int64
    np.testing.assert_array_equal(ids, [5, 33, 9, EOS_ID])
    np.testing.assert_array_equal(encode_source("zero"), [4, EOS_ID])
    np.testing.assert_array_equal(encode_source("ninety hundred"), [31, 32, EOS_ID])


def test_encode_target_ids():
    ids = encode_target("一千零五")
    assert ids.dtype == np.int64
    np.testing.assert_array_equal(ids, [5, 16, 4, 9, EOS_ID])
    np.testing.assert_array_equal(encode_target("十 二"), [14, 6, EOS_ID])


def test_decode_round_trips_every_number():
    for n in ALL:
        assert decode_source(encode_source(english(n))) == english(n)
        assert decode_target(encode_target(chinese(n))) == chinese(n)


def test_decode_stops_at_eos_and_skips_pad_and_bos():
    assert decode_target([BOS_ID, 5, 16, PAD_ID, 9, EOS_ID, 6, 7]) == "一千五"
    assert decode_source(np.array([5, 33, EOS_ID, 9])) == "one thousand"
    assert decode_target([]) == ""


def test_vocab_round_trip_and_lookup():
    vocab = Vocab(["a", "b", "c"])
    assert vocab.tokens == ["<pad>", "<bos>", "<eos>", "<unk>", "a", "b", "c"]
    assert len(vocab) == 7
    assert "b" in vocab and "<eos>" in vocab and "z" not in vocab
    assert vocab.encode(["c", "a"]) == [6, 4]
    assert vocab.decode([6, 4]) == ["c", "a"]
    assert vocab.decode([1, 6, 3, 2, 4]) == ["c", "<unk>"]
    assert vocab.decode([1, 6, 2, 0], strip_special=False) == ["<bos>", "c", "<eos>", "<pad>"]


def test_vocab_errors_name_the_problem():
    vocab = Vocab(["a", "b"])
    with pytest.raises(ValueError, match="'z' is not in the vocabulary"):
        vocab.id("z")
    with pytest.raises(ValueError, match="'z'"):
        vocab.encode(["a", "z"])
    with pytest.raises(ValueError, match="id 6"):
        vocab.decode([4, 6])
    with pytest.raises(ValueError, match="id -1"):
        vocab.decode([-1])
    with pytest.raises(ValueError, match="1-D"):
        vocab.decode([[4]])
    with pytest.raises(ValueError, match="<eos>"):
        Vocab(["a", "<eos>"])
    with pytest.raises(ValueError, match="duplicate"):
        Vocab(["a", "b", "a"])


def test_split_is_a_disjoint_cover():
    train, test = split()
    assert (len(train), len(test)) == (8000, 2000)
    assert train.dtype == test.dtype == np.int64
    assert np.all(np.diff(train) > 0) and np.all(np.diff(test) > 0)
    assert not set(train.tolist()) & set(test.tolist())
    np.testing.assert_array_equal(np.sort(np.concatenate([train, test])), np.arange(10000))


def test_split_is_deterministic_and_depends_on_the_seed():
    a_train, a_test = split(0.2, seed=0)
    b_train, b_test = split(0.2, seed=0)
    np.testing.assert_array_equal(a_train, b_train)
    np.testing.assert_array_equal(a_test, b_test)
    assert not np.array_equal(a_test, split(0.2, seed=1)[1])
    assert len(split(0.1)[1]) == 1000


def test_train_split_shows_every_token():
    train, _ = split()
    assert {w for n in train for w in english(n).split()} == set(WORDS)
    assert {c for n in train for c in chinese(n)} == set(CHARS)


@pytest.mark.parametrize("fraction", [0, 1, -0.1, 1.5])
def test_split_refuses_a_bad_fraction(fraction):
    with pytest.raises(ValueError, match="test_fraction"):
        split(fraction)


def test_make_batch_layout():
    src, tgt_in, tgt_out = make_batch([5, 1005, 20])
    one, thousand, five, twenty = 5, 33, 9, 24
    np.testing.assert_array_equal(
        src, [[five, EOS_ID, 0, 0], [one, thousand, five, EOS_ID], [twenty, EOS_ID, 0, 0]]
    )
    t_1, t_2, t_5, t_0, shi, qian = 5, 6, 9, 4, 14, 16
    np.testing.assert_array_equal(
        tgt_in, [[BOS_ID, t_5, 0, 0, 0], [BOS_ID, t_1, qian, t_0, t_5], [BOS_ID, t_2, shi, 0, 0]]
    )
    np.testing.assert_array_equal(
        tgt_out,
        [[t_5, EOS_ID, 0, 0, 0], [t_1, qian, t_0, t_5, EOS_ID], [t_2, shi, EOS_ID, 0, 0]],
    )
    assert src.dtype == tgt_in.dtype == tgt_out.dtype == np.int64


def test_make_batch_shift_on_a_split():
    numbers = split()[1][:64]
    src, tgt_in, tgt_out = make_batch(numbers)
    assert src.shape[0] == tgt_in.shape[0] == 64 and tgt_in.shape == tgt_out.shape
    assert np.all(tgt_in[:, 0] == BOS_ID)
    np.testing.assert_array_equal(tgt_in != PAD_ID, tgt_out != PAD_ID)
    np.testing.assert_array_equal(
        tgt_in[:, 1:], np.where(tgt_out[:, :-1] == EOS_ID, PAD_ID, tgt_out[:, :-1])
    )
    assert np.all((src == EOS_ID).sum(axis=1) == 1)
    assert np.all((tgt_out == EOS_ID).sum(axis=1) == 1)
    for row, n in zip(tgt_out, numbers, strict=True):
        assert read_chinese(decode_target(row)) == n
    for row, n in zip(src, numbers, strict=True):
        assert read_english(decode_source(row)) == n


def test_make_batch_refuses_bad_input():
    with pytest.raises(ValueError, match="at least one"):
        make_batch([])
    with pytest.raises(ValueError, match="1-D"):
        make_batch([[1, 2]])
    with pytest.raises(ValueError, match="10000"):
        make_batch([1, 10000])


def test_pad():
    out = pad([[1, 2, 3], [4], []])
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, [[1, 2, 3], [4, 0, 0], [0, 0, 0]])
    np.testing.assert_array_equal(pad([np.array([7])], pad_id=9), [[7]])
    np.testing.assert_array_equal(pad([[1], [2, 3]], pad_id=9), [[1, 9], [2, 3]])
    assert pad([]).shape == (0, 0)
    with pytest.raises(ValueError, match=r"sequences\[1\] is not 1-D"):
        pad([[1], [[2]]])


# N22 and issue 26: separators at the ends, and "a" for "one"

@pytest.mark.parametrize("text", ["twenty-", "one thousand,", "-five", ",one", "twenty - "])
def test_a_phrase_that_starts_or_ends_with_a_separator_is_refused(text):
    with pytest.raises(ValueError, match="cannot (start|end) with a hyphen or a comma"):
        parse_english(text)


@pytest.mark.parametrize(("text", "value", "words"), [
    ("a hundred", 100, "one hundred"),
    ("a thousand", 1000, "one thousand"),
    ("a hundred and five", 105, "one hundred five"),
    ("a thousand and five", 1005, "one thousand five"),
    ("a hundred twenty", 120, "one hundred twenty"),
    ("A Thousand Two Hundred", 1200, "one thousand two hundred"),
])
def test_a_for_one_at_the_start(text, value, words):
    assert parse_english(text) == value
    assert canonical_english(text) == words


@pytest.mark.parametrize("text", ["a", "a five", "one thousand a hundred", "twenty a hundred",
                                  "a thousand a hundred", "one hundred a"])
def test_a_anywhere_else_is_refused(text):
    with pytest.raises(ValueError, match="'a' can only stand for 'one' at the start"):
        parse_english(text)
