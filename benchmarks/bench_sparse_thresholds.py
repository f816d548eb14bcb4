"""Cost of the T4 threshold searches: wall-clock time per (d, width factor) and in total.

Not a test: prints wall-clock times and the draws each search ran. T4 (``exactnorm tables
--only T4``) runs these searches for d ∈ {4, 8, 16, 32, 64} with 2 processes; its budget in CI
is 5–8 minutes. The rows (p*, counts) are the same for every ``--jobs``.

    python benchmarks/bench_sparse_thresholds.py [--sizes 4,8,16,32,64] [--jobs 2]
"""

from __future__ import annotations

import argparse
import time

from exactnorm.analysis.sweeps import ThresholdSearch, run_searches, search_threshold
from exactnorm.outputs.tables.sparse import T4_DRAWS, T4_FACTORS, T4_SEED


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="4,8,16,32,64")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--per-search", action="store_true",
                    help="also time every search serially (slow)")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    if args.per_search:
        print(f"{'d':>3} {'factor':>6} {'p*':>7} {'draws run':>9} {'time [s]':>9}")
        for d in sizes:
            for f in T4_FACTORS:
                start = time.perf_counter()
                row = search_threshold(ThresholdSearch(d, f, T4_DRAWS))
                draws = sum(v[2] for v in row["visited"])
                print(f"{d:>3} {f:>6} {row['p_star']:>7} {draws:>9} "
                      f"{time.perf_counter() - start:>9.1f}")
    start = time.perf_counter()
    run_searches([ThresholdSearch(d, f, T4_DRAWS, T4_SEED) for d in sizes for f in T4_FACTORS],
                 jobs=args.jobs)
    print(f"searches for d = {args.sizes}, jobs = {args.jobs}: "
          f"{time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
