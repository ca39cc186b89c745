"""Issue #36 (robustness round 4), the translator's room: one test per root cause, with the
review's cases and their neighbours. P6–P10 are tested where they were fixed."""

import json
import os
import resource
import socket
import stat
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

import minitf.translator as translator
import minitf.translator.cli as cli
from minitf import tasks
from minitf.model import Transformer
from minitf.translator import load_translator, new_model, save_translator, translate, translate_each
from minitf.translator.checkpoint import MAX_POSITIONS, MAX_TEXT, load_checkpoint, save_checkpoint

TINY = dict(d_model=16, num_heads=2, num_layers=1, d_ff=32)


def run(*args, stdin=None, cwd=None, preexec_fn=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "minitf", *args], input=stdin, cwd=cwd,
                          capture_output=True, text=True, encoding="utf-8", timeout=timeout,
                          preexec_fn=preexec_fn)


def non_regular_files(folder):
    """name -> a path holding something that is not a regular file (and what it is)."""
    fifo = folder / "fifo.npz"
    os.mkfifo(fifo)
    sock = folder / "sock.npz"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock))
    server.close()
    (folder / "a_folder").mkdir()
    link = folder / "link.npz"
    link.symlink_to(folder / "a_folder")
    found = {"a pipe or FIFO": fifo, "a socket": sock, "a symlink to a folder": link}
    if os.geteuid() == 0:  # a copy of /dev/null, as `--out /dev/null` would meet
        node = folder / "null.npz"
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        found["a device"] = node
    return found


def kinds(path):
    return stat.S_IFMT(os.lstat(path).st_mode)


# P1: a save never replaces a device node, a FIFO, a socket or a symlink to a folder

def test_save_refuses_what_is_not_a_regular_file(tmp_path):
    model = new_model(0, **TINY)
    for what, path in non_regular_files(tmp_path).items():
        before = kinds(path)
        with pytest.raises(ValueError, match=f"^{path}: not a regular file.*got {what}"):
            save_checkpoint(path, model)
        assert kinds(path) == before, what
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".minitf-")]


def test_save_over_a_file_or_a_symlink_to_one_still_works(tmp_path):
    path = save_checkpoint(tmp_path / "m.npz", new_model(0, **TINY))
    save_checkpoint(path, new_model(1, **TINY))  # over a regular file
    (tmp_path / "link.npz").symlink_to(path)
    save_checkpoint(tmp_path / "link.npz", new_model(2, **TINY))  # the link is replaced
    (tmp_path / "dangling.npz").symlink_to(tmp_path / "nowhere.npz")
    save_checkpoint(tmp_path / "dangling.npz", new_model(3, **TINY))
    for name, seed in (("m.npz", 1), ("link.npz", 2), ("dangling.npz", 3)):
        loaded, _ = load_checkpoint(tmp_path / name)
        np.testing.assert_array_equal(loaded.generator.W, new_model(seed, **TINY).generator.W)


def test_cli_train_refuses_a_non_regular_out_before_training(tmp_path):
    for what, path in non_regular_files(tmp_path).items():
        before = kinds(path)
        result = run("train", "--steps", "1", "--out", str(path), cwd=tmp_path)
        assert result.returncode == 2 and result.stdout == "", (what, result)
        refusal = (f"--out {path}: not a regular file, so a checkpoint is not saved over it "
                   f"(got {what})\n")
        if what == "a symlink to a folder":  # the folder check speaks first
            refusal = f"--out {str(path)!r:.60} is a folder; give a file name"
        assert result.stderr.startswith(refusal.replace("…", "")[:59])
        assert kinds(path) == before


def test_a_save_removes_what_killed_saves_left(tmp_path):
    old, fresh = tmp_path / ".minitf-abcd1234.tmp", tmp_path / ".minitf-efgh5678.tmp"
    for leftover in (old, fresh):
        leftover.write_bytes(b"partial")
    two_days_ago = time.time() - 2 * 24 * 3600
    os.utime(old, (two_days_ago, two_days_ago))
    save_checkpoint(tmp_path / "m.npz", new_model(0, **TINY))
    assert not old.exists() and fresh.exists()  # a fresh one may be another save's


