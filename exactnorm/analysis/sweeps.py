"""Sparse-pattern sweeps: task lists, serial / process-pool / Dask execution, resumable logs.

SPEC §2.4. A sweep draws Bernoulli(p) masks for the frozen pair of one Theorem 1 layer
(``d_in = d_out = d``, hidden width ``m = ⌊factor·d² + ½⌋``) and asks whether the support of
``K = V_inᵀ ⊙ V_out`` (``n = d²`` rows, ``m`` columns) has structural rank ``n``. With ``m = n``
that is a perfect matching (the Boolean determinant); with ``m > n`` the system ``K γ = vec W`` is
then solvable for every ``W`` for generic values on the support — this is how "generically
invertible" is defined for every width factor. Failures are split into dead-neuron failures
(fewer than ``n`` live neurons) and matching deficiencies
(see :class:`exactnorm.analysis.structural.Diagnosis`).

Determinism: draw ``t`` of the cell ``(d, m, p)`` uses ``layer_rng(seed, d, d, m, ⌊10⁶p⌋, t)``,
whatever task, process or Dask worker runs it, so the aggregated results — and the CSV written
from them — are byte-identical across ``jobs=1``, a process pool and a Dask cluster, and across
any split of the draws into tasks. Rows are sorted before anything is written.

Resumability: every finished task appends one JSON line to a log; :func:`read_task_log` reads
the completed rows back (a line cut by an interruption is dropped) and :func:`run_sweep` skips
those tasks.

>>> tasks = make_tasks(sizes=[2], factors=["1"], ps=["0.5", "1"], draws=10, chunk=5, seed=0)
>>> rows = run_sweep(tasks)
>>> [(c.p, c.draws, c.invertible) for c in aggregate(rows)][-1]
('1', 10, 10)
"""

from __future__ import annotations

import decimal
import json
import math
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from flint import fmpz_mat

from exactnorm.analysis.structural import (
    dead_neurons,
    khatri_rao_pattern,
    schwartz_zippel_bound,
    structural_rank_scipy,
)
from exactnorm.constructions.parallel import dask_client
from exactnorm.errors import InputError, require_extra
from exactnorm.exact.files import atomic_write_bytes
from exactnorm.exact.linalg import (
    exact_rank,
    int64_array,
    khatri_rao,
    khatri_rao_int64,
    random_prime,
    rank_mod_prime,
)
from exactnorm.exact.rationals import format_decimal
from exactnorm.exact.sampling import bernoulli_mask, layer_rng, parse_distribution, sample_matrix

__all__ = [
    "MASK_SIDES",
    "SweepTask",
    "Cell",
    "Threshold",
    "hidden_width",
    "parse_grid",
    "make_tasks",
    "run_task",
    "run_sweep",
    "read_task_log",
    "aggregate",
    "estimate_thresholds",
    "cells_table",
    "thresholds_table",
    "plot_transitions",
    "write_sweep_outputs",
]

MASK_SIDES = ("input", "output", "both")
#: p is keyed by ⌊10⁶·p⌋ in the seed: grid values must be multiples of 10⁻⁶.
P_SCALE = 10**6
#: generic invertibility rate that defines the threshold p*(d)
THRESHOLD_RATE = Fraction(99, 100)


def hidden_width(d: int, factor: str | Fraction) -> int:
    """``m = ⌊factor·d² + ½⌋`` (ties round up, independent of Python's banker's rounding)."""
    return math.floor(Fraction(factor) * d * d + Fraction(1, 2))


def _canonical(x: str | Fraction | float | int, what: str) -> str:
    """A canonical decimal string for an exact grid value (``"0.25"``, ``"1"``, ``"1.5"``)."""
    try:
        q = Fraction(str(x))
    except (ValueError, ZeroDivisionError):
        raise InputError(f"{what} {x!r} is not a decimal number") from None
    if (q * P_SCALE).denominator != 1:
        raise InputError(f"{what} {x!r} must be a multiple of 1e-6")
    s = f"{q.numerator * P_SCALE // q.denominator:07d}"
    whole, frac = s[:-6].lstrip("0") or "0", s[-6:].rstrip("0")
    return whole + ("." + frac if frac else "")


