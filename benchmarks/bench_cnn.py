"""A LeNet-5-shaped CNN certified end to end with default options (issue 25).

The network (conv 1→6 5×5, ReLU, avgpool 2, conv 6→16 5×5, ReLU, avgpool 2, 256-120-84-10) was
trained with plain NumPy on scikit-learn's digits upsampled to 28×28 (``cnn_models.py``; the
float32 weights ship as ``lenet_digits.npz``, ``--train`` retrains them, about 20 s). Phases,
each timed with the peak RSS so far (this process and its finished children) and the bytes it
produced:

1. read the target (PyTorch state dict with the declared architecture), exactly;
2. certify (Theorem 1 over channels for both convolutions, the automatic dense construction for
   the head; ``--jobs``, default 2) and write the ``.json.gz`` certificate;
3. exact dense cross-check: both networks evaluated exactly at two corners of the box;
4. export to ONNX and compare with the original model under onnxruntime (max relative error);
5. the independent checker (python-flint) on the certificate;
6. ``exactnorm certify --target lenet.onnx --box 0:1`` (no other flag) in a fresh process: wall
   time and peak RSS of the whole command, certificate bytes.

Goal: ≤ 5 min, ≤ 4 GiB, certificate ≤ 200 MB on 2 cores.

Usage::

    python benchmarks/bench_cnn.py              # --jobs 2 --keep DIR --train
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import machine, peak_rss_mb, write_csv  # noqa: E402
from cnn_models import (  # noqa: E402
    ARCHITECTURE,
    INPUT_SHAPE,
    lenet_accuracy,
    onnx_of_lenet,
    write_lenet_npz,
)

WEIGHTS = HERE / "lenet_digits.npz"
GOAL = {"seconds": 300, "gib": 4, "mb": 200}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep", default=None, help="folder for the model and certificate")
    ap.add_argument("--train", action="store_true", help="retrain the weights first")
    ap.add_argument("--no-cli", action="store_true", help="skip phase 6")
    args = ap.parse_args()

    from exactnorm.api import check_file
    from exactnorm.certificate import exact_agreement, load_certificate, write_certificate
    from exactnorm.constructions.plan import construct
    from exactnorm.model.interop import target_from_state_dict
    from exactnorm.outputs.export import onnx_model

    folder = Path(args.keep or tempfile.mkdtemp(prefix="exactnorm-cnn-"))
    folder.mkdir(parents=True, exist_ok=True)
    if args.train or not WEIGHTS.exists():
        print("training:", write_lenet_npz(WEIGHTS))
    params = dict(np.load(WEIGHTS))
    from mlp_models import digits_images

    X, y = digits_images(28)
    print(f"machine: {machine()}")
    print(f"float32 model accuracy on all 1,797 digits: {lenet_accuracy(params, X, y):.4f}")
    rows = []

    def phase(name: str, t0: float, nbytes: int | str = "") -> None:
        rows.append([name, round(time.perf_counter() - t0, 2), round(peak_rss_mb()), nbytes])
        print(f"{name:<34} {rows[-1][1]:>8.2f} s  peak {rows[-1][2]:>6} MiB  {nbytes}", flush=True)

    t0 = time.perf_counter()
    target = target_from_state_dict(params, 0, 1, architecture=ARCHITECTURE,
                                    input_shape=INPUT_SHAPE)
    phase("1 read target (exact)", t0)
    t0 = time.perf_counter()
    c = construct(target, seed=0, jobs=args.jobs)
    phase("2a certify", t0)
    for r in c.reports:
        print(f"   layer {r.layer}: {r.d_in}→{r.d_out}, frozen widths {r.widths[:3]}, "
              f"systems {r.systems}, m ≤ {r.system_size}, rank {r.rank_text()}, "
              f"γ bits {r.gamma_bits}, β bits {r.beta_bits}, {r.seconds:.1f} s")
    cert = folder / "lenet.json.gz"
    t0 = time.perf_counter()
    size = write_certificate(c, cert)
    phase("2b write certificate (.json.gz)", t0, f"{size / 1e6:.1f} MB")
    del c
    t0 = time.perf_counter()
    doc = load_certificate(cert)
    phase("3a read certificate", t0)
    t0 = time.perf_counter()
    points = exact_agreement(doc, points=2)
    phase(f"3b exact cross-check ({points} corners)", t0)
    t0 = time.perf_counter()
    exported = folder / "export.onnx"
    exported.write_bytes(onnx_model(doc).SerializeToString())
    del doc
    original = folder / "lenet.onnx"
    onnx_of_lenet(params, original)
    import onnxruntime as ort

    def run(path: Path) -> np.ndarray:
        s = ort.InferenceSession(str(path))
        kind = np.float64 if s.get_inputs()[0].type == "tensor(double)" else np.float32
        return np.concatenate([s.run(None, {"x": X[i:i + 1].reshape(1, *INPUT_SHAPE)
                                           .astype(kind)})[0]
                               for i in range(0, 300)]).astype(np.float64)

    a, b = run(original), run(exported)
    rel = float(np.abs(a - b).max() / np.abs(a).max())
    same = float((a.argmax(1) == b.argmax(1)).mean())
    exact = target.evaluate_float(X[:300])
    rel64 = float(np.abs(b - exact).max() / np.abs(exact).max())
    phase("4 export ONNX (float64) + onnxruntime", t0,
          f"vs original float32 model: max rel. error {rel:.2e}, argmax agree {same:.3f}; "
          f"vs float64 target {rel64:.1e}")
    t0 = time.perf_counter()
    verdict = check_file(cert)
    phase("5 independent check (flint)", t0, "VALID" if verdict.ok else
          f"INVALID: {verdict.message[:70]}")
    if not args.no_cli:
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "exactnorm", "certify", "--target",
                            str(original), "--box", "0:1", "--out", str(folder / "cli.json.gz")],
                           capture_output=True, text=True)
        kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        out = (folder / "cli.json.gz")
        nbytes = out.stat().st_size if out.exists() else 0
        rows.append(["6 exactnorm certify (CLI)", round(time.perf_counter() - t0, 2),
                     round(kib / 1024), nbytes])
        print(f"{rows[-1][0]:<34} {rows[-1][1]:>8.2f} s  peak {rows[-1][2]:>6} MiB  "
              f"{nbytes / 1e6:.1f} MB, exit {r.returncode}")
        if r.returncode:
            print("   " + (r.stderr.strip().splitlines() or [""])[-1])
    total = sum(row[1] for row in rows[:-1] if not str(row[0]).startswith("6"))
    print(f"phases 1-5: {total:.1f} s; goal ≤ {GOAL['seconds']} s, ≤ {GOAL['gib']} GiB, "
          f"≤ {GOAL['mb']} MB")
    write_csv("cnn_lenet", ["phase", "seconds", "peak_mib", "bytes_or_note"], rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
