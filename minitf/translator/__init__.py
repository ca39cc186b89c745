"""The translator app: the course's Transformer trained on the number task, as a function,
a checkpoint format and a command line (`python -m minitf translate|train`).

    >>> translate("one thousand five")
    '一千零五'
    >>> translate(["Twenty-One", "one hundred and five"])
    ['二十一', '一百零五']

Here: its config (TRANSLATOR_CONFIG), a fresh model (new_model), its training run
(train_translator), loading (load_translator) and translate. The checkpoint format is in
`checkpoint`, the command line in `cli`, the shipped weights in weights/.
Used in notebooks 07 and 08.
"""

import copy
import dataclasses
import functools
import os
import sys
from pathlib import Path

import numpy as np

from .. import tasks
from ..generate import translate_ids
from ..model import Transformer, TransformerConfig
from ..train import TrainConfig, report_line, train
from ..validation import (
    require_bool,
    require_instance,
    require_int,
    require_real,
    shorten,
)
from .checkpoint import load_checkpoint, save_checkpoint

# The shipped translator's shape: small enough to train in seconds on one core.
TRANSLATOR_CONFIG = TransformerConfig(len(tasks.SOURCE_VOCAB), len(tasks.TARGET_VOCAB),
                                      d_model=64, num_heads=4, num_layers=2, d_ff=128,
                                      max_len=16)
BY_SHAPE = 0.5  # the share of each batch drawn shape by shape (tasks.NumberTask)
TRANSLATOR_TRAINING = TrainConfig()  # how it is trained: TrainConfig's defaults are its own

SHIPPED_WEIGHTS = Path(__file__).resolve().parent / "weights" / "translator.npz"
BATCH_SIZE = 1000  # numbers decoded together: one model call per this many
MAX_BEAM = 64  # translate's widest beam: wider gains nothing here, and memory grows with it


@functools.lru_cache(maxsize=4)
def _load(path, _version):
    """The checkpoint at `path` as loaded once per version of the file: translate's own
    model, never handed to a caller (load_translator gives copies)."""
    return load_checkpoint(path)