def parse_grid(text: str, what: str = "p") -> list[str]:
    """Parse ``"0.1,0.2,0.5"`` or ``"start:stop:step"`` (inclusive) into canonical strings.

    >>> parse_grid("0.25:1:0.25")
    ['0.25', '0.5', '0.75', '1']
    """
    text = text.strip()
    if ":" in text:
        parts = text.split(":")
        if len(parts) != 3:
            raise InputError(f"{what} grid must be 'start:stop:step', got {text!r}")
        start, stop, step = (Fraction(_canonical(v, what)) for v in parts)
        if step <= 0 or start > stop:
            raise InputError(f"{what} grid {text!r} is empty or has a non-positive step")
        vals, x = [], start
        while x <= stop:
            vals.append(x)
            x += step
        return [_canonical(v, what) for v in vals]
    return [_canonical(v, what) for v in text.split(",") if v.strip()]


@dataclass(frozen=True, order=True)
class SweepTask:
    """Draws ``draw_start ≤ t < draw_stop`` of one cell ``(d, factor, p)`` of a sweep.

    ``values``: optional integer distribution; for generically invertible patterns the concrete
    ``K`` with those values on the support is then checked (rank mod a 62-bit prime, exact rank
    if that is not full) to compare with the Schwartz–Zippel bound.
    """

    seed: int
    d: int
    factor: str
    p: str
    mask_side: str
    draw_start: int
    draw_stop: int
    values: str = ""

    @property
    def m(self) -> int:
        return hidden_width(self.d, self.factor)

    @property
    def n(self) -> int:
        return self.d * self.d

    @property
    def key(self) -> tuple[Any, ...]:
        return (self.seed, self.d, self.factor, self.p, self.mask_side, self.draw_start,
                self.draw_stop, self.values)

    def sort_key(self) -> tuple[Any, ...]:
        return (self.d, Fraction(self.factor), Fraction(self.p), self.mask_side, self.values,
                self.seed, self.draw_start)


def make_tasks(*, sizes: Iterable[int], factors: Iterable[str], ps: Iterable[str], draws: int,
               chunk: int = 50, seed: int = 0, mask_side: str = "both",
               values: str | None = None) -> list[SweepTask]:
    """The task list of a sweep; draws are split into chunks of ``chunk`` (results do not
    depend on the split)."""
    if mask_side not in MASK_SIDES:
        raise InputError(f"mask side must be one of {', '.join(MASK_SIDES)}, got {mask_side!r}")
    if draws < 1 or chunk < 1:
        raise InputError("draws and chunk must be positive")
    if isinstance(seed, bool) or seed < 0:
        raise InputError(f"seed must be a non-negative integer, got {seed!r}")
    if values:
        dist = parse_distribution(values)
        if not dist.is_integer:
            raise InputError(f"concrete values need an integer distribution, got {values!r}")
        values = dist.spec
    sizes = list(sizes)
    if not sizes or any(isinstance(d, bool) or d < 1 for d in sizes):
        raise InputError(f"sizes must be positive integers, got {sizes}")
    fs = [_canonical(f, "width factor") for f in factors]
    if not fs or any(Fraction(f) < 1 for f in fs):
        raise InputError(f"width factors must be ≥ 1, got {fs}")
    pv = [_canonical(p, "p") for p in ps]
    if not pv or any(not 0 < Fraction(p) <= 1 for p in pv):
        raise InputError(f"keep probabilities must lie in (0, 1], got {pv}")
    tasks = [SweepTask(seed, int(d), f, p, mask_side, s, min(s + chunk, draws), values or "")
             for d in sorted(set(sizes)) for f in fs for p in pv for s in range(0, draws, chunk)]
    return sorted(set(tasks), key=SweepTask.sort_key)


