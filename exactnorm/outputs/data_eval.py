"""The certified network on the user's data: exact target outputs, float copies in float32 and
float64, and what they change (the report's and the export's data sections).

Contract
--------
* :func:`load_data` reads an ``.npy`` sample array of shape ``(n, d_0)`` or ``(n, …)`` with
  ``d_0`` entries per sample (an image batch) and optional integer labels; pickles are refused.
* :func:`exact_outputs` evaluates the **exact** target at every sample (each float sample is the
  dyadic rational it denotes): a batch of samples at a time through the target's graph, by
  residues modulo many primes with exact signs (:mod:`exactnorm.model.residues`, tested
  against :meth:`~exactnorm.model.network.TargetNetwork.evaluate_columns`, which multiplies the
  integers themselves). It returns the outputs rounded once to float64 and the index of the
  largest output decided **exactly** (ties: the lowest index).
* :func:`float_copy` is the certified frozen network with every parameter rounded to a float
  dtype (:class:`~exactnorm.model.network.FloatNetwork`, every kind's float copy), evaluated in
  that dtype — what an export computes (the same rounding as the ONNX export's im2col form),
  without a framework.
* :func:`compare` turns float outputs and the exact ones into the numbers a report shows: the
  largest absolute and relative error, the predictions that change, and accuracies.

The certificate proves ``f = g`` on its box only: samples outside it are counted and named, and
there the exact frozen network may differ from the target (nothing is claimed).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from flint import fmpq
from threadpoolctl import threadpool_limits

from exactnorm.certificate import float_network
from exactnorm.checker.vocabulary import DEFAULT_MAX_BYTES
from exactnorm.errors import InputError, ShapeError
from exactnorm.exact.files import require_file
from exactnorm.model.network import FloatNetwork
from exactnorm.model.residues import ResiduePlan, exact_batch

__all__ = ["load_data", "exact_outputs", "float_copy", "compare", "inside_box", "on_threads",
           "residue_plan", "exact_argmax", "MAX_DATA_BYTES", "CHUNK", "EXACT_CHUNK",
           "EXACT_THREADS"]

#: the largest data file read (the checker's default certificate limit)
MAX_DATA_BYTES = DEFAULT_MAX_BYTES
#: samples per batch of a float evaluation (bounds the memory of a wide frozen network)
CHUNK = 256
#: samples per batch of the exact evaluation (residues of every node of the batch for every
#: prime: about 100 MB a node on a ResNet-8; progress every few seconds)
EXACT_CHUNK = 64
#: threads evaluating batches side by side (:func:`exact_outputs`)
EXACT_THREADS = max(1, min(2, os.cpu_count() or 1))
#: bytes of one float batch of the widest layer (:func:`float_chunk`)
FLOAT_BATCH_BYTES = 1 << 29

Hook = Callable[[int, int], None] | None


def load_data(path: str | os.PathLike[str] | np.ndarray, d0: int, *,
              parameter: str = "data", what: str = "data") -> np.ndarray:
    """An ``.npy`` array of samples (or the array itself) as ``(n, d0)``, its dtype kept.

    Raises
    ------
    InputError
        Not an ``.npy`` array, a pickle, empty, NaN or infinite entries, or samples of another
        size (naming ``parameter``).
    """
    if isinstance(path, np.ndarray):
        return _samples(path, d0, "the data array", parameter)
    p = require_file(path, f"{what} file", parameter=parameter)
    if p.suffix.lower() != ".npy":
        raise InputError(f"{what} file {p}: expected an .npy array", parameter=parameter)
    if p.stat().st_size > MAX_DATA_BYTES:
        raise InputError(f"{p} is larger than {MAX_DATA_BYTES} bytes", parameter=parameter)
    try:
        arr = np.load(p, allow_pickle=False)
    except ValueError as exc:
        raise InputError(f"{p} is not a plain .npy array ({str(exc).splitlines()[0]}); pickles "
                         f"are refused", parameter=parameter) from None
    return _samples(arr, d0, str(p), parameter)


def _samples(arr: np.ndarray, d0: int, p: str, parameter: str) -> np.ndarray:
    if arr.dtype.kind not in "iuf" or arr.ndim < 1 or arr.shape[0] == 0:
        raise InputError(f"{p} must hold numbers, one sample per row; got dtype {arr.dtype} and "
                         f"shape {arr.shape}", parameter=parameter)
    X = arr.reshape(arr.shape[0], -1)
    if X.shape[1] != d0:
        raise ShapeError(f"{p} has {X.shape[1]} values per sample (shape {arr.shape}); the "
                         f"certificate's input has {d0}", parameter=parameter)
    if np.issubdtype(arr.dtype, np.floating) and not np.all(np.isfinite(X)):
        raise InputError(f"{p} has NaN or infinite entries", parameter=parameter)
    return X


def data_samples(data: Any) -> int:
    """The number of samples of ``data`` (an array or an ``.npy`` path), read from the header
    only: progress knows its total before any work."""
    if isinstance(data, np.ndarray):
        return len(data)
    try:
        with open(require_file(data, "data file", parameter="data"), "rb") as fh:
            version = np.lib.format.read_magic(fh)
            shape = (np.lib.format.read_array_header_1_0(fh) if version == (1, 0)
                     else np.lib.format.read_array_header_2_0(fh))[0]
        return int(shape[0]) if shape else 0
    except (OSError, ValueError):
        return 0  # load_data names the problem


def load_labels(path: str | os.PathLike[str], n: int) -> np.ndarray:
    """Integer labels, one per sample, from an ``.npy`` file."""
    p = require_file(path, "labels file", parameter="labels")
    try:
        y = np.load(p, allow_pickle=False)
    except ValueError as exc:
        raise InputError(f"{p} is not a plain .npy array ({str(exc).splitlines()[0]})",
                         parameter="labels") from None
    if y.dtype.kind not in "iu" or y.shape != (n,):
        raise InputError(f"{p} must hold {n} integer labels (shape ({n},)), got dtype {y.dtype} "
                         f"and shape {y.shape}", parameter="labels")
    return y.astype(np.int64)


def inside_box(X: np.ndarray, lower: Sequence[Any], upper: Sequence[Any]) -> np.ndarray:
    """Which samples lie in the box (compared exactly: floats are dyadic rationals)."""
    lo = [fmpq(x) if not isinstance(x, fmpq) else x for x in lower]
    hi = [fmpq(x) if not isinstance(x, fmpq) else x for x in upper]
    out = np.ones(len(X), dtype=bool)
    for k, (a, b) in enumerate(zip(lo, hi)):
        col = X[:, k]
        # a float64 comparison decides it unless the bound itself is not a float64
        fa, fb = int(a.p) / int(a.q), int(b.p) / int(b.q)
        exact = fmpq(*fa.as_integer_ratio()) == a and fmpq(*fb.as_integer_ratio()) == b
        if exact:
            out &= (col >= fa) & (col <= fb)
        else:
            out &= np.array([a <= fmpq(*float(v).as_integer_ratio()) <= b for v in col])
    return out


def exact_argmax(values: Sequence[Any]) -> int:
    """The index of the largest of exact values (integers, rationals), the lowest on ties.

    >>> exact_argmax([1, 3, 3, 2])
    1
    """
    k = 0
    for i in range(1, len(values)):
        if values[i] > values[k]:
            k = i
    return k


def exact_outputs(target: Any, X: np.ndarray, progress: Hook = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The exact target at every row of ``X``: outputs rounded to float64 (each correctly:
    ``int / int``) and the exact argmax (module doc), :data:`EXACT_CHUNK` samples at a time by
    residues (:func:`~exactnorm.model.residues.exact_batch`). ``progress(done, n)`` counts
    samples.

    The batches run on :data:`EXACT_THREADS` threads, each with one BLAS thread: their
    products are small (a kernel of a few rows times many patches), the residue arithmetic
    releases the interpreter lock, and a threaded BLAS under them ran three times slower on a
    busy machine. The results are exact, so neither the order of the batches nor the threads
    change a bit of them."""
    n = len(X)
    values = np.zeros((n, target.widths[-1]))
    best = np.zeros(n, dtype=np.int64)
    if n == 0:
        return values, best
    plan = residue_plan(target)
    X = np.asarray(X, dtype=np.float64)
    starts = list(range(0, n, EXACT_CHUNK))

    def one(start: int) -> tuple[list[list[int]], int]:
        return exact_batch(target, X[start:start + EXACT_CHUNK], plan)

    def keep(start: int, batch: tuple[list[list[int]], int]) -> None:
        N, D = batch
        for s, row in enumerate(N, start):
            values[s] = [v / D for v in row]
            best[s] = exact_argmax(row)
        if progress is not None:
            progress(start + len(N), n)

    on_threads(one, starts[:1], keep)  # alone: it fills the plan's caches the others read
    on_threads(one, starts[1:], keep)
    return values, best


