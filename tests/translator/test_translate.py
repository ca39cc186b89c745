"""Tests for minitf.translate and the command line (`python -m minitf train|translate`)."""

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import minitf.translator
import minitf.translator.cli as cli
from minitf import tasks
from minitf.translator import load_translator, translate
from minitf.translator.checkpoint import load_checkpoint
from minitf.translator.cli import BLAS_THREAD_VARIABLES


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
    info = meta["metadata"]
    assert info["steps"] == 50 and info["seed"] == 3
    assert info["command"] == "python -m minitf train --steps 50 --seed 3 --out small.npz"
    assert "held out" in info["trained_on"] and 0 <= info["held_out_exact_match"] <= 1
    assert "exact match on held-out 2000 numbers" in result.stdout.splitlines()[-1]


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
    with pytest.raises(ValueError, match=r"^'fourty' is not a number word; did you mean "
                                         r"'forty'\?$"):
        translate("fourty two", checkpoint=path)
    with pytest.raises(ValueError, match="beam_size"):
        translate("two", checkpoint=path, beam_size=0)


def test_a_bad_item_of_a_list_is_named_by_index_and_text(checkpoint):
    path, _ = checkpoint
    with pytest.raises(ValueError, match=r"^texts\[1\] 'hundred five': 'hundred' needs one of "
                                         r"one\.\.nine before it, in 'hundred five'$"):
        translate(["twelve", "hundred five", "two"], checkpoint=path)
    with pytest.raises(ValueError, match=r"^texts\[0\] 'fourty'.* \(2 more refused, the next "
                                         r"is texts\[2\]\)$"):
        translate(["fourty", "two", "ten thousand", "", "three"], checkpoint=path)


@pytest.mark.parametrize("texts", [None, 5, b"five", {"five"}, 5.0])
def test_translate_wants_a_str_or_a_list_of_str(texts):
    with pytest.raises(TypeError, match=r"^texts must be a str or a list of str, got "):
        translate(texts)
    with pytest.raises(TypeError, match=r"^texts\[1\] must be a str, got "):
        translate(["five", texts])


def test_errors_about_a_long_input_are_short():
    for texts in ("one " * 10_000, ["two", "x" * 100_000], ["one"] * 3 + ["nine thousand " * 5000]):
        with pytest.raises(ValueError) as error:
            translate(texts)
        assert len(str(error.value)) < 400 and "…" in str(error.value)


def test_translate_loads_a_checkpoint_once(checkpoint, monkeypatch):
    path, _ = checkpoint
    translate("two", checkpoint=path)
    calls = []
    monkeypatch.setattr(minitf.translator, "load_checkpoint", calls.append)
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
    assert result.returncode == 2 and result.stdout == "\n"
    assert result.stderr == "argument 1 'fourty': 'fourty' is not a number word; did you mean " \
                            "'forty'?\n"


def test_cli_bad_checkpoint_exits_2(tmp_path):
    bogus = tmp_path / "bogus.npz"
    bogus.write_bytes(b"not a checkpoint")
    for path in (bogus, tmp_path / "absent.npz"):
        result = run("translate", "--checkpoint", str(path), "two")
        assert result.returncode == 2 and str(path.name) in result.stderr
        assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr


def test_cli_names_each_refused_argument_and_translates_the_rest(checkpoint):
    path, _ = checkpoint
    result = run("translate", "--checkpoint", str(path), "one", "fourty two", "two", "",
                 "ten thousand")
    assert result.returncode == 2
    assert result.stdout.split("\n") == [translate("one", checkpoint=path), "",
                                         translate("two", checkpoint=path), "", "", ""]
    assert result.stderr.splitlines() == [
        "argument 2 'fourty two': 'fourty' is not a number word; did you mean 'forty'?",
        "argument 4 '': the text is empty",
        "argument 5 'ten thousand': 'ten thousand' is 10,000; this task's numbers are 0..9999"]


def test_cli_stdin_one_line_out_per_line_in(checkpoint):
    """A blank line is answered with a blank line; a refused one too, named on stderr."""
    path, _ = checkpoint
    result = run("translate", "--checkpoint", str(path),
                 stdin="two\n\nfourty\n  Three Thousand and Twelve \n")
    assert result.returncode == 2
    assert result.stdout.split("\n") == [translate("two", checkpoint=path), "", "",
                                         translate("three thousand twelve", checkpoint=path), ""]
    assert result.stderr == "line 3 'fourty': 'fourty' is not a number word; did you mean " \
                            "'forty'?\n"


def test_cli_translates_piped_stdin_in_one_batch(monkeypatch, capsys):
    calls = []

    def each(texts, **options):
        calls.append(list(texts))
        return [f"<{text}>" for text in texts]

    monkeypatch.setattr(cli, "translate_each", each)
    monkeypatch.setattr(sys, "stdin", io.StringIO("one\ntwo\n\nthree\n"))
    assert cli.main(["translate"]) == 0
    assert calls == [["one", "two", "three"]]
    assert capsys.readouterr().out == "<one>\n<two>\n\n<three>\n"


def test_cli_error_for_a_long_input_is_one_short_line():
    result = run("translate", "one " * 10_000)
    assert result.returncode == 2 and len(result.stderr) < 400
    assert len(result.stderr.splitlines()) == 1 and "…" in result.stderr


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_cli_writes_utf8_to_a_console_that_cannot_encode_chinese(encoding):
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    result = subprocess.run([sys.executable, "-m", "minitf", "translate", "one thousand five"],
                            env=env, capture_output=True, timeout=300)
    assert (result.returncode, result.stderr) == (0, b"")
    assert result.stdout.decode("utf-8") == "一千零五\n"


# train: every option checked before any training


