"""Singular-draw rate and γ size by frozen-weight distribution and system shape.

Why: the default distribution must make every construction non-singular with high probability,
including the trade-off's width-1 blocks, where ``K = V_out · diag(V_in)`` is singular as soon as
one entry of ``V_in`` is 0 (``int:8``: probability ``1 − (16/17)^m``). This script measures, for
each distribution and each Khatri–Rao shape ``d_in × d_out`` (``m = d_in·d_out``), the fraction of
draws of the pair at layers 1 and 2 of segment 1 over seeds ``0 … n−1`` whose system has exact
rank ``< m``
(FLINT's exact rank), the singular rate of the trade-off's final ``d × d`` matrix, and the median
bit size of ``γ`` solving ``K γ = vec(W)`` for a random ``int:8`` target ``W``.

Usage::

    python benchmarks/bench_singular.py [--draws N] [--quick]

Writes ``benchmarks/results/singular.csv`` and prints a Markdown table (docs/performance.md).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import say, write_csv  # noqa: E402
from flint import fmpz_mat  # noqa: E402

from exactnorm.constructions.theorem1 import draw_pair, khatri_rao_system  # noqa: E402
from exactnorm.exact.generator import draw  # noqa: E402
from exactnorm.exact.linalg import max_bits, vec  # noqa: E402
from exactnorm.exact.sampling import layer_rng, parse_distribution, sample_matrix  # noqa: E402
from exactnorm.exact.streams import StreamKey  # noqa: E402

DISTRIBUTIONS = ("set:-1,1", "int:1", "nonzero:3", "int:8", "nonzero:8", "int:64", "bits:16")
#: (d_in, d_out): trade-off blocks of width 1 and 2 at small and MNIST-like widths, Theorem 1
SHAPES = ((1, 4), (1, 16), (1, 128), (2, 4), (2, 16), (3, 4), (4, 4))
FINAL_SIZES = (2, 4, 10)


def singular_rate(dist: str, d_in: int, d_out: int, draws: int) -> tuple[float, int | None]:
    """Singular fraction and median γ bits (over at most 9 non-singular draws)."""
    dd = parse_distribution(dist)
    m = d_in * d_out
    bad, bits = 0, []
    for s in range(draws):
        V_in, V_out = draw_pair(s, 1, 0, d_in, d_out, m, dd)
        K = khatri_rao_system(V_in, V_out)
        if K.rank() < m:
            bad += 1
        elif len(bits) < 9:
            W = sample_matrix(layer_rng(s, 7), d_out, d_in, "int:8")
            rhs = fmpz_mat([[int(x)] for x in vec(W, "F").entries()])
            bits.append(max_bits(K.solve(rhs)))
    return bad / draws, (int(statistics.median(bits)) if bits else None)


def final_singular_rate(dist: str, d: int, draws: int) -> float:
    key = StreamKey(1, 1).key  # a final matrix is a square weight of its own position
    return sum(draw(s, key, d, d, dist)[0].rank() < d for s in range(draws)) / draws


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=300)
    ap.add_argument("--quick", action="store_true", help="40 draws (smoke test)")
    args = ap.parse_args()
    draws = 40 if args.quick else args.draws
    t0 = time.perf_counter()
    rows = []
    head = ["distribution"] + [f"{a}x{b}" for a, b in SHAPES] + [f"V_F {d}x{d}"
                                                                 for d in FINAL_SIZES]
    say("| " + " | ".join(head) + " |")
    say("|" + "---|" * len(head))
    for dist in DISTRIBUTIONS:
        cells, row = [], [dist]
        for d_in, d_out in SHAPES:
            rate, bits = singular_rate(dist, d_in, d_out, draws)
            cells.append(f"{rate:.3f} ({bits if bits is not None else '–'} b)")
            row += [rate, bits]
        for d in FINAL_SIZES:
            rate = final_singular_rate(dist, d, draws)
            cells.append(f"{rate:.3f}")
            row.append(rate)
        say(f"| {dist} | " + " | ".join(cells) + " |")
        rows.append(row)
    cols = ["distribution"]
    for a, b in SHAPES:
        cols += [f"singular_{a}x{b}", f"gamma_bits_{a}x{b}"]
    cols += [f"singular_final_{d}x{d}" for d in FINAL_SIZES]
    write_csv("singular", cols, rows)
    say(f"({draws} draws per cell, {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
