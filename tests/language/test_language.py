"""minitf.language: one switch for the edition. The checkers, the figures and notebook 09's
training log follow use_language; a language it does not know is refused by name; English is
the default."""

import io
import re

import numpy as np
import pytest

import minitf.check
from minitf.check.messages import say
from minitf.figures.labels import label
from minitf.language import LANGUAGES, current_language, pick, spaced, use_language
from minitf.tasks import referent


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


def test_notebook_09s_training_log_speaks_the_editions_language():
    def log():
        stream = io.StringIO()
        model = referent.ReferentModel(d_model=8, num_heads=2, d_ff=16, dtype=np.float64, rng=0)
        referent.train_referent(model, steps=4, seed=0, log_every=2, stream=stream)
        return stream.getvalue().splitlines()

    english = log()
    assert len(english) == 2 and english[1].startswith("step    4  mean loss of the last 2 steps")
    use_language("zh")
    chinese = log()
    assert [line.split()[-1] for line in chinese] == [line.split()[-1] for line in english]
    assert chinese[1].startswith("第 4 步：最近 2 步的平均损失")
    assert not re.search("[A-Za-z]", "".join(chinese))