def _masks(task: SweepTask, draw: int) -> tuple[np.random.Generator, np.ndarray, np.ndarray]:
    d, m = task.d, task.m
    p_key = int(Fraction(task.p) * P_SCALE)
    rng = layer_rng(task.seed, d, d, m, p_key, draw)
    # Both masks are always drawn, in this order, so the side choice does not change them.
    mask_in = bernoulli_mask(rng, m, d, float(Fraction(task.p)))
    mask_out = bernoulli_mask(rng, d, m, float(Fraction(task.p)))
    if task.mask_side == "input":
        mask_out = np.ones_like(mask_out)
    elif task.mask_side == "output":
        mask_in = np.ones_like(mask_in)
    return rng, mask_in, mask_out


def _concrete_rank(task: SweepTask, draw: int, rng: np.random.Generator, mask_in: np.ndarray,
                   mask_out: np.ndarray) -> int:
    """Exact rank of ``K`` for integer values drawn on the support (after the masks).

    ``K[a·d + b, k] = V_in[k, a]·V_out[b, k]``; for entries below 2³¹ in absolute value the
    products are formed in int64 (exact: below 2⁶²), otherwise by FLINT's Khatri–Rao.
    """
    d, m = task.d, task.m
    V_in = sample_matrix(rng, m, d, task.values)
    V_out = sample_matrix(rng, d, m, task.values)
    dist = parse_distribution(task.values)
    bound = max((abs(v) for v in dist.values), default=0) if dist.kind == "set" else (
        2**dist.param if dist.kind == "bits" else dist.param)
    if bound < 2**31:
        K = fmpz_mat(khatri_rao_int64(int64_array(V_in) * mask_in,
                                      int64_array(V_out) * mask_out).tolist())
    else:
        vi = [[x if keep else 0 for x, keep in zip(row, mrow)]
              for row, mrow in zip(V_in.tolist(), mask_in.tolist())]
        vo = [[x if keep else 0 for x, keep in zip(row, mrow)]
              for row, mrow in zip(V_out.tolist(), mask_out.tolist())]
        K = khatri_rao(fmpz_mat(vi).transpose(), fmpz_mat(vo))
    p_key = int(Fraction(task.p) * P_SCALE)
    prime = random_prime(62, layer_rng(task.seed, d, d, m, p_key, draw, 2**31))
    r = rank_mod_prime(K, prime)
    # Full rank mod a prime proves full rank; otherwise ask for the exact rank.
    return r if r == task.n else exact_rank(K)


def run_task(task: SweepTask) -> dict[str, Any]:
    """Run one task: count generically invertible patterns and classify the failures.

    Returns a JSON-ready row (task fields plus integer counts); no FLINT objects cross
    process boundaries.
    """
    n, m = task.n, task.m
    counts = dict(draws=0, invertible=0, dead_failures=0, deficiency_failures=0,
                  dead_neurons=0, nnz=0, concrete_checked=0,
                  concrete_singular=0)
    for t in range(task.draw_start, task.draw_stop):
        rng, mask_in, mask_out = _masks(task, t)
        no_input, no_output = dead_neurons(mask_in, mask_out)
        dead = len(set(no_input) | set(no_output))
        counts["draws"] += 1
        counts["dead_neurons"] += dead
        counts["nnz"] += int(mask_in.sum()) + int(mask_out.sum())
        if m - dead < n:
            # Zero columns alone leave fewer than n candidate columns: no matching needed.
            counts["dead_failures"] += 1
        else:
            if structural_rank_scipy(khatri_rao_pattern(mask_in, mask_out)) == n:
                counts["invertible"] += 1
                if task.values:
                    counts["concrete_checked"] += 1
                    if _concrete_rank(task, t, rng, mask_in, mask_out) < n:
                        counts["concrete_singular"] += 1
            else:
                counts["deficiency_failures"] += 1
    return {**asdict(task), "m": m, "n": n, **counts}


