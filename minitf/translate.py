"""The trained translator as a function: English number words -> Chinese numerals.

    >>> translate("one thousand five")
    '一千零五'
Used in notebooks 07 and 08.
"""

import functools
from pathlib import Path

from . import tasks
from .checkpoint import load_checkpoint
from .train import translate_ids
from .validation import require_int

SHIPPED_WEIGHTS = Path(__file__).resolve().parent / "weights" / "translator.npz"


@functools.lru_cache(maxsize=4)
def _load(path, _mtime_ns):
    return load_checkpoint(path)


def load_translator(checkpoint=None):
    """(model, meta) of `checkpoint` (default: the shipped weights), loaded once per file
    version and cached.
    Notebook 07."""
    path = Path(SHIPPED_WEIGHTS if checkpoint is None else checkpoint).resolve()
    return _load(path, path.stat().st_mtime_ns)


def translate(texts, *, checkpoint=None, beam_size=1):
    """English number words -> Chinese numerals: a str gives a str, a list gives a list.

    Each text must be a number phrase as tasks.english writes it ("one thousand five");
    anything else is a ValueError that says what is wrong. checkpoint: a path written by
    checkpoint.save_checkpoint (default: the shipped weights); beam_size 1 is greedy decoding.
    Notebook 07; trained in notebook 08.
    """
    single = isinstance(texts, str)
    items = [texts] if single else list(texts)
    beam_size = require_int(beam_size, "beam_size", low=1)
    for text in items:
        tasks.parse_english(text)
    if not items:
        return []
    model, meta = load_translator(checkpoint)
    source, target = meta["source_vocab"], meta["target_vocab"]
    src = tasks.pad([source.encode(tasks.source_words(t)) + [tasks.EOS_ID] for t in items])
    out = ["".join(target.decode(row)) for row in translate_ids(model, src, beam_size)]
    return out[0] if single else out