def _loaded(checkpoint):
    """(model, meta) of `checkpoint` from the cache, keyed on the file's identity and every
    stamp a rewrite changes: device, inode (each atomic save is a new one), size, mtime and
    ctime (a rewrite within the mtime's resolution, or with the mtime put back, still
    changes the ctime)."""
    path = Path(SHIPPED_WEIGHTS if checkpoint is None else checkpoint).absolute()
    try:  # not resolve(): /dev/fd/N would become a "pipe:[…]" name that does not exist
        st = os.stat(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such checkpoint") from None
    model, meta = _load(path, (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    if meta["source_vocab"] is None:
        raise ValueError(f"{path}: a checkpoint without vocabularies, not a translator's "
                         "(save it with minitf.translator.save_translator)")
    return model, meta


def load_translator(checkpoint=None):
    """(model, meta) of `checkpoint` (default: the shipped weights). The file is read once
    per version and cached; each call gets a model and meta of its own, so changing them
    (an ablation, fine-tuning) never changes what translate() gives. The file must hold the
    vocabularies (save_translator writes them). Notebook 07."""
    model, meta = _loaded(checkpoint)
    fresh = Transformer.from_config(model.config, dtype=model.dtype, rng=0)
    fresh.load_state_dict(model.state_dict())  # copies the arrays into the fresh model's
    return fresh, copy.deepcopy(meta)


def new_model(seed=0, **changes):
    """A fresh translator for the number task: TRANSLATOR_CONFIG with `changes` applied.
    The command line uses it; no notebook does (notebook 08 builds from TRANSLATOR_CONFIG)."""
    return Transformer.from_config(dataclasses.replace(TRANSLATOR_CONFIG, **changes), rng=seed)


def save_translator(path, model, **metadata):
    """save_checkpoint with the number task's vocabularies, which translate needs.
    The command line uses it; no notebook does."""
    return save_checkpoint(path, model, source_vocab=tasks.SOURCE_VOCAB,
                           target_vocab=tasks.TARGET_VOCAB, **metadata)


def train_translator(model, config=TRANSLATOR_TRAINING, *, seed=0, numbers=None, by_shape=BY_SHAPE,
                     eval_size=500, log_every=100, max_seconds=None, verbose=True, stream=None,
                     eval_name="held-out", **changes):
    """Train `model` in place on the number task; returns train's history. The run of
    notebook 08 §6 and `python -m minitf train`.

    numbers: (train, test) arrays of numbers, default tasks.split(); the exact match is
    measured on `eval_size` test numbers every `log_every` steps and on all of them at the
    end (tasks.NumberTask, drawing a share `by_shape` of each batch shape by shape). With
    `verbose`, one line per report goes to `stream` (default sys.stdout), naming the test
    numbers `eval_name` ("held-out", or "all" when they are the numbers trained on).
    config and `changes` as for minitf.train.train.
    """
    config = dataclasses.replace(require_instance(config, TrainConfig, "config"), **changes)
    require_instance(model, Transformer, "model")
    sizes = (model.config.src_vocab_size, model.config.tgt_vocab_size)
    if sizes != (len(tasks.SOURCE_VOCAB), len(tasks.TARGET_VOCAB)):
        raise ValueError(f"model has vocabulary sizes {sizes}, not the number task's "
                         f"({len(tasks.SOURCE_VOCAB)}, {len(tasks.TARGET_VOCAB)}): build it "
                         "with new_model or from TRANSLATOR_CONFIG")
    verbose = require_bool(verbose, "verbose")
    require_int(log_every, "log_every", low=1)
    if max_seconds is not None:
        require_real(max_seconds, "max_seconds", low=0)
    rng = np.random.default_rng(require_int(seed, "seed", low=0))
    train_numbers, test_numbers = tasks.require_train_test(numbers)
    task = tasks.NumberTask(train_numbers, test_numbers, by_shape=by_shape,
                            eval_size=eval_size, rng=rng)  # draws the evaluation numbers first
    stream = stream or sys.stdout

    def report(entry):
        stream.write(report_line(entry, config.steps, eval_name) + "\n")
        stream.flush()

    return train(model, task, config, rng=rng, log_every=log_every, max_seconds=max_seconds,
                 on_report=report if verbose else None)


def translate(texts, *, checkpoint=None, beam_size=1):
    """English number words -> Chinese numerals: a str gives a str, a list gives a list.

    Numbers 0..9999 as people write them: any case and spacing, hyphens ("twenty-one"), "and"
    ("one hundred and five"), "a" for "one" at the start ("a hundred", "a thousand and five");
    they are rewritten as `tasks.english` writes them, the words
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
    translate and the command line use it; no notebook calls it by name."""
    if isinstance(texts, str) or not isinstance(texts, (list, tuple)):
        raise TypeError(f"texts must be a str or a list of str, got "
                        f"{type(texts).__name__} {shorten(texts)}")
    beam_size = require_int(beam_size, "beam_size", low=1, high=MAX_BEAM)
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
        model, meta = _loaded(checkpoint)
        for i in readable:
            results[i] = _fits(results[i], model.max_len)
        readable = [i for i in readable if isinstance(results[i], str)]
        words = [results[i].split() for i in readable]
        for i, chars in zip(readable, _decode(model, meta, words, beam_size)):
            results[i] = chars
    return results


def _fits(canonical, max_len):
    """The canonical words, or a ValueError when they and <eos> are longer than the model's
    positions (a checkpoint may have a shorter max_len than the shipped one's)."""
    n = len(canonical.split())
    if n + 1 > max_len:
        return ValueError(f"{n} words, more than this translator reads: its max_len={max_len} "
                          f"holds {max_len - 1} words and <eos>")
    return canonical


def _decode(model, meta, words, beam_size):
    """Lists of canonical words -> their translations, BATCH_SIZE at a time; sorted by
    length first, so that a batch holds phrases of about the same length."""
    source, target = meta["source_vocab"], meta["target_vocab"]
    order = sorted(range(len(words)), key=lambda i: len(words[i]))
    out = [""] * len(words)
    per_batch = max(1, BATCH_SIZE // beam_size)  # a beam decodes beam_size rows per phrase
    for start in range(0, len(order), per_batch):
        rows = order[start:start + per_batch]
        src = tasks.pad([source.encode(words[i]) + [tasks.EOS_ID] for i in rows])
        for i, ids in zip(rows, translate_ids(model, src, beam_size)):
            out[i] = "".join(target.decode(ids))
    return out
