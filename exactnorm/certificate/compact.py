"""Exact numbers as the certificate writes and reads them: compact ``{"den", "num"}`` vectors
and matrices, compact 0/1 skips, JSON integers, and the version-2 entry of a frozen matrix.

Both halves of the certificate package use these, so neither imports the other. A compact
vector ``{"den": D, "num": [n_i]}`` has ``D`` the least common multiple of the denominators and
``n_i = x_i·D`` exactly (python-flint's ``numer_denom``), so ``n_i / D = x_i``; nothing is
rounded. :func:`decode_compact` is the inverse. Integers of 18 digits or more are written as
decimal strings, so that no JSON reader rounds them.

>>> compact_numbers([1, 2, 3])
{'den': 1, 'num': [1, 2, 3]}
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from flint import fmpq_mat, fmpz, fmpz_mat

from exactnorm.checker.vocabulary import MAX_MAP_ENTRIES
from exactnorm.errors import (
    ExactnormError,
    InputError,
    InvalidCertificateError,
    LimitExceededError,
)
from exactnorm.exact.linalg import clear_denominators, to_fmpq_mat
from exactnorm.exact.rationals import JSON_INT_LIMIT, format_number, unlimited_int_digits
from exactnorm.model.routes import Route, Skip

__all__ = ["DEFAULT_MAX_ENTRIES", "json_integers", "plain_matrix", "numbers_json", "weight_json",
           "compact_skip", "expand_skip", "route_of", "is_draw_record", "frozen_matrix_json",
           "compact_numbers", "compact_integer", "decode_compact"]

#: largest frozen matrix regenerated from one record (entries; the 784-128-10 trade-off's
#: largest has 100,352), the checker's limit
DEFAULT_MAX_ENTRIES = MAX_MAP_ENTRIES


def _rows(flat: list[Any], cols: int) -> list[list[Any]]:
    return [flat[r * cols:(r + 1) * cols] for r in range(len(flat) // cols)] if cols else []


def json_integers(flat: list[int]) -> list[int | str]:
    """Integers as :func:`format_number` writes them (from :data:`JSON_INT_LIMIT` on as strings),
    in bulk."""
    if not flat or (max(flat) < JSON_INT_LIMIT and min(flat) > -JSON_INT_LIMIT):
        return list(flat)  # the common case, decided once per vector or matrix
    with unlimited_int_digits():
        # CPython converts an int to decimal in quadratic time (a 44-kbit γ entry takes
        # milliseconds, 640 of them seconds); FLINT's conversion is subquadratic, same digits
        return [x if abs(x) < JSON_INT_LIMIT else str(fmpz(x)) if x.bit_length() > 4096
                else str(x) for x in flat]


def plain_matrix(M: Any) -> list[list[Any]]:
    if isinstance(M, fmpz_mat) and M.nrows() and M.ncols():
        # frozen weights are small integers: JSON ints, converted without per-entry formatting
        return _rows(json_integers(list(map(int, M.entries()))), M.ncols())
    return [[format_number(x) for x in row] for row in M.tolist()]


def numbers_json(values: Any, compact: bool) -> Any:
    if compact:
        return compact_numbers(values)
    if isinstance(values, (fmpz_mat, fmpq_mat)):
        return plain_matrix(values)
    return [format_number(x) for x in values]


def weight_json(M: Any, compact: bool) -> Any:
    # integer frozen weights stay plain rows in both versions: a denominator 1 says nothing
    if isinstance(M, fmpz_mat):
        return _shared_matrix(M)
    return plain_matrix(M) if not compact else compact_numbers(M)


class _RecentByIdentity:
    """``build(M)`` for the last few objects ``M`` written, by identity: the trade-off shares
    one identity-skip object between all its blocks, so it is converted once."""

    def __init__(self, size: int = 4) -> None:
        self.size = size
        self.items: dict[tuple[int, str], tuple[Any, Any]] = {}

    def get(self, M: Any, tag: str, build: Callable[[], Any]) -> Any:
        hit = self.items.get((id(M), tag))
        if hit is not None and hit[0] is M:
            return hit[1]
        value = build()
        if len(self.items) >= self.size:
            self.items.pop(next(iter(self.items)))
        self.items[(id(M), tag)] = (M, value)  # holding M keeps its id from being reused
        return value


_recent = _RecentByIdentity()


def _shared_matrix(M: fmpz_mat) -> list[list[Any]]:
    return _recent.get(M, "rows", lambda: plain_matrix(M))


def compact_skip(M: Any, route: str) -> dict[str, Any] | None:
    """A 0/1 skip matrix of route ``identity`` or ``selection`` in its version-2 compact form.

    ``{"identity": n}`` for the n × n identity, ``{"selection": [c_0, …], "columns": d}`` for
    a selection (row r copies column c_r, ``None`` for a zero row): n numbers instead of n·d
    (docs/certificate-format.md §1.5). ``None`` when ``M`` is not of its declared kind: the
    writer then keeps the explicit rows, and the checker names the wrong kind.

    >>> from flint import fmpz_mat
    >>> compact_skip(fmpz_mat([[0, 1, 0], [0, 0, 0]]), "selection")
    {'selection': [1, None], 'columns': 3}
    >>> compact_skip(fmpz_mat([[1, 0], [0, 1]]), "identity")
    {'identity': 2}
    """
    if isinstance(M, Route):  # kept as its picks already: nothing to scan
        if route == "identity":
            return {"identity": M.nrows()} if M.is_identity else None
        return {"selection": list(M.picks), "columns": M.ncols()} if route == "selection" \
            else None
    return _recent.get(M, route, lambda: _compact_skip(M, route))


def _compact_skip(M: Any, route: str) -> dict[str, Any] | None:
    rows = M.tolist()
    picks: list[int | None] = []
    for row in rows:
        ones = [t for t, x in enumerate(row) if x]
        if len(ones) > 1 or any(row[t] != 1 for t in ones):
            return None
        picks.append(ones[0] if ones else None)
    out: dict[str, Any]
    if route == "identity":
        if picks != list(range(len(rows))) or M.ncols() != len(rows):
            return None
        out = {"identity": len(rows)}
    elif route == "selection":
        out = {"selection": picks, "columns": M.ncols()}
    else:
        return None
    return out


def route_of(entry: Any, what: str) -> Skip:
    """A skip written as a route (``{"from": s, "kind": "identity" | "selection", "weight":
    {"identity": n} | {"selection": [...], "columns": d}}`` or its 0/1 rows: a target layer's
    ``skip``, a checkpoint's ``residual``) as a :class:`~exactnorm.model.routes.Skip` over a
    :class:`~exactnorm.model.routes.Route`, without writing out a matrix; a malformed one is
    refused (the checker decides validity; this only parses).

    >>> route_of({"from": 1, "kind": "selection", "weight": {"selection": [2, None],
    ...                                                       "columns": 3}}, "skip").weight
    Route(picks=(2, None), columns=3)
    """
    try:
        w = entry["weight"]
        if isinstance(w, list) and w and all(isinstance(r, list) and r for r in w):
            route = Route.from_matrix(w)  # written out (a decoded document): 0/1 rows
        elif set(w) == {"identity"} and type(w["identity"]) is int and w["identity"] > 0:
            route = Route.identity(w["identity"])
        elif set(w) == {"selection", "columns"} and isinstance(w["selection"], list):
            route = Route(tuple(w["selection"]), w["columns"])
        else:
            raise InvalidCertificateError(f"{what}: a skip weight is {{\"identity\": n}} or "
                                          f"{{\"selection\": [...], \"columns\": d}}")
        source = entry["from"]
        if type(source) is not int or source < 0:
            raise InvalidCertificateError(f"{what}: 'from' is not a node")
        return Skip(source, route, str(entry["kind"]))
    except ExactnormError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise InvalidCertificateError(f"{what}: malformed skip {exc!r}"[:300]) from None


def expand_skip(weight: Any, max_entries: int = DEFAULT_MAX_ENTRIES) -> Any:
    """The explicit 0/1 rows of a compact skip (:func:`compact_skip`); anything else as is.

    Raises :class:`InvalidCertificateError` for a malformed compact skip and
    :class:`LimitExceededError` above ``max_entries`` entries (checked before allocating: a
    few bytes of ``{"identity": 1000000}`` denote 10¹² entries).

    >>> expand_skip({"selection": [1, None], "columns": 3})
    [[0, 1, 0], [0, 0, 0]]
    """
    if not isinstance(weight, dict):
        return weight
    picks: Any
    if set(weight) == {"identity"}:
        cols = weight["identity"]
        rows, picks = cols, range(cols) if type(cols) is int and cols >= 0 else None
    elif set(weight) == {"selection", "columns"}:
        cols, picks = weight["columns"], weight["selection"]
        rows = len(picks) if isinstance(picks, list) else None
    else:
        return weight
    if type(cols) is not int or cols < 0 or rows is None or picks is None:
        raise InvalidCertificateError(f"malformed compact skip weight {str(weight)[:80]}")
    if rows * cols > max_entries:  # before anything of that size exists
        raise LimitExceededError(f"compact skip of {rows} x {cols} entries, above the limit "
                                 f"{max_entries}")
    if any(t is not None and (type(t) is not int or not 0 <= t < cols) for t in picks):
        raise InvalidCertificateError(f"malformed compact skip weight {str(weight)[:80]}")
    return [[1 if c == t else 0 for c in range(cols)] for t in picks]


def is_draw_record(record: Any) -> bool:
    return isinstance(record, dict) and "generator" in record


def frozen_matrix_json(entry: dict[str, Any], M: Any, record: dict[str, Any] | None, what: str,
                       frozen_weights: str) -> None:
    """Write ``weight`` (and ``source``) of one frozen matrix into ``entry`` (version 2)."""
    if record is None:
        raise InputError(f"{what} has no draw record: a version-2 certificate needs the "
                         f"provenance of every frozen matrix (declare it fixed or draw it)")
    if is_draw_record(record) and frozen_weights == "reference":
        entry["weight"] = {"random": record}
        return
    entry["weight"] = weight_json(M, compact=True)
    entry["source"] = record


def compact_numbers(values: Any) -> dict[str, Any]:
    """Exact vector or matrix → ``{"den": D, "num": …}`` with ``D`` the least common denominator.

    ``values`` is a python-flint matrix (numerators as rows) or a sequence of exact numbers
    (``fmpq``, ``fmpz``, ``int``, ``Fraction``). Integers of 18 digits or more are written as
    decimal strings, as in version 1, so that no JSON reader rounds them.

    >>> from fractions import Fraction
    >>> compact_numbers([Fraction(1, 2), Fraction(-1, 3), 2])
    {'den': 6, 'num': [3, -2, 12]}
    >>> compact_numbers([])
    {'den': 1, 'num': []}
    """
    if isinstance(values, (fmpz_mat, fmpq_mat)):
        numer, den = clear_denominators(values)
        flat = json_integers(list(map(int, numer.entries())))
        return {"den": format_number(int(den)), "num": _rows(flat, numer.ncols())}
    items = list(values)
    if not items:
        return {"den": 1, "num": []}
    numer, den = clear_denominators(to_fmpq_mat([items]))
    return {"den": format_number(int(den)),
            "num": json_integers(list(map(int, numer.entries())))}


def compact_integer(x: Any, where: str) -> int:
    if type(x) is int:
        return x
    if isinstance(x, str) and x.lstrip("-").isdigit() and x.isascii():
        with unlimited_int_digits():
            return int(x)
    raise InvalidCertificateError(f"{where}: compact numbers must be JSON integers or decimal "
                                  f"integer strings, got {str(x)[:40]!r}")


def _decode_one(obj: dict[str, Any], where: str) -> list[Any]:
    den = compact_integer(obj["den"], f"{where} den")
    if den <= 0:
        raise InvalidCertificateError(f"{where}: compact denominator must be positive, got {den}")

    def fraction(n: Any) -> int | str:
        num = compact_integer(n, f"{where} num")
        g = math.gcd(num, den)
        return format_number(num // g) if g == den else f"{num // g}/{den // g}"

    nums = obj["num"]
    if not isinstance(nums, list):
        raise InvalidCertificateError(f"{where}: compact 'num' must be a list")
    with unlimited_int_digits():
        return [[fraction(n) for n in row] if isinstance(row, list) else fraction(row)
                for row in nums]


def decode_compact(obj: Any, where: str = "certificate") -> Any:
    """Replace every ``{"den": D, "num": …}`` in ``obj`` by the plain version-1 list it denotes,
    and every compact skip weight (:func:`compact_skip`) by its 0/1 rows.

    The values are unchanged (``"n/D"`` in lowest terms, integers as integers); everything else is
    copied as it is. A malformed compact object raises :class:`InvalidCertificateError`.

    >>> decode_compact({"gamma": {"den": 6, "num": [3, -2, 12]}, "activation": "relu"})
    {'gamma': ['1/2', '-1/3', 2], 'activation': 'relu'}
    """
    if isinstance(obj, dict):
        if set(obj) == {"den", "num"}:
            return _decode_one(obj, where)
        out = {k: decode_compact(v, f"{where}.{k}") for k, v in obj.items()}
        if "from" in out and "kind" in out and "weight" in out:  # a skip
            out["weight"] = expand_skip(out["weight"])
        return out
    if isinstance(obj, list):
        return [decode_compact(v, f"{where}[{i}]") for i, v in enumerate(obj)]
    return obj
