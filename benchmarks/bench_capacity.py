"""exactnorm capacity on networks trained on digits: time, peak memory and bytes per verdict.

The issue's acceptance cases (issue 33), each in a fresh child process so that its peak RSS is
its own: the capacity profile of a frozen 64–256–10 and 64–1024–10 MLP (trained on one half of
scikit-learn's digits, float32 ONNX via skl2onnx), a linear 64 → 10 target (RidgeClassifier on
the other half) from both, an independently trained 64–32–10 MLP, a BatchNorm re-tuning of the
frozen network itself (an ONNX MLP with BatchNormalization), ``--best`` at width 256, and the
checks of each document with both arithmetics. Also the generation time of proof table T11.
Target: every verdict under a minute on 2 cores. Results: ``results/capacity.csv``.

Run: ``python benchmarks/bench_capacity.py [--skip-wide]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import say, write_csv  # noqa: E402

CHILD = r"""
import json, resource, sys, time
from exactnorm import api, checker, checker_flint
from exactnorm.certificate import certificate_bytes
args = json.loads(sys.argv[1])
t = time.perf_counter()
r = api.capacity(args["frozen"], box=args.get("box"), target=args.get("target"),
                 best=args.get("best", False), check=False)
total = time.perf_counter() - t
row = {"verdict": r.word or ("universal" if r.profile[0].universal else "not universal"),
       "witness": r.decision.witness if r.decision else None, "seconds": round(total, 2),
       "stages": {k: round(v, 2) for k, v in r.seconds.items()}}
if r.document is not None:
    row["bytes"] = len(certificate_bytes(r.document))
    for name, ck in (("flint", checker_flint), ("pure", checker)):
        t = time.perf_counter()
        v = ck.check_certificate(r.document)
        row[f"check_{name}"] = round(time.perf_counter() - t, 2)
        assert v.ok, v.message
row["peak_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
print(json.dumps(row))
"""


def _models(folder: Path, wide: bool) -> None:
    from skl2onnx import to_onnx
    from sklearn.datasets import load_digits
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import RidgeClassifier
    from sklearn.neural_network import MLPClassifier

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.analysis.test_capacity import _bn, mlp_onnx

    X, y = load_digits(return_X_y=True)
    X, half = X / 16, len(X) // 2
    x0 = np.zeros((1, 64), dtype=np.float32)
    specs = [("f256", 256, slice(0, half), 100, 0), ("g32", 32, slice(half, None), 200, 1)]
    if wide:
        specs.append(("f1024", 1024, slice(0, half), 100, 0))
    models = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for name, width, part, iters, seed in specs:
            t = time.perf_counter()
            m = MLPClassifier(hidden_layer_sizes=(width,), max_iter=iters, random_state=seed)
            models[name] = m.fit(X[part], y[part])
            say(f"trained {name} in {time.perf_counter() - t:.1f} s")
            (folder / f"{name}.onnx").write_bytes(
                to_onnx(m, x0, options={"zipmap": False}).SerializeToString())
    lin = RidgeClassifier().fit(X[half:], y[half:])
    np.savez(folder / "lin.npz", W1=lin.coef_.astype(np.float32),
             b1=lin.intercept_.astype(np.float32), activations=np.array(["identity"]))
    m = models["f256"]
    rng = np.random.default_rng(3)
    bn1, bn2 = _bn(rng, 256), _bn(rng, 10)
    re1 = (rng.uniform(-2, 2, 256), rng.uniform(-1, 1, 256), bn1[2], bn1[3])
    re2 = (rng.uniform(-2, 2, 10), rng.uniform(-1, 1, 10), bn2[2], bn2[3])
    W1, W2, (b1, b2) = m.coefs_[0].T, m.coefs_[1].T, m.intercepts_
    mlp_onnx(folder / "bn.onnx", [{"W": W1, "b": b1, "bn": bn1, "relu": True},
                                  {"W": W2, "b": b2, "bn": bn2}])
    mlp_onnx(folder / "bn_retuned.onnx", [{"W": W1, "b": b1, "bn": re1, "relu": True},
                                          {"W": W2, "b": b2, "bn": re2}])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-wide", action="store_true", help="no 64-1024-10 network")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-capacity-"))
    _models(folder, not args.skip_wide)
    cases = [
        ("profile 64-256-10", {"frozen": "f256.onnx"}),
        ("linear 64-10 from width 256", {"frozen": "f256.onnx", "box": "0:1",
                                         "target": "lin.npz"}),
        ("64-32-10 MLP from width 256", {"frozen": "f256.onnx", "box": "0:1",
                                         "target": "g32.onnx"}),
        ("BatchNorm re-tuning of 64-256-10", {"frozen": "bn.onnx", "box": "0:1",
                                              "target": "bn_retuned.onnx"}),
        ("best: linear from width 256", {"frozen": "f256.onnx", "box": "0:1",
                                         "target": "lin.npz", "best": True}),
    ]
    if not args.skip_wide:
        cases += [("profile 64-1024-10", {"frozen": "f1024.onnx"}),
                  ("linear 64-10 from width 1024", {"frozen": "f1024.onnx", "box": "0:1",
                                                    "target": "lin.npz"})]
    rows = []
    for name, spec in cases:
        spec = {k: str(folder / v) if k in ("frozen", "target") else v for k, v in spec.items()}
        res = subprocess.run([sys.executable, "-c", CHILD, json.dumps(spec)], capture_output=True,
                             text=True, check=True)
        row = json.loads(res.stdout.strip().splitlines()[-1])
        say(f"{name:<36} {row['verdict']:<14} {row['seconds']:>7.2f} s  "
            f"check flint {row.get('check_flint', '–')} s, pure {row.get('check_pure', '–')} s, "
            f"{row.get('bytes', '–')} bytes, peak {row['peak_mib']} MiB  {row['stages']}")
        rows.append([name, row["verdict"], row.get("witness"), row["seconds"],
                     row.get("check_flint"), row.get("check_pure"), row.get("bytes"),
                     row["peak_mib"], "under a minute" if row["seconds"] < 60 else "MISSES"])
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "exactnorm", "tables", "--only", "T11", "--out",
                    str(folder / "proofs")], check=True, capture_output=True)
    t11 = time.perf_counter() - t
    say(f"proof table T11 (c0 = c2 = 3 … 24): {t11:.1f} s")
    rows.append(["table T11", "", "", round(t11, 2), "", "", "", "", ""])
    path = write_csv("capacity", ["case", "verdict", "witness", "seconds", "check flint s",
                                  "check pure s", "bytes", "peak MiB", "target"], rows)
    say(f"written {path}")


if __name__ == "__main__":
    main()
