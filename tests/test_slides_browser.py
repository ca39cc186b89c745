"""The decks as an instructor sees them: every slide of every deck shown in a headless Chromium
at 1280x720, with the network off (tools/slides/inspect_decks.py blocks every request that is
not file:// and records it).

Fails on a solution visible on a slide, a code or output block with Chinese drawn in a font
other than the shipped one (or using a character that font lacks), a slide shrunk below 80%
to fit, a test marker (NBVAL_...) in a slide's text, a request to the network, or a script
error. Needs the `slides` extra (playwright) and a Chromium (Debian's `chromium`); without
them tests/conftest.py leaves this file out and says so (CI sets MINITF_REQUIRE_SLIDES=1).
"""

import subprocess
import sys
from pathlib import Path

import pytest
from fontTools.ttLib import TTFont

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools" / "slides"))
import inspect_decks  # noqa: E402

# The English notebooks, then the Chinese edition's (notebooks/zh/, decks named NN_topic.zh).
NOTEBOOKS = (sorted((ROOT / "notebooks").glob("*.ipynb"))
             + sorted((ROOT / "notebooks" / "zh").glob("*.ipynb")))


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
    slides, problems = {}, {}
    with inspect_decks.Browser() as browser:
        for nb in NOTEBOOKS:
            browser.blocked.clear()
            browser.errors.clear()
            slides[deck_stem(nb)] = list(browser.slides(out / f"{deck_stem(nb)}.slides.html"))
            problems[deck_stem(nb)] = (list(browser.blocked), list(browser.errors))
    return slides, problems


@pytest.fixture(scope="module")
def font_chars():
    return set(TTFont(FONT).getBestCmap())


STEMS = [deck_stem(nb) for nb in NOTEBOOKS]


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
