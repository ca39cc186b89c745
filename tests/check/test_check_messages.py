"""The checkers speak English and Chinese (issue 35): every message has both, the edition picks
the language with one call, and a checker run in Chinese says everything in Chinese — its
verdict, its cases, its differences and the hint of the mistake made."""

import re
import string

import numpy as np
import pytest
from check_solutions import SOLUTIONS
from test_check_exercises import HOSTILE, naive_softmax

import minitf.check
from minitf.check import EXERCISES_BY_CHECKER, check_function, check_softmax, nb10, use_language
from minitf.check.core import NOT_WRITTEN
from minitf.check.messages import MESSAGES, current_language

HAN = re.compile("[\u4e00-\u9fff]")
ALL_EXERCISES = list(EXERCISES_BY_CHECKER.values()) + list(nb10.EXERCISES)


@pytest.fixture(autouse=True)
def english_afterwards():
    yield
    use_language("en")


def fields(text):
    return sorted(name for _, name, _, _ in string.Formatter().parse(text) if name)


def assert_both(text, where):
    """A learner-facing text: {"en": English, "zh": Chinese}, the same {fields} in both. A
    text with no words of its own ("{label}: {problem}") needs no Chinese characters."""
    assert isinstance(text, dict) and set(text) == {"en", "zh"}, f"{where}: {text!r}"
    assert text["en"].strip() and text["zh"].strip(), where
    assert set(fields(text["en"])) - {"article"} == set(fields(text["zh"])), where
    assert not HAN.search(text["en"]), f"{where}: Chinese in the English: {text['en']!r}"
    words = re.sub(r"\{\w*\}|\w*_\w*", "", text["en"])  # fields and code names
    if re.search("[A-Za-z]{2}", words):  # a word, not a formula's "L = 4, d = 2"
        assert HAN.search(text["zh"]), f"{where}: no Chinese in the Chinese: {text['zh']!r}"


def exercise_texts():
    """(where, text) for every name, task, case note and hint of every exercise."""
    for exercise in ALL_EXERCISES:
        where = exercise.checker
        if isinstance(exercise.name, str):  # a function's name reads the same in Chinese
            assert exercise.name.isidentifier(), f"{where}: name {exercise.name!r} needs zh"
        else:
            yield f"{where} name", exercise.name
        yield f"{where} task", exercise.task
        for number, case in enumerate(exercise.cases(), 1):
            if case.note:
                yield f"{where} case {number}", case.note
        for number, mistake in enumerate(exercise.mistakes):
            yield f"{where} mistake {number}", mistake.hint


def test_every_message_of_the_engine_has_english_and_chinese():
    assert len(MESSAGES) > 80
    for key, text in MESSAGES.items():
        if key == "want bool":  # a dtype's name, the same in both
            assert text == {"en": "bool", "zh": "bool"}
            continue
        assert_both(text, key)


def test_every_name_task_case_and_hint_has_english_and_chinese():
    texts = list(exercise_texts())
    assert len(texts) > 300
    for where, text in texts:
        assert_both(text, where)


def test_the_language_is_chosen_by_one_call_english_by_default():
    assert current_language() == "en"
    assert use_language("zh") is None and current_language() == "zh"  # a cell prints nothing
    use_language("en")
    with pytest.raises(ValueError, match="'en', 'zh'"):
        use_language("fr")
    assert current_language() == "en"
    assert minitf.check.use_language is use_language  # as the notebooks' setup cell calls it


def test_a_wrong_answer_gets_the_chinese_hint_in_chinese():
    use_language("zh")
    result = check_softmax(naive_softmax)
    hint = next(m.hint for m in EXERCISES_BY_CHECKER["check_softmax"].mistakes
                if m.hint["en"].startswith("exp(1000) overflows"))
    assert result.hints == [hint["zh"]], str(result)
    lines = str(result).splitlines()
    assert lines[:4] == [
        "✗ softmax：还没通过 —— 11 个测试用例中有 6 个不一致",
        "  要求：naive_softmax(x) 应当返回 x 沿最后一个轴的 softmax（每一行之和为 1），而且不溢出",
        "  用例 3：x (3,) = [1000. 999. 998.] —— 很大的元素",
        "    3 个元素中有 3 个不一致；第一个在 [0]：得到 nan，应为 0.6652"]
    assert "    提示：exp(1000) 会溢出：取 exp 之前先减去最大的元素" in lines
    use_language("en")  # a result keeps the language it was made in
    assert str(result) == "\n".join(lines)
    assert check_softmax(naive_softmax).hints == [hint["en"]]


def test_the_english_not_written_text_is_unchanged():
    """The notebooks store this output for every stub; nbval compares it."""
    def mine(x):
        raise NotImplementedError  # your code here

    assert NOT_WRITTEN == "not written yet: replace `raise NotImplementedError` with your code"
    assert str(check_softmax(mine)) == f"✗ softmax: not yet\n  {NOT_WRITTEN}"
    use_language("zh")
    assert str(check_softmax(mine)) == (
        "✗ softmax：还没通过\n  还没有写：把 `raise NotImplementedError` 换成你的代码")


def reports(name):
    """What checker `name` says to its solution, to each known mistake, to a stub and to
    hostile answers."""
    check = getattr(minitf.check, name)
    answers = [SOLUTIONS[name]] + [m.fn for m in EXERCISES_BY_CHECKER[name].mistakes] + [
        HOSTILE[kind] for kind in ("None", "a string", "a wrong shape", "raises ValueError",
                                   "NaN everywhere", "wrong arity", "the inputs back")]

    def stub(*args):
        raise NotImplementedError

    return [str(check(answer)) for answer in answers + [stub, 42]]


@pytest.mark.parametrize("name", sorted(EXERCISES_BY_CHECKER))
def test_every_line_a_checker_says_is_chinese_in_chinese_and_english_in_english(name):
    use_language("zh")
    for text in reports(name):
        for line in text.splitlines():
            assert HAN.search(line), f"English left in the Chinese report:\n{text}"
    use_language("en")
    for text in reports(name):
        assert not HAN.search(text), f"Chinese in the English report:\n{text}"


def test_check_function_and_the_time_limit_speak_chinese():
    use_language("zh")

    def tripled(x):
        return 3 * x

    result = check_function("double", tripled, lambda x: 2 * x, [(1.0,)])
    assert "  要求：tripled(...) 应当返回与参考函数相同的结果" in str(result).splitlines()

    def loops(x):
        while True:
            pass

    slow = check_function("f", loops, lambda x: x, [(np.ones(2),)], time_limit=0.1)
    assert str(slow).splitlines()[1] == (
        "  loops（或参考函数）在用例 1（arg1 (2,) = [1. 1.]）上运行超过 0.1 秒，已被停止：是不是有"
        "一个循环永远不会结束？")
    bad = check_function("f", lambda x: x, lambda x: x, [1.0])
    assert str(bad).splitlines()[1] == (
        "  check_function：cases[0] 是数值 1.0，不是参数元组；例如单参数函数用 [(x1,), (x2,)]")