# P2: the model load_translator gives is the caller's own; the cache sees every rewrite

def test_changing_the_loaded_model_does_not_change_translate():
    before = translate(["one thousand five", "twelve"])
    model, meta = load_translator()
    model.generator.b[5] += 100
    meta["metadata"]["steps"] = -1
    assert translate(["one thousand five", "twelve"]) == before == ["一千零五", "十二"]
    again, again_meta = load_translator()
    assert again is not model and again.generator.b[5] != model.generator.b[5]
    assert again_meta["metadata"]["steps"] != -1


def test_a_rewrite_with_the_same_mtime_is_seen(tmp_path):
    path = tmp_path / "t.npz"
    first, second = new_model(1, **TINY), new_model(2, **TINY)
    save_translator(path, first)
    translate("five", checkpoint=path)  # cached now
    stamp = os.stat(path).st_mtime_ns
    save_translator(path, second)
    os.utime(path, ns=(stamp, stamp))  # as a file system with coarse timestamps would
    assert os.stat(path).st_mtime_ns == stamp
    loaded, _ = load_translator(path)
    np.testing.assert_array_equal(loaded.generator.W, second.generator.W)
    got = translate(["five", "one thousand two hundred"], checkpoint=path)
    assert got == _translate_with(second, ["five", "one thousand two hundred"])


def _translate_with(model, texts):
    words = [tasks.canonical_english(t).split() for t in texts]
    meta = {"source_vocab": tasks.SOURCE_VOCAB, "target_vocab": tasks.TARGET_VOCAB}
    return translator._decode(model, meta, words, 1)


# P3: never save a checkpoint the loader refuses

@pytest.mark.parametrize("max_len", [MAX_POSITIONS + 1, 100000])
def test_a_max_len_the_loader_refuses_is_not_saved(tmp_path, max_len):
    model = Transformer(10, 10, d_model=2, num_heads=1, num_layers=1, d_ff=2, max_len=max_len)
    with pytest.raises(ValueError, match=f"not saved: the config's max_len={max_len} is more "
                                         f"than {MAX_POSITIONS} positions"):
        save_checkpoint(tmp_path / "m.npz", model)
    assert list(tmp_path.iterdir()) == []
    model = Transformer(10, 10, d_model=2, num_heads=1, num_layers=1, d_ff=2,
                        max_len=MAX_POSITIONS)
    load_checkpoint(save_checkpoint(tmp_path / "m.npz", model))  # the limit itself is fine


def test_metadata_too_long_is_not_saved_and_named(tmp_path):
    model = new_model(0, **TINY)
    with pytest.raises(ValueError, match=r"not saved: the metadata is too long: [\d,]+ "
                                         r"characters, more than the 1,048,576"):
        save_checkpoint(tmp_path / "m.npz", model, losses=list(range(300000)))
    assert list(tmp_path.iterdir()) == []
    just_fits = "x" * (MAX_TEXT - len(json.dumps({"note": ""})))
    load_checkpoint(save_checkpoint(tmp_path / "m.npz", model, note=just_fits))


def test_metadata_that_json_cannot_hold_is_named(tmp_path):
    with pytest.raises(ValueError, match=r"metadata losses=array\(.*cannot be stored as JSON"):
        save_checkpoint(tmp_path / "m.npz", new_model(0, **TINY), losses=np.zeros(3))
    with pytest.raises(ValueError, match="metadata steps=np.int64.*cannot be stored as JSON"):
        save_checkpoint(tmp_path / "m.npz", new_model(0, **TINY), steps=np.int64(3))


@pytest.mark.slow
def test_vocabularies_too_long_are_not_saved(tmp_path):
    size = (1 << 20) + 1
    model = Transformer(size, size, d_model=2, num_heads=1, num_layers=1, d_ff=2, max_len=4)
    vocab = tasks.Vocab([f"w{i}" for i in range(size - 4)])
    with pytest.raises(ValueError, match=r"not saved: the source_vocab is too long: 1,048,577 "
                                         r"tokens, more than the 1,048,576"):
        save_checkpoint(tmp_path / "m.npz", model, source_vocab=vocab, target_vocab=vocab)
    assert list(tmp_path.iterdir()) == []


