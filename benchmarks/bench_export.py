"""Float error of the ONNX and PyTorch exports against the exact target, at a realistic size.

Not a test: certifies a seeded random target (default widths 8 → 8 → 8 → 4, Theorem 1), exports
it to ONNX (``BatchNormalization`` and ``Mul``+``Add``, float32 and float64, run by onnxruntime)
and to the documented PyTorch module (run by ``torch.nn`` when installed, by
:func:`exactnorm.outputs.export.evaluate_state_dict` otherwise), and prints the largest
``|float − g(x)| / max(1, |g(x)|)`` over random points of the box, with ``g(x)`` exact. Written to
``benchmarks/results/export_float_error.csv``. Floats are never certified; this measures how close
a framework copy of a certified network stays.

    python benchmarks/bench_export.py [--widths 8,8,8,4] [--points 1000] [--mean 1/4 --scale 3/2]
"""

from __future__ import annotations

import argparse
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import say, write_csv  # noqa: E402

from exactnorm import api  # noqa: E402
from exactnorm.exact.sampling import layer_rng  # noqa: E402
from exactnorm.model.targets import random_target  # noqa: E402
from exactnorm.outputs.export import (  # noqa: E402
    evaluate_state_dict,
    onnx_model,
    torch_module,
    torch_state_dict,
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", default="8,8,8,4")
    ap.add_argument("--points", type=int, default=1000)
    ap.add_argument("--mean", default="1/4")
    ap.add_argument("--scale", default="3/2")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    widths = [int(w) for w in args.widths.split(",")]
    g = random_target(widths, seed=args.seed)
    doc = api.certificate_document(api.certify(g, seed=args.seed))
    assert api.check(doc).ok
    X = layer_rng(args.seed, 99).uniform(-1, 1, size=(args.points, widths[0]))
    exact = np.array([[float(v) for v in g.evaluate([Fraction(float(t)) for t in row])]
                      for row in X])

    def err(got: np.ndarray) -> float:
        return float(np.max(np.abs(np.asarray(got, np.float64) - exact)
                            / np.maximum(1.0, np.abs(exact))))

    rows = []
    try:
        import onnxruntime as ort

        for normalization in ("batchnorm", "muladd"):
            for dtype in ("float32", "float64"):
                model = onnx_model(doc, dtype=dtype, normalization=normalization,
                                   mean=args.mean, scale=args.scale)
                sess = ort.InferenceSession(model.SerializeToString(),
                                            providers=["CPUExecutionProvider"])
                rows.append(["onnx", normalization, dtype,
                             err(sess.run(None, {"x": X.astype(dtype)})[0])])
    except ImportError:
        say("onnxruntime not installed: pip install 'exactnorm[onnx]'")
    try:
        import torch

        for dtype in ("float32", "float64"):
            module = torch_module(doc, mean=args.mean, scale=args.scale, dtype=dtype)
            with torch.no_grad():
                got = module(torch.from_numpy(X.astype(dtype))).double().numpy()
            rows.append(["torch", "batchnorm", dtype, err(got)])
    except ImportError:
        acts = [L["activation"] for L in doc["network"]["layers"]]
        state = torch_state_dict(doc, mean=args.mean, scale=args.scale)
        rows.append(["torch layout (numpy)", "batchnorm", "float64",
                     err(evaluate_state_dict(state, acts, X))])
    frozen = [len(L["gamma"]) for L in doc["network"]["layers"]]
    say(f"target widths {widths}, frozen widths {frozen}, {args.points} points, "
        f"mean {args.mean}, scale {args.scale}")
    for r in rows:
        say(f"{r[0]:22s} {r[1]:9s} {r[2]}: max error {r[3]:.2e}")
    columns = ["format", "normalization", "dtype", "max_error"]
    say(f"wrote {write_csv('export_float_error', columns, rows)}")


if __name__ == "__main__":
    main()
