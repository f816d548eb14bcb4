"""Sparse random frozen weights (docs/sparse.md): sweep outputs, presets and proof table T4.

T4 measures the threshold ``p*(d)`` — the keep probability from which on at least 99 % of
Bernoulli(p) mask patterns make the Theorem 1 system ``K = V_inᵀ ⊙ V_out`` generically invertible
(structural rank ``d²``, :mod:`~exactnorm.analysis.structural`) — for ``d ∈ {4, …, 64}`` at width
factors 1, 1.5 and 2, located by :class:`~exactnorm.analysis.sweeps.ThresholdSearch` (coarse scan
and bisection, 200 draws per point), and fits its scaling in ``d``
(:func:`~exactnorm.analysis.sparse_theory.least_squares`). At ``p*`` the patterns of
``d ∈ {4, 8}`` are also filled with concrete integers (``int:8`` and ``bits:20``) and certified
by rank modulo a prime / exact rank, next to the Schwartz–Zippel bound ``2n/|S|``.

The renderers of ``exactnorm sparse-sweep`` (transition curves, threshold table, plot) live here
too: analysis computes the cells, this module formats them.

>>> sorted(PRESETS)
['ci', 'large']
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from exactnorm.analysis.sparse_theory import (
    LinearFit,
    dead_neuron_threshold,
    least_squares,
    zero_row_threshold,
)
from exactnorm.analysis.structural import schwartz_zippel_bound
from exactnorm.analysis.sweeps import (
    THRESHOLD_RATE,
    Cell,
    ThresholdSearch,
    aggregate,
    estimate_thresholds,
    exact_ln,
    make_tasks,
    parse_grid,
    run_searches,
    run_sweep,
)
from exactnorm.errors import require_extra
from exactnorm.exact.files import atomic_write_bytes
from exactnorm.exact.sampling import parse_distribution
from exactnorm.outputs.tables.proof_table import ProofTable, fixed_decimal

__all__ = ["SweepPreset", "PRESETS", "table_t4", "concrete_at_threshold", "cells_table",
           "thresholds_table", "plot_transitions", "write_sweep_outputs", "threshold_fits",
           "T4_SIZES", "T4_FACTORS", "T4_DRAWS"]

_dec = fixed_decimal


@dataclass(frozen=True)
class SweepPreset:
    """A named sweep grid (sizes, width factors, p grid, draws per point, seed, mask side)."""

    sizes: tuple[int, ...]
    factors: tuple[str, ...]
    p_grid: str
    draws: int
    seed: int = 0
    mask_side: str = "both"
    chunk: int = 50

    def tasks(self) -> list[Any]:
        return make_tasks(sizes=self.sizes, factors=self.factors, ps=parse_grid(self.p_grid),
                          draws=self.draws, chunk=self.chunk, seed=self.seed,
                          mask_side=self.mask_side)


PRESETS: dict[str, SweepPreset] = {
    "ci": SweepPreset(sizes=(4, 8, 16), factors=("1", "1.5", "2"), p_grid="0.05:1:0.05",
                      draws=100),
    "large": SweepPreset(sizes=(4, 8, 16, 32), factors=("1", "1.5", "2"),
                         p_grid="0.025:1:0.025", draws=200),
}

#: the T4 threshold searches
T4_SIZES = (4, 8, 16, 32, 64)
T4_FACTORS = ("1", "1.5", "2")
T4_DRAWS = 200
T4_SEED = 0
#: worker processes for T4 (results do not depend on it)
T4_JOBS = 2
#: concrete value distributions checked at p* in T4, and the sizes where that is cheap
T4_VALUES = ("int:8", "bits:20")
T4_VALUE_SIZES = (4, 8)
#: failure budget of the necessary dead-neuron bound shown in T4
T4_DELTA = Fraction(1, 100)


def concrete_at_threshold(p_stars: dict[tuple[int, str], str], values: str,
                          sizes: Sequence[int], draws: int, seed: int = 0,
                          mask_side: str = "both") -> dict[tuple[int, str], Cell]:
    """Re-run the threshold cells ``(d, factor) → p*`` of ``sizes`` with concrete ``values``.

    The masks of draw ``t`` are identical to the pattern sweep's (same spawn keys); the values are
    drawn after them from the same generator.
    """
    out: dict[tuple[int, str], Cell] = {}
    for (d, factor), p in sorted(p_stars.items(), key=lambda kv: (kv[0][0], Fraction(kv[0][1]))):
        if d not in sizes:
            continue
        tasks = make_tasks(sizes=[d], factors=[factor], ps=[p], draws=draws, chunk=draws,
                           seed=seed, mask_side=mask_side, values=values)
        (cell,) = aggregate(run_sweep(tasks))
        out[(d, factor)] = cell
    return out


def _rate(cell: Cell | None) -> str:
    if cell is None:
        return "-"
    return f"{cell.concrete_singular}/{cell.concrete_checked}"


# ----------------------------------------------------------------- sparse-sweep renderers


def cells_table(cells: Sequence[Cell], command: str) -> ProofTable:
    """All cells as a :class:`ProofTable` (transition curves)."""
    with_values = any(c.values for c in cells)
    columns = ["d", "width factor", "m", "n = d²", "mask side", "p", "draws",
               "generically invertible", "fraction", "dead-neuron failures",
               "deficiency failures", "mean dead neurons", "expected nnz", "mean nnz",
               "d²√d", "mean nnz / d²√d"]
    if with_values:
        columns += ["values", "concrete checked", "concrete singular", "Schwartz–Zippel bound"]
    rows = []
    for c in cells:
        row = [c.d, c.factor, c.m, c.n, c.mask_side, c.p, c.draws, c.invertible,
               _dec(c.fraction, 4), c.dead_failures, c.deficiency_failures,
               _dec(Fraction(c.dead_neurons, c.draws), 3), _dec(c.expected_nnz, 1),
               _dec(c.mean_nnz, 1), _dec(c.reference_nnz, 1),
               _dec(c.mean_nnz / Fraction(c.reference_nnz), 3)]
        if with_values:
            size = parse_distribution(c.values).support_size if c.values else None
            bound = schwartz_zippel_bound(c.n, size) if size else None
            row += [c.values or "-", c.concrete_checked, c.concrete_singular,
                    _dec(bound, 6) if bound is not None else "-"]
        rows.append(row)
    return ProofTable(key="sweep", slug="cells", title="Sparse Khatri–Rao patterns: transition "
                      "curves", command=command, columns=columns, rows=rows)


def thresholds_table(cells: Sequence[Cell], command: str, key: str = "sweep",
                     slug: str = "thresholds") -> ProofTable:
    """The threshold table of a sweep: ``p*(d)`` against √(log d/d), log d/d and 2 log d/d."""
    rows = []
    for th in estimate_thresholds(cells):
        sq, lg, lg2 = th.references
        c, b = th.cell, th.below
        rows.append([
            th.d, th.factor, th.m, c.draws if c else "-",
            th.p_star if th.p_star else "> grid", _dec(c.fraction, 4) if c else "-",
            (f"{b.p}: {_dec(b.fraction, 3)} ({b.dead_failures} dead, "
             f"{b.deficiency_failures} deficient)") if b else "-",
            _dec(sq, 3), _dec(lg, 3), _dec(lg2, 3),
            _dec(Fraction(th.p_star) * th.d / exact_ln(th.d), 2)
            if th.p_star and th.d > 1 else "-",
            _dec(c.mean_nnz, 1) if c else "-",
            _dec(c.mean_nnz / Fraction(c.reference_nnz), 3) if c else "-",
        ])
    return ProofTable(
        key=key, slug=slug, title="Sparse Theorem 1: threshold p*(d) for generic invertibility",
        command=command,
        columns=["d", "width factor", "m", "draws", "p*(d)", "fraction at p*",
                 "grid point below p*", "√(log d/d)", "log d/d", "2 log d/d",
                 "p*·d/log d", "mean nnz at p*", "nnz / d²√d"],
        rows=rows)


def _save_png(fig: Any, path: str | os.PathLike[str]) -> None:
    import matplotlib.pyplot as plt

    def produce(fh: Any) -> None:
        fig.savefig(fh, format="png", dpi=100, metadata={"Software": None})

    try:
        atomic_write_bytes(path, produce)
    finally:
        plt.close(fig)


def plot_transitions(cells: Sequence[Cell], path: str | os.PathLike[str]) -> None:
    """Deterministic PNG of the transition curves: one panel per width factor, one line per d."""
    matplotlib = require_extra("matplotlib", "the sparse threshold plots (T4, sparse-sweep)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    factors = sorted({c.factor for c in cells}, key=Fraction)
    sizes = sorted({c.d for c in cells})
    with matplotlib.rc_context({"svg.hashsalt": "exactnorm", "path.simplify": False}):
        fig, axes = plt.subplots(1, len(factors), figsize=(4.0 * len(factors), 3.4), dpi=100,
                                 sharey=True, squeeze=False)
        for ax, f in zip(axes[0], factors):
            for i, d in enumerate(sizes):
                cs = sorted((c for c in cells if c.factor == f and c.d == d),
                            key=lambda c: Fraction(c.p))
                if not cs:
                    continue
                color = f"C{i % 10}"
                ax.plot([float(Fraction(c.p)) for c in cs], [float(c.fraction) for c in cs],
                        marker="o", markersize=3, color=color, label=f"d = {d}")
                if d > 1:
                    ax.axvline(2 * math.log(d) / d, color=color, linestyle=":", linewidth=0.8)
            ax.axhline(float(THRESHOLD_RATE), color="0.5", linestyle="--", linewidth=0.8)
            ax.set_title(f"width factor {f} (m = {f}·d²)")
            ax.set_xlabel("keep probability p")
            ax.set_xlim(0, 1)
            ax.set_ylim(-0.02, 1.02)
            ax.grid(True, linewidth=0.3)
        axes[0][0].set_ylabel("fraction generically invertible")
        axes[0][-1].legend(loc="lower right", fontsize=8)
        fig.suptitle("Structural rank of K = V_inᵀ ⊙ V_out (dotted: 2 log d / d)", fontsize=10)
        fig.tight_layout()
        _save_png(fig, path)


def write_sweep_outputs(rows: Sequence[dict[str, Any]], outdir: str | os.PathLike[str],
                        command: str, plot: bool = True) -> list[Path]:
    """Write ``cells.csv/.md``, ``thresholds.csv/.md`` and ``transitions.png`` (atomically)."""
    cells = aggregate(rows)
    out = Path(outdir)
    written = []
    for t in (cells_table(cells, command), thresholds_table(cells, command)):
        for suffix, text in ((".csv", t.csv()), (".md", t.markdown())):
            path = out / f"{t.slug}{suffix}"
            data = text.encode()
            atomic_write_bytes(path, lambda fh, data=data: fh.write(data))  # type: ignore[misc]
            written.append(path)
    if plot:
        path = out / "transitions.png"
        plot_transitions(cells, path)
        written.append(path)
    return written


# ----------------------------------------------------------------- T4


def threshold_fits(searches: Sequence[dict[str, Any]]) -> dict[str, dict[str, LinearFit]]:
    """Per width factor, three least-squares fits of the measured ``p*(d)`` over ``d``.

    ``"log-log"``: ``ln p* = a + b·ln d`` (``b = −1`` for ``log d/d`` up to the log factor);
    ``"log d/d"``: ``p*·d = α + β·ln d`` (linear in ``ln d`` iff ``p* = Θ(log d/d)``);
    ``"√(log d)/d"``: ``(p*·d)² = α + β·ln d`` (linear iff ``p* = Θ(√(log d)/d)``).
    """
    out: dict[str, dict[str, LinearFit]] = {}
    for factor in sorted({r["factor"] for r in searches}, key=Fraction):
        pts = sorted((r["d"], Fraction(r["p_star"])) for r in searches if r["factor"] == factor)
        x = [math.log(d) for d, _ in pts]
        out[factor] = {
            "log-log": least_squares(x, [math.log(p) for _, p in pts]),
            "log d/d": least_squares(x, [float(p * d) for d, p in pts]),
            "√(log d)/d": least_squares(x, [float((p * d) ** 2) for d, p in pts]),
        }
    return out


def _fit_text(fit: LinearFit, places: int = 2) -> str:
    return (f"intercept {fit.intercept:.{places}f}, slope {fit.slope:.{places}f} ± "
            f"{fit.slope_ci:.{places}f} (95 %), R² {fit.r2:.4f}")


def _search_row_cell(row: dict[str, Any] | None) -> Cell | None:
    if row is None:
        return None
    (cell,) = aggregate([row])
    return cell


def t4_searches(jobs: int = T4_JOBS, scheduler: Any = None) -> list[dict[str, Any]]:
    """The T4 threshold searches (rows of :func:`~exactnorm.analysis.sweeps.search_threshold`)."""
    return run_searches([ThresholdSearch(d, f, T4_DRAWS, T4_SEED) for d in T4_SIZES
                         for f in T4_FACTORS], jobs=jobs, scheduler=scheduler)


def table_t4(jobs: int = T4_JOBS) -> ProofTable:
    """T4: measured threshold ``p*(d)`` of sparse Theorem 1 patterns, its fit and the plot."""
    searches = t4_searches(jobs)
    fits = threshold_fits(searches)
    p_stars = {(r["d"], r["factor"]): r["p_star"] for r in searches}
    zero_row = {(r["d"], r["factor"]): zero_row_threshold(r["d"], r["star_row"]["m"], T4_DELTA)
                for r in searches}
    concrete = {v: concrete_at_threshold(p_stars, v, T4_VALUE_SIZES, T4_DRAWS, T4_SEED)
                for v in T4_VALUES}
    rows = []
    for r in searches:
        d, factor = r["d"], r["factor"]
        c, b = _search_row_cell(r["star_row"]), _search_row_cell(r["below_row"])
        assert c is not None
        p = Fraction(r["p_star"])
        lnd = math.log(d)
        row: list[Any] = [
            d, factor, c.m, c.draws, r["p_star"], f"{c.invertible}/{c.draws}",
            (f"{b.p}: {b.invertible}/{b.draws} ({b.dead_failures} dead, "
             f"{b.deficiency_failures} deficient)") if b else "-",
            _dec(dead_neuron_threshold(d, d * d, T4_DELTA), 4) if factor == "1" else "-",
            _dec(zero_row[(d, factor)], 4),
            _dec(math.sqrt(lnd / d), 3), _dec(lnd / d, 4), _dec(2 * lnd / d, 4),
            _dec(float(p) * d / lnd, 2), _dec(p * d, 2), _dec(float((p * d) ** 2) / lnd, 2),
            _dec(c.mean_nnz, 1), _dec(float(c.mean_nnz) / d**2.5, 3),
            _dec(float(c.mean_nnz) / (d * d * lnd), 3),
        ]
        for v in T4_VALUES:
            cell = concrete[v].get((d, factor))
            size = parse_distribution(v).support_size
            assert size is not None     # the T4 value distributions are finite
            bound = schwartz_zippel_bound(d * d, size)
            row += [_rate(cell), "≥ 1 (vacuous)" if bound >= 1 else f"{float(bound):.2e}"]
        rows.append(row)
    columns = ["d", "width factor", "m", "draws", "p*(d)", "invertible at p*",
               "grid point below p*", "dead-neuron bound p (δ = 1 %)",
               "zero-row bound p (δ = 1 %)", "√(log d/d)", "log d/d",
               "2 log d/d", "p*·d/ln d", "p*·d", "(p*·d)²/ln d", "mean nnz at p*",
               "nnz / d²√d", "nnz / d² ln d"]
    for v in T4_VALUES:
        columns += [f"{v} singular at p*", f"Schwartz–Zippel bound {v}"]

    def plot(path: Path) -> None:
        plot_thresholds(searches, fits, zero_row, path)

    fit_notes = []
    for factor in T4_FACTORS:
        mine = [r for r in searches if r["factor"] == factor]
        if factor == "1":
            bound_name = "the dead-neuron bound"
            bounds = {r["d"]: dead_neuron_threshold(r["d"], r["d"] ** 2, T4_DELTA) for r in mine}
        else:
            bound_name = "the zero-row bound"
            bounds = {r["d"]: zero_row[(r["d"], factor)] for r in mine}
        ratios = [Fraction(r["p_star"]) / bounds[r["d"]] for r in mine]
        dead = sum(r["below_row"]["dead_failures"] for r in mine if r["below_row"])
        deficient = sum(r["below_row"]["deficiency_failures"] for r in mine if r["below_row"])
        fit_notes.append(
            f"Width factor {factor}: p*/({bound_name}) ∈ [{_dec(min(ratios), 3)}, "
            f"{_dec(max(ratios), 3)}] over d = {', '.join(str(r['d']) for r in mine)}; the "
            f"failures at the grid points just below p* are {dead} dead-neuron and "
            f"{deficient} deficiency failures.")
    for factor, fs in fits.items():
        fit_notes.append(
            f"Fits at width factor {factor} (d = {', '.join(map(str, T4_SIZES))}): "
            + "; ".join(f"{name}: {_fit_text(f)}" for name, f in fs.items()) + ".")
    return ProofTable(
        key="T4", slug="sparse_thresholds",
        title="Sparse Theorem 1: threshold p*(d) for generic invertibility of K = V_inᵀ ⊙ V_out",
        command="exactnorm tables --only T4", columns=columns, rows=rows, plot=plot,
        notes=[
            f"Grid: d ∈ {{{', '.join(map(str, T4_SIZES))}}} (d_in = d_out = d, n = d²), hidden "
            f"width m = ⌊factor·d² + ½⌋ for factor ∈ {{{', '.join(T4_FACTORS)}}}, "
            f"{T4_DRAWS} Bernoulli(p) mask draws per point on both V_in and V_out, seed "
            f"{T4_SEED}; draw t uses layer_rng(seed, d, d, m, 10⁶p, t) — the same masks as "
            "exactnorm sparse-sweep.",
            "Generically invertible: structural rank of the support of K equals n = d² (a "
            "perfect matching when m = n; K γ = vec W solvable for every W when m > n). Since "
            "each column of K owns its variables, distinct matchings give distinct monomials "
            "and the generic rank equals the structural rank.",
            "p*(d): on the grid p = k/400, a point with ≥ 99 % generically invertible draws "
            "whose left neighbour has fewer, found by an upward scan in steps of 0.04 and "
            "bisection (ThresholdSearch). A failing point is decided at its third failure (no "
            "200-draw count can then reach 99 %); the reported points p* and p* − 1/400 run all "
            "draws. With 200 draws a point passes with ≤ 2 failures, so p* can sit slightly "
            "below the true 99 % point: compare the dead-neuron bound.",
            "Dead-neuron bound (factor 1 only, where m = n and one dead neuron is fatal): the "
            "smallest p (step 10⁻⁴) with m·z/(1 + m·z) ≤ 1 %, z = 2(1−p)^d − (1−p)^{2d}; "
            "below it the failure probability provably exceeds 1 % (T8, docs/sparse.md).",
            "Zero-row bound (every factor): a zero row of K is an entry of W no neuron reaches; "
            "P(some zero row) ≥ (Σ P(A_i))²/Σ P(A_i ∩ A_j) with exact row and pair laws "
            "((1−p²)^m per row), and the bound p is the grid point (step 10⁻⁴) where this "
            "exceeds 1 % one step below — checked in exact Fractions.",
            *fit_notes,
            "Reading of the fits: a scaling is supported when its response is linear in ln d "
            "(R² near 1): log d/d ⇔ p*·d linear in ln d; √(log d)/d ⇔ (p*·d)² linear in "
            "ln d. Half-widths use Student's t with 3 degrees of freedom; logarithms are "
            "natural. nnz counts unmasked frozen weights of the pair (2·m·d entries in total).",
            f"Concrete values at p* (d ∈ {{{', '.join(map(str, T4_VALUE_SIZES))}}}): integers "
            "drawn on the same masks; 'singular' counts draws of generically invertible "
            "patterns whose exact rank (rank mod a 62-bit prime, exact rank when that is not "
            "full) is below n. Schwartz–Zippel: a nonzero minor of degree 2n vanishes with "
            "probability ≤ 2n/|S|; int:8 has |S| = 17 (its zeros also thin the support).",
            "Plot: T4_sparse_thresholds.png, p*(d) against d (log–log) per width factor with the "
            "fitted curves, the dead-neuron bound, log d/d and 2 log d/d.",
            "Transition curves over a p grid: exactnorm sparse-sweep --preset large --jobs N "
            "(or --scheduler ADDRESS for Dask).",
        ],
    )


def plot_thresholds(searches: Sequence[dict[str, Any]], fits: dict[str, dict[str, LinearFit]],
                    zero_row: dict[tuple[int, str], Fraction],
                    path: str | os.PathLike[str]) -> None:
    """Deterministic PNG: measured ``p*(d)`` per width factor, fitted curves and the bounds."""
    matplotlib = require_extra("matplotlib", "the sparse threshold plots (T4, sparse-sweep)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted({r["d"] for r in searches})
    dense = [sizes[0] * (sizes[-1] / sizes[0]) ** (i / 60) for i in range(61)]
    with matplotlib.rc_context({"svg.hashsalt": "exactnorm", "path.simplify": False}):
        fig, ax = plt.subplots(figsize=(9.0, 4.6), dpi=100)
        for i, factor in enumerate(sorted(fits, key=Fraction)):
            pts = sorted((r["d"], float(Fraction(r["p_star"]))) for r in searches
                         if r["factor"] == factor)
            color = f"C{i}"
            ax.plot([d for d, _ in pts], [p for _, p in pts], "o", color=color,
                    label=f"p*(d), factor {factor}")
            lin, sq = fits[factor]["log d/d"], fits[factor]["√(log d)/d"]
            ax.plot(dense, [(lin.intercept + lin.slope * math.log(x)) / x for x in dense], "-",
                    color=color, linewidth=1, label=f"fit p·d = α + β ln d, factor {factor}")
            ax.plot(dense, [math.sqrt(max(0.0, sq.intercept + sq.slope * math.log(x))) / x
                            for x in dense], ":", color=color, linewidth=1,
                    label=f"fit (p·d)² = α + β ln d, factor {factor}")
        bound = [float(dead_neuron_threshold(d, d * d, T4_DELTA)) for d in sizes]
        ax.plot(sizes, bound, "k--", linewidth=1, label="dead-neuron bound (m = d², δ = 1 %)")
        for i, factor in enumerate(sorted(fits, key=Fraction)):
            ds = sorted(d for d, f in zero_row if f == factor)
            ax.plot(ds, [float(zero_row[(d, factor)]) for d in ds], "x--",
                    color=f"C{i}", linewidth=0.6, markersize=4,
                    label=f"zero-row bound, factor {factor}")
        ax.plot(dense, [math.log(x) / x for x in dense], ":", color="0.4", label="log d / d")
        ax.plot(dense, [2 * math.log(x) / x for x in dense], "-.", color="0.4",
                label="2 log d / d")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("d")
        ax.set_ylabel("keep probability p")
        ax.grid(True, which="both", linewidth=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
        ax.set_title("Threshold p*(d) of generic invertibility (≥ 99 % of 200 draws)",
                     fontsize=10)
        fig.tight_layout()
        _save_png(fig, path)
