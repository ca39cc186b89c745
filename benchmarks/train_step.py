"""One training step (forward + backward + Adam) of minitf, and of PyTorch eager on the same model.

    python benchmarks/train_step.py [--threads N] [--steps 50] [--batch 64]

The model: the shipped translator's shape (minitf.translator.TRANSLATOR_CONFIG, printed when it
runs), on a batch of the number task with label smoothing 0.1.
Prints the median step time after a warm-up, and when torch is importable (it is never a
dependency of minitf) the same for an nn.Transformer with the same weights, threads and batch,
and the ratio. --threads sets the BLAS threads
(numpy) and torch.set_num_threads; by default both use what numpy's OpenBLAS would.

torch belongs in an environment of its own, never minitf's:
    python3 -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install torch numpy
    /tmp/torchvenv/bin/python benchmarks/train_step.py --threads 1
"""

import argparse
import os
import sys
from pathlib import Path


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS / torch threads (default: OPENBLAS_NUM_THREADS or all cores)")
    parser.add_argument("--steps", type=int, default=50, help="timed steps (default 50)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps first")
    parser.add_argument("--batch", type=int, default=64, help="batch size (default 64)")
    return parser.parse_args()


ARGS = parse_args()
if ARGS.threads:  # before numpy loads OpenBLAS
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(ARGS.threads)
THREADS = ARGS.threads or int(os.environ.get("OPENBLAS_NUM_THREADS")
                              or os.environ.get("OMP_NUM_THREADS") or os.cpu_count())

import numpy as np  # noqa: E402
from common import machine_line, times_in_turns  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # minitf without installing
from minitf import tasks  # noqa: E402
from minitf.module import no_grad  # noqa: E402
from minitf.train import Adam, cross_entropy  # noqa: E402
from minitf.translator import TRANSLATOR_CONFIG, new_model  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


def minitf_step(model, batch):
    src, tgt_in, tgt_out = batch
    optimizer = Adam(model, lr=1e-4)

    def step():
        logits = model.forward(src, tgt_in)
        _, dlogits = cross_entropy(logits, tgt_out, label_smoothing=0.1)
        model.zero_grad()
        model.backward(dlogits)
        optimizer.step()

    return step


