"""Sparse-pattern sweeps: task lists, serial / process-pool / Dask execution, resumable logs.

docs/sparse.md. A sweep draws Bernoulli(p) masks for the frozen pair of one Theorem 1 layer
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

Threshold search (T4): :class:`ThresholdSearch` locates ``p*(d)`` of one curve by an upward
coarse scan and bisection on a fine grid, using the same per-draw seeds, so its cells are
exactly the cells a grid sweep would compute; :func:`run_searches` runs many on the same
backends. Rendering (tables, plots) lives in :mod:`exactnorm.outputs.tables.sparse`.

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
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from flint import fmpz_mat

from exactnorm.analysis.structural import (
    dead_neurons,
    khatri_rao_pattern,
    structural_rank_scipy,
)
from exactnorm.errors import InputError
from exactnorm.exact.files import atomic_write_bytes
from exactnorm.exact.linalg import (
    exact_rank,
    int64_array,
    khatri_rao,
    khatri_rao_int64,
    random_prime,
    rank_mod_prime,
)
from exactnorm.exact.parallel import map_tasks
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
    "ThresholdSearch",
    "search_threshold",
    "run_searches",
    "map_unordered",
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



#: decimal's ln and sqrt are correctly rounded (unlike the platform's libm behind math.log), so
#: the reference columns of T4 are the same on every machine
_DECIMAL = decimal.Context(prec=40)


def exact_ln(x: int) -> Fraction:
    """``ln x`` correctly rounded to 40 significant digits, as an exact fraction."""
    return Fraction(_DECIMAL.ln(decimal.Decimal(x)))


def exact_sqrt(x: Fraction) -> Fraction:
    """``√x`` correctly rounded to 40 significant digits, as an exact fraction."""
    return Fraction(_DECIMAL.sqrt(_DECIMAL.divide(decimal.Decimal(x.numerator),
                                                  decimal.Decimal(x.denominator))))


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
    bound = max((abs(v) for v in dist.values), default=0) if dist.law == "set" else (
        2**dist.param if dist.law == "bits" else dist.param)
    K: Any
    if bound < 2**31 and isinstance(V_in, fmpz_mat) and isinstance(V_out, fmpz_mat):
        K = fmpz_mat(khatri_rao_int64(int64_array(V_in) * mask_in,
                                      int64_array(V_out) * mask_out).tolist())
    else:
        rows_in: list[list[Any]] = V_in.tolist()
        rows_out: list[list[Any]] = V_out.tolist()
        vi = [[x if keep else 0 for x, keep in zip(row, mrow)]
              for row, mrow in zip(rows_in, mask_in.tolist())]
        vo = [[x if keep else 0 for x, keep in zip(row, mrow)]
              for row, mrow in zip(rows_out, mask_out.tolist())]
        K = khatri_rao(fmpz_mat(vi).transpose(), fmpz_mat(vo))
    p_key = int(Fraction(task.p) * P_SCALE)
    prime = random_prime(62, layer_rng(task.seed, d, d, m, p_key, draw, 2**31))
    r = rank_mod_prime(K, prime)
    # Full rank mod a prime proves full rank; otherwise ask for the exact rank.
    return r if r == task.n else exact_rank(K)


#: the integer counts of a task row (summed when rows are aggregated)
COUNT_FIELDS = ("draws", "invertible", "dead_failures", "deficiency_failures", "dead_neurons",
                "nnz", "concrete_checked", "concrete_singular")


def run_task(task: SweepTask, stop_after_failures: int | None = None) -> dict[str, Any]:
    """Run one task: count generically invertible patterns and classify the failures.

    Parameters
    ----------
    task : SweepTask
    stop_after_failures : int, optional
        Stop at the draw that brings the failures to this number (draws run in order ``t``, so
        where it stops is deterministic). A threshold search uses it: once ``f`` failures are
        seen the cell cannot reach the 99 % rate, whatever the remaining draws give.

    Returns
    -------
    dict
        A JSON-ready row (task fields plus integer counts; ``draws`` is the number of draws
        actually run); no FLINT objects cross process boundaries.
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
        if (stop_after_failures is not None
                and counts["draws"] - counts["invertible"] >= stop_after_failures):
            break
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


def map_unordered(func: Callable[[Any], Any], items: Sequence[Any], *, jobs: int = 1,
                  scheduler: Any = None) -> Iterable[Any]:
    """Yield ``func(item)`` for every item, in completion order: serially, on ``jobs`` local
    processes or on a Dask cluster (``scheduler`` is an address or a ``distributed.Client``).

    Callers must not depend on the order; they key the results (every result here carries its
    task) and sort them, which is what makes the backends interchangeable.
    """
    if jobs < 1:
        raise InputError(f"--jobs must be positive, got {jobs}")
    yield from map_tasks(func, items, jobs=jobs, scheduler=scheduler, ordered=False)