@pytest.mark.parametrize(("args", "message"), [
    (["--steps", "0"], "--steps must be an int >= 1, got 0"),
    (["--seed", "-1"], "--seed must be an int >= 0, got -1"),
    (["--max-seconds", "0"], "--max-seconds must be a finite number in (0, inf), got 0.0"),
    (["--max-seconds", "nan"], "--max-seconds must be a finite number in (0, inf), got nan"),
    (["--threads", "0"], "--threads must be an int >= 1, got 0"),
    (["--steps", "many"], "python -m minitf train: argument --steps: invalid int value: 'many' "
                          "(see --help)"),
    (["--out", "."], "--out '.' is a folder; give a file name, e.g. 'translator.npz'"),
    (["--out", "absent/x.npz"], "--out 'absent/x.npz': 'absent' does not exist"),
    (["--out", "a_file/x.npz"], "--out 'a_file/x.npz': 'a_file' is not a folder"),
])
def test_cli_train_refuses_bad_options_before_training(tmp_path, args, message):
    (tmp_path / "a_file").write_text("")
    result = run("train", *args, cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", message + "\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs a folder nobody can write")
def test_cli_train_refuses_a_folder_it_cannot_write_in():
    result = run("train", "--out", "/proc/translator.npz")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("--out '/proc/translator.npz': cannot write in '/proc'")


# the shipped weights


def chinese_reference(n):
    """The numeral written digit by digit, then tidied: a run of 零 becomes one, a 零 at the
    end goes, and a leading 一十 is 十. Independent of minitf.tasks.chinese."""
    digits = str(n)
    units = ["千", "百", "十", ""][-len(digits):]
    text = "".join("零" if d == "0" else "零一二三四五六七八九"[int(d)] + u
                   for d, u in zip(digits, units))
    text = re.sub("零+", "零", text)
    text = text.rstrip("零") or "零"
    return text[1:] if text.startswith("一十") else text


def words_as_written(n):
    """n in words, varied the way people write it: 'Twenty-One', 'one hundred and five'."""
    ones = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
            "fourteen fifteen sixteen seventeen eighteen nineteen").split()
    tens = "twenty thirty forty fifty sixty seventy eighty ninety".split()
    if n == 0:
        return "Zero"
    head = [f"{ones[n // 1000]} thousand"] * (n >= 1000)
    head += [f"{ones[n // 100 % 10]} hundred"] * (n // 100 % 10 > 0)
    rest = n % 100
    tail = ones[rest] if rest < 20 else tens[rest // 10 - 2] + (f"-{ones[rest % 10]}" if rest % 10
                                                                else "")
    words = head + (["and"] if head and rest and n % 2 else []) + ([tail] if rest else [])
    text = " ".join(words)
    return text.upper() if n % 3 == 0 else text


def test_the_reference_writers_on_examples():
    numbers = (0, 10, 12, 20, 105, 110, 1005, 1010, 2000, 9999)
    assert [chinese_reference(n) for n in numbers] == [
        "零", "十", "十二", "二十", "一百零五", "一百一十", "一千零五", "一千零一十", "二千",
        "九千九百九十九"]
    assert words_as_written(1021) == "one thousand and twenty-one"
    assert words_as_written(105) == "ONE HUNDRED AND FIVE"


def test_shipped_weights_translate_every_number_exactly():
    numbers = range(tasks.MAX_NUMBER + 1)
    got = translate([words_as_written(n) for n in numbers])
    wrong = [(n, g, chinese_reference(n)) for n, g in zip(numbers, got)
             if g != chinese_reference(n)]
    assert wrong == []


def test_shipped_weights_say_how_they_were_trained():
    info = load_translator()[1]["metadata"]
    assert info["trained_on"] == "all numbers 0..9999" and info["exact_match_all"] == 1.0
    assert info["command"].startswith("python -m minitf train --all-numbers")
    assert f"--seed {info['seed']}" in info["command"]


def test_cli_translates_with_the_shipped_weights():
    result = run("translate", "one thousand five", "one", "two thousand", "twenty-one",
                 "one hundred and five")
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines() == ["一千零五", "一", "二千", "二十一", "一百零五"]


def test_cli_reads_stdin_lines_in_turn():
    lines = "one thousand five\ntwelve\n\n one hundred ten\n"
    result = run("translate", "--beam", "2", stdin=lines)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["一千零五", "十二", "", "一百一十"]


def test_examples_from_the_design():
    assert translate(["one thousand five", "one hundred ten", "twelve"]) == [
        "一千零五", "一百一十", "十二"]


# N22, N23 and issue 26 through translate and the command line

@pytest.mark.parametrize(("text", "chars"), [("a hundred and five", "一百零五"),
                                             ("a thousand", "一千"), ("A hundred", "一百")])
def test_translate_reads_a_for_one(text, chars):
    assert translate(text) == chars


def test_translate_refuses_a_phrase_cut_short():
    with pytest.raises(ValueError, match="'twenty-' ends with '-'.*cut short"):
        translate("twenty-")
    with pytest.raises(ValueError, match=r"texts\[1\] 'one thousand,'"):
        translate(["five", "one thousand,"])


def test_translate_refuses_a_huge_beam_before_allocating():
    with pytest.raises(ValueError, match=r"beam_size must be an int in 1\.\.64"):
        translate("five", beam_size=10**12)
    assert minitf.translator.translate_each(["five"], beam_size=64) == ["五"]


def test_cli_refuses_a_huge_beam_in_one_line():
    result = subprocess.run([sys.executable, "-m", "minitf", "translate", "--beam",
                             "1000000000000", "five"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 2
    assert result.stderr == "--beam must be an int in 1..64, got 1000000000000\n"