def on_threads(work: Callable[[int], Any], starts: Sequence[int],
               keep: Callable[[int, Any], None]) -> None:
    """``keep(start, work(start))`` for every start, in order, the works running on
    :data:`EXACT_THREADS` threads with one BLAS thread each (:func:`exact_outputs` says why).

    The threads are daemons and the caller waits a quarter second at a time: on an interrupt
    (or an error of a work, raised here at its turn) no work is started after the running ones
    and the command exits without waiting for them (a batch can take seconds)."""
    order = list(starts)
    if not order:
        return
    results: dict[int, Any] = {}
    pending = iter(order)
    ready = threading.Condition()
    stop = threading.Event()

    def worker() -> None:
        while not stop.is_set():
            with ready:
                start = next(pending, None)
            if start is None:
                return
            try:
                result: Any = work(start)
            except BaseException as exc:  # noqa: BLE001 - raised in the caller at its turn
                result = _Failed(exc)
            with ready:
                results[start] = result
                ready.notify_all()

    with threadpool_limits(limits=1, user_api="blas"):
        for k in range(min(EXACT_THREADS, len(order))):
            threading.Thread(target=worker, daemon=True, name=f"exactnorm-batch{k}").start()
        try:
            for start in order:
                with ready:
                    while start not in results:
                        ready.wait(0.25)
                    result = results.pop(start)
                if isinstance(result, _Failed):
                    raise result.error
                keep(start, result)
        finally:
            stop.set()