# P4: a model built from numpy ints saves and loads

def test_a_model_of_numpy_int_sizes_saves_and_loads(tmp_path):
    model = Transformer(np.int64(10), np.int32(10), d_model=np.int64(8), num_heads=np.int64(2),
                        num_layers=np.uint8(1), d_ff=np.int16(16), max_len=np.int64(8))
    assert all(type(v) is int for k, v in vars(model.config).items()
               if k not in ("norm_first", "activation"))
    loaded, meta = load_checkpoint(save_checkpoint(tmp_path / "m.npz", model))
    assert meta["config"] == model.config


# P5: every OSError is one line and an exit status; a model trained is never lost

@pytest.mark.parametrize("make, expected", [
    (lambda d: os.symlink("loop.npz", d / "loop.npz") or "loop.npz",
     "loop.npz: Too many levels of symbolic links"),
    (lambda d: (d / "afile").write_text("") or "afile/x.npz", "afile/x.npz: Not a directory"),
    (lambda d: "z" * 5000 + ".npz", "zzz…: File name too long"),
])
def test_cli_translate_names_an_unreadable_checkpoint_in_one_line(tmp_path, make, expected):
    result = run("translate", "--checkpoint", make(tmp_path), "five", cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
    head, tail = expected.split("…") if "…" in expected else (expected, "")
    assert tail in result.stderr and head in result.stderr and len(result.stderr) < 300


def test_cli_translate_with_stdin_open_for_writing_only(tmp_path):
    with open(os.devnull, "w") as write_only:
        result = subprocess.run([sys.executable, "-m", "minitf", "translate"], stdin=write_only,
                                capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "cannot read stdin: Bad file descriptor\n"


def test_a_failed_save_after_training_saves_the_model_elsewhere(tmp_path, monkeypatch, capsys):
    spare = tmp_path / "spare"
    spare.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spare))
    save = cli.save_translator

    def full_disk(path, model, **metadata):
        if str(path) == str(tmp_path / "t.npz"):
            raise OSError(28, "cannot save: No space left on device", str(path))
        return save(path, model, **metadata)

    monkeypatch.setattr(cli, "save_translator", full_disk)
    status = cli.main(["train", "--steps", "1", "--quiet", "--out", str(tmp_path / "t.npz")])
    out, err = capsys.readouterr()
    (fallback,) = spare.glob("minitf-translator-*.npz")
    assert status == 1 and not (tmp_path / "t.npz").exists()
    assert err == (f"cannot save to {tmp_path / 't.npz'} (No space left on device); "
                   f"saved the trained model to {fallback} instead\n")
    assert out.splitlines()[-1].endswith(f"saved to {fallback}")
    assert load_checkpoint(fallback)[1]["metadata"]["steps"] == 1


def test_a_save_that_fails_everywhere_is_one_line(tmp_path):
    def small_files():  # every file this process writes stops at 64 KiB (EFBIG)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 16, 1 << 16))

    result = run("train", "--steps", "1", "--quiet", "--out", "t.npz", cwd=tmp_path,
                 preexec_fn=small_files)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("cannot save the trained model to t.npz (File too large), "
                                    "nor to the temporary folder (File too large)")
    assert len(result.stderr.splitlines()) == 1
    assert not list(tmp_path.iterdir())


# P11: a stdin line has a bounded length

def test_an_endless_stdin_line_is_refused_not_read_to_the_end(tmp_path):
    def one_gib():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    with open("/dev/zero") as zeros:
        result = subprocess.run([sys.executable, "-m", "minitf", "translate"], stdin=zeros,
                                capture_output=True, text=True, timeout=120, preexec_fn=one_gib)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == f"line 1 is longer than {cli.MAX_LINE:,} characters; give one " \
                            "number per line\n"


