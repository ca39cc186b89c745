"""nbconvert preprocessor for the course's decks (loaded by nbconvert_config.py).

- Test markers (`# NBVAL_IGNORE_OUTPUT` and the like) are for nbval, not for an audience:
  their lines are dropped from the code shown on slides (the notebook keeps them).
- A markdown image of a local file becomes a data: URI, so a deck is one HTML file plus
  vendor/. (nbconvert's own `embed_images` does this by re-parsing the markdown, which
  empties every `<details>` block and unfolds the solutions; see issue 16.)
"""

import base64
import mimetypes
import re
from pathlib import Path

from nbconvert.preprocessors import Preprocessor

MARKER_LINE = re.compile(r"^[ \t]*#[ \t]*NBVAL_\w+.*(\n|$)", re.M)
IMAGE = re.compile(r"(!\[[^\]]*\]\()([^)\s]+)((?:\s+\"[^\"]*\")?\))")


def strip_markers(source):
    """The code without its nbval marker lines."""
    return MARKER_LINE.sub("", source)


def embed_images(source, folder):
    """Markdown with each local image file `![..](file.png)` replaced by a data: URI."""

    def inline(match):
        target = match.group(2)
        path = Path(folder) / target
        if re.match(r"[a-z]+:", target) or not path.is_file():
            return match.group(0)
        mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        data = base64.b64encode(path.read_bytes()).decode()
        return f"{match.group(1)}data:{mime};base64,{data}{match.group(3)}"

    return IMAGE.sub(inline, source)


class SlidesPreprocessor(Preprocessor):
    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code":
            cell.source = strip_markers(cell.source)
        elif cell.cell_type == "markdown":
            folder = resources.get("metadata", {}).get("path") or "."
            cell.source = embed_images(cell.source, folder)
        return cell, resources
