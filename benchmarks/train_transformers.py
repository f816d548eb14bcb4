"""Train the small transformers of exactnorm's transformer tests and benchmarks, and export them
with ``torch.onnx.export`` (needs PyTorch and onnxscript; CI reads the committed ONNX files).

Task: modular addition. A sequence is ``a b =`` (tokens ``a, b < P`` and ``=`` = ``P``); the
model predicts ``(a + b) mod P`` at the last position. Every pair is a training example (the
models memorise the table; the point is a real trained transformer, not generalisation).

Models (seeded, each trained in well under a minute on 2 cores):

* ``modadd_1l_preln``: 1 block, pre-LN, d_model 32, 4 heads, d_mlp 64, final LayerNorm;
* ``modadd_2l_preln``: 2 blocks, pre-LN, d_model 32, 2 heads, d_mlp 128, final LayerNorm;
* ``modadd_1l_postln``: 1 block, post-LN, d_model 32, 4 heads, d_mlp 64;
* ``modadd_1l_gelu``: as the first with a GELU MLP (for the refusal test; barely trained);
* ``tiny_preln``: 1 block, d_model 8, 2 heads, d_mlp 16, untrained-small (the default suite).

Exporters: TorchScript (``dynamo=False``) with explicit attention and a ``-inf`` causal mask
buffer, and dynamo (``dynamo=True``, onnxscript) with ``scaled_dot_product_attention(is_causal
=True)``; ``--decomposed`` exports with opset 14, where LayerNorm is written as ReduceMean, Sub,
Pow, Sqrt, Div, Mul, Add.

Usage: ``nice -n 10 python benchmarks/train_transformers.py [--out DIR] [--only NAME]``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

P = 23  # the modulus: vocabulary P + 1, sequences of 3 tokens


def build(torch, d, heads, d_mlp, blocks, pre, act="relu", sdpa=False, final_ln=True):
    nn = torch.nn
    F = torch.nn.functional

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
            self.fc1, self.fc2 = nn.Linear(d, d_mlp), nn.Linear(d_mlp, d)
            self.register_buffer("causal", torch.tril(torch.ones(8, 8)).bool())

        def attn(self, x):
            B, T, _ = x.shape
            dh = d // heads
            q, k, v = (m(x).view(B, T, heads, dh).transpose(1, 2)
                       for m in (self.q, self.k, self.v))
            if sdpa:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                a = (q @ k.transpose(-2, -1)) / dh ** 0.5
                a = a.masked_fill(~self.causal[:T, :T], float("-inf"))
                y = a.softmax(-1) @ v
            return self.o(y.transpose(1, 2).reshape(B, T, d))

        def mlp(self, x):
            h = self.fc1(x)
            return self.fc2(F.relu(h) if act == "relu" else F.gelu(h))

        def forward(self, x):
            if pre:
                x = x + self.attn(self.ln1(x))
                return x + self.mlp(self.ln2(x))
            x = self.ln1(x + self.attn(x))
            return self.ln2(x + self.mlp(x))

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok, self.pos = nn.Embedding(P + 1, d), nn.Embedding(3, d)
            self.blocks = nn.ModuleList(Block() for _ in range(blocks))
            self.lnf = nn.LayerNorm(d) if final_ln else nn.Identity()
            self.head = nn.Linear(d, P)

        def forward(self, idx):
            x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
            for b in self.blocks:
                x = b(x)
            return self.head(self.lnf(x))

    return Model()


def data(torch):
    a = torch.arange(P).repeat_interleave(P)
    b = torch.arange(P).repeat(P)
    x = torch.stack([a, b, torch.full_like(a, P)], dim=1)
    return x, (a + b) % P


def train(torch, model, seconds, steps, seed):
    torch.manual_seed(seed)
    x, y = data(torch)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    t0 = time.process_time()
    done = 0
    while done < steps:
        done += 1
        loss = torch.nn.functional.cross_entropy(model(x)[:, -1], y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if time.process_time() - t0 > seconds:
            break
    with torch.no_grad():
        acc = (model(x)[:, -1].argmax(-1) == y).float().mean().item()
    return done, float(loss.detach()), acc


MODELS = {
    # name: (d_model, heads, d_mlp, blocks, pre-LN, activation, sdpa/dynamo, train steps)
    "modadd_1l_preln": (32, 4, 64, 1, True, "relu", False, 1500),
    "modadd_2l_preln": (32, 2, 128, 2, True, "relu", True, 1500),
    "modadd_1l_postln": (32, 4, 64, 1, False, "relu", False, 1500),
    "modadd_1l_gelu": (32, 4, 64, 1, True, "gelu", False, 50),
    "tiny_preln": (8, 2, 16, 1, True, "relu", False, 200),
}


def export(torch, model, path, dynamo, opset=None):
    model.eval()
    x = torch.zeros(1, 3, dtype=torch.long)
    kwargs = {"dynamo": dynamo, "input_names": ["tokens"], "output_names": ["logits"]}
    if opset is not None:
        kwargs["opset_version"] = opset
    torch.onnx.export(model, (x,), str(path), **kwargs)
    import onnx

    # the dynamo exporter may write the weights beside the model: keep one self-contained file
    proto = onnx.load(str(path))
    onnx.save(proto, str(path), save_as_external_data=False)
    data = Path(f"{path}.data")
    if data.exists():
        data.unlink()


def main() -> None:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="tests/model/data")
    ap.add_argument("--only", default=None)
    ap.add_argument("--seconds", type=float, default=50.0, help="CPU seconds per model at most")
    ap.add_argument("--decomposed", action="store_true",
                    help="also export tiny_preln with opset 14 (decomposed LayerNorm)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    for name, (d, h, m, L, pre, act, sdpa, steps) in MODELS.items():
        if args.only and name != args.only:
            continue
        torch.manual_seed(0)
        model = build(torch, d, h, m, L, pre, act, sdpa)
        done, loss, acc = train(torch, model, args.seconds, steps, seed=0)
        export(torch, model, out / f"{name}.onnx", dynamo=sdpa)
        print(f"{name}: {done} steps, loss {loss:.4f}, accuracy {acc:.3f}, "
              f"{'dynamo' if sdpa else 'torchscript'} export")
        if name == "tiny_preln" and args.decomposed:
            export(torch, model, out / "tiny_preln_opset14.onnx", dynamo=False, opset=14)


if __name__ == "__main__":
    main()
