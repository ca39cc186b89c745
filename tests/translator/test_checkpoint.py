"""Tests for minitf.checkpoint: round trip, atomic saves, and every way a file can be wrong."""

import dataclasses
import json
import os

import numpy as np
import pytest

from minitf import tasks
from minitf.model import Transformer
from minitf.tasks import exact_match
from minitf.translator import load_translator, new_model, save_translator
from minitf.translator.checkpoint import load_checkpoint, save_checkpoint

TINY = dict(d_model=16, num_heads=2, num_layers=1, d_ff=32)


def test_any_transformer_saves_and_loads_without_vocabularies(tmp_path):
    model = Transformer(50, 30, d_model=8, num_heads=2, num_layers=1, d_ff=16, max_len=9,
                        norm_first=True, rng=4)
    path = save_checkpoint(tmp_path / "mine.npz", model, note="a learner's model")
    loaded, meta = load_checkpoint(path)
    src, tgt_in = np.array([[5, 49, 0]]), np.array([[1, 29]])
    np.testing.assert_array_equal(loaded(src, tgt_in), model(src, tgt_in))
    assert loaded.config == model.config and meta["source_vocab"] is None
    assert meta["metadata"] == {"note": "a learner's model"}
    with pytest.raises(ValueError, match="without vocabularies"):
        load_translator(path)  # the translator needs the vocabularies
    with pytest.raises(ValueError, match="both source_vocab and target_vocab"):
        save_checkpoint(tmp_path / "x.npz", model, source_vocab=tasks.SOURCE_VOCAB)
    with pytest.raises(ValueError, match=r"vocabularies' sizes \(34, 17\) are not the model's"):
        save_checkpoint(tmp_path / "x.npz", model, source_vocab=tasks.SOURCE_VOCAB,
                        target_vocab=tasks.TARGET_VOCAB)
    assert not (tmp_path / "x.npz").exists()


def test_checkpoint_round_trip_gives_identical_logits(tmp_path):
    model = new_model(2, **TINY)
    path = save_translator(tmp_path / "m.npz", model, steps=7, note="hi")
    loaded, meta = load_checkpoint(path)
    src, tgt_in, _ = tasks.make_batch([5, 1005, 9999])
    np.testing.assert_array_equal(loaded(src, tgt_in), model(src, tgt_in))
    assert loaded.config == model.config and loaded.dtype == np.float32
    assert meta["metadata"] == {"steps": 7, "note": "hi"}
    assert meta["source_vocab"].tokens == tasks.SOURCE_VOCAB.tokens
    assert meta["target_vocab"].tokens == tasks.TARGET_VOCAB.tokens
    assert exact_match(loaded, [1, 2]) == exact_match(model, [1, 2])


def saved(tmp_path, name="m.npz"):
    return save_checkpoint(tmp_path / name, new_model(0, **TINY))


def test_truncated_checkpoint_is_a_value_error(tmp_path):
    path = saved(tmp_path)
    data = path.read_bytes()
    for size in (0, 30, len(data) // 2, len(data) - 30):
        path.write_bytes(data[:size])
        with pytest.raises(ValueError, match=str(path)):
            load_checkpoint(path)


def test_corrupt_checkpoint_is_a_value_error(tmp_path):
    path = saved(tmp_path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=f"{path}.*corrupt"):
        load_checkpoint(path)


def test_random_bytes_are_a_value_error(tmp_path):
    path = tmp_path / "noise.npz"
    path.write_bytes(np.random.default_rng(0).bytes(4000))
    with pytest.raises(ValueError, match=str(path)):
        load_checkpoint(path)


def test_foreign_npz_and_npy_are_value_errors(tmp_path):
    npz, npy = tmp_path / "other.npz", tmp_path / "other.npy"
    np.savez(npz, weights=np.zeros(3))
    np.save(npy, np.zeros(3))
    with pytest.raises(ValueError, match=f"{npz}: not a minitf checkpoint .*config"):
        load_checkpoint(npz)
    with pytest.raises(ValueError, match=f"{npy}: not a minitf checkpoint"):
        load_checkpoint(npy)


def rewrite(path, **changes):
    with np.load(path) as npz:
        arrays = dict(npz)
    arrays.update(changes)
    np.savez(path, **arrays)


def test_config_that_does_not_fit_the_weights_is_a_value_error(tmp_path):
    path = saved(tmp_path)
    config = {**dataclasses.asdict(new_model(0, **TINY).config), "d_ff": 8}
    rewrite(path, config=np.array(json.dumps(config)))
    with pytest.raises(ValueError, match=f"{path}: the weights do not fit the config"):
        load_checkpoint(path)


def test_unknown_config_key_and_vocabulary_mismatch_are_value_errors(tmp_path):
    path = saved(tmp_path)
    rewrite(path, config=np.array('{"d_model": 16, "colour": "red"}'))
    with pytest.raises(ValueError, match=str(path)):
        load_checkpoint(path)
    path = saved(tmp_path, "v.npz")
    rewrite(path, target_vocab=np.array(tasks.TARGET_VOCAB.tokens[:-1]))
    with pytest.raises(ValueError, match=f"{path}: .*vocabular"):
        load_checkpoint(path)


def test_missing_checkpoint_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_checkpoint(tmp_path / "absent.npz")


def test_failed_save_leaves_the_previous_file_intact(tmp_path, monkeypatch):
    path = saved(tmp_path)
    before = path.read_bytes()

    def broken_savez(file, **arrays):
        file.write(b"PK\x03\x04 half a zip")
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", broken_savez)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(path, new_model(1, **TINY))
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["m.npz"]
    monkeypatch.undo()
    load_checkpoint(path)
