"""The notebook view of `make lab` as a student first sees it: the real `make lab` (the `lab`
fixture of tests/conftest.py) with notebook 07 opened in JupyterLab
(/lab/tree/notebooks/07_generation.ipynb) in a headless Chromium at 1280x720, every request off
the machine blocked.

Fails when Chinese in a heading, in prose, in code or in an output is drawn in a font other than
the one minitf ships (`make lab` gives JupyterLab .jupyter/custom/custom.css, which names it: the
test machine has no CJK font of its own, so without it Chinese would be boxes), or when
JupyterLab pops up its question "Would you like to get notified about official Jupyter news?"
(turned off by .jupyter/lab/settings/overrides.json) or any other notification, on a browser
error, or on a request that leaves the machine. Needs the
`slides` extra (playwright) and a Chromium, like test_rise_browser.py; tests/conftest.py leaves
it out without them (CI sets MINITF_REQUIRE_SLIDES=1).
"""

from pathlib import Path

import inspect_decks
import pytest
from test_rise_browser import NOTEBOOK, open_page

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

# Where Chinese is in notebook 07's view: its title (an h1), prose, a code cell and an output.
KINDS = {
    "heading": ".jp-MarkdownCell .jp-RenderedMarkdown h1",
    "prose": ".jp-MarkdownCell .jp-RenderedMarkdown p",
    "code": ".jp-CodeCell .jp-InputArea .cm-content",
    "output": ".jp-OutputArea-output pre",
}
NOTIFIED_SECONDS = 5  # how long the test waits for a notification after the notebook shows

# Runs in the page: the first block of `selector` with Chinese is scrolled into view, and the
# element inside it that holds the Chinese as its own text is marked data-cjk=kind; returns
# that text, or null when there is none.
_MARK_JS = r"""
([kind, selector]) => {
  const cjk = /CJK_CLASS/;
  for (const block of document.querySelectorAll(selector)) {
    if (!cjk.test(block.textContent)) continue;
    block.scrollIntoView({block: "center"});
    for (const el of [block, ...block.querySelectorAll("*")]) {
      const own = Array.from(el.childNodes).filter(t => t.nodeType === 3).map(t => t.data);
      if (cjk.test(own.join(""))) {
        el.setAttribute("data-cjk", kind);
        return own.join("").trim().slice(0, 60);
      }
    }
  }
  return null;
}
""".replace("CJK_CLASS", inspect_decks.CJK_CLASS)

# JupyterLab's notifications show as toasts (react-toastify); their text, if any.
_TOASTS_JS = """
() => Array.from(document.querySelectorAll(".Toastify__toast")).map(t => t.innerText)
"""


@pytest.fixture(scope="module")
def view(lab, tmp_path_factory):
    """Notebook 07 opened in JupyterLab: the fonts its Chinese was drawn with, the toasts."""
    from playwright.sync_api import sync_playwright

    base, token = lab
    shots = tmp_path_factory.mktemp("lab_shots")
    seen = {"errors": [], "blocked": [], "cjk": {}, "shots": shots}
    with sync_playwright() as p:
        browser, page = open_page(p, base, seen)
        page.goto(f"{base}/lab/tree/{NOTEBOOK}?token={token}")
        page.wait_for_selector(KINDS["heading"], timeout=90_000)
        page.evaluate("document.fonts.ready.then(() => true)")
        page.wait_for_timeout(NOTIFIED_SECONDS * 1000)
        page.screenshot(path=str(shots / "notebook.png"))
        seen["toasts"] = page.evaluate(_TOASTS_JS)
        cdp = page.context.new_cdp_session(page)
        cdp.send("DOM.enable")
        cdp.send("CSS.enable")
        for kind, selector in KINDS.items():
            if page.evaluate(_MARK_JS, [kind, selector]) is None:
                continue
            page.evaluate("document.fonts.ready.then(() => true)")
            page.wait_for_timeout(500)  # a cell scrolled into view is laid out and drawn,
            text = page.evaluate(_MARK_JS, [kind, selector])  # its editor's lines drawn anew
            seen["cjk"][kind] = (text, inspect_decks.drawn_with(cdp, f'[data-cjk="{kind}"]'))
            page.screenshot(path=str(shots / f"{kind}.png"))
        browser.close()
    return seen


def test_chinese_drawn_in_the_shipped_font(view):
    assert set(view["cjk"]) == set(KINDS), \
        f"no Chinese found in notebook 07's {set(KINDS) - set(view['cjk'])}"
    wrong = {kind: found for kind, found in view["cjk"].items() if "minitf CJK" not in found[1]}
    assert not wrong, (f"Chinese not drawn in minitf CJK (screenshots in {view['shots']}): "
                       f"{wrong}")


def test_no_news_question(view):
    news = [t for t in view["toasts"] if "news" in t.lower()]
    assert not news, f"JupyterLab asks about news (screenshot in {view['shots']}): {news}"
    assert not view["toasts"], f"a notification pops up: {view['toasts']}"


def test_no_errors_and_nothing_fetched_off_the_machine(view):
    assert not view["errors"], f"browser errors: {view['errors'][:8]}"
    assert not view["blocked"], f"requests off the machine: {view['blocked'][:8]}"
