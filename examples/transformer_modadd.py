"""A trained transformer, every weight matrix replaced by a frozen random ReLU network tuned only
in its normalization — exactly, for every input sequence (docs/transformers.md).

Trains, in under a minute on 2 cores, a 1-layer pre-LN ReLU transformer (d_model 32, 4 heads,
d_mlp 64) on modular addition (``a b =`` → ``(a + b) mod 23``, every pair), exports it with
``torch.onnx.export``, then ``exactnorm.certify`` reads the ONNX graph as a transformer (16
slots: the embedding, q, k, v of every head, the output projection, the MLP, the unembedding),
derives each slot's box (the one-hot cube, the LayerNorm rule ``b ± |g|·r``, the value hull of
the attention), realizes every slot by Theorem 1 in parallel, writes one certificate and checks
it with both checker arithmetics. Finally it compares, on every one of the 529 sequences of the
task, the read architecture in float64 with the exported model under onnxruntime.

Run: ``python examples/transformer_modadd.py [--out DIR] [--jobs N]`` (needs PyTorch,
onnxscript and ``pip install "exactnorm[onnx]"``; a few minutes of exact work in all).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None, help="folder for the model and the certificate")
    ap.add_argument("--jobs", default="auto")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("this example needs PyTorch: pip install torch onnxscript")
    import onnxruntime as ort
    from train_transformers import MODELS, P, build, data, export, train

    import exactnorm

    out = Path(args.out or tempfile.mkdtemp(prefix="exactnorm-transformer-"))
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    d, h, m, L, pre, act, sdpa, steps = MODELS["modadd_1l_preln"]
    torch.manual_seed(0)
    model = build(torch, d, h, m, L, pre, act, sdpa)
    t0 = time.process_time()
    done, loss, acc = train(torch, model, 55.0, steps, seed=0)
    print(f"trained {done} steps in {time.process_time() - t0:.0f} CPU s: loss {loss:.4f}, "
          f"accuracy {acc:.3f} on all {P * P} pairs")
    path = out / "modadd_1l_preln.onnx"
    export(torch, model, path, dynamo=False)

    jobs = args.jobs if args.jobs == "auto" else int(args.jobs)
    t0 = time.perf_counter()
    result = exactnorm.certify(str(path), jobs=jobs, progress=True)
    print(f"certified {len(result.document['slots'])} slots in "
          f"{time.perf_counter() - t0:.1f} s: {result.plan.transformer.describe()}")
    cert = out / "modadd_1l_preln.json.gz"
    size = exactnorm.save_certificate(result.document, cert)
    print(f"certificate {cert} ({size} bytes)")
    for pure in (True, False):
        v = exactnorm.check_file(cert, pure=pure)
        print(f"{'pure ' if pure else 'flint'} checker: {'VALID' if v.ok else 'INVALID'} — "
              f"{v.message[:240]}")

    sess = ort.InferenceSession(str(path))
    x, y = data(torch)
    tr = result.plan.transformer
    worst, agree = 0.0, 0
    for seq, label in zip(x.numpy(), y.numpy()):
        logits = sess.run(None, {"tokens": seq[None].astype(np.int64)})[0][0]
        mine = tr.evaluate_float(seq)
        worst = max(worst, float(np.abs(logits - mine).max()))
        agree += int(mine[-1].argmax() == logits[-1].argmax() == label)
    print(f"the read transformer vs onnxruntime on all {len(x)} sequences: largest logit "
          f"difference {worst:.2e}, {agree} correct and equal predictions")


if __name__ == "__main__":
    main()
