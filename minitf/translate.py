"""The trained translator as a function: English number words -> Chinese numerals.

    >>> translate("one thousand five")
    '一千零五'
    >>> translate(["Twenty-One", "one hundred and five"])
    ['二十一', '一百零五']
Used in notebooks 07 and 08.
"""

import functools
from pathlib import Path

from . import tasks
from .checkpoint import load_checkpoint
from .train import translate_ids
from .validation import require_int, shorten

SHIPPED_WEIGHTS = Path(__file__).resolve().parent / "weights" / "translator.npz"
BATCH_SIZE = 1000  # numbers decoded together: one model call per this many


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

    Numbers 0..9999 as people write them: any case and spacing, hyphens ("twenty-one"), "and"
    ("one hundred and five"); they are rewritten as `tasks.english` writes them, the words
    the model was trained on. Anything else is a ValueError that says what is wrong and, for
    a list, which item (its index and text). checkpoint: a path written by
    checkpoint.save_checkpoint (default: the shipped weights); beam_size 1 is greedy decoding.
    Notebook 07; trained in notebook 08.
    """
    single = isinstance(texts, str)
    results = translate_each([texts] if single else texts, checkpoint=checkpoint,
                             beam_size=beam_size)
    refused = [i for i, r in enumerate(results) if isinstance(r, ValueError)]
    if refused and single:
        raise results[0]
    if refused:
        i = refused[0]
        message = f"texts[{i}] {shorten(texts[i])}: {results[i]}"
        if len(refused) > 1:
            message += f" ({len(refused) - 1} more refused, the next is texts[{refused[1]}])"
        raise ValueError(message)
    return results[0] if single else results


def translate_each(texts, *, checkpoint=None, beam_size=1):
    """A list of texts -> a list with, for each, its translation or the ValueError that
    refuses it; the texts that can be read are translated together. For callers that go on
    past a bad input, as `python -m minitf translate` does.
    Notebook 07 (through translate)."""
    if isinstance(texts, str) or not isinstance(texts, (list, tuple)):
        raise TypeError(f"texts must be a str or a list of str, got "
                        f"{type(texts).__name__} {shorten(texts)}")
    beam_size = require_int(beam_size, "beam_size", low=1)
    results = []
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] must be a str, got {type(text).__name__} "
                            f"{shorten(text)}")
        try:
            results.append(tasks.canonical_english(text))
        except ValueError as e:
            results.append(e)
    readable = [i for i, r in enumerate(results) if isinstance(r, str)]
    if readable:
        model, meta = load_translator(checkpoint)
        words = [results[i].split() for i in readable]
        for i, chars in zip(readable, _decode(model, meta, words, beam_size)):
            results[i] = chars
    return results


def _decode(model, meta, words, beam_size):
    """Lists of canonical words -> their translations, BATCH_SIZE at a time; sorted by
    length first, so that a batch holds phrases of about the same length."""
    source, target = meta["source_vocab"], meta["target_vocab"]
    order = sorted(range(len(words)), key=lambda i: len(words[i]))
    out = [""] * len(words)
    for start in range(0, len(order), BATCH_SIZE):
        rows = order[start:start + BATCH_SIZE]
        src = tasks.pad([source.encode(words[i]) + [tasks.EOS_ID] for i in rows])
        for i, ids in zip(rows, translate_ids(model, src, beam_size)):
            out[i] = "".join(target.decode(ids))
    return out