class _Failed:
    """A work's exception, carried to the caller's thread."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


def residue_plan(target: Any) -> ResiduePlan:
    """The :class:`~exactnorm.model.residues.ResiduePlan` of ``target``, made once per target
    object (its exact bounds cost about a second on a ResNet; an export measures the box, the
    data and the source with the same target)."""
    if _PLAN and _PLAN[0].target is target:
        return _PLAN[0]
    _PLAN[:] = [ResiduePlan(target)]  # one plan kept: the last target's
    return _PLAN[0]


_PLAN: list[ResiduePlan] = []


def float_copy(doc: dict[str, Any], progress: Hook = None) -> FloatNetwork:
    """The frozen network of a certificate of any kinds, every parameter rounded, with
    ``forward(X, dtype)`` (module doc); ``progress(done, total)`` counts the frozen layers
    read."""
    return float_network(doc, progress=progress)


def float_chunk(copy: Any) -> int:
    """Samples per batch of a float forward pass: :data:`CHUNK`, fewer when a batch of the
    widest layer (with its patches, at most ten values per output for a 3×3 window) would pass
    :data:`FLOAT_BATCH_BYTES` — a ResNet's frozen layers hold about 2·10⁵ values per sample."""
    widest = max((layer.width for layer in copy.layers), default=1)
    return max(1, min(CHUNK, FLOAT_BATCH_BYTES // (10 * 8 * widest)))


def run_float(copy: Any, X: np.ndarray, dtype: Any, progress: Hook = None) -> np.ndarray:
    """``copy.forward`` in batches of half :func:`float_chunk` samples, two at a time
    (:func:`on_threads`: the same memory as one whole batch), as float64 results."""
    chunk = max(1, float_chunk(copy) // EXACT_THREADS)
    out: list[np.ndarray] = []  # on_threads keeps the batches in order

    def one(start: int) -> np.ndarray:
        with np.errstate(all="ignore"):  # per thread: float32 copies overflow by design
            return np.asarray(copy.forward(X[start:start + chunk], dtype), dtype=np.float64)

    def keep(start: int, Y: np.ndarray) -> None:
        out.append(Y)
        if progress is not None:
            progress(min(start + chunk, len(X)), len(X))

    on_threads(one, range(0, len(X), chunk), keep)
    return np.concatenate(out) if out else np.zeros((0, 0))


def compare(Y: np.ndarray, exact: np.ndarray, best: np.ndarray,
            labels: np.ndarray | None = None) -> dict[str, Any]:
    """Float outputs ``Y`` against the exact outputs: ``max_abs``, ``max_rel`` (relative to the
    largest exact output), ``changed`` (samples whose largest output moved), ``points`` and,
    with labels, ``accuracy``."""
    n = len(Y)
    err = np.abs(Y - exact) if n else np.zeros((0, 0))
    worst = float(np.max(err)) if n else 0.0
    scale = float(np.max(np.abs(exact))) if n else 0.0
    pred = np.argmax(Y, axis=1) if n else np.zeros(0, dtype=np.int64)
    out: dict[str, Any] = {"points": n, "max_abs": worst,
                           "max_rel": worst / scale if scale else worst,
                           "changed": int(np.sum(pred != best)), "abs": err}
    if labels is not None:
        out["accuracy"] = float(np.mean(pred == labels)) if n else 0.0
    return out


def data_study(doc: dict[str, Any], target: Any, data: str | os.PathLike[str] | np.ndarray,
               labels: str | os.PathLike[str] | np.ndarray | None = None, *,
               copy: Any = None, dtypes: Sequence[str] = ("float32", "float64"),
               progress: Hook = None) -> dict[str, Any]:
    """The float copies (or the given ``copy``) on the user's data against the exact target
    (module doc): per dtype :func:`compare`'s numbers, the exact target's accuracy, and how
    many samples lie outside the certified box."""
    d0 = len(target.lower)
    X = load_data(data, d0)
    y = None if labels is None else (labels if isinstance(labels, np.ndarray)
                                     else load_labels(labels, len(X)))
    if y is not None and len(y) != len(X):
        raise ShapeError(f"{len(y)} labels for {len(X)} samples", parameter="labels")
    X64 = np.asarray(X, dtype=np.float64)
    n = len(X)
    steps = n * (1 + len(dtypes))

    def stage(k: int) -> Hook:
        return None if progress is None else (lambda d, t: progress(k * n + d, steps))

    exact, best = exact_outputs(target, X64, stage(0))
    copy = float_copy(doc) if copy is None else copy
    result: dict[str, Any] = {"samples": n, "outside": int(np.sum(~inside_box(
        X64, target.lower, target.upper))), "data": str(data) if not isinstance(
        data, np.ndarray) else "array"}
    if y is not None:
        result["exact_accuracy"] = float(np.mean(best == y))
    for k, name in enumerate(dtypes, 1):
        Y = run_float(copy, X64, np.dtype(name).type, stage(k))
        result[name] = compare(Y, exact, best, y)
    return result


def data_lines(study: dict[str, Any]) -> list[str]:
    """The data section of a report, in Markdown."""
    n = study["samples"]
    out = ["## On your data", "",
           f"{n} samples from `{Path(study['data']).name}`; the certified network's float "
           f"copies (every parameter rounded once, evaluated in that precision) against the "
           f"exact target, whose largest output is decided exactly.", ""]
    if study["outside"]:
        out += [f"**{study['outside']} of {n} samples lie outside the certified box**: there "
                f"the certificate claims nothing (the frozen network may differ from the "
                f"target).", ""]
    acc = "exact_accuracy" in study
    out += ["| copy | max abs error | max rel error | predictions changed |"
            + (" accuracy |" if acc else ""),
            "|---|---|---|---|" + ("---|" if acc else "")]
    if acc:
        out.append(f"| exact target (the source) | 0 | 0 | 0 | {study['exact_accuracy']:.2%} |")
    for name in ("float32", "float64"):
        if name in study:
            e = study[name]
            out.append(f"| {name} | {e['max_abs']:.3g} | {e['max_rel']:.3g} | "
                       f"{e['changed']}/{n} |" + (f" {e['accuracy']:.2%} |" if acc else ""))
    f32 = study.get("float32")
    if f32 is not None and f32["changed"]:
        out += ["", f"**float32 changes {f32['changed']} of {n} predictions: export float64 "
                f"(the default).**"]
    return out + [""]
