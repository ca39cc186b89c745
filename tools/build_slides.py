"""Build the instructor's decks: one reveal.js slide show per notebook, usable offline.

Usage: python tools/build_slides.py [--out DIR] [--cache DIR] [NOTEBOOK ...]
       (default: every notebooks/*.ipynb into build/slides/; run it through `make slides`)

1. Fetches reveal.js, MathJax 2, require.js and jQuery from the npm registry at the pinned
   versions below (`npm pack`), checks each tarball against its pinned sha512, and keeps the
   tarballs in the cache directory (build/npm-cache/) so later builds do not download again.
2. Unpacks the files the decks use into DIR/vendor/.
3. Runs `jupyter nbconvert --to slides` with tools/slides/nbconvert_config.py, which points
   every script and stylesheet at vendor/ and uses the template in tools/slides/.
4. Writes DIR/index.html listing the decks.
5. Opens every deck in a headless Chromium (tools/slides/inspect_decks.py; needs the `slides`
   extra and a Chromium, else says so in one line) and warns about every slide that had to
   shrink below 80% to fit the screen, naming it. --no-measure leaves this step out.

Open DIR/index.html from disk; the decks need no network. Copy the whole DIR to move them.
"""

import argparse
import base64
import hashlib
import html
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import course_format as fmt

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"
ZH = "zh"  # notebooks/zh/ holds the Chinese edition (tools/build_zh.py)
CONFIG = ROOT / "tools" / "slides" / "nbconvert_config.py"
DEFAULT_OUT = ROOT / "build" / "slides"
DEFAULT_CACHE = ROOT / "build" / "npm-cache"
FONT_DIR = ROOT / "minitf" / "figures" / "fonts"
CJK_FONT_FILES = ["minitf-cjk.otf", "OFL.txt"]

# nbconvert's reveal template is written for reveal.js 4 (dist/reveal.js and
# plugin/notes/notes.js loaded through require.js) and MathJax 2 (MathJax.Hub).
# Each entry: npm name, exact version, the npm registry's sha512 of the tarball, the folder
# under vendor/, and which files of the package (below its "package/" root) the decks need.
PACKAGES = [
    {
        "name": "reveal.js",
        "version": "4.6.1",
        "integrity": "sha512-1CW0auaXNPmwmvQ7TwpszwVxMi2Xr5cTS3J3EBC/HHgbPF32Dn7aiu/"
        "LKWDOGjMbaDwKQiGmfqcoGQ74HUHCMw==",
        "dir": "reveal.js",
        "include": [
            "LICENSE",
            "dist/reveal.js",
            "dist/reveal.css",
            "dist/theme/white.css",
            "dist/theme/fonts/source-sans-pro/",
            "plugin/notes/notes.js",  # the speaker view; its HTML is inlined in this file
        ],
        "exclude": [],
    },
    {
        "name": "mathjax",
        "version": "2.7.9",
        "integrity": "sha512-NOGEDTIM9+MrsqnjPEjVGNx4q0GQxqm61yQwSK+/5S59i26wId5IC5gNu9/"
        "bu8+CCVl5p9G2IHcAl/wJa+5+BQ==",
        "dir": "mathjax",
        "include": ["LICENSE", "MathJax.js", "config/TeX-AMS_CHTML-full.js", "config/Safe.js",
                    "config/local/", "extensions/", "jax/", "fonts/",
                    "localization/"],
        # Only the TeX fonts are used (CommonHTML output, and HTML-CSS/SVG if picked from
        # MathJax's menu); the other font families, image fonts and sources are 50 MB.
        "exclude": [
            r"^fonts/HTML-CSS/(?!TeX/)",
            r"^fonts/HTML-CSS/TeX/png/",
            r"^jax/output/[^/]+/fonts/(?!TeX/)",
        ],
    },
    {
        "name": "requirejs",
        "version": "2.3.7",
        "integrity": "sha512-DouTG8T1WanGok6Qjg2SXuCMzszOo0eHeH9hDZ5Y4x8Je+9JB38HdTLT4/"
        "VA8OaUhBa0JPVHJ0pyBkM1z+pDsw==",
        "dir": "requirejs",
        "include": ["require.js"],
        "exclude": [],
    },
    {
        "name": "jquery",
        "version": "3.7.1",
        "integrity": "sha512-m4avr8yL8kmFN8psrbFFFmB/If14iN5o9nw/NgnnM+kybDJpRsAynV2BsfpTYrTRy"
        "sYUdADVD7CkUUizgkpLfg==",
        "dir": "jquery",
        "include": ["LICENSE.txt", "dist/jquery.min.js"],
        "exclude": [],
        "flatten": {"dist/jquery.min.js": "jquery.min.js"},
    },
]


class BuildError(RuntimeError):
    pass


def _sha512(path):
    digest = hashlib.sha512(Path(path).read_bytes()).digest()
    return "sha512-" + base64.b64encode(digest).decode()


