"""Tests for minitf.translate and the command line (`python -m minitf train|translate`)."""

import os
import subprocess
import sys

import numpy as np
import pytest

from minitf import tasks
from minitf.__main__ import BLAS_THREAD_VARIABLES
from minitf.checkpoint import load_checkpoint
from minitf.translate import translate


def run(*args, stdin=None, cwd=None, env=None):
    return subprocess.run([sys.executable, "-m", "minitf", *args], input=stdin, cwd=cwd, env=env,
                          capture_output=True, text=True, encoding="utf-8", timeout=300)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A checkpoint from `python -m minitf train --steps 50` (barely trained), run with no
    BLAS thread variables set."""
    folder = tmp_path_factory.mktemp("cli")
    env = {k: v for k, v in os.environ.items() if k not in BLAS_THREAD_VARIABLES}
    result = run("train", "--steps", "50", "--seed", "3", "--out", "small.npz", cwd=folder,
                 env=env)
    assert result.returncode == 0, result.stderr
    return folder / "small.npz", result


def test_cli_train_runs_and_says_where_it_saved(checkpoint):
    path, result = checkpoint
    assert result.stderr == ""
    assert result.stdout.splitlines()[-1].endswith(f"saved to {path.name}")
    assert "step 50/50" in result.stdout
    assert "BLAS threads 1" in result.stdout.splitlines()[0]
    model, meta = load_checkpoint(path)
    assert meta["metadata"]["steps"] == 50 and meta["metadata"]["seed"] == 3


def test_translate_keeps_the_shape_of_its_input(checkpoint):
    path, _ = checkpoint
    one = translate("one thousand five", checkpoint=path)
    many = translate(["one thousand five", "twelve"], checkpoint=path)
    assert isinstance(one, str) and isinstance(many, list) and len(many) == 2
    assert many[0] == one
    assert set(one + many[1]) <= set(tasks.CHARACTERS)
    assert translate([], checkpoint=path) == []


def test_translate_refuses_what_is_not_a_number_phrase(checkpoint):
    path, _ = checkpoint
    with pytest.raises(ValueError, match="did you mean 'forty'"):
        translate("fourty two", checkpoint=path)
    with pytest.raises(ValueError, match="'five' cannot follow 'hundred'|hundred"):
        translate(["twelve", "hundred five"], checkpoint=path)
    with pytest.raises(ValueError, match="beam_size"):
        translate("two", checkpoint=path, beam_size=0)


def test_translate_loads_a_checkpoint_once(checkpoint, monkeypatch):
    path, _ = checkpoint
    translate("two", checkpoint=path)
    calls = []
    # minitf.translate is the function; its module is in sys.modules
    monkeypatch.setattr(sys.modules["minitf.translate"], "load_checkpoint", calls.append)
    translate("three", checkpoint=path)
    assert calls == []


def test_cli_translate_with_a_checkpoint_and_beam(checkpoint):
    path, _ = checkpoint
    greedy = run("translate", "--checkpoint", str(path), "one thousand five", "twelve")
    beam = run("translate", "--checkpoint", str(path), "--beam", "3", "one thousand five")
    assert greedy.returncode == 0 and beam.returncode == 0, greedy.stderr + beam.stderr
    assert greedy.stdout.splitlines() == translate(["one thousand five", "twelve"],
                                                   checkpoint=path)
    assert beam.stdout.splitlines() == [translate("one thousand five", checkpoint=path,
                                                  beam_size=3)]


def test_cli_bad_word_exits_2_with_one_line():
    result = run("translate", "fourty")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == "'fourty' is not a number word; did you mean 'forty'?\n"


def test_cli_bad_phrase_and_bad_checkpoint_exit_2(tmp_path):
    result = run("translate", "hundred five")
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1
    bogus = tmp_path / "bogus.npz"
    bogus.write_bytes(b"not a checkpoint")
    for path in (bogus, tmp_path / "absent.npz"):
        result = run("translate", "--checkpoint", str(path), "two")
        assert result.returncode == 2 and str(path.name) in result.stderr
        assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr


def test_cli_stops_at_the_first_bad_stdin_line(checkpoint):
    path, _ = checkpoint
    result = run("translate", "--checkpoint", str(path), stdin="two\n\nfourty\nthree\n")
    assert result.returncode == 2
    assert result.stdout.splitlines() == [translate("two", checkpoint=path)]
    assert "did you mean 'forty'" in result.stderr


# the shipped weights


def test_cli_translates_with_the_shipped_weights():
    result = run("translate", "one thousand five")
    assert (result.returncode, result.stdout, result.stderr) == (0, "一千零五\n", "")


def test_cli_reads_stdin_lines_in_turn():
    lines = "one thousand five\ntwelve\n\n one hundred ten\n"
    result = run("translate", "--beam", "2", stdin=lines)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["一千零五", "十二", "一百一十"]


def test_shipped_weights_translate_almost_every_number():
    numbers = np.arange(tasks.MAX_NUMBER + 1)
    got = translate([tasks.english(int(n)) for n in numbers])
    wrong = [(int(n), g) for n, g in zip(numbers, got) if g != tasks.chinese(int(n))]
    assert len(wrong) <= 0.005 * len(numbers), wrong[:20]


def test_examples_from_the_design():
    assert translate(["one thousand five", "one hundred ten", "twelve"]) == [
        "一千零五", "一百一十", "十二"]
