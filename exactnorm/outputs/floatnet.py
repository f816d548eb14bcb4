"""A certificate's frozen network read straight into float64 arrays, for the float exports.

The float exports (npz, ONNX, torch) round every frozen matrix anyway, so they need no exact
``fmpq_mat``: building one per layer (parsing every entry, then converting it back entry by entry
through :class:`fractions.Fraction`) took minutes on a 784-128-10 certificate of 2,738 layers.
Here integer rows become arrays in one NumPy call, compact identity/selection skips are built
directly, by-reference weights are regenerated and converted with ``int / int`` (Python's true
division of integers is correctly rounded, as ``float(Fraction)`` is). Only γ and β, which the
BatchNorm conversion needs exactly, are parsed as exact numbers.

>>> import numpy as np
>>> skip_array({"selection": [1, None], "columns": 3}).tolist()
[[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]
>>> matrix_array([[1, "1/2"], [3, 4]]).tolist()
[[1.0, 0.5], [3.0, 4.0]]
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from flint import fmpq

from exactnorm.certificate import (
    DEFAULT_MAX_ENTRIES,
    compact_integer,
    decode_compact,
    expand_skip,
    regenerate_record,
)
from exactnorm.checker.regenerate import validate_record
from exactnorm.errors import ExactnormError, InputError, InvalidCertificateError
from exactnorm.exact import generator
from exactnorm.exact.linalg import to_numpy
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS, parse_number

__all__ = ["FloatLayer", "FloatNetwork", "float_network", "matrix_array", "skip_array",
           "flint_array", "float_forward", "box_points", "float_errors"]


@dataclass(frozen=True)
class FloatLayer:
    """One frozen layer: float64 ``weight`` (V), exact ``gamma``/``beta``, float64 skips."""

    input: int
    weight: np.ndarray
    gamma: tuple[fmpq, ...]
    beta: tuple[fmpq, ...]
    activation: str
    skips: tuple[tuple[int, np.ndarray], ...]
    skip_kinds: tuple[str, ...] = ()

    @property
    def width(self) -> int:
        return int(self.weight.shape[0])

    @functools.cached_property
    def float_gamma_beta(self) -> tuple[np.ndarray, np.ndarray]:
        """γ and β rounded to float64 (``int / int`` is correctly rounded)."""
        return (np.array([int(x.p) / int(x.q) for x in self.gamma], dtype=np.float64),
                np.array([int(x.p) / int(x.q) for x in self.beta], dtype=np.float64))


@dataclass(frozen=True)
class FloatNetwork:
    """The layers, the input dimension and the checkpoints of a certificate's network."""

    input_dim: int
    layers: tuple[FloatLayer, ...]
    checkpoints: tuple[int, ...]

    @property
    def depth(self) -> int:
        return len(self.layers)


def flint_array(M: Any) -> np.ndarray:
    """``fmpz_mat``/``fmpq_mat`` → float64 array, each entry correctly rounded."""
    return to_numpy(M)


def matrix_array(rows: Sequence[Sequence[Any]], what: str = "matrix") -> np.ndarray:
    """Rows of exact numbers as written in a certificate (ints, ``"p/q"`` strings) → float64."""
    if all(type(x) is int for row in rows for x in row):
        try:
            return np.array(rows, dtype=np.float64).reshape(len(rows), -1)
        except (ValueError, OverflowError):
            pass
    vals = []
    for row in rows:
        out = []
        for x in row:
            q = parse_number(x, max_digits=DEFAULT_MAX_DIGITS, where=what)
            out.append(q.numerator / q.denominator)
        vals.append(out)
    return np.array(vals, dtype=np.float64).reshape(len(rows), -1)