def fetch(pkg, cache):
    """Return the path of the package's tarball, downloading it with `npm pack` if needed."""
    cache.mkdir(parents=True, exist_ok=True)
    tarball = cache / f"{pkg['name']}-{pkg['version']}.tgz"
    if not tarball.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise BuildError(
                "npm (Node.js) is needed to fetch reveal.js and MathJax from the npm registry "
                f"the first time; install Node.js, or put {tarball.name} in {cache}/."
            )
        spec = f"{pkg['name']}@{pkg['version']}"
        print(f"fetching {spec} from the npm registry", flush=True)
        proc = subprocess.run(
            [npm, "pack", spec, "--pack-destination", str(cache), "--json", "--loglevel=error"],
            capture_output=True,
            text=True,
            cwd=cache,
        )
        if proc.returncode != 0:
            raise BuildError(f"`npm pack {spec}` failed:\n{proc.stderr.strip()}")
        filename = json.loads(proc.stdout)[0]["filename"]
        if cache / filename != tarball:
            (cache / filename).replace(tarball)
    actual = _sha512(tarball)
    if actual != pkg["integrity"]:
        tarball.unlink()
        raise BuildError(
            f"{tarball.name} does not match its pinned checksum (got {actual}); deleted it, "
            "run again to fetch it anew."
        )
    return tarball


def _wanted(pkg, rel):
    if not any(rel == inc or (inc.endswith("/") and rel.startswith(inc))
               for inc in pkg["include"]):
        return False
    return not any(re.search(pattern, rel) for pattern in pkg["exclude"])


