"""Structural rank of a sparse Theorem 1 pattern: SciPy vs NetworkX, timed side by side.

Not a test: prints wall-clock times. Default d = 64 (d_in = d_out = 64, m = n = 4096), keep
probability p on both frozen matrices, one seeded draw per repetition.

    python benchmarks/bench_structural_rank.py [--d 64] [--p 0.3] [--factor 1] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

from exactnorm.analysis.structural import (
    dead_neurons,
    khatri_rao_pattern,
    structural_rank_networkx,
    structural_rank_scipy,
)
from exactnorm.analysis.sweeps import hidden_width
from exactnorm.exact.sampling import bernoulli_mask, layer_rng


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--p", type=float, default=0.3)
    ap.add_argument("--factor", default="1")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-networkx", action="store_true")
    args = ap.parse_args()
    d, m = args.d, hidden_width(args.d, args.factor)
    print(f"d = {d}, n = d² = {d * d}, m = {m}, p = {args.p}")
    print(f"{'draw':>4} {'nnz(K)':>10} {'dead':>5} {'build [s]':>10} {'scipy rank':>10} "
          f"{'scipy [s]':>10} {'networkx rank':>13} {'networkx [s]':>12}")
    for t in range(args.repeat):
        rng = layer_rng(args.seed, d, d, m, t)
        mask_in = bernoulli_mask(rng, m, d, args.p)
        mask_out = bernoulli_mask(rng, d, m, args.p)
        t0 = time.perf_counter()
        P = khatri_rao_pattern(mask_in, mask_out)
        t_build = time.perf_counter() - t0
        dead = len(set(sum(dead_neurons(mask_in, mask_out), [])))
        t0 = time.perf_counter()
        r_scipy = structural_rank_scipy(P)
        t_scipy = time.perf_counter() - t0
        if args.skip_networkx:
            r_nx, t_nx = "-", float("nan")
        else:
            t0 = time.perf_counter()
            r_nx = structural_rank_networkx(P)
            t_nx = time.perf_counter() - t0
            assert r_nx == r_scipy, (r_nx, r_scipy)
        print(f"{t:>4} {P.nnz:>10} {dead:>5} {t_build:>10.3f} {r_scipy:>10} {t_scipy:>10.3f} "
              f"{r_nx!s:>13} {t_nx:>12.3f}")


if __name__ == "__main__":
    main()
