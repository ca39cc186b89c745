"""Issue #36 (robustness round 4), the tasks' room: sizes of notebook 09's model (N23) and
look-alike letters in number words (P17)."""

import re

import numpy as np
import pytest

from minitf import tasks
from minitf.tasks import referent

HUGE = [10**12, np.int64(2**40), 2**64]


@pytest.mark.parametrize("size", HUGE, ids=str)
@pytest.mark.parametrize("build, named", [
    (lambda n: referent.ReferentModel(num_layers=n), "num_layers"),
    (lambda n: referent.PointerHead(8, d_k=n), "d_k"),
    (lambda n: referent.PointerHead(n), "d_model"),
])
def test_notebook_09_sizes_are_refused_at_once(build, named, size):
    with pytest.raises(ValueError, match=f"{named}={int(size)}.* would need .* more than this "
                                         "machine's"):
        build(size)


def test_referent_config_stores_python_ints():
    config = referent.ReferentConfig(d_model=np.int64(8), num_heads=np.int32(2))
    assert (type(config.d_model), type(config.num_heads)) == (int, int)


@pytest.mark.parametrize("text, letter", [
    ("fiv\u0435", "'\u0435' (U+0435 CYRILLIC SMALL LETTER IE)"),
    ("\u03bfne", "'\u03bf' (U+03BF GREEK SMALL LETTER OMICRON)"),
    ("twenty-\u043ene", "'\u043e' (U+043E CYRILLIC SMALL LETTER O)"),
])
def test_a_look_alike_letter_is_pointed_out(text, letter):
    with pytest.raises(ValueError, match=re.escape(f"not a number word: it has the non-English "
                                                   f"letter {letter}; did you mean")):
        tasks.canonical_english(text)


def test_a_plain_misspelling_gets_the_plain_hint():
    with pytest.raises(ValueError, match=r"^'fourty' is not a number word; did you mean "
                                         r"'forty'\?$"):
        tasks.canonical_english("fourty")
