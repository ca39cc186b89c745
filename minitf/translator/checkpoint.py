"""Checkpoints: any Transformer's weights and config in one .npz file, with the vocabularies
when the model has them (the translator's file does). Used in notebook 08 §6 and by
`python -m minitf train` / `translate --checkpoint`.

A file holds `format`, `config` (JSON of TransformerConfig), `metadata` (JSON), one
`param/<dotted name>` array per parameter, and optionally the two vocabularies. It is read with
allow_pickle=False, and everything about it is checked before anything large is allocated:
anything wrong is a ValueError that names the path.
"""

import dataclasses
import json
import math
import os
import re
import stat
import tempfile
import time
import zipfile
import zlib
from pathlib import Path

import numpy as np

from ..model import Transformer, TransformerConfig
from ..tasks.vocab import SPECIAL_TOKENS, Vocab
from ..validation import require_instance, shorten

CHECKPOINT_FORMAT = "minitf-translator-1"
PARAM_PREFIX = "param/"
TEXT_MEMBERS = ("format", "config", "metadata")
VOCAB_MEMBERS = ("source_vocab", "target_vocab")
MAX_POSITIONS = 1 << 16  # a larger positional table in a config is refused, not allocated
MAX_TEXT = 1 << 20  # characters of the config or the metadata
MAX_TOKENS = 1 << 20  # tokens of a stored vocabulary, the special ones included
TEMP_PREFIX = ".minitf-"  # a save writes `.minitf-XXXXXXXX.tmp` beside the file, then renames
STALE_AFTER = 24 * 3600  # seconds: an older temporary file was left by a killed save
_LAYER = re.compile(r"^(encoder|decoder)\.layers\.(\d+)\.")


def save_checkpoint(path, model, *, source_vocab=None, target_vocab=None, **metadata):
    """Write any Transformer's weights and config to one .npz at `path`.

    source_vocab, target_vocab: Vocabs to store with it (both or neither; their sizes must be
    the model's), as the translator's file does. `metadata` (JSON-serialisable values) is
    stored too. The file is written under a temporary name and then renamed, so a failed save
    leaves an earlier file at `path` as it was. What load_checkpoint would refuse (a max_len
    over MAX_POSITIONS, text over MAX_TEXT characters, weights that are not finite, …) is
    refused before anything is written, and so is a path that is not a regular file
    (check_save_path): each a ValueError naming the path.
    save_translator uses it; no notebook calls it by name.
    """
    config = require_instance(model, Transformer, "model").config
    try:
        path = check_save_path(path)
    except OSError as e:  # a symlink loop, a name too long, a path under a file
        raise _naming(e, path) from None
    vocabs = {"source_vocab": source_vocab, "target_vocab": target_vocab}
    if (source_vocab is None) != (target_vocab is None):
        raise ValueError("give both source_vocab and target_vocab, or neither")
    sizes = (config.src_vocab_size, config.tgt_vocab_size)
    if source_vocab is not None:
        for key, vocab in vocabs.items():
            require_instance(vocab, Vocab, key)
        if sizes != (len(source_vocab), len(target_vocab)):
            raise ValueError(f"the vocabularies' sizes ({len(source_vocab)}, "
                             f"{len(target_vocab)}) are not the model's {sizes}")
    arrays = {PARAM_PREFIX + name: p for name, p in model.named_parameters()}
    arrays.update(
        format=np.array(CHECKPOINT_FORMAT),
        config=np.array(json.dumps(dataclasses.asdict(config))),
        metadata=np.array(_metadata_json(metadata)),
    )
    arrays.update({key: np.array(vocab.tokens) for key, vocab in vocabs.items()
                   if vocab is not None})
    try:
        _require_as_the_loader_would(arrays)
    except ValueError as e:
        raise ValueError(f"{path}: not saved: {e}") from None
    try:
        _write_atomically(path, arrays)
    except OSError as e:
        raise _naming(e, path) from None
    return path


