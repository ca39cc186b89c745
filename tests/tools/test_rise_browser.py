"""The live slides (RISE in JupyterLab) as a presenter sees them: the real `make lab` on a free
loopback port, notebook 07 opened as RISE shows it (/rise/notebooks/07_generation.ipynb, the
page the slideshow panel of JupyterLab loads) in a headless Chromium at 1280x720, every slide
and fragment stepped through with the space bar, every request off the machine blocked.

Fails when rise.css or the Chinese font it names is not served, when Chinese text (heading,
prose, table, code or output) is drawn in a font other than the shipped one, when prose is
smaller than 24 px or code than 16 px, when a notes cell shows on a slide, or on a browser
error other than the two known ones of jupyterlab-rise itself (KNOWN_ERRORS). Needs the
`slides` extra (playwright) and a Chromium, like test_slides_browser.py; tests/conftest.py
leaves it out without them (CI sets MINITF_REQUIRE_SLIDES=1). The server is the `lab` fixture
of tests/conftest.py, shared with test_lab_browser.py (the notebook view).
"""

import json
import re
from pathlib import Path

import inspect_decks
import pytest

ROOT = Path(__file__).resolve().parents[2]

NOTEBOOK = "notebooks/07_generation.ipynb"
MAX_STEPS = 200  # space-bar presses; notebook 07 has 45 slides and their fragments

pytestmark = pytest.mark.slow

# Errors jupyterlab-rise 0.43.1 logs with any notebook and any rise.css (an empty notebook and
# an empty rise.css give them too), so none is ours to fix:
KNOWN_ERRORS = (
    # its own copy of FAST's DesignToken recurses when a token is set from a change handler
    # (microsoft/fast#6464); 5 to 40 times per page load, JupyterLab's own view logs none
    re.compile(r"^RangeError: Maximum call stack size exceeded$"),
    # it also asks for NN_name.css beside each notebook; there is none, so a 404 page
    re.compile(r"^Refused to apply style from '.*/files/notebooks/07_generation\.css'"),
)

# The chalkboard's board when open: its overlay, its computed background, and the colour of
# the board where a stroke was drawn and beside it (read from a screenshot).
_BOARD_JS = """
() => {
  const open = Array.from(document.querySelectorAll(".reveal .overlay"))
    .filter(el => getComputedStyle(el).visibility !== "hidden" && el.getClientRects().length
                  && getComputedStyle(el).display !== "none");
  return open.map(el => getComputedStyle(el).backgroundImage);
}
"""

# Runs in the page: every element of the current slide whose own text has Chinese and that is
# drawn (not in a fragment still hidden) gets a probe number; returns the new ones with their tag.
_MARK_JS = r"""
(start) => {
  const cjk = /CJK_CLASS/;
  const slide = document.querySelector(".reveal .slides section.present");
  const found = [];
  let n = start;
  for (const el of slide.querySelectorAll("*")) {
    if (el.hasAttribute("data-cjk") || el.closest("mjx-container, aside.notes")) continue;
    const own = Array.from(el.childNodes).filter(t => t.nodeType === 3).map(t => t.data).join("");
    if (!cjk.test(own) || !el.checkVisibility({visibilityProperty: true})) continue;
    el.setAttribute("data-cjk", String(n));
    found.push([n, el.localName, own.trim().slice(0, 50)]);
    n += 1;
  }
  return found;
}
""".replace("CJK_CLASS", inspect_decks.CJK_CLASS)

# Where the deck is: the slide number ("5 / 45") and how many fragments are shown.
_PLACE_JS = """
() => [document.querySelector(".reveal .slide-number").innerText.replace(/\\s+/g, ""),
       document.querySelectorAll(".reveal .slides .fragment.visible").length]
"""

_NOTES_SHOWN_JS = """
() => Array.from(document.querySelectorAll(".reveal aside.notes"))
  .filter(a => a.getClientRects().length > 0).map(a => a.innerText.slice(0, 60))
"""

_SIZES_JS = """
() => {
  const size = sel => {
    const el = document.querySelector(sel);
    return el ? parseFloat(getComputedStyle(el).fontSize) : null;
  };
  return {prose: size(".reveal .jp-RenderedMarkdown p"),
          code: size(".reveal .jp-InputArea .cm-content"),
          output: size(".reveal .jp-OutputArea-output pre")};
}
"""


def open_page(p, base, seen):
    """A headless Chromium (p: a playwright) with one 1280x720 page that reaches only the
    server at base: every other request is aborted and listed in seen["blocked"], and browser
    errors are listed in seen["errors"]. Returns the browser and the page."""
    def route(r):
        if r.request.url.startswith(base + "/"):
            r.continue_()
        else:
            seen["blocked"].append(r.request.url)
            r.abort()

    browser = p.chromium.launch(executable_path=inspect_decks.chromium_path())
    page = browser.new_page(viewport={"width": inspect_decks.WIDTH,
                                      "height": inspect_decks.HEIGHT})
    page.route("**/*", route)
    page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: seen["errors"].append(f"uncaught: {e}"))
    return browser, page


