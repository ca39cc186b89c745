"""Issue #36 (P20): the torch bridge refuses a module without weights, decodes a wrapped one,
and gives each process on cuda a GPU of its own or refuses before spawning."""

import pytest
import torch

import minitf.pytorch.engine as engine
from minitf import tasks
from minitf.pytorch import greedy_decode, to_torch
from minitf.translator import BY_SHAPE, TRANSLATOR_CONFIG, TRANSLATOR_TRAINING, new_model

TINY = dict(d_model=16, num_heads=2, num_layers=1, d_ff=32)


@pytest.mark.parametrize("device", ["meta", torch.device("meta")])
def test_to_torch_refuses_the_meta_device(device):
    with pytest.raises(ValueError, match="device='meta' holds shapes but no weights"):
        to_torch(new_model(0, **TINY), device=device)
    assert to_torch(new_model(0, **TINY), device="cpu").generator.weight.device.type == "cpu"


def test_greedy_decode_of_a_data_parallel_module():
    module = to_torch(new_model(0, **TINY))
    src = tasks.make_batch([5, 12, 1005])[0]
    expected = greedy_decode(module, src, max_len=6)
    wrapped = torch.nn.DataParallel(module)  # on a CPU-only torch it runs the module itself
    assert torch.equal(greedy_decode(wrapped, src, max_len=6), expected)


def test_more_processes_than_gpus_are_refused_before_spawning(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(engine.mp, "spawn", lambda *a, **k: pytest.fail("spawned"))
    with pytest.raises(ValueError, match="nproc=2 processes on cuda need a GPU each; this "
                                         "machine has 1"):
        engine.train_with_torch(TRANSLATOR_TRAINING, model_config=TRANSLATOR_CONFIG,
                                numbers=None, by_shape=BY_SHAPE, nproc=2, device="cuda",
                                steps=1, batch_size=4)