def check_save_path(path):
    """`path` as a Path a checkpoint may be saved to: nothing there yet, a regular file, or a
    symlink to one (the link is replaced, as an atomic save does). A save replaces whatever
    is at its path, so anything else is a ValueError naming it: a folder, a device node such
    as /dev/null, a FIFO, a socket, a symlink to one of these; and so is a name ending in a
    separator ("out/"), which names a folder.
    save_checkpoint and `python -m minitf train --out` use it; no notebook does."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or a Path, got {shorten(path)} "
                        f"({type(path).__name__})")
    text = os.fspath(path)
    if isinstance(text, str) and text.endswith(tuple(sep for sep in (os.sep, os.altsep) if sep)):
        raise ValueError(f"{text}: ends with {text[-1]!r}, so it names a folder; give a file "
                         f"name, e.g. {text}translator.npz")
    path = Path(path)
    try:
        mode = os.stat(path).st_mode  # through a symlink, to what it points at
    except FileNotFoundError:
        return path  # nothing there (or a dangling symlink): the save creates the file
    if not stat.S_ISREG(mode):
        link = "a symlink to " if os.path.islink(path) else ""
        raise ValueError(f"{path}: not a regular file, so a checkpoint is not saved over it "
                         f"(got {link}{_kind(mode)})")
    return path


def _metadata_json(metadata):
    """The metadata as JSON, or a ValueError naming the entry that JSON cannot hold."""
    for key, value in metadata.items():
        try:
            json.dumps(value)
        except (TypeError, ValueError) as e:
            raise ValueError(f"metadata {key}={shorten(value)} cannot be stored as JSON "
                             f"({e}); give numbers, text, lists and dicts") from None
    return json.dumps(metadata)


def _write_atomically(path, arrays):
    """np.savez into a short temporary name in path's folder (a name of the user's own
    length would not fit), then one rename; a failure leaves no temporary file. The path is
    checked again just before the rename, in case something else appeared there."""
    fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), _file_mode(path))
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        check_save_path(path)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    _remove_stale_temporaries(path.parent)


def _remove_stale_temporaries(folder):
    """Delete the `.minitf-*.tmp` files in `folder` older than STALE_AFTER: each is what a
    save killed mid-write (SIGKILL, a power cut) left; a save in progress is seconds old."""
    for tmp in folder.glob(TEMP_PREFIX + "*.tmp"):
        try:
            info = tmp.lstat()
            if stat.S_ISREG(info.st_mode) and time.time() - info.st_mtime > STALE_AFTER:
                tmp.unlink()
        except OSError:  # gone already, or not ours to delete: leave it
            pass


def _naming(error, path):
    """The OSError of a save, about the user's path rather than the temporary file."""
    if error.errno is None:
        return OSError(f"cannot save {path}: {error}")
    return type(error)(error.errno, f"cannot save: {error.strerror}", str(path))


def load_checkpoint(path):
    """A checkpoint written by save_checkpoint -> (model, meta).

    meta: {"config" (TransformerConfig), "source_vocab", "target_vocab" (Vocabs, or None
    when the file has none), "metadata" (dict)}. A missing file is FileNotFoundError; a
    truncated, corrupt or foreign file, a config that does not fit the weights, or weights
    that are not finite is a ValueError naming the path.
    load_translator uses it (notebook 07); no notebook calls it by name.
    """
    path = Path(path)
    with _open_regular_file(path) as file:
        try:
            return _load(file)
        except (ValueError, TypeError, KeyError, EOFError, OSError, zipfile.BadZipFile,
                zlib.error, RecursionError) as e:
            if isinstance(e, PermissionError):
                raise
            message = (str(e) if isinstance(e, ValueError) and not isinstance(e, OSError)
                       else f"corrupt checkpoint ({type(e).__name__}: {e})")
            raise ValueError(f"{path}: {message}") from None