@pytest.fixture(scope="module")
def deck(lab, tmp_path_factory):
    """Notebook 07 shown by RISE and stepped through: what the browser saw and fetched."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    base, token = lab
    shots = tmp_path_factory.mktemp("rise_shots")
    seen = {"errors": [], "responses": {}, "blocked": [], "cjk": [], "notes_shown": [],
            "shots": shots}

    with sync_playwright() as p:
        browser, page = open_page(p, base, seen)
        page.on("response", lambda r: seen["responses"].setdefault(r.url.split("?")[0], r.status))
        page.goto(f"{base}/rise/{NOTEBOOK}?token={token}")
        page.wait_for_selector(".reveal .slides section.present", timeout=60_000)
        page.evaluate("document.fonts.ready.then(() => true)")
        page.wait_for_timeout(2000)  # MathJax typesets after the slides appear
        page.screenshot(path=str(shots / "first.png"))
        seen["sizes"] = page.evaluate(_SIZES_JS)
        # the chalkboard plugin, loaded by jupyterlab-rise when metadata.rise enables it
        seen["chalkboard"] = page.evaluate("typeof window.RevealChalkboard?.toggleChalkboard")
        cdp = page.context.new_cdp_session(page)
        cdp.send("DOM.enable")
        cdp.send("CSS.enable")
        for _ in range(MAX_STEPS):
            for n, tag, text in page.evaluate(_MARK_JS, len(seen["cjk"])):
                fonts = inspect_decks.drawn_with(cdp, f'[data-cjk="{n}"]')
                seen["cjk"].append((tag, text, fonts))
            seen["notes_shown"] += page.evaluate(_NOTES_SHOWN_JS)
            place = page.evaluate(_PLACE_JS)
            page.keyboard.press("Space")
            try:  # the next fragment or slide; nothing changes on the last one
                page.wait_for_function(f"JSON.stringify(({_PLACE_JS})()) !== "
                                       f"{json.dumps(json.dumps(place, separators=(',', ':')))}",
                                       timeout=3000)
            except PlaywrightTimeout:
                break
        seen["last_place"] = place
        page.screenshot(path=str(shots / "last.png"))
        # the board, as a lecturer opens it: a cell clicked, Esc, then [ ; a stroke across it
        page.mouse.click(640, 300)
        page.keyboard.press("Escape")
        page.keyboard.press("BracketLeft")
        page.wait_for_timeout(1500)
        seen["board"] = page.evaluate(_BOARD_JS)
        page.mouse.move(300, 400)
        page.mouse.down()
        for x in range(300, 900, 20):
            page.mouse.move(x, 400)
        page.mouse.up()
        page.wait_for_timeout(500)
        page.screenshot(path=str(shots / "board.png"))
        seen["board_shot"] = shots / "board.png"
        browser.close()
    return seen


def test_rise_css_and_font_served(deck, lab):
    base, _ = lab
    css = f"{base}/files/notebooks/rise.css"
    font = f"{base}/files/minitf/figures/fonts/minitf-cjk.otf"
    assert deck["responses"].get(css) == 200, f"rise.css: {deck['responses'].get(css)}"
    assert deck["responses"].get(font) == 200, f"the Chinese font: {deck['responses'].get(font)}"


def test_chinese_drawn_in_the_shipped_font(deck):
    wrong = [(tag, text, fonts) for tag, text, fonts in deck["cjk"] if "minitf CJK" not in fonts]
    assert not wrong, f"Chinese not drawn in minitf CJK: {wrong[:8]}"
    shown, total = deck["last_place"][0].split("/")
    assert shown == total, f"stepping stopped at slide {shown} of {total}"
    tags = {tag for tag, _, _ in deck["cjk"]}
    # the deck was really stepped through: headings, prose and output all had Chinese
    assert {"h1", "pre"} <= tags and tags & {"p", "li", "td"}, tags


def test_readable_sizes(deck):
    sizes = deck["sizes"]
    assert sizes["prose"] is not None and sizes["prose"] >= 24, sizes
    for kind in ("code", "output"):
        assert sizes[kind] is None or sizes[kind] >= 18, sizes


def test_chalkboard_is_on(deck):
    assert deck["chalkboard"] == "function", deck["chalkboard"]


def test_the_board_is_opaque_and_the_marker_shows(deck):
    """[ opens a white board over the slide, and a stroke drawn on it is dark (the board's
    own pictures are not served by jupyterlab-rise: see slide_metadata.CHALKBOARD)."""
    from PIL import Image

    assert any("data:image/png" in bg for bg in deck["board"]), deck["board"]  # the board
    shot = Image.open(deck["board_shot"]).convert("RGB")
    stroke = min(sum(shot.getpixel((x, 400))) for x in range(400, 800, 10))
    away = [shot.getpixel((x, y)) for x in range(100, 1200, 100) for y in (150, 600)]
    assert stroke < 200, f"the stroke is not dark (min RGB sum {stroke}; {deck['board_shot']})"
    # the slide's text does not show through: away from the stroke the board is white or grid
    assert sum(sum(px) > 600 for px in away) >= len(away) - 2, (away, deck["board_shot"])


def test_notes_not_on_slides(deck):
    assert not deck["notes_shown"], f"a notes cell shows on: {deck['notes_shown'][:3]}"


def test_no_errors_of_ours(deck):
    missing = sorted(url for url, status in deck["responses"].items() if status >= 400)
    ours = [e for e in deck["errors"] if not any(k.search(e) for k in KNOWN_ERRORS)]
    assert not ours, f"browser errors (screenshots in {deck['shots']}): {ours[:8]}; {missing}"
    assert not missing, f"not found: {missing}"
    # the notebooks pick the "white" theme: RISE's default ("simple") fetches Google fonts
    assert not deck["blocked"], f"requests off the machine: {deck['blocked'][:8]}"
