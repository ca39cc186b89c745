"""minitf.language: one switch for the edition. The checkers and the figures both follow
use_language; a language it does not know is refused by name; English is the default."""

import pytest

import minitf.check
from minitf.check.messages import say
from minitf.figures.labels import label
from minitf.language import LANGUAGES, current_language, pick, spaced, use_language


@pytest.fixture(autouse=True)
def english_afterwards():
    yield
    use_language("en")


def test_one_switch_makes_the_checkers_and_the_figures_speak_chinese():
    assert current_language() == "en"
    assert (say("hint", hint="x"), label("key")) == ("hint: x", "key")
    assert minitf.check.use_language is use_language  # as every notebook's setup cell calls it
    use_language("zh")
    assert (say("hint", hint="x"), label("key")) == ("提示：x", "键")
    use_language("en")
    assert (say("hint", hint="x"), label("key")) == ("hint: x", "key")


def test_an_unknown_language_is_refused_and_changes_nothing():
    assert LANGUAGES == ("en", "zh")
    with pytest.raises(ValueError, match="language must be one of 'en', 'zh', got 'fr'"):
        use_language("fr")
    assert current_language() == "en"


def test_pick_takes_the_current_language_and_spaced_spaces_chinese():
    text = {"en": "head", "zh": "头"}
    assert pick(text) == "head" and pick(text, "zh") == "头" and pick("softmax") == "softmax"
    use_language("zh")
    assert pick(text) == "头"
    assert spaced("第1步：输入<bos>") == "第 1 步：输入 <bos>"