def _task_from_row(row: dict[str, Any]) -> SweepTask:
    return SweepTask(int(row["seed"]), int(row["d"]), str(row["factor"]), str(row["p"]),
                     str(row["mask_side"]), int(row["draw_start"]), int(row["draw_stop"]),
                     str(row.get("values") or ""))


def read_task_log(path: str | os.PathLike[str]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Completed task rows of a JSON-lines log, by task key (unreadable lines are dropped).

    Only the last line can be cut by an interruption; a damaged line anywhere is simply not
    counted as done, so that task runs again.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"resume file {p} does not exist")
    done: dict[tuple[Any, ...], dict[str, Any]] = {}
    for line in p.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
            done[_task_from_row(row).key] = row
        except (ValueError, KeyError, TypeError):
            continue
    return done


def _dask_results(tasks: Sequence[SweepTask], scheduler: Any) -> Iterable[dict[str, Any]]:
    with dask_client(scheduler) as client:
        from distributed import as_completed as dask_as_completed

        futures = client.map(run_task, list(tasks), pure=False)
        for fut in dask_as_completed(futures):
            yield fut.result()


def run_sweep(tasks: Sequence[SweepTask], *, jobs: int = 1, scheduler: Any = None,
              log: str | os.PathLike[str] | None = None, resume: bool = False,
              progress: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
    """Run ``tasks`` and return all rows sorted by task (so output never depends on the backend).

    Parameters
    ----------
    tasks : sequence of SweepTask
    jobs : int
        Local worker processes (``ProcessPoolExecutor``); 1 runs serially in this process.
    scheduler : str or distributed.Client, optional
        Run on a Dask cluster at this address (or on this client) instead of locally.
    log : path, optional
        JSON-lines task log; each finished task appends one row.
    resume : bool
        Read completed rows from ``log`` first and skip their tasks.
    progress : callable(done, total), optional
    """
    if jobs < 1:
        raise InputError(f"jobs must be positive, got {jobs}", parameter="jobs")
    done: dict[tuple[Any, ...], dict[str, Any]] = {}
    if resume:
        if log is None:
            raise InputError("resuming needs the log file of the earlier run")
        wanted = {t.key for t in tasks}
        done = {k: r for k, r in read_task_log(log).items() if k in wanted}
    todo = [t for t in tasks if t.key not in done]
    fh = None
    if log is not None:
        # Rewrite the log atomically with the rows we keep (drops a cut last line), then append.
        kept = "".join(json.dumps(r, sort_keys=True) + "\n" for r in done.values())
        atomic_write_bytes(log, lambda f: f.write(kept.encode()))
        fh = open(log, "a", encoding="utf-8")  # noqa: SIM115 - closed in finally
    total, count = len(tasks), len(done)
    if progress:
        progress(count, total)

    def results() -> Iterable[dict[str, Any]]:
        if scheduler is not None:
            yield from _dask_results(todo, scheduler)
        elif jobs == 1 or len(todo) <= 1:
            yield from map(run_task, todo)
        else:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                futures = [pool.submit(run_task, t) for t in todo]
                for fut in as_completed(futures):
                    yield fut.result()

    try:
        for row in results():
            done[_task_from_row(row).key] = row
            if fh is not None:
                fh.write(json.dumps(row, sort_keys=True) + "\n")
                fh.flush()
            count += 1
            if progress:
                progress(count, total)
    finally:
        if fh is not None:
            fh.close()
    return [done[t.key] for t in sorted(tasks, key=SweepTask.sort_key)]


# ----------------------------------------------------------------------------- aggregation


@dataclass
class Cell:
    """Aggregated counts of one sweep cell ``(d, factor, p)``."""

    seed: int
    d: int
    factor: str
    p: str
    mask_side: str
    values: str
    m: int
    n: int
    draws: int = 0
    invertible: int = 0
    dead_failures: int = 0
    deficiency_failures: int = 0
    dead_neurons: int = 0
    nnz: int = 0
    concrete_checked: int = 0
    concrete_singular: int = 0

    @property
    def fraction(self) -> Fraction:
        return Fraction(self.invertible, self.draws)

    @property
    def maskable(self) -> tuple[int, int]:
        """(masked entries, unmasked entries) of the frozen pair (2·m·d in total)."""
        side = self.m * self.d
        return {"both": (2 * side, 0), "input": (side, side), "output": (side, side)}[
            self.mask_side]

    @property
    def expected_nnz(self) -> Fraction:
        masked, full = self.maskable
        return Fraction(self.p) * masked + full

    @property
    def mean_nnz(self) -> Fraction:
        return Fraction(self.nnz, self.draws)

    @property
    def reference_nnz(self) -> Fraction:
        """``d²√d`` (40 correct digits), the sparsity scale the nonzero counts are compared with."""
        return self.d ** 2 * _sqrt(Fraction(self.d))

    @property
    def sort_key(self) -> tuple[Any, ...]:
        return (self.d, Fraction(self.factor), Fraction(self.p), self.mask_side, self.values,
                self.seed)


def aggregate(rows: Iterable[dict[str, Any]]) -> list[Cell]:
    """Sum task rows into cells, sorted by ``(d, factor, p)``."""
    cells: dict[tuple[Any, ...], Cell] = {}
    for r in rows:
        key = (r["seed"], r["d"], r["factor"], r["p"], r["mask_side"], r.get("values") or "")
        c = cells.get(key)
        if c is None:
            c = cells[key] = Cell(*key, m=r["m"], n=r["n"])
        for name in ("draws", "invertible", "dead_failures", "deficiency_failures",
                     "dead_neurons", "nnz", "concrete_checked", "concrete_singular"):
            setattr(c, name, getattr(c, name) + int(r[name]))
    return sorted(cells.values(), key=lambda c: c.sort_key)


@dataclass
class Threshold:
    """Estimated ``p*(d)`` of one ``(d, factor)`` curve and the reference scalings."""

    d: int
    factor: str
    m: int
    p_star: str | None
    cell: Cell | None
    below: Cell | None

    @property
    def references(self) -> tuple[Fraction, Fraction, Fraction]:
        """``(√(log d/d), log d/d, 2 log d/d)``, natural logarithm, 40 correct digits."""
        r = _ln(self.d) / self.d
        return _sqrt(r), r, 2 * r


def estimate_thresholds(cells: Sequence[Cell]) -> list[Threshold]:
    """``p*(d)``: the smallest grid ``p`` from which on every grid point reaches ≥ 99 % generic
    invertibility (a single lucky point below a failing one does not count).
    """
    groups: dict[tuple[int, str], list[Cell]] = {}
    for c in cells:
        groups.setdefault((c.d, c.factor), []).append(c)
    out = []
    for (d, factor), cs in sorted(groups.items(), key=lambda kv: (kv[0][0], Fraction(kv[0][1]))):
        cs = sorted(cs, key=lambda c: Fraction(c.p))
        star: Cell | None = None
        below: Cell | None = None
        for i in range(len(cs) - 1, -1, -1):
            if cs[i].fraction >= THRESHOLD_RATE:
                star = cs[i]
                below = cs[i - 1] if i > 0 else None
            else:
                break
        out.append(Threshold(d, factor, cs[0].m, star.p if star else None, star, below))
    return out


#: decimal's ln and sqrt are correctly rounded (unlike the platform's libm behind math.log), so
#: the reference columns of T4 are the same on every machine
_DECIMAL = decimal.Context(prec=40)


def _ln(x: int) -> Fraction:
    """``ln x`` correctly rounded to 40 significant digits, as an exact fraction."""
    return Fraction(_DECIMAL.ln(decimal.Decimal(x)))


def _sqrt(x: Fraction) -> Fraction:
    """``√x`` correctly rounded to 40 significant digits, as an exact fraction."""
    return Fraction(_DECIMAL.sqrt(_DECIMAL.divide(decimal.Decimal(x.numerator),
                                                  decimal.Decimal(x.denominator))))


def _dec(q: Fraction | float, places: int) -> str:
    """Fixed-point decimal of an exact fraction (round half up), or of a float reference."""
    if isinstance(q, float):
        return f"{q:.{places}f}"
    return format_decimal(q, places)


def cells_table(cells: Sequence[Cell], command: str) -> Any:
    """All cells as a :class:`~exactnorm.outputs.tables.proof_table.ProofTable` (transition
    curves)."""
    from exactnorm.outputs.tables.proof_table import ProofTable

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
               _dec(c.mean_nnz / c.reference_nnz, 3)]
        if with_values:
            size = parse_distribution(c.values).support_size if c.values else None
            bound = schwartz_zippel_bound(c.n, size) if size else None
            row += [c.values or "-", c.concrete_checked, c.concrete_singular,
                    _dec(bound, 6) if bound is not None else "-"]
        rows.append(row)
    return ProofTable(key="sweep", slug="cells", title="Sparse Khatri–Rao patterns: transition "
                      "curves", command=command, columns=columns, rows=rows)


