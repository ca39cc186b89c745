"""nbconvert configuration for the course's slides (used by tools/build_slides.py).

Every URL is relative to the deck: tools/build_slides.py puts the npm packages in
`vendor/` next to the `.slides.html` files, so a deck opened from disk needs no network.
By hand, from the repository root, after one `make slides` (which fetches vendor/):

    .venv/bin/jupyter nbconvert --config tools/slides/nbconvert_config.py --to slides \
        --output-dir build/slides notebooks/01_single_query_attention.ipynb
"""

import sys
from pathlib import Path

c = get_config()  # noqa: F821  (traitlets provides get_config in config files)

HERE = Path(__file__).resolve().parent

# Our template extends nbconvert's own reveal template; see minitf_reveal/index.html.j2.
c.SlidesExporter.extra_template_basedirs = [str(HERE)]
c.SlidesExporter.template_name = "minitf_reveal"

c.SlidesExporter.reveal_url_prefix = "vendor/reveal.js"
# "white" uses fonts that ship with reveal.js; nbconvert's default, "simple", loads Google Fonts.
c.SlidesExporter.reveal_theme = "white"
c.SlidesExporter.reveal_transition = "slide"
c.SlidesExporter.reveal_number = "c/t"
c.SlidesExporter.reveal_width = "1280"
c.SlidesExporter.reveal_height = "720"
c.SlidesExporter.reveal_scroll = False

c.SlidesExporter.require_js_url = "vendor/requirejs/require.js"
c.SlidesExporter.jquery_url = "vendor/jquery/jquery.min.js"
c.SlidesExporter.mathjax_url = "vendor/mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe"

# nbconvert's embed_images re-parses markdown and empties every <details> block, which
# unfolds the solutions (issue 16); minitf_slides.py embeds markdown images itself and drops
# nbval's marker lines from the code shown.
c.SlidesExporter.embed_images = False
sys.path.insert(0, str(HERE))
c.SlidesExporter.preprocessors = ["minitf_slides.SlidesPreprocessor"]
# "In [3]:" prompts take a tenth of the slide's width and say nothing to an audience.
c.SlidesExporter.exclude_input_prompt = True
c.SlidesExporter.exclude_output_prompt = True