class TorchTranslator(torch.nn.Module if torch else object):
    """nn.Transformer (post-LN, ReLU, dropout 0, no final norms, batch first) with minitf's
    embeddings × √d_model + sinusoidal positions and generator."""

    def __init__(self, model):
        super().__init__()
        nn, c = torch.nn, model.config
        d, h, ff, n = c.d_model, c.num_heads, c.d_ff, c.num_layers
        layer_args = dict(dropout=0.0, batch_first=True)
        self.src_embed = nn.Embedding(c.src_vocab_size, d)
        self.tgt_embed = nn.Embedding(c.tgt_vocab_size, d)
        self.transformer = nn.Transformer(
            d, h, dim_feedforward=ff, batch_first=True, dropout=0.0,
            custom_encoder=nn.TransformerEncoder(nn.TransformerEncoderLayer(d, h, ff, **layer_args),
                                                 n, enable_nested_tensor=False),
            custom_decoder=nn.TransformerDecoder(nn.TransformerDecoderLayer(d, h, ff, **layer_args),
                                                 n))
        self.generator = nn.Linear(d, c.tgt_vocab_size)
        self.register_buffer("pe", torch.from_numpy(model.pe.copy()))
        self.scale = d ** 0.5
        self.load_minitf(model)

    def load_minitf(self, model):
        """Copy minitf's weights (row-vector W (d_in, d_out)) into torch's (d_out, d_in)."""
        state = {k: torch.from_numpy(v) for k, v in model.state_dict().items()}
        own = {}
        for side, layers in (("encoder", self.transformer.encoder.layers),
                             ("decoder", self.transformer.decoder.layers)):
            for i in range(len(layers)):
                p = f"{side}.layers.{i}."
                attns = [("self_attn", "self_attn")]
                if side == "decoder":
                    attns.append(("cross_attn", "multihead_attn"))
                for ours, theirs in attns:
                    a = p + ours + "."
                    own[f"{p}{theirs}.in_proj_weight"] = torch.cat([state[a + f"W_{x}"].T
                                                                    for x in "qkv"])
                    own[f"{p}{theirs}.in_proj_bias"] = torch.cat([state[a + f"b_{x}"]
                                                                  for x in "qkv"])
                    own[f"{p}{theirs}.out_proj.weight"] = state[a + "W_o"].T
                    own[f"{p}{theirs}.out_proj.bias"] = state[a + "b_o"]
                for j in range(1, 4 if side == "decoder" else 3):
                    own[f"{p}norm{j}.weight"] = state[f"{p}norm{j}.gamma"]
                    own[f"{p}norm{j}.bias"] = state[f"{p}norm{j}.beta"]
                for j in (1, 2):
                    own[f"{p}linear{j}.weight"] = state[f"{p}ffn.W_{j}"].T
                    own[f"{p}linear{j}.bias"] = state[f"{p}ffn.b_{j}"]
        with torch.no_grad():
            self.src_embed.weight.copy_(state["src_embed.weight"])
            self.tgt_embed.weight.copy_(state["tgt_embed.weight"])
            self.generator.weight.copy_(state["generator.W"].T)
            self.generator.bias.copy_(state["generator.b"])
            for name, value in own.items():
                self.transformer.get_parameter(name).copy_(value)

    def forward(self, src, tgt_in):
        L_s, L_t = src.shape[1], tgt_in.shape[1]
        x = self.src_embed(src) * self.scale + self.pe[:L_s]
        y = self.tgt_embed(tgt_in) * self.scale + self.pe[:L_t]
        causal = torch.triu(torch.ones(L_t, L_t, dtype=torch.bool), 1)  # True = masked
        out = self.transformer(x, y, tgt_mask=causal, src_key_padding_mask=src == 0,
                               tgt_key_padding_mask=tgt_in == 0,
                               memory_key_padding_mask=src == 0)
        return self.generator(out)


def torch_step(model, batch):
    torch.set_num_threads(THREADS)
    net = TorchTranslator(model)
    src, tgt_in, tgt_out = (torch.from_numpy(a) for a in batch)
    with torch.no_grad(), no_grad():  # only looking: neither keeps anything for backward
        diff = float((net(src, tgt_in) - torch.from_numpy(model.forward(*batch[:2]))).abs().max())
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=0, label_smoothing=0.1)

    def step():
        logits = net(src, tgt_in)
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return step, diff


def main():
    print(f"{machine_line()} | timed with {THREADS} thread(s) | "
          f"torch {torch.__version__ if torch else 'not installed'}")
    model = new_model(0)  # the shipped translator's shape, TRANSLATOR_CONFIG
    numbers = np.random.default_rng(0).choice(tasks.MAX_NUMBER + 1, ARGS.batch, replace=False)
    batch = tasks.make_batch(numbers)
    print(f"model: {TRANSLATOR_CONFIG}, {model.num_parameters():,} parameters; "
          f"batch {ARGS.batch}, "
          f"src {batch[0].shape}, tgt {batch[1].shape}; median of {ARGS.steps} steps after "
          f"{ARGS.warmup}")
    steps = []
    if torch is not None:
        torch_run, diff = torch_step(model, batch)  # before minitf's steps change the weights
        print(f"torch logits agree with minitf's: max |diff| {diff:.1e}")
        steps.append(torch_run)
    times = [1000 * np.median(spent) for spent in
             times_in_turns([minitf_step(model, batch)] + steps, ARGS.steps, ARGS.warmup)]
    print(f"minitf train step: {times[0]:.1f} ms")
    if torch is not None:
        print(f"torch eager train step: {times[1]:.1f} ms")
        print(f"minitf / torch: {times[0] / times[1]:.2f} (below 1: minitf is faster)")


if __name__ == "__main__":
    main()