def unpack(pkg, tarball, vendor):
    """Unpack the files the decks need into vendor/<dir>/, unless that version is there."""
    dest = vendor / pkg["dir"]
    stamp = dest / ".version"
    tag = f"{pkg['name']}@{pkg['version']} {pkg['integrity']}\n"
    if stamp.exists() and stamp.read_text() == tag:
        return
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    flatten = pkg.get("flatten", {})
    with tarfile.open(tarball, "r:gz") as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            parts = member.name.split("/")
            rel = "/".join(parts[1:])  # npm tarballs have one top folder, usually "package"
            if not rel or ".." in parts or rel.startswith("/") or not _wanted(pkg, rel):
                continue
            target = dest / flatten.get(rel, rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            with tar.extractfile(member) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
    stamp.write_text(tag)


def vendor_files(out, cache):
    vendor = out / "vendor"
    for pkg in PACKAGES:
        unpack(pkg, fetch(pkg, cache), vendor)
    # The Chinese font minitf ships for its plots, so slide text shows Chinese offline too.
    fonts = vendor / "minitf-cjk"
    fonts.mkdir(exist_ok=True)
    for name in CJK_FONT_FILES:
        src, dst = FONT_DIR / name, fonts / name
        if not dst.exists() or dst.stat().st_mtime < src.stat().st_mtime:
            shutil.copy2(src, dst)


def deck_stem(notebook):
    """notebooks/01_x.ipynb → "01_x"; its Chinese edition notebooks/zh/01_x.ipynb → "01_x.zh"."""
    notebook = Path(notebook)
    return notebook.stem + (".zh" if notebook.parent.name == ZH else "")


def convert(notebooks, out):
    """Run `jupyter nbconvert --to slides` on all notebooks in one process. A Chinese notebook
    is converted from a copy named after its deck, so both editions' decks share vendor/."""
    with tempfile.TemporaryDirectory() as tmp:
        sources = []
        for nb in map(Path, notebooks):
            if deck_stem(nb) != nb.stem:
                copy = Path(tmp) / (deck_stem(nb) + ".ipynb")
                shutil.copyfile(nb, copy)
                nb = copy
            sources.append(nb)
        cmd = [sys.executable, "-m", "jupyter", "nbconvert", "--config", str(CONFIG),
               "--to", "slides", "--output-dir", str(out), *map(str, sources)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"nbconvert failed:\n{proc.stderr.strip()}")
    return [out / (deck_stem(nb) + ".slides.html") for nb in notebooks]


def notebook_title(path):
    """The notebook's first markdown heading, or its file name."""
    titles = (fmt.title(cell) for cell in fmt.load(path)["cells"])
    return next((t for t in titles if t), Path(path).stem)


INDEX = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>minitf: slides</title>
<link rel="stylesheet" href="vendor/reveal.js/dist/theme/fonts/source-sans-pro/source-sans-pro.css">
<style>
@font-face {{ font-family: "minitf CJK"; src: url("vendor/minitf-cjk/minitf-cjk.otf");
             unicode-range: U+2E80-2FDF, U+3000-303F, U+3400-4DBF, U+4E00-9FFF, U+FF00-FFEF; }}
body {{ font-family: "minitf CJK", "Source Sans Pro", Helvetica, Arial, sans-serif; max-width: 46em;
       margin: 3em auto; padding: 0 1em; line-height: 1.5; color: #222; }}
ul {{ list-style: none; padding-left: 0; }}
li {{ margin: 0.4em 0; }}
kbd {{ border: 1px solid #bbb; border-radius: 3px; padding: 0 0.3em; background: #f6f6f6; }}
</style>
</head>
<body>
<h1>minitf: slides</h1>
<ul>
{items}
</ul>
<p>Keys: <kbd>&rarr;</kbd>/<kbd>space</kbd> next, <kbd>&darr;</kbd> next sub-slide,
<kbd>s</kbd> speaker view with notes and timer (allow the pop-up), <kbd>f</kbd> full screen,
<kbd>Esc</kbd> overview.</p>
<p>These files work without a network: copy the whole folder, <code>vendor/</code> included.</p>
</body>
</html>
"""


def _inline_markdown(text):
    """A heading's text as HTML: escaped, `code` as <code>, **bold** and $math$ kept plain."""
    parts = re.split(r"`([^`]*)`", text)
    out = [html.escape(part) if i % 2 == 0 else f"<code>{html.escape(part)}</code>"
           for i, part in enumerate(parts)]
    return re.sub(r"\*\*(.+?)\*\*", r"\1", "".join(out))


def slide_count(deck):
    """The slides a presenter steps through: sections that hold no further sections."""
    text = deck.read_text(encoding="utf-8")
    return len(re.findall(r"<section\b(?:(?!<section\b).)*?</section>", text, flags=re.S))


def write_index(notebooks, out):
    """List every deck in `out` (earlier builds' too, so `make slides NB=...` keeps the rest),
    one line per notebook: its English deck, its Chinese deck (the same slides), how many
    slides and the minutes of the notebook's core path."""
    sources = {deck_stem(nb): Path(nb) for nb in all_notebooks()}
    sources.update({deck_stem(nb): Path(nb) for nb in notebooks})
    decks = {deck.name[: -len(".slides.html")]: deck for deck in out.glob("*.slides.html")}
    items = []
    for stem in sorted(s for s in decks if not s.endswith(".zh")):
        source = sources.get(stem)
        title = notebook_title(source) if source else stem
        line = [f'<a href="{html.escape(stem)}.slides.html">{_inline_markdown(title)}</a>']
        facts = [f"{stem}.ipynb", f"{slide_count(decks[stem])} slides"]
        if stem + ".zh" in decks:
            line.append(f'<a href="{html.escape(stem)}.zh.slides.html" lang="zh">中文</a>')
        minutes = fmt.stated_minutes(fmt.load(source)) if source and source.exists() else None
        if minutes:
            facts.append(f"core path about {minutes} min")
        items.append(f"<li>{' · '.join(line)} <small>({html.escape(', '.join(facts))})"
                     "</small></li>")
    index = out / "index.html"
    index.write_text(INDEX.format(items="\n".join(items)), encoding="utf-8")
    return index


def measure(decks):
    """Print a warning for every slide of `decks` shrunk below 80% to fit; return them."""
    sys.path.insert(0, str(ROOT / "tools" / "slides"))
    import inspect_decks

    why = inspect_decks.unavailable()
    if why:
        print(f"build_slides: slide sizes not measured: {why}", file=sys.stderr)
        return []
    small = inspect_decks.small_slides(decks)
    for where, scale in small:
        print(f"build_slides: warning: {where} is shrunk to {scale:.0%} to fit (below "
              f"{inspect_decks.MIN_SCALE:.0%}): split it into sub-slides or hide plumbing",
              file=sys.stderr)
    return small


def all_notebooks():
    """Every English notebook, then every Chinese one."""
    return sorted(NOTEBOOK_DIR.glob("*.ipynb")) + sorted((NOTEBOOK_DIR / ZH).glob("*.ipynb"))


def build(notebooks=None, out=DEFAULT_OUT, cache=DEFAULT_CACHE):
    """Build decks for `notebooks` (default: all) into `out`; return the deck paths."""
    notebooks = [Path(nb) for nb in notebooks] if notebooks else all_notebooks()
    if not notebooks:
        raise BuildError(f"No notebooks found in {NOTEBOOK_DIR}.")
    out, cache = Path(out), Path(cache)
    out.mkdir(parents=True, exist_ok=True)
    vendor_files(out, cache)
    decks = convert(notebooks, out)
    write_index(notebooks, out)
    return decks


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", help="default: notebooks/*.ipynb")
    parser.add_argument("--out", default=DEFAULT_OUT, type=Path)
    parser.add_argument("--cache", default=DEFAULT_CACHE, type=Path,
                        help="where the npm tarballs are kept between builds")
    parser.add_argument("--no-measure", action="store_true",
                        help="do not open the decks in Chromium to find slides shrunk below 80%%")
    args = parser.parse_args(argv)
    try:
        decks = build(args.notebooks, args.out, args.cache)
    except BuildError as err:
        print(f"build_slides: {err}", file=sys.stderr)
        return 1
    for deck in decks:
        print(f"wrote {deck.relative_to(Path.cwd()) if deck.is_relative_to(Path.cwd()) else deck}")
    if not args.no_measure:
        measure(decks)
    print(f"open {args.out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
