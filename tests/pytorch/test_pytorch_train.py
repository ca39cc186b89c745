"""`python -m minitf train --engine torch`: the numpy engine's task, batches, loss and
schedule with torch doing the arithmetic, in one process or several (torch.distributed).

Needs torch: tests/conftest.py leaves this file out when torch is not installed.
"""

import dataclasses
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from minitf import tasks
from minitf import translator as training
from minitf.pytorch.engine import train_with_torch
from minitf.translator import load_translator, translate

STEPS = 3
# What the command line passes: the translator's training, shape and batch mix.
TRANSLATOR = dict(config=training.TRANSLATOR_TRAINING, model_config=training.TRANSLATOR_CONFIG,
                  by_shape=training.BY_SHAPE)


@pytest.fixture(scope="module")
def numbers():
    """The CLI's numbers: the held-out set's size decides how the seeded draws go on."""
    return tasks.split()


@pytest.fixture(scope="module")
def numpy_run(numbers):
    model = training.new_model(0)
    history = training.train_translator(model, steps=STEPS, seed=0, numbers=numbers, log_every=1,
                             eval_size=20, verbose=False)
    return model, history


@pytest.fixture(scope="module")
def numpy_history(numpy_run):
    return numpy_run[1]


def test_one_torch_process_takes_the_numpy_engines_steps(numbers, numpy_run):
    """Same batches, loss, clipping, Adam and warm-up: the same losses step by step."""
    model, history = train_with_torch(**TRANSLATOR, nproc=1, steps=STEPS, seed=0,
                                      numbers=numbers, log_every=1, eval_size=20, verbose=False)
    numpy_model, numpy_history = numpy_run
    assert history["step"] == numpy_history["step"] == [1, 2, 3]
    np.testing.assert_allclose(history["lr"], numpy_history["lr"], rtol=1e-12)
    np.testing.assert_allclose(history["loss"][0], numpy_history["loss"][0], rtol=1e-6)
    np.testing.assert_allclose(history["loss"], numpy_history["loss"], rtol=1e-4)
    # The same updates: the weights moved, and to where the numpy engine's moved. Adam steps
    # every weight by about lr whatever its gradient's size, so a gradient that is 0 up to
    # rounding (all of b_k: softmax ignores a shift of every score) may step either way;
    # every other weight but a handful must agree far below one step.
    start, ours, theirs = (m.state_dict() for m in (training.new_model(0), model, numpy_model))
    assert max(np.abs(ours[k] - start[k]).max() for k in start) > 1e-5
    names = [k for k in start if not k.endswith("b_k")]
    close = np.concatenate([np.abs(ours[k] - theirs[k]).ravel() <= 1e-6 for k in names])
    assert close.mean() > 0.999, f"{(~close).sum()} of {close.size} weights differ"
    assert model.config == training.new_model(0).config
    assert str(model.dtype) == "float32"


def test_bad_settings_are_refused(numbers):
    with pytest.raises(TypeError, match="stepz"):
        train_with_torch(**TRANSLATOR, numbers=numbers, nproc=1, stepz=3)
    with pytest.raises(ValueError, match="device must be 'cpu' or 'cuda'"):
        train_with_torch(**TRANSLATOR, numbers=numbers, nproc=1, device="tpu")
    with pytest.raises(ValueError, match="leaves some of the 4 processes without rows"):
        train_with_torch(**TRANSLATOR, numbers=numbers, nproc=4, batch_size=2)
    with pytest.raises(ValueError, match="nproc must be an int >= 1"):
        train_with_torch(**TRANSLATOR, numbers=numbers, nproc=0)


def test_the_engine_takes_what_to_train_from_its_caller(numbers):
    """No default is the translator's: the engine does not know the app (no cycle)."""
    for missing in ("config", "model_config", "by_shape"):
        with pytest.raises(TypeError, match=missing):
            train_with_torch(**{k: v for k, v in TRANSLATOR.items() if k != missing},
                             numbers=numbers, nproc=1, steps=1)
    with pytest.raises(TypeError, match="numbers"):
        train_with_torch(**TRANSLATOR, nproc=1, steps=1)
    wrong = dataclasses.replace(training.TRANSLATOR_CONFIG, src_vocab_size=40)
    with pytest.raises(ValueError, match=r"model_config has vocabulary sizes \(40, 17\), not the "
                                         r"number task's \(34, 17\)"):
        train_with_torch(**{**TRANSLATOR, "model_config": wrong}, numbers=numbers, nproc=1)


@pytest.mark.parametrize(("options", "error", "match"), [
    (dict(log_every=0), ValueError, "log_every must be an int >= 1"),
    (dict(max_seconds=-1), ValueError, "max_seconds"),
    (dict(max_seconds=float("nan")), ValueError, "max_seconds"),
    (dict(eval_size=0), ValueError, "eval_size must be an int >= 1"),
    (dict(numbers="abc"), ValueError, "numbers must be a pair"),
    (dict(numbers=(np.arange(100), np.arange(0))), ValueError, r"numbers\[1\] \(test\)"),
    (dict(numbers=(np.arange(100), [-3])), ValueError, r"numbers\[1\].*0\.\.9999"),
    (dict(config="x"), TypeError, "config must be a TrainConfig"),
    (dict(model_config="x"), TypeError, "model_config must be a TransformerConfig"),
    (dict(verbose="yes"), TypeError, "verbose must be True or False"),
    (dict(seed=-1), ValueError, "seed must be an int >= 0"),
    (dict(threads=0), ValueError, "threads must be an int >= 1"),
    (dict(by_shape=1.5), ValueError, "by_shape"),
])
def test_every_argument_is_checked_before_any_process_starts(options, error, match):
    with pytest.raises(error, match=match):
        train_with_torch(**{**TRANSLATOR, "numbers": None, **options}, nproc=1, steps=1)


@pytest.mark.slow
def test_two_processes_train_a_checkpoint_minitf_translates_with(tmp_path, numbers,
                                                                  numpy_history):
    """The issue's check: --engine torch --nproc 2 on this laptop, then translate with it.

    Each process takes half of every batch; the mean loss it reports equals the one-process
    (numpy engine) run's, so the halves add up to the whole batch."""
    out = tmp_path / "two.npz"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "minitf", "train", "--engine", "torch", "--nproc", "2",
         "--steps", str(STEPS), "--out", str(out)],
        capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert "2 processes (gloo, cpu), 1 thread each" in lines[0]
    progress = re.fullmatch(rf"step {STEPS}/{STEPS}  loss (\d+\.\d{{4}})  held-out +\d+\.\d%  "
                            r"[\d,]+ tok/s", lines[1])
    assert progress, lines[1]
    mean_loss = np.mean(numpy_history["loss"])
    assert abs(float(progress.group(1)) - mean_loss) <= 2e-4 * mean_loss
    assert lines[2].startswith("exact match on held-out 2000 numbers: ")
    assert lines[2].endswith(str(out))

    model, meta = load_translator(out)
    assert meta["metadata"]["engine"] == "torch"
    assert meta["metadata"]["steps"] == STEPS
    assert model.config == training.new_model(0).config
    text = translate("one thousand five", checkpoint=out)
    assert set(text) <= set(tasks.CHARACTERS)
    cli = subprocess.run([sys.executable, "-m", "minitf", "translate", "--checkpoint", str(out),
                          "one thousand five"], capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0 and cli.stdout == text + "\n"
