"""The checker's two arithmetics side by side: the standard-library reference against
python-flint, on the same certificates, in one run (docs/certificate-format.md; the goal is a
pure/flint ratio of at most 10 on every input).

Inputs:

* Theorem-1 certificates of random d-d-d targets, d = 8, 16, 24, 32;
* a box with very large coprime denominators: 8 inputs whose bounds have distinct
  200,000-bit denominators (a 1 MB certificate) — the input that took the previous pure
  checker more than 300 s;
* optionally, certificates given on the command line (e.g. the 784-128-10 MLP of
  ``bench_real_size.py --keep DIR`` or the LeNet of ``bench_cnn.py --keep DIR``).

Usage::

    python benchmarks/bench_checker_kernel.py [CERT.json.gz ...] [--sizes 8,16,24,32]
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import machine, write_csv  # noqa: E402

from exactnorm import checker, checker_flint  # noqa: E402
from exactnorm.certificate import certificate_document, load_certificate  # noqa: E402
from exactnorm.constructions.theorem1 import certify_theorem1  # noqa: E402
from exactnorm.model.targets import random_target  # noqa: E402


def big_denominator_box(bits: int = 200_000, inputs: int = 8) -> dict[str, Any]:
    """A valid certificate of g(x) = Σ w_t x_t on a box whose bounds have distinct coprime
    ``bits``-bit denominators (consecutive odd numbers near 2^bits share no factor 2 and few
    others; the lcm is about their product)."""
    sys.set_int_max_str_digits(0)
    base = 1 << bits
    dens = [base + 2 * k + 1 for k in range(inputs)]
    lower = [f"1/{d}" for d in dens]
    upper = [f"{d + 1}/{d}" for d in dens]
    w = [1, -1, 2, 1, 1, -3, 1, 2][:inputs]
    eye = [[int(r == c) for c in range(inputs)] for r in range(inputs)]
    return {"format": "exactnorm.certificate", "version": 1,
            "domain": {"lower": lower, "upper": upper},
            "target": {"layers": [{"weight": [w], "bias": [0], "activation": "identity"}]},
            "network": {"layers": [
                {"input": 0, "weight": eye, "gamma": [1] * inputs, "beta": [0] * inputs,
                 "activation": "relu"},
                {"input": 1, "weight": [w], "gamma": [1], "beta": [0],
                 "activation": "identity"}], "checkpoints": [2]}}


def timed(check: Any, doc: dict[str, Any]) -> tuple[float, Any]:
    doc = copy.deepcopy(doc)
    t0 = time.perf_counter()
    v = check(doc)
    return time.perf_counter() - t0, v


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("certificates", nargs="*", help="more certificate files to compare on")
    ap.add_argument("--sizes", default="8,16,24,32")
    ap.add_argument("--bits", type=int, default=200_000)
    args = ap.parse_args()
    print("machine:", machine())
    cases: list[tuple[str, dict[str, Any]]] = []
    for d in map(int, args.sizes.split(",")):
        g = random_target([d, d, d], seed=d)
        cases.append((f"theorem1 {d}-{d}-{d}", certificate_document(certify_theorem1(g, seed=0))))
    cases.append((f"box: 8 inputs, {args.bits}-bit denominators", big_denominator_box(args.bits)))
    for path in args.certificates:
        cases.append((Path(path).name, load_certificate(path)))
    rows = []
    print(f"{'certificate':<42} {'pure s':>9} {'flint s':>9} {'pure/flint':>10}  verdict")
    for name, doc in cases:
        tp, vp = timed(checker.check_certificate, doc)
        tf, vf = timed(checker_flint.check_certificate, doc)
        assert vp == vf, (name, vp, vf)
        ratio = tp / tf if tf > 0 else float("inf")
        print(f"{name:<42} {tp:9.2f} {tf:9.2f} {ratio:10.2f}  {'VALID' if vp.ok else vp.rule}",
              flush=True)
        rows.append([name, round(tp, 3), round(tf, 3), round(ratio, 2), vp.ok])
    write_csv("checker_kernel", ["certificate", "pure_s", "flint_s", "ratio", "valid"], rows)
    worst = max(r[3] for r in rows)
    print(f"largest pure/flint ratio: {worst:.2f} (goal ≤ 10)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