def test_the_lines_before_a_too_long_line_are_answered():
    text = "five\nsix\n" + "x" * (cli.MAX_LINE + 1) + "\nseven\n"
    result = run("translate", stdin=text)
    assert (result.returncode, result.stdout) == (2, "五\n六\n")
    assert result.stderr.startswith("line 3 is longer than 65,536 characters")
    fits = "five\n" + " " * (cli.MAX_LINE - len("six\n")) + "six\n"
    assert run("translate", stdin=fits).stdout == "五\n六\n"


# P12: a phrase longer than a checkpoint's max_len is refused alone, named

@pytest.fixture(scope="module")
def short_translator(tmp_path_factory):
    path = tmp_path_factory.mktemp("short") / "short.npz"
    save_translator(path, new_model(0, **TINY, max_len=4))
    return path


def test_translate_names_the_phrase_too_long_for_the_checkpoint(short_translator):
    texts = ["five", "one thousand two hundred thirty four", "six"]
    results = translate_each(texts, checkpoint=short_translator)
    assert isinstance(results[0], str) and isinstance(results[2], str)
    assert str(results[1]) == "6 words, more than this translator reads: its max_len=4 holds " \
                              "3 words and <eos>"
    with pytest.raises(ValueError, match=r"^texts\[1\] 'one thousand two hundred thirty four': "
                                         r"6 words"):
        translate(texts, checkpoint=short_translator)
    assert isinstance(translate("one hundred five", checkpoint=short_translator), str)  # 3 words


def test_cli_answers_the_other_lines_when_one_is_too_long(short_translator):
    result = run("translate", "--checkpoint", str(short_translator),
                 stdin="five\none thousand two hundred thirty four\nsix\n")
    lines = result.stdout.split("\n")
    assert result.returncode == 2 and len(lines) == 4 and lines[1] == "" and lines[0] and lines[2]
    assert result.stderr.startswith("line 2 'one thousand two hundred thirty four': 6 words")


# P17: a byte-order mark before the first line

def test_stdin_with_a_byte_order_mark():
    result = run("translate", stdin="\ufefffive\nsix\n")
    assert (result.returncode, result.stdout, result.stderr) == (0, "五\n六\n", "")
    result = run("translate", stdin="five\n\ufeffsix\n")  # only the first line's is a mark
    assert result.returncode == 2 and "line 2" in result.stderr


# P18: with stderr closed, refusals never land among the translations

def test_closed_stderr_keeps_stdout_to_the_translations():
    result = subprocess.run(
        f"{sys.executable} -m minitf translate five fourty six 2>&-", shell=True,
        capture_output=True, text=True, encoding="utf-8", timeout=120)
    assert (result.returncode, result.stdout) == (2, "五\n\n六\n")


# P19: an --out that ends in a separator names a folder

@pytest.mark.parametrize("out", ["new/", "new//", "./new/"])
def test_cli_train_refuses_an_out_ending_in_a_separator(tmp_path, out):
    result = run("train", "--steps", "1", "--out", out, cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == f"--out {out}: ends with '/', so it names a folder; give a file " \
                            f"name, e.g. {out}translator.npz\n"
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="ends with '/'"):
        save_checkpoint(f"{tmp_path}/{out}", new_model(0, **TINY))


# Thread control: train sets BLAS threads in-process with threadpoolctl, no re-run

def test_cli_train_sets_blas_threads_in_this_process(monkeypatch, capsys, tmp_path):
    from threadpoolctl import threadpool_info
    seen = []
    train = cli.train_translator

    def spy(*args, **kwargs):
        seen.append({p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"})
        return train(*args, **kwargs)

    monkeypatch.setattr(cli, "train_translator", spy)
    monkeypatch.setattr(os, "execve", lambda *a: pytest.fail("train re-ran itself"))
    for variable in cli.BLAS_THREAD_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    for extra, threads in (([], 1), (["--threads", "2"], 2)):
        assert cli.main(["train", "--steps", "1", "--quiet", *extra,
                         "--out", str(tmp_path / "t.npz")]) == 0
        assert f"BLAS threads {threads}" in capsys.readouterr().out.splitlines()[0]
        assert seen.pop() == {threads}
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert cli._blas_threads(cli._parser().parse_args(["train"])) == 2