def skip_array(weight: Any) -> np.ndarray:
    """A compact identity/selection skip as a 0/1 float64 array (no list of lists first)."""
    if isinstance(weight, dict) and set(weight) == {"identity"} and type(weight["identity"]) is int:
        return np.eye(weight["identity"])
    if isinstance(weight, dict) and set(weight) == {"selection", "columns"}:
        picks, cols = weight["selection"], weight["columns"]
        if type(cols) is not int or cols < 0 or not isinstance(picks, list) or any(
                t is not None and (type(t) is not int or not 0 <= t < cols) for t in picks):
            raise InvalidCertificateError(f"malformed compact skip weight {str(weight)[:80]}")
        out = np.zeros((len(picks), cols))
        for r, t in enumerate(picks):
            if t is not None:
                out[r, t] = 1.0
        return out
    return matrix_array(expand_skip(weight))


def _frozen(obj: dict[str, Any], what: str) -> np.ndarray:
    weight = obj["weight"]
    if isinstance(weight, dict) and set(weight) == {"random"}:
        return _regenerated(weight["random"], what)
    weight = decode_compact(weight, what)
    if isinstance(weight, dict) and set(weight) == {"random"}:
        return _regenerated(weight["random"], what)
    if isinstance(weight, dict):
        return skip_array(weight)
    return matrix_array(weight, what)


def _regenerated(record: Any, what: str) -> np.ndarray:
    """A by-reference weight drawn straight into float64 (the reader's validation first)."""
    try:
        validate_record(record, max_entries=DEFAULT_MAX_ENTRIES)
    except Exception:  # noqa: BLE001 - the reader's own path names the error
        return flint_array(regenerate_record(record, what, DEFAULT_MAX_ENTRIES))
    rows, cols = record["shape"]
    values = generator.record_values(record)
    if isinstance(values, tuple):
        num, den = values
        if max(int(np.abs(num).max(initial=0)), int(den.max(initial=1))) >= 2 ** 53:
            return flint_array(regenerate_record(record, what, DEFAULT_MAX_ENTRIES))
        # both exact in float64, so one division is correctly rounded
        return (num.astype(np.float64) / den.astype(np.float64)).reshape(rows, cols)
    if int(np.abs(values).max(initial=0)) >= 2 ** 53:
        return flint_array(regenerate_record(record, what, DEFAULT_MAX_ENTRIES))
    return values.astype(np.float64).reshape(rows, cols)


def _vec(obj: Any, what: str) -> tuple[fmpq, ...]:
    if isinstance(obj, dict) and set(obj) == {"den", "num"} and type(obj["den"]) is int \
            and obj["den"] > 0 and isinstance(obj["num"], list):
        # compact numbers (format §1.4): one shared denominator, no "p/q" strings in between
        den = obj["den"]
        return tuple(fmpq(compact_integer(n, what), den) for n in obj["num"])
    obj = decode_compact(obj, what)
    out = []
    for x in obj:
        q = parse_number(x, max_digits=DEFAULT_MAX_DIGITS, where=what)
        out.append(fmpq(q.numerator, q.denominator))
    return tuple(out)


def float_network(doc: dict[str, Any], *,
                  progress: Callable[[int, int], None] | None = None) -> FloatNetwork:
    """The frozen network of a certificate document with float64 matrices (see module text);
    ``progress(done, total)`` is told the layers read so far."""
    if not isinstance(doc, dict):
        raise InputError("expected a certificate document (a JSON object)")
    try:
        net = doc["network"]
        layers = []
        for j, L in enumerate(net["layers"], 1):
            if progress is not None and j > 1:
                progress(j - 1, len(net["layers"]))
            skips = tuple((int(s["from"]), _frozen(s, f"layer {j} skip weight"))
                          for s in L.get("skip", []))
            layers.append(FloatLayer(int(L["input"]), _frozen(L, f"layer {j} weight"),
                                     _vec(L["gamma"], f"layer {j} gamma"),
                                     _vec(L["beta"], f"layer {j} beta"), str(L["activation"]),
                                     skips, tuple(str(s["kind"]) for s in L.get("skip", []))))
        if progress is not None:
            progress(len(layers), len(layers))
        lower = doc["domain"]["lower"]
        d0 = len(lower["num"]) if isinstance(lower, dict) and "num" in lower else len(lower)
        return FloatNetwork(d0, tuple(layers),
                            tuple(int(c) for c in net["checkpoints"]))
    except ExactnormError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError, IndexError) as exc:
        raise InputError(f"certificate network section is malformed: {exc!r}"[:300]) from None