def _open_regular_file(path):
    """`path` opened for reading, if it is a regular file. Anything else (a folder, a FIFO,
    a pipe, /dev/zero) is a ValueError before a byte is read; the open does not block on a
    FIFO, and the opened file is checked again (it may have been swapped)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such checkpoint") from None
    if stat.S_ISREG(mode):
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.set_blocking(fd, True)
            return os.fdopen(fd, "rb")
        os.close(fd)
    raise ValueError(f"{path}: not a regular file (a checkpoint is an .npz file; "
                     f"got {_kind(mode)})")


def _kind(mode):
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a pipe or FIFO"),
             (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"),
             (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "a file that changed")


def _load(file):
    if not zipfile.is_zipfile(file):
        raise ValueError("not a minitf checkpoint (not an .npz file, or truncated)")
    file.seek(0)
    with zipfile.ZipFile(file) as archive:
        members = {name[:-len(".npy")]: name for name in archive.namelist()
                   if name.endswith(".npy")}
        missing = [k for k in TEXT_MEMBERS if k not in members]
        if missing:
            raise ValueError(f"not a minitf checkpoint (no {', '.join(missing)})")
        unexpected = sorted(k for k in members
                            if k not in TEXT_MEMBERS + VOCAB_MEMBERS
                            and not k.startswith(PARAM_PREFIX))
        if unexpected:
            raise ValueError(f"not a minitf checkpoint (unexpected members {unexpected})")
        headers = {k: _header(archive, name) for k, name in members.items()}
        for key in TEXT_MEMBERS:
            _require_small_text(key, headers[key])
        if _text(archive, members["format"]) != CHECKPOINT_FORMAT:
            raise ValueError(f"unknown checkpoint format {_text(archive, members['format'])!r} "
                             f"(expected {CHECKPOINT_FORMAT!r})")
        config = _config(_json(_text(archive, members["config"]), "config"))
        metadata = _json(_text(archive, members["metadata"]), "metadata")
        source_vocab = target_vocab = None
        stored = [k for k in VOCAB_MEMBERS if k in members]
        if len(stored) == 1:
            raise ValueError(f"the file holds {stored[0]} but not the other vocabulary")
        if stored:
            _require_vocab_sizes(config, headers)
            source_vocab, target_vocab = (
                _vocab(key, headers[key], lambda key=key: _array(archive, members[key]))
                for key in VOCAB_MEMBERS)
        params = {k[len(PARAM_PREFIX):]: h for k, h in headers.items()
                  if k.startswith(PARAM_PREFIX)}
        dtype = _require_weights_fit(config, params)
        _require_every_weight(config, params)
        model = Transformer.from_config(config, dtype=dtype, rng=0)
        state = {name: _array(archive, members[PARAM_PREFIX + name]) for name in params}
    _require_finite(state)
    model.load_state_dict(state)
    meta = dict(config=config, source_vocab=source_vocab, target_vocab=target_vocab,
                metadata=metadata)
    return model, meta


def _require_as_the_loader_would(arrays):
    """The checks _load makes, on the arrays a save is about to write (member name -> array),
    so that save_checkpoint never writes a file load_checkpoint refuses."""
    headers = {key: (a.shape, a.dtype) for key, a in arrays.items()}
    for key in TEXT_MEMBERS:
        _require_small_text(key, headers[key])
    config = _config(_json(str(arrays["config"]), "config"))
    _json(str(arrays["metadata"]), "metadata")
    if "source_vocab" in arrays:
        _require_vocab_sizes(config, headers)
        for key in VOCAB_MEMBERS:
            _vocab(key, headers[key], lambda key=key: arrays[key])
    params = {k[len(PARAM_PREFIX):]: h for k, h in headers.items() if k.startswith(PARAM_PREFIX)}
    _require_weights_fit(config, params)
    _require_every_weight(config, params)
    _require_finite({k[len(PARAM_PREFIX):]: a for k, a in arrays.items()
                     if k.startswith(PARAM_PREFIX)})


def _require_finite(state):
    bad = [name for name, value in state.items() if not np.isfinite(value).all()]
    if bad:
        raise ValueError(f"weights that are not finite (NaN or inf) in {', '.join(bad)}")


def _header(archive, name):
    """(shape, dtype) of one .npy member, read from its header only; the size the header
    claims must be the size the member holds, so reading it allocates no more than that."""
    with archive.open(name) as f:
        version = np.lib.format.read_magic(f)
        read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                else np.lib.format.read_array_header_2_0)
        shape, _, dtype = read(f)
        header_size = f.tell()
    if dtype.hasobject:
        raise ValueError(f"{name} holds Python objects; a checkpoint holds only numbers and text")
    claimed = math.prod(shape) * dtype.itemsize
    held = archive.getinfo(name).file_size - header_size
    if claimed != held:
        raise ValueError(f"{name} claims shape {shape} of {dtype} ({claimed:,} bytes) but holds "
                         f"{held:,} bytes")
    return shape, dtype


def _array(archive, name):
    with archive.open(name) as f:
        return np.lib.format.read_array(f, allow_pickle=False)


def _require_small_text(key, header):
    shape, dtype = header
    if dtype.kind != "U" or shape != ():
        raise ValueError(f"{key!r} should be text, got {dtype} of shape {shape}")
    if dtype.itemsize > 4 * MAX_TEXT:
        raise ValueError(f"the {key} is too long: {dtype.itemsize // 4:,} characters, more than "
                         f"the {MAX_TEXT:,} a checkpoint holds")


def _text(archive, name):
    return str(_array(archive, name))


def _json(text, key):
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"the {key} is JSON nested too deeply to be a checkpoint's") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"the {key} is not valid JSON ({e})") from None


def _config(config):
    """The TransformerConfig of the parsed JSON `config`, every field checked."""
    fields = {f.name: f.type for f in dataclasses.fields(TransformerConfig)}
    if not isinstance(config, dict):
        raise ValueError(f"the config should be a JSON object, got {type(config).__name__}")
    unknown = sorted(set(config) - set(fields))
    missing = sorted(set(fields) - set(config) - {"norm_first", "activation"})
    if unknown or missing:
        raise ValueError(f"the config has unknown keys {unknown} or lacks {missing}")
    for name, value in config.items():
        if name == "norm_first":
            ok = isinstance(value, bool)
        elif name == "activation":
            ok = isinstance(value, str)
        else:
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
        if not ok:
            raise ValueError(f"the config's {name}={value!r} is not valid")
    if config["max_len"] > MAX_POSITIONS:
        raise ValueError(f"the config's max_len={config['max_len']} is more than "
                         f"{MAX_POSITIONS} positions")
    return TransformerConfig(**config)


def _require_weights_fit(config, params):
    """The one float dtype of the weights, after checking that the arrays' shapes agree with
    the config's sizes (so a config cannot make us allocate more than the file holds)."""
    dtypes = sorted({str(dtype) for _, dtype in params.values()})
    if len(dtypes) != 1 or dtypes[0] not in ("float32", "float64"):
        raise ValueError(f"expected weights of one dtype, float32 or float64; got {dtypes}")
    c = config
    expected = {"src_embed.weight": (c.src_vocab_size, c.d_model),
                "tgt_embed.weight": (c.tgt_vocab_size, c.d_model),
                "generator.W": (c.d_model, c.tgt_vocab_size),
                "encoder.layers.0.ffn.W_1": (c.d_model, c.d_ff),
                f"encoder.layers.{c.num_layers - 1}.norm2.gamma": (c.d_model,),
                f"decoder.layers.{c.num_layers - 1}.norm3.gamma": (c.d_model,)}
    for name, shape in expected.items():
        if name not in params or params[name][0] != shape:
            got = params[name][0] if name in params else "nothing"
            raise ValueError(f"the weights do not fit the config: {name} should have shape "
                             f"{shape}, got {got}")
    return dtypes[0]