def run_sweep(tasks: Sequence[SweepTask], *, jobs: int = 1, scheduler: Any = None,
              log: str | os.PathLike[str] | None = None, resume: bool = False,
              progress: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
    """Run ``tasks`` and return all rows sorted by task (so output never depends on the backend).

    Parameters
    ----------
    tasks : sequence of SweepTask
    jobs : int
        Local worker processes (:func:`~exactnorm.exact.parallel.map_tasks`); 1 runs serially in
        this process.
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

    try:
        for row in map_unordered(run_task, todo, jobs=jobs, scheduler=scheduler):
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
        return self.d ** 2 * exact_sqrt(Fraction(self.d))

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
        for name in COUNT_FIELDS:
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
        r = exact_ln(self.d) / self.d
        return exact_sqrt(r), r, 2 * r


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


# ----------------------------------------------------------------------------- threshold search


def allowed_failures(draws: int) -> int:
    """Failures a cell of ``draws`` draws may have and still reach the 99 % rate.

    >>> allowed_failures(200), allowed_failures(100), allowed_failures(99)
    (2, 1, 0)
    """
    return math.floor(draws * (1 - THRESHOLD_RATE))


@dataclass(frozen=True, order=True)
class ThresholdSearch:
    """Locate ``p*(d)`` of one ``(d, factor)`` curve by a coarse upward scan and bisection.

    The grid is ``p = k·fine`` (``0 < p ≤ 1``); the coarse scan visits every ``coarse/fine``-th
    point from below until a cell passes (≥ 99 % of ``draws``), then bisection between the last
    failing and that passing coarse point ends at a passing point ``p*`` whose left neighbour
    ``p* − fine`` fails. ``p = 1`` passes without a draw: the all-ones pattern with ``m ≥ n``
    has the matching ``row i ↦ column i``.
    """

    d: int
    factor: str
    draws: int
    seed: int = 0
    mask_side: str = "both"
    coarse: str = "0.04"
    fine: str = "0.0025"

    def cell_task(self, k: int) -> SweepTask:
        """The full-length task of grid point ``k`` (same draws as a ``sparse-sweep`` cell)."""
        (task,) = make_tasks(sizes=[self.d], factors=[self.factor],
                             ps=[str(Fraction(self.fine) * k)], draws=self.draws,
                             chunk=self.draws, seed=self.seed, mask_side=self.mask_side)
        return task


def search_threshold(search: ThresholdSearch) -> dict[str, Any]:
    """Run one threshold search (see :class:`ThresholdSearch`); returns a JSON-ready row.

    Failing cells stop at their first ``allowed_failures(draws) + 1`` failures (that decides
    them); the cells reported, ``p*`` and the point below it, are then run in full. The row
    holds ``p_star``, ``below`` (``None`` when ``p*`` is the first grid point), the full rows
    ``star_row`` / ``below_row`` and the list ``visited`` of ``[p, passed, draws run]``.
    """
    fine = Fraction(search.fine)
    step = Fraction(search.coarse) / fine
    if fine <= 0 or step.denominator != 1 or step < 1 or (1 / fine).denominator != 1:
        raise InputError(f"coarse step {search.coarse} must be a multiple of the fine step "
                         f"{search.fine}, which must divide 1")
    top, stride = int(1 / fine), int(step)
    limit = allowed_failures(search.draws) + 1
    visited: list[list[Any]] = []
    runs: dict[int, dict[str, Any]] = {}

    def passes(k: int) -> bool:
        if k >= top:
            return True
        row = runs[k] = run_task(search.cell_task(k), stop_after_failures=limit)
        ok = row["draws"] - row["invertible"] < limit
        visited.append([row["p"], ok, row["draws"]])
        return ok

    def completed(k: int) -> dict[str, Any]:
        """The full row of point ``k``: a stopped run is continued from where it stopped."""
        task = search.cell_task(k)
        row = runs.get(k)
        if row is None:
            return run_task(task)
        if row["draws"] == search.draws:
            return row
        rest = run_task(SweepTask(**{**asdict(task), "draw_start": row["draws"]}))
        return {**rest, **{key: row[key] + rest[key] for key in COUNT_FIELDS},
                "draw_start": task.draw_start}

    lo, hi = 0, stride
    while not passes(hi):
        lo, hi = hi, min(hi + stride, top)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if passes(mid):
            hi = mid
        else:
            lo = mid
    star_row = completed(hi)
    below_row = completed(lo) if lo > 0 else None
    return {**asdict(search), "p_star": _canonical(fine * hi, "p"),
            "below": below_row["p"] if below_row else None, "star_row": star_row,
            "below_row": below_row, "visited": visited}


def run_searches(searches: Sequence[ThresholdSearch], *, jobs: int = 1,
                 scheduler: Any = None) -> list[dict[str, Any]]:
    """Run threshold searches (largest ``d`` first, for load balance); sorted by ``(d, factor)``
    so that the result does not depend on the backend."""
    order = sorted(searches, key=lambda s: (-s.d, -Fraction(s.factor)))
    rows = list(map_unordered(search_threshold, order, jobs=jobs, scheduler=scheduler))
    return sorted(rows, key=lambda r: (r["d"], Fraction(r["factor"]), r["seed"]))