def float_forward(net: FloatNetwork, X: np.ndarray, dtype: Any = np.float64) -> np.ndarray:
    """The network in ``dtype`` arithmetic, every parameter rounded once to ``dtype``:
    ``u = (V h) · γ + β`` per layer (the ``muladd`` form of an export)."""
    # a node is dropped after the last layer that reads it: a real-size network has thousands
    # of nodes, and a batch of them all would not fit in memory
    last = {0: 0}
    for j, layer in enumerate(net.layers, 1):
        for source in (layer.input, *(s for s, _ in layer.skips)):
            last[source] = j
    nodes: list[np.ndarray | None] = [np.asarray(X, dtype=dtype)]
    for j, layer in enumerate(net.layers, 1):
        g64, b64 = layer.float_gamma_beta
        g, b = g64.astype(dtype), b64.astype(dtype)
        u = (nodes[layer.input] @ layer.weight.astype(dtype).T) * g + b
        h = np.maximum(u, dtype(0)) if layer.activation == "relu" else u
        for source, P in layer.skips:
            h = h + nodes[source] @ P.astype(dtype).T
        nodes.append(h)
        for k in {layer.input, *(s for s, _ in layer.skips)}:
            if last.get(k, 0) <= j and k != len(nodes) - 1:
                nodes[k] = None
    return nodes[-1]  # type: ignore[return-value]


def box_points(lower: Sequence[Any], upper: Sequence[Any], points: int,
               seed: int = 0) -> list[list[fmpq]]:
    """``points`` exact points ``lower + t·(upper − lower)`` of a box, each ``t`` a multiple of
    1/1000 drawn from ``random.Random(seed)`` (the same points on every machine).

    >>> pts = box_points([0, -1], [1, 1], 3, seed=3)
    >>> len(pts), all(0 <= a <= 1 and -1 <= b <= 1 for a, b in pts)
    (3, True)
    >>> pts == box_points([0, -1], [1, 1], 3, seed=3)
    True
    """
    rng = random.Random(seed)
    return [[fmpq(lo) + (fmpq(hi) - fmpq(lo)) * fmpq(rng.randrange(0, 1001), 1000)
             for lo, hi in zip(lower, upper)] for _ in range(points)]


def _float(x: fmpq) -> float:
    return int(x.p) / int(x.q)  # correctly rounded, as float(Fraction) is


def float_errors(net: FloatNetwork, target: Any, points: int, seed: int = 0,
                 dtypes: Sequence[Any] = (np.float32, np.float64)) -> dict[str, dict[str, Any]]:
    """The error a float copy of the certified network makes, measured at ``points`` seeded
    points of the target's box (:func:`box_points`) against the exact target ``g``.

    For each dtype: ``abs`` (the absolute error of every output at every point, an array),
    ``max_abs``, ``max_rel`` (relative to the largest exact output) and ``argmax_agree`` (points
    whose largest output keeps its index). The certified network is exact; this is the error of
    its rounded image (:func:`float_forward`, every parameter rounded once).
    """
    xs = box_points(target.lower, target.upper, points, seed)
    exact = np.array([[_float(y) for y in target.evaluate(x)] for x in xs], dtype=np.float64)
    X = np.array([[_float(v) for v in x] for x in xs], dtype=np.float64)
    scale = float(np.max(np.abs(exact))) if points else 0.0
    out = {}
    for dtype in dtypes:
        with np.errstate(all="ignore"):
            Y = np.asarray(float_forward(net, X.astype(dtype), dtype), dtype=np.float64)
        err = np.abs(Y - exact)
        worst = float(np.max(err)) if points else 0.0
        out[np.dtype(dtype).name] = {
            "abs": err, "max_abs": worst, "max_rel": worst / scale if scale else worst,
            "argmax_agree": int(np.sum(np.argmax(Y, axis=1) == np.argmax(exact, axis=1)))
            if points else 0, "points": points}
    return out
