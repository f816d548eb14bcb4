"""The checker's two arithmetics operation by operation: the time of every member of the typed
protocol (:class:`exactnorm.checker.protocol.Arithmetic`, and its ``linear`` operations) with
the standard-library reference and with python-flint, on the same inputs, side by side.

The inputs are the shapes the walk meets on real networks, at two number sizes:

* ``small``: a segment input of width 64, frozen draws ``nonzero:8`` of 256×64 and 64×256,
  tuned γ, β with 60-bit numerators over a 64-bit denominator (a float-derived target's size);
* ``big``: the same shapes with γ, β of 2,000-bit numerators and denominators (the size the
  maps of deep segments reach), and a ``huge`` product of a draw with a map of 10,000-bit
  entries (where FLINT's column-by-column product matters);
* ``ranges`` over one position (a dense segment) and over 196 positions (a 14×14 convolution
  output); ``vanishes`` on 128×128 draws, with products that do vanish (a redraw's proof);
  ``det_mod`` of 96×96 residues modulo 2^61 − 1 and the integer ``product`` of 64×64
  matrices of 200-bit entries.

Every result is compared between the arithmetics (``plain`` for maps) before a time is reported.

Usage::

    python benchmarks/bench_arithmetic_ops.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import machine, write_csv  # noqa: E402

from exactnorm.checker.arithmetic import PureArithmetic  # noqa: E402
from exactnorm.checker.budget import Budget  # noqa: E402
from exactnorm.checker.numbers import IntMatrix, IntVector  # noqa: E402
from exactnorm.checker.provenance import Draw  # noqa: E402
from exactnorm.checker.reading import Picks  # noqa: E402
from exactnorm.checker.regenerate import validate_record, words_per_entry  # noqa: E402
from exactnorm.checker.vocabulary import GENERATOR, MAX_MAP_ENTRIES  # noqa: E402
from exactnorm.checker_flint import FlintArithmetic  # noqa: E402


def draw_of(rows: int, cols: int, key: int, dist: str = "nonzero:8",
            columns: list[int] | None = None) -> Draw:
    record: dict[str, Any] = {"generator": GENERATOR, "seed": 0, "key": [key],
                              "distribution": dist, "shape": [rows, cols]}
    if columns is not None:
        record["mask"] = {"columns": columns}
    rec = validate_record(record, max_entries=MAX_MAP_ENTRIES)
    return Draw(record, rec.rows, rec.cols, rec.law not in ("rational", "gauss"),
                Budget.draw_bits(rec), words_per_entry(rec), False)


def vector(n: int, bits: int, rng: random.Random, den_bits: int) -> IntVector:
    return IntVector([rng.getrandbits(bits) - (1 << (bits - 1)) for _ in range(n)],
                     rng.getrandbits(den_bits) | 1 | (1 << (den_bits - 1)))


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """The fastest of ``repeat`` runs (at least one), and the last result."""
    best, out = float("inf"), None
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def view(ar: Any, name: str, x: Any) -> Any:
    """A comparable view of an operation's result (maps through ``plain``, with their zero
    columns dropped: the protocol lets an arithmetic leave them out)."""
    op = name.split(" ")[0]
    if op in ("compose", "compose_scaled", "compose_picks", "affine", "add", "reduced"):
        cols, rows, consts, den = ar.plain(x)
        keep = [k for k in range(len(cols)) if any(row[k] for row in rows)]
        return [cols[k] for k in keep], [[row[k] for k in keep] for row in rows], consts, den
    if op == "ranges":
        return [[int(v) for v in x[0]], [int(v) for v in x[1]], int(x[2]), list(x[3]),
                list(x[4])]
    if op == "weight":
        rows = x[0] if isinstance(x[0], list) else x[0].tolist()
        return [[int(v) for v in row] for row in rows], int(x[1])
    if op == "box":
        return x.positions
    if op == "support":
        return sorted(x)
    return x


def cases(size: str, ar: Any) -> list[tuple[str, Callable[[], Any]]]:
    """(operation, a call of it) on this arithmetic's own inputs, built the same way for both."""
    rng = random.Random(size)
    gbits, dbits = (60, 64) if size == "small" else (2000, 2000)
    width, wide = 64, 256
    V1, V2 = draw_of(wide, width, 1), draw_of(width, wide, 2)
    g1, b1 = vector(wide, gbits, rng, dbits), vector(wide, gbits, rng, dbits)
    M1, d1 = ar.weight(V1)
    M2, d2 = ar.weight(V2)
    n0 = ar.compose(M1, d1, None, width)  # 256 × 64, small integers
    n1 = ar.affine(g1, n0, b1)  # 256 × 64, γ-sized
    n2 = ar.compose(M2, d2, n1, width)  # 64 × 64
    other = ar.compose(*ar.weight(draw_of(wide, width, 3)), None, width)
    other = ar.affine(vector(wide, gbits, rng, dbits), other, vector(wide, gbits, rng, dbits))
    sel = Picks(tuple(rng.randrange(wide) for _ in range(wide)), wide)
    lo = [[rng.getrandbits(16) for _ in range(1)] for _ in range(width)]
    hi = [[x + rng.getrandbits(8) for x in row] for row in lo]
    fam1 = ar.box(lo, hi, 1 << 16)
    plo = [[rng.getrandbits(16) for _ in range(196)] for _ in range(width)]
    phi = [[x + rng.getrandbits(8) for x in row] for row in plo]
    fam196 = ar.box(plo, phi, 1 << 16)
    # vanishing products (what a redraw proves; no early exit): columns masks remove the
    # coordinates v is supported on
    kept = [t for t in range(128) if t % 4]
    Va, Vb = draw_of(128, 128, 4, "int:1", kept), draw_of(128, 128, 5, "int:1", kept)
    v = [0 if t % 4 else rng.randrange(1, 4) for t in range(128)]
    p = (1 << 61) - 1
    residues = [[rng.randrange(p) for _ in range(96)] for _ in range(96)]
    out = [
        ("weight (draw 256x64)", lambda: ar.weight(V1)),
        ("weight (explicit 256x64)", lambda: ar.weight(IntMatrix(V1.integers(), 7))),
        ("compose (input, 256x64)", lambda: ar.compose(M1, d1, None, width)),
        ("compose (64x256 . map)", lambda: ar.compose(M2, d2, n1, width)),
        ("compose_scaled (64x256 . diag(g) map + b)",
         lambda: ar.compose_scaled(M2, d2, n0, g1, b1, width)),
        ("compose_picks (selection of 256)", lambda: ar.compose_picks(sel, n1)),
        ("affine (256 rows)", lambda: ar.affine(g1, n0, b1)),
        ("add (256x64 + 256x64)", lambda: ar.add(n1, other)),
        ("ranges (64x64, 1 position)", lambda: ar.ranges(n2, fam1)),
        ("ranges (64x64, 196 positions)", lambda: ar.ranges(n2, fam196)),
        ("reduced (256x64)", lambda: ar.reduced(n1)),
        ("height (256x64)", lambda: ar.height(ar.reduced(n1))),
        ("plain (256x64)", lambda: ar.plain(n1)),
        ("support", lambda: ar.support(n1)),
        ("nrows", lambda: ar.nrows(n1)),
        ("box (64 x 196)", lambda: ar.box(plo, phi, 1 << 16)),
        ("vanishes (128x128 . v)", lambda: ar.vanishes(Va, None, v)),
        ("vanishes (128x128 diag(v) 128x128)", lambda: ar.vanishes(Va, Vb, v)),
        ("linear.det_mod (96x96 mod 2^61-1)", lambda: ar.linear.det_mod(residues, p)),
    ]
    if size == "big":
        hg, hb = vector(128, 10_000, rng, 16), vector(128, 16, rng, 16)
        m128 = ar.affine(hg, ar.compose(*ar.weight(draw_of(128, 32, 6)), None, 32), hb)
        Mh, dh = ar.weight(draw_of(32, 128, 7))
        out.append(("compose (32x128 . map of 10,000-bit entries)",
                    lambda: ar.compose(Mh, dh, m128, 32)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", default="small,big")
    args = ap.parse_args()
    print("machine:", machine())
    pure, flint = PureArithmetic(), FlintArithmetic()
    rows = []
    print(f"{'size':<6} {'operation':<48} {'pure ms':>10} {'flint ms':>10} {'pure/flint':>10}")
    for size in args.sizes.split(","):
        for (name, fp), (_, ff) in zip(cases(size, pure), cases(size, flint)):
            tp, rp = timed(fp, args.repeat)
            tf, rf = timed(ff, args.repeat)
            if view(pure, name, rp) != view(flint, name, rf):
                raise SystemExit(f"{size} {name}: the arithmetics disagree")
            ratio = tp / tf if tf > 0 else float("inf")
            print(f"{size:<6} {name:<48} {1e3 * tp:10.3f} {1e3 * tf:10.3f} {ratio:10.2f}",
                  flush=True)
            rows.append([size, name, round(1e3 * tp, 4), round(1e3 * tf, 4), round(ratio, 2)])
    write_csv("checker_kernel_ops", ["size", "operation", "pure_ms", "flint_ms", "ratio"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
