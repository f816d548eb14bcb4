"""A certificate's numbers as float64 arrays, without any exact matrix: the pieces the float view
of every kind is read with (:func:`~exactnorm.certificate.float_read.float_network`, each kind's
codec).

The float exports (npz, ONNX, torch), the report's and the data study's float copies round every
frozen matrix anyway, so they need no exact ``fmpq_mat``: building one per layer (parsing every
entry, then converting it back entry by entry) took minutes on a 784-128-10 certificate of 2,738
layers. Here integer rows become arrays in one NumPy call, compact identity/selection skips are
built directly, by-reference weights are regenerated and converted with ``int / int`` (Python's
true division of integers is correctly rounded, as ``float(Fraction)`` is). Only γ and β, which a
BatchNorm conversion needs exactly, are parsed as exact numbers (:func:`exact_numbers`).

>>> skip_array({"selection": [1, None], "columns": 3}).tolist()
[[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]
>>> matrix_array([[1, "1/2"], [3, 4]]).tolist()
[[1.0, 0.5], [3.0, 4.0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from flint import fmpq

from exactnorm.certificate.compact import (
    DEFAULT_MAX_ENTRIES,
    compact_integer,
    decode_compact,
    expand_skip,
)
from exactnorm.certificate.read import regenerate_record
from exactnorm.checker.regenerate import validate_record
from exactnorm.errors import InvalidCertificateError
from exactnorm.exact import generator
from exactnorm.exact.linalg import to_numpy
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS, parse_number

__all__ = ["matrix_array", "skip_array", "frozen_array", "exact_numbers", "kernel_record"]


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


def kernel_record(record: Any) -> Any:
    """A draw record of 4-d shape ``[c, C, kh, kw]`` (a convolution kernel) as the record of the
    same words in shape ``[c, C·kh·kw]``; any other record unchanged."""
    shape = record.get("shape") if isinstance(record, dict) else None
    if isinstance(shape, list) and len(shape) == 4 and all(type(v) is int for v in shape) \
            and "mask" not in record:
        return dict(record, shape=[shape[0], shape[1] * shape[2] * shape[3]])
    return record


def frozen_array(obj: dict[str, Any], what: str, *, kernel: bool = False) -> np.ndarray:
    """The ``weight`` of a frozen layer or skip entry as float64: regenerated from its draw
    record (by reference), or its explicit (plain or compact) rows; ``kernel`` reads a 4-d
    record as the kernel matrix (:func:`kernel_record`)."""
    weight = obj["weight"]
    if isinstance(weight, dict) and set(weight) == {"random"}:
        record = weight["random"]
        return _regenerated(kernel_record(record) if kernel else record, what)
    weight = decode_compact(weight, what)
    if isinstance(weight, dict) and set(weight) == {"random"}:
        return _regenerated(kernel_record(weight["random"]) if kernel else weight["random"], what)
    if isinstance(weight, dict):
        return skip_array(weight)
    return matrix_array(weight, what)


def _regenerated(record: Any, what: str) -> np.ndarray:
    """A by-reference weight drawn straight into float64 (the reader's validation first)."""
    try:
        validate_record(record, max_entries=DEFAULT_MAX_ENTRIES)
    except Exception:  # noqa: BLE001 - the reader's own path names the error
        return to_numpy(regenerate_record(record, what, DEFAULT_MAX_ENTRIES))
    rows, cols = record["shape"]
    values = generator.record_values(record)
    if isinstance(values, tuple):
        num, den = values
        if max(int(np.abs(num).max(initial=0)), int(den.max(initial=1))) >= 2 ** 53:
            return to_numpy(regenerate_record(record, what, DEFAULT_MAX_ENTRIES))
        # both exact in float64, so one division is correctly rounded
        return (num.astype(np.float64) / den.astype(np.float64)).reshape(rows, cols)
    if int(np.abs(values).max(initial=0)) >= 2 ** 53:
        return to_numpy(regenerate_record(record, what, DEFAULT_MAX_ENTRIES))
    return values.astype(np.float64).reshape(rows, cols)


def exact_numbers(obj: Any, what: str) -> tuple[fmpq, ...]:
    """A vector of exact numbers (plain list or compact ``{"den", "num"}``) as ``fmpq``; a compact
    vector's fractions are reduced by FLINT (a 23,000-bit γ of a convolution is read in
    milliseconds, not through ``math.gcd`` of Python integers)."""
    if isinstance(obj, dict) and set(obj) == {"den", "num"} and isinstance(obj["num"], list) \
            and all(not isinstance(n, list) for n in obj["num"]):
        # compact numbers (format §1.4): one shared denominator, no "p/q" strings in between
        den = compact_integer(obj["den"], f"{what} den")
        if den <= 0:
            raise InvalidCertificateError(f"{what}: compact denominator must be positive")
        return tuple(fmpq(compact_integer(n, what), den) for n in obj["num"])
    obj = decode_compact(obj, what)
    out = []
    for x in obj:
        q = parse_number(x, max_digits=DEFAULT_MAX_DIGITS, where=what)
        out.append(fmpq(q.numerator, q.denominator))
    return tuple(out)