def thresholds_table(cells: Sequence[Cell], command: str, key: str = "sweep",
                     slug: str = "thresholds") -> Any:
    """The threshold table: measured ``p*(d)`` against √(log d/d), log d/d and 2 log d/d."""
    from exactnorm.outputs.tables.proof_table import ProofTable

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
            _dec(Fraction(th.p_star) * th.d / _ln(th.d), 2)
            if th.p_star and th.d > 1 else "-",
            _dec(c.mean_nnz, 1) if c else "-",
            _dec(c.mean_nnz / c.reference_nnz, 3) if c else "-",
        ])
    return ProofTable(
        key=key, slug=slug, title="Sparse Theorem 1: threshold p*(d) for generic invertibility",
        command=command,
        columns=["d", "width factor", "m", "draws", "p*(d)", "fraction at p*",
                 "grid point below p*", "√(log d/d)", "log d/d", "2 log d/d",
                 "p*·d/log d", "mean nnz at p*", "nnz / d²√d"],
        rows=rows)


def plot_transitions(cells: Sequence[Cell], path: str | os.PathLike[str]) -> None:
    """Deterministic PNG of the transition curves: one panel per width factor, one line per d."""
    matplotlib = require_extra("matplotlib", "the transition plot (T4, sparse-sweep)")
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
                    ax.axvline(float(2 * _ln(d) / d), color=color, linestyle=":", linewidth=0.8)
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

        def produce(fh: Any) -> None:
            fig.savefig(fh, format="png", dpi=100, metadata={"Software": None})

        try:
            atomic_write_bytes(path, produce)
        finally:
            plt.close(fig)


def write_sweep_outputs(rows: Sequence[dict[str, Any]], outdir: str | os.PathLike[str],
                        command: str, plot: bool = True) -> list[Path]:
    """Write ``cells.csv/.md``, ``thresholds.csv/.md`` and ``transitions.png`` (atomically)."""
    cells = aggregate(rows)
    out = Path(outdir)
    written = []
    for t in (cells_table(cells, command), thresholds_table(cells, command)):
        for suffix, text in ((".csv", t.csv()), (".md", t.markdown())):
            path = out / f"{t.slug}{suffix}"
            atomic_write_bytes(path, lambda fh, text=text: fh.write(text.encode()))
            written.append(path)
    if plot:
        path = out / "transitions.png"
        plot_transitions(cells, path)
        written.append(path)
    return written