def _require_every_weight(config, params):
    """The file holds exactly the parameters the config implies, each with its shape: checked
    before the model is built, from a one-layer model's shapes (its sizes already checked
    against the file) repeated num_layers times."""
    layers = {(m[1], int(m[2])) for m in map(_LAYER.match, params) if m}
    if config.num_layers > len(layers):
        raise ValueError(f"the config's num_layers={config.num_layers} needs more layers than "
                         f"the file's weights hold ({len(layers)} encoder and decoder layers)")
    one_layer = Transformer.from_config(dataclasses.replace(config, num_layers=1), rng=0)
    expected = {}
    for name, value in one_layer.named_parameters():
        copies = range(config.num_layers) if _LAYER.match(name) else [None]
        for i in copies:
            key = name if i is None else _LAYER.sub(lambda m, i=i: f"{m[1]}.layers.{i}.", name)
            expected[key] = value.shape
    problems = [f"no {name}" for name in expected if name not in params]
    problems += [f"{name} is not a parameter of this config" for name in params
                 if name not in expected]
    problems += [f"{name} has shape {params[name][0]}, the config implies {shape}"
                 for name, shape in expected.items()
                 if name in params and params[name][0] != shape]
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise ValueError(f"the weights do not fit the config: {'; '.join(problems[:3])}{more}")


def _require_vocab_sizes(config, headers):
    """The stored vocabularies' lengths are the config's sizes (checked on their headers,
    before a Vocab is built)."""
    sizes = (config.src_vocab_size, config.tgt_vocab_size)
    stored = tuple(headers[key][0][0] if len(headers[key][0]) == 1 else None
                   for key in VOCAB_MEMBERS)
    if sizes != stored:
        raise ValueError(f"the config's vocabulary sizes {sizes} differ from the stored "
                         f"vocabularies {stored}")


def _vocab(key, header, read):
    """The Vocab of the stored tokens that read() gives, after checking their header."""
    shape, dtype = header
    n = len(SPECIAL_TOKENS)
    if dtype.kind != "U" or len(shape) != 1:
        raise ValueError(f"{key!r} should list the tokens, starting with {SPECIAL_TOKENS}")
    if shape[0] > MAX_TOKENS:
        raise ValueError(f"the {key} is too long: {shape[0]:,} tokens, more than the "
                         f"{MAX_TOKENS:,} a checkpoint holds")
    tokens = read()
    if tuple(tokens[:n]) != SPECIAL_TOKENS:
        raise ValueError(f"{key!r} should list the tokens, starting with {SPECIAL_TOKENS}")
    return Vocab(tokens[n:].tolist())


def _file_mode(path):
    """The mode a newly created file would get (mkstemp's files are private)."""
    if path.exists():
        return path.stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
