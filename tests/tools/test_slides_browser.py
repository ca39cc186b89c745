"""The decks as an instructor sees them: every slide of every deck shown in a headless Chromium
at 1280x720, with the network off (tools/slides/inspect_decks.py blocks every request that is
not file:// and records it).

Fails on a solution visible on a slide, a code or output block with Chinese drawn in a font
other than the shipped one (or using a character that font lacks), a slide shrunk below 80%
to fit, a test marker (NBVAL_...) in a slide's text, a request to the network, or a script
error; and on what keeps a deck from being a lecture (issue 24): a slide without a heading,
more than 120 words of prose, code under 18 px on screen, a small figure, a fold that once
opened runs off the slide or shrinks it below 80%, a prediction answered before the next
step, → skipping a slide. Needs the `slides` extra (playwright) and a Chromium (Debian's
`chromium`); without them tests/conftest.py leaves this file out and says so (CI sets
MINITF_REQUIRE_SLIDES=1).
"""

import os
import subprocess
import sys
from pathlib import Path

import course_format as fmt
import inspect_decks
import pytest
from fontTools.ttLib import TTFont

ROOT = Path(__file__).resolve().parents[2]

# The English notebooks, then the Chinese edition's (notebooks/zh/, decks named NN_topic.zh).
# MINITF_DECKS=01,06 looks at those two notebooks' decks only (an author's quick look).
NOTEBOOKS = [p for p in (sorted((ROOT / "notebooks").glob("*.ipynb"))
                         + sorted((ROOT / "notebooks" / "zh").glob("*.ipynb")))
             if not os.environ.get("MINITF_DECKS")
             or p.name[:2] in os.environ["MINITF_DECKS"].split(",")]


def deck_stem(nb_path):
    return nb_path.stem + (".zh" if nb_path.parent.name == "zh" else "")

FONT = ROOT / "minitf" / "figures" / "fonts" / "minitf-cjk.otf"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def shown(tmp_path_factory):
    """{deck stem: [Slide]} for every notebook, and the browser's blocked requests/errors."""
    out = tmp_path_factory.mktemp("slides")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "build_slides.py"), "--no-measure", "--out",
         str(out), "--cache", str(ROOT / "build" / "npm-cache"), *map(str, NOTEBOOKS)],
        capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        pytest.fail(f"tools/build_slides.py failed:\n{proc.stderr}", pytrace=False)
    slides, problems, lecture, walks = {}, {}, {}, {}
    with inspect_decks.Browser() as browser:
        for nb in NOTEBOOKS:
            deck = out / f"{deck_stem(nb)}.slides.html"
            browser.blocked.clear()
            browser.errors.clear()
            slides[deck_stem(nb)] = list(browser.slides(deck))
            lecture[deck_stem(nb)] = browser.lecture(deck)
            walks[deck_stem(nb)] = browser.walk(deck)
            problems[deck_stem(nb)] = (list(browser.blocked), list(browser.errors))
    return slides, problems, lecture, walks


@pytest.fixture(scope="module")
def font_chars():
    return set(TTFont(FONT).getBestCmap())


STEMS = [deck_stem(nb) for nb in NOTEBOOKS]
# The decks whose lecture is authored (metadata.minitf.lecture): held to what a lecture needs.
AUTHORED = [deck_stem(nb) for nb in NOTEBOOKS if fmt.is_lecture(fmt.load(nb))]


@pytest.mark.parametrize("stem", STEMS)
def test_deck_needs_no_network_and_runs_without_errors(shown, stem):
    blocked, errors = shown[1][stem]
    assert not blocked, f"requests to the network: {blocked}"
    assert not errors, f"script errors: {errors}"


@pytest.mark.parametrize("stem", STEMS)
def test_no_solution_is_visible(shown, stem):
    slides = shown[0][stem]
    unfolded = [f"{s.where}: {', '.join(s.open_details)}" for s in slides if s.open_details]
    assert not unfolded, "unfolded <details> on slides:\n" + "\n".join(unfolded)


