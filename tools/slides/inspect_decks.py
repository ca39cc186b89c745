"""Look at built decks in a real browser: every slide's scale, visible text, folded solutions
and the fonts its Chinese is drawn with.

Used by tools/build_slides.py (the warning about slides shrunk below MIN_SCALE) and by
tests/tools/test_slides_browser.py. Needs Python's `playwright` package and a Chromium; it never
downloads a browser: CHROMIUM (default /usr/bin/chromium, Debian's `chromium` package) or
the environment variable MINITF_CHROMIUM names the executable. Every request that is not
file:// is blocked and recorded, so a deck that needs the network is caught.

    python tools/slides/inspect_decks.py build/slides/*.slides.html   # prints the small slides
"""

import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

MIN_SCALE = 0.8
WIDTH, HEIGHT = 1280, 720
# CJK punctuation and radicals, ideographs (extension A, unified, compatibility), full-width
# forms: the ranges the decks' @font-face gives to the shipped font (unicode-range). Written
# with \u escapes so the same text is a Python and a JavaScript character class.
CJK_CLASS = r"[\u2e80-\u2fdf\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]"
CJK = re.compile(CJK_CLASS)


def chromium_path():
    """The Chromium executable to use, or None."""
    for candidate in (os.environ.get("MINITF_CHROMIUM"), "/usr/bin/chromium",
                      shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def unavailable():
    """Why decks cannot be looked at here (a sentence), or None when they can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Python's playwright is not installed (pip install -e '.[slides]')"
    if chromium_path() is None:
        return "no Chromium found (apt-get install chromium, or set MINITF_CHROMIUM)"
    return None


@dataclass
class Slide:
    deck: str
    h: int
    v: int
    title: str
    scale: float
    text: str                      # what a viewer can read (innerText, fragments shown)
    open_details: list = field(default_factory=list)   # summaries of unfolded <details>
    cjk_blocks: list = field(default_factory=list)     # (text, font families drawn with)

    @property
    def where(self):
        return f"{self.deck} slide {self.h + 1}.{self.v + 1} ({self.title!r})"


# Runs in the page after a slide is shown: what a viewer sees of it.
_SLIDE_JS = r"""
(probe) => {
  const slide = Reveal.getCurrentSlide();
  const heading = slide.querySelector("h1, h2, h3, h4");
  const cjk = /CJK_CLASS/;
  const details = Array.from(slide.querySelectorAll("details")).filter(d =>
    d.open || Array.from(d.children).some(c => c.tagName !== "SUMMARY"
                                           && c.checkVisibility()));
  // every element of a code or output block whose own text has Chinese is probed
  let n = 0;
  const blocks = [];
  slide.querySelectorAll("pre").forEach(pre => {
    if (!cjk.test(pre.textContent) || !pre.checkVisibility()) return;  // folded: not drawn
    const ids = [];
    [pre, ...pre.querySelectorAll("*")].forEach(el => {
      const own = Array.from(el.childNodes).filter(t => t.nodeType === 3)
                       .map(t => t.data).join("");
      if (cjk.test(own)) { el.setAttribute(probe, String(n)); ids.push(n); n += 1; }
    });
    blocks.push({text: pre.textContent, ids: ids});
  });
  return {
    title: heading ? heading.textContent.replace(/¶\s*$/, "").trim() : "",
    scale: parseFloat(slide.getAttribute("data-fit-scale") || "1"),
    text: slide.innerText,
    open_details: details.map(d => (d.querySelector("summary") || d).textContent.trim()),
    blocks: blocks,
  };
}
""".replace("CJK_CLASS", CJK_CLASS)

# Runs in the page after a slide is shown with all its fragments: what a lecture needs of it.
_LECTURE_JS = r"""
() => {
  const slide = Reveal.getCurrentSlide();
  const fit = parseFloat(slide.getAttribute("data-fit-scale") || "1");
  const scale = Reveal.getScale() * fit;
  const heading = Array.from(slide.querySelectorAll("h1, h2, h3, h4"))
    .some(h => h.checkVisibility() && h.textContent.trim());
  // prose: the slide's visible text without code, tables, output, folded content, notes
  // and math
  const copy = slide.cloneNode(true);
  copy.querySelectorAll("pre, table, .jp-OutputArea, aside, script, style, .MathJax, "
      + ".MathJax_CHTML, .mjx-chtml, .MathJax_Preview, .MJX_Assistive_MathML, "
      + "details > :not(summary)")
    .forEach(el => el.remove());
  const text = copy.textContent;
  const words = (text.match(/[A-Za-z0-9]+(?:['’-][A-Za-z0-9]+)*/g) || []).length
    + Math.floor((text.match(/[\u3400-\u9fff]/g) || []).length / 2);
  const code = Array.from(slide.querySelectorAll(".jp-InputArea pre, .jp-OutputArea pre"))
    .filter(p => p.checkVisibility())
    .map(p => parseFloat(getComputedStyle(p).fontSize) * scale);
  const figures = Array.from(slide.querySelectorAll(".jp-OutputArea img"))
    .filter(i => i.checkVisibility())
    .map(i => { const r = i.getBoundingClientRect();
                const k = Math.min(r.width / i.naturalWidth, r.height / i.naturalHeight);
                return [i.naturalHeight * k, i.naturalWidth * k]; });
  // what the slide holds besides its title: words of prose under the headings, and blocks
  copy.querySelectorAll("h1, h2, h3, h4, .minitf-kicker").forEach(el => el.remove());
  const body = copy.textContent;
  const bodyWords = (body.match(/[A-Za-z0-9]+(?:['’-][A-Za-z0-9]+)*/g) || []).length
    + Math.floor((body.match(/[\u3400-\u9fff]/g) || []).length / 2);
  const visible = sel => Array.from(slide.querySelectorAll(sel)).filter(e => e.checkVisibility());
  const blocks = visible("pre, table, details, .jp-OutputArea img, .MathJax_Display, "
                         + ".MJXc-display").length;
  // code or output wider than its block: its right end is cut off
  const cut = visible(".jp-InputArea pre, .jp-OutputArea pre")
    .filter(p => p.scrollWidth > p.clientWidth + 2).map(p => p.textContent.slice(0, 40));
  const titles = visible("h1, h2, h3, h4").map(h => h.textContent.replace(/¶\s*$/, "").trim());
  const notes = Array.from(slide.querySelectorAll("aside.notes"))
    .filter(a => !a.classList.contains("minitf-section-notes")).length;
  return {heading: heading, words: words, code_px: code.length ? Math.min(...code) : null,
          figures: figures, body_words: bodyWords, blocks: blocks, cut: cut,
          title: titles.length ? titles[0] : "", notes: notes};
}
"""

# Opens each fold of the current slide in turn: [summary, bottom edge, scale] once refitted.
_FOLDS_JS = r"""
async () => {
  const slide = Reveal.getCurrentSlide();
  const settle = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const found = [];
  for (const d of slide.querySelectorAll("details")) {
    if (!d.checkVisibility()) continue;
    d.open = true;
    await settle(); await settle();
    const bottom = Math.max(...Array.from(slide.querySelectorAll("*"))
      .filter(e => e.checkVisibility()).map(e => e.getBoundingClientRect().bottom));
    found.push([(d.querySelector("summary") || d).textContent.trim(), bottom,
                parseFloat(slide.getAttribute("data-fit-scale") || "1")]);
    d.open = false;
    await settle();
  }
  return found;
}
"""

# With fragments on and none shown yet: how many answers to a prediction asked on this slide
# (cells with the role `answer` after one with `prediction`, whose classes nbconvert writes as
# celltag_answer and celltag_prediction) are already visible? None: no question here.
_PREDICT_JS = r"""
() => {
  const slide = Reveal.getCurrentSlide();
  const cell = el => el.closest(".jp-Cell") || el;
  const question = slide.querySelector(".celltag_prediction");
  if (!question) return null;
  const asked = cell(question);
  const answers = Array.from(slide.querySelectorAll(".celltag_answer")).map(cell)
    .filter(c => asked.compareDocumentPosition(c) & Node.DOCUMENT_POSITION_FOLLOWING);
  if (!answers.length) return null;
  const hidden = el => el.closest(".fragment:not(.visible)") !== null;
  return answers.filter(c => c.checkVisibility() && !hidden(c) && c.innerText.trim()).length;
}
"""

_SETTLE_JS = """
() => new Promise(resolve => {
  const done = () => requestAnimationFrame(() => requestAnimationFrame(resolve));
  if (window.MathJax && MathJax.Hub) { MathJax.Hub.Queue(done); } else { done(); }
})
"""


def drawn_with(cdp, selector):
    """The font families Chromium drew the text of the element at `selector` with, asked
    through a CDP session with DOM and CSS enabled."""
    root = cdp.send("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
    return sorted(f["familyName"] for f in cdp.send("CSS.getPlatformFontsForNode",
                                                    {"nodeId": node})["fonts"])


class Browser:
    """One headless Chromium with one page, reused for every deck; network requests blocked."""

    def __init__(self):
        from playwright.sync_api import sync_playwright

        self._pw = sync_playwright().start()
        self.browser = self._pw.chromium.launch(executable_path=chromium_path())
        self.page = self.browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        self.blocked = []
        self.page.route("**/*", self._route)
        self.errors = []
        self.page.on("pageerror", lambda err: self.errors.append(str(err)))
        self.cdp = self.page.context.new_cdp_session(self.page)
        self.cdp.send("DOM.enable")
        self.cdp.send("CSS.enable")

    def _route(self, route):
        url = route.request.url
        if url.startswith(("file://", "data:", "blob:", "about:")):
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()

    def close(self):
        self.browser.close()
        self._pw.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def open(self, deck):
        self.page.goto(Path(deck).resolve().as_uri())
        self.page.wait_for_function("window.minitfSlidesReady === true", timeout=60_000)
        # fragments all shown, no transition: each slide as it looks once fully revealed
        self.page.evaluate("Reveal.configure({fragments: false, transition: 'none'})")
        self.page.evaluate("document.fonts.ready.then(() => true)")

    def indices(self):
        return self.page.evaluate(
            "Reveal.getSlides().map(s => {"
            " const i = Reveal.getIndices(s); return [i.h, i.v || 0]; })")

    def show(self, h, v):
        self.page.evaluate(f"Reveal.slide({h}, {v})")
        self.page.evaluate(_SETTLE_JS)

    def _fonts(self, probe, ids):
        """The font families Chromium drew each probed element's own text with."""
        return sorted({family for i in ids
                       for family in drawn_with(self.cdp, f'[{probe}="{i}"]')})

    def slides(self, deck):
        """Show every slide of `deck` in turn; yield a Slide for each."""
        self.open(deck)
        name = Path(deck).name
        for n, (h, v) in enumerate(self.indices()):
            self.show(h, v)
            probe = f"data-cjk-{n}"
            info = self.page.evaluate(_SLIDE_JS, probe)
            blocks = [(b["text"], self._fonts(probe, b["ids"])) for b in info["blocks"]]
            yield Slide(name, h, v, info["title"], info["scale"], info["text"],
                        info["open_details"], blocks)

    def lecture(self, deck):
        """{(h, v): facts} for every slide of `deck`: heading, prose words, smallest code and
        output font on screen (px), figures' drawn (height, width), each fold's bottom edge
        and scale once opened, and how many cells show under an unanswered prediction."""
        self.open(deck)
        facts = {}
        for h, v in self.indices():
            self.show(h, v)
            info = self.page.evaluate(_LECTURE_JS)
            info["folds"] = self.page.evaluate(_FOLDS_JS)
            facts[(h, v)] = info
        self.page.evaluate("Reveal.configure({fragments: true})")
        for h, v in facts:
            self.page.evaluate(f"Reveal.slide({h}, {v}, -1)")
            self.page.evaluate(_SETTLE_JS)
            facts[(h, v)]["shown_after_prediction"] = self.page.evaluate(_PREDICT_JS)
        return facts

    def walk(self, deck):
        """The slides → visits from the first, in order, as [h, v] (a presenter's clicker)."""
        self.open(deck)
        return self.page.evaluate("""() => {
          Reveal.slide(0, 0);
          const seen = [];
          for (let k = 0; k < 1000; k++) {
            const i = Reveal.getIndices();
            seen.push([i.h, i.v || 0]);
            if (Reveal.isLastSlide()) break;
            Reveal.next();
          }
          return seen;
        }""")

    def screenshot(self, deck, h, v, path):
        self.open(deck)
        self.page.evaluate("Reveal.configure({fragments: true})")
        self.show(h, v)
        self.page.evaluate("Reveal.navigateFragment(1e6)")
        self.page.evaluate(_SETTLE_JS)
        self.page.screenshot(path=str(path))


def small_slides(decks, min_scale=MIN_SCALE):
    """[(where, scale)] of every slide shrunk below min_scale to fit."""
    found = []
    with Browser() as browser:
        for deck in decks:
            found += [(s.where, s.scale) for s in browser.slides(deck) if s.scale < min_scale]
    return found


if __name__ == "__main__":
    why = unavailable()
    if why:
        sys.exit(f"inspect_decks: {why}")
    small = small_slides(sys.argv[1:])
    for where, scale in small:
        print(f"{scale:.0%}  {where}")
    print(f"{len(small)} slides below {MIN_SCALE:.0%}")