@pytest.mark.parametrize("stem", STEMS)
def test_chinese_in_code_and_output_uses_the_shipped_font(shown, font_chars, stem):
    bad = []
    for s in shown[0][stem]:
        for text, families in s.cjk_blocks:
            missing = sorted({c for c in inspect_decks.CJK.findall(text)
                              if ord(c) not in font_chars})
            if "minitf CJK" not in families or missing:
                bad.append(f"{s.where}: drawn with {families}, not in the font: {missing}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("stem", STEMS)
def test_no_slide_is_shrunk_below_80_percent(shown, stem):
    small = [f"{s.where}: {s.scale:.0%}" for s in shown[0][stem]
             if s.scale < inspect_decks.MIN_SCALE]
    assert not small, "slides shrunk below 80% to fit:\n" + "\n".join(small)


@pytest.mark.parametrize("stem", STEMS)
def test_no_test_marker_on_a_slide(shown, stem):
    marked = [s.where for s in shown[0][stem] if "NBVAL_" in s.text]
    assert not marked, f"NBVAL_ markers on slides: {marked}"


def test_every_slide_was_visited(shown):
    """The checks above looked at something: every deck has slides, with text."""
    for stem, slides in shown[0].items():
        assert len(slides) >= 5, f"{stem}: only {len(slides)} slides"
        assert sum(bool(s.text.strip()) for s in slides) == len(slides), f"{stem}: empty slide"
    assert any(s.cjk_blocks for slides in shown[0].values() for s in slides)


# -- a lecture a room can follow (issue 24) -------------------------------------------------
SCREEN_BOTTOM = 720 - 56  # the strip under it holds reveal's arrows and the slide number


def _bad(shown, stem, problem):
    found = [f"{stem} slide {h}.{v}: {what}" for (h, v), facts in shown[2][stem].items()
             for what in [problem(facts)] if what]
    return "\n".join(found)


@pytest.mark.parametrize("stem", STEMS)
def test_every_slide_has_a_heading(shown, stem):
    found = _bad(shown, stem, lambda f: "no heading" if not f["heading"] else None)
    assert not found, found


@pytest.mark.parametrize("stem", STEMS)
def test_no_slide_carries_more_than_120_words_of_prose(shown, stem):
    found = _bad(shown, stem, lambda f: f"{f['words']} words" if f["words"] > 120 else None)
    assert not found, found


@pytest.mark.parametrize("stem", STEMS)
def test_code_and_output_are_at_least_18px_on_screen(shown, stem):
    found = _bad(shown, stem, lambda f: f"code at {f['code_px']:.1f} px"
                 if f["code_px"] is not None and f["code_px"] < 17.95 else None)
    assert not found, found


@pytest.mark.parametrize("stem", STEMS)
def test_figures_are_drawn_large(shown, stem):
    """A figure takes most of its sub-slide: at least 440 px tall at 1280x720 (more when no
    text shares the slide), or the slide's width."""
    found = _bad(shown, stem, lambda f: ", ".join(
        f"figure {h:.0f}x{w:.0f} px" for h, w in f["figures"] if h < 440 and w < 1100))
    assert not found, found
    figures = [h for facts in shown[2][stem].values() for h, _ in facts["figures"]]
    if figures:  # the check measured something
        assert max(figures) >= 500


@pytest.mark.parametrize("stem", STEMS)
def test_an_opened_fold_stays_on_the_slide(shown, stem):
    found = _bad(shown, stem, lambda f: ", ".join(
        f"fold '{summary}' opened ends at {bottom:.0f} px, slide at {scale:.0%}"
        for summary, bottom, scale in f["folds"]
        if bottom > SCREEN_BOTTOM + 1 or scale < inspect_decks.MIN_SCALE))
    assert not found, found


@pytest.mark.parametrize("stem", STEMS)
def test_a_prediction_is_not_answered_before_the_next_step(shown, stem):
    found = _bad(shown, stem, lambda f: f"{f['shown_after_prediction']} cell(s) shown under "
                 "the question" if f["shown_after_prediction"] else None)
    assert not found, found


@pytest.mark.parametrize("stem", STEMS)
def test_the_right_arrow_walks_every_slide_in_order(shown, stem):
    in_order = [list(k) for k in shown[2][stem]]
    assert shown[3][stem] == in_order


def test_the_lecture_checks_saw_folds_and_predictions(shown):
    """The checks above had something to check."""
    facts = [f for deck in shown[2].values() for f in deck.values()]
    assert sum(len(f["folds"]) for f in facts) >= 50
    assert sum(f["shown_after_prediction"] is not None for f in facts) >= 20


def test_no_exercise_stub_shows_on_a_slide(shown):
    """An exercise is a task card on a slide, never its unsolved stub and "not yet"."""
    from minitf.check.messages import LANGUAGES, say
    marks = ["# your code here", "# 在这里写你的代码"]  # a stub's own line, in either edition
    marks += [say("not written", language).split("：")[0].split(":")[0] for language in LANGUAGES]
    found = [f"{s.where}" for slides in shown[0].values() for s in slides
             if any(mark in s.text for mark in marks)]
    assert not found, "stubs on slides:\n" + "\n".join(found)


# -- an authored lecture (issue 34): checked on the decks whose notebooks author theirs ------
@pytest.mark.parametrize("stem", AUTHORED)
def test_every_title_states_its_slide_and_none_repeats(shown, stem):
    titles = [(k, f["title"]) for k, f in shown[2][stem].items()]
    cont = [f"{stem} slide {h}.{v}: {t!r}" for (h, v), t in titles
            if "(cont.)" in t or "（续）" in t or not t]
    assert not cont, "\n".join(cont)
    seen = {}
    for (h, v), t in titles:
        seen.setdefault(t, []).append(f"{h}.{v}")
    repeated = {t: where for t, where in seen.items() if len(where) > 1}
    assert not repeated, repeated


@pytest.mark.parametrize("stem", AUTHORED)
def test_no_slide_is_a_title_alone(shown, stem):
    """Besides its title a slide shows a block (code, output, figure, table, formula, fold) or
    more than 20 words: nothing is there because a cell was long."""
    found = [f"{stem} slide {h}.{v}: only {f['body_words']} words under its title"
             for (h, v), f in list(shown[2][stem].items())[1:]  # the title slide is a title
             if f["body_words"] <= 20 and not f["blocks"]]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("stem", AUTHORED)
def test_no_code_is_cut_at_the_right_edge(shown, stem):
    found = _bad(shown, stem, lambda f: f"cut: {f['cut']}" if f["cut"] else None)
    assert not found, found


@pytest.mark.parametrize("stem", AUTHORED)
def test_every_slide_has_notes_of_its_own(shown, stem):
    found = _bad(shown, stem, lambda f: "no notes of its own" if not f["notes"] else None)
    assert not found, found
