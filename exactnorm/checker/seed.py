"""The seed derived from a target and its box (seed rule ``target``, docs/generator.md §8).
Standard library only.

Contract. :func:`target_seed` maps the *values* of a certificate's domain and target (as read by
the checker: :class:`~.numbers.IntVector` and :class:`~.numbers.IntMatrix` over one denominator,
layer kinds and windows) to a 64-bit seed: the first eight bytes, little-endian, of SHAKE-256 of
a canonical text (:func:`canonical_lines`). A certificate whose ``seed_rule`` is ``"target"``
draws every frozen matrix from that seed, so the random network is a function of the target,
the box and the positions the format fixes: it was not chosen after seeing the target.

Correctness argument. The canonical text depends on the values only: every number is written in
lowest terms (numerator and denominator in lowercase hexadecimal, the sign on the numerator), so
``"1/2"``, ``"0.5"``, ``"2/4"`` and ``{"den": 4, "num": [2]}`` give the same bytes, and a writer
cannot try spellings of one target to choose among seeds. Fields are separated by characters
that no number contains (`` ``, ``,``, ``;``, newline), so different targets give different
texts; SHAKE-256 (FIPS 202) is the same on every machine.

>>> from exactnorm.checker.numbers import IntMatrix, IntVector
>>> from exactnorm.checker.records import TargetRecord
>>> layer = TargetRecord("dense", IntMatrix([[1, -2]], 4), IntVector([3], 1), "identity", 1)
>>> list(canonical_lines(IntVector([0, 0], 1), IntVector([1, 1], 1), [layer]))[:4]
[b'exactnorm.seed.v1\\n', b'lower 0,0\\n', b'upper 1,1\\n', b'layer 1 dense identity\\n']
>>> target_seed(IntVector([0, 0], 1), IntVector([1, 1], 1), [layer]) < 2**64
True
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterator
from typing import Any

from .numbers import IntMatrix, IntVector
from .records import TargetRecord

__all__ = ["SEED_RULES", "SEED_TEXT_VERSION", "canonical_lines", "target_seed", "hashing_cost"]

#: the seed rules a version-3 certificate may declare (``seed_rule``; absent means "chosen")
SEED_RULES = ("target", "chosen")
SEED_TEXT_VERSION = b"exactnorm.seed.v1"


def _number(num: int, den: int) -> str:
    """``num/den`` in lowest terms, hexadecimal: ``-1f/20``, ``0``, ``a``."""
    g = math.gcd(num, den)
    p, q = num // g, den // g
    text = ("-" if p < 0 else "") + format(abs(p), "x")
    return text if q == 1 else f"{text}/{q:x}"


def _vector(v: IntVector) -> str:
    return ",".join(_number(n, v.den) for n in v.nums)


def _matrix(M: IntMatrix) -> str:
    return ";".join(",".join(_number(n, M.den) for n in row) for row in M.rows)


def _window(g: Any) -> str:
    return (f"{g.C},{g.H},{g.W} {g.kh},{g.kw} {g.sh},{g.sw} {g.ph},{g.pw} {g.dh},{g.dw}")


def _topology(tl: TargetRecord, i: int) -> Iterator[bytes]:
    """A residual layer's lines: ``input p`` when it reads a node other than ``i − 1``, and
    ``skip q identity n`` or ``skip q selection d c_0,c_1,…`` for a skip (``d`` the columns,
    ``c_r`` the column row ``r`` copies, ``_`` for a zero row). A chain has none, so its text is
    unchanged."""
    p = tl.input
    if p != i - 1:
        yield f"input {p}\n".encode("ascii")
    skip = tl.skip
    if skip is not None and skip[1] == "identity":
        yield f"skip {skip[0]} identity {skip[2].cols}\n".encode("ascii")
    elif skip is not None:
        q, kind, picks = skip
        rows = ",".join("_" if t is None else str(t) for t in picks.rows)
        yield f"skip {q} {kind} {picks.cols} {rows}\n".encode("ascii")


def canonical_lines(lower: IntVector, upper: IntVector,
                    target: list[TargetRecord]) -> Iterator[bytes]:
    """The canonical text of a box and a target, line by line (ASCII, each ending in ``\\n``):
    ``exactnorm.seed.v1``; ``lower`` and ``upper`` with the box's numbers; then for target layer
    ``i`` a line ``layer i KIND ACTIVATION`` (a convolution or pooling adds its window ``C,H,W
    kh,kw sh,sw ph,pw dh,dw``, a global pooling its ``C,H,W``), a residual layer's ``input``
    and ``skip`` lines (:func:`_topology`) and, except for a pooling layer, ``weight`` (rows
    separated by ``;``) and ``bias``."""
    yield SEED_TEXT_VERSION + b"\n"
    yield f"lower {_vector(lower)}\n".encode("ascii")
    yield f"upper {_vector(upper)}\n".encode("ascii")
    for i, tl in enumerate(target, 1):
        head = f"layer {i} {tl.kind} {tl.act}"
        if tl.geom is not None:
            head += " " + _window(tl.geom)
        elif tl.shape is not None:  # a global pooling: its input shape C,H,W
            head += " " + ",".join(map(str, tl.shape))
        yield f"{head}\n".encode("ascii")
        yield from _topology(tl, i)
        if tl.W is not None and tl.b is not None:
            yield f"weight {_matrix(tl.W)}\n".encode("ascii")
            yield f"bias {_vector(tl.b)}\n".encode("ascii")


def hashing_cost(lower: IntVector, upper: IntVector, target: list[TargetRecord],
                 cost: Callable[[int, int], int]) -> int:
    """An upper bound of the work of :func:`target_seed` in the units of the work budget: one
    greatest common divisor per number, ``cost(bits of the numerator, bits of the
    denominator)``, and one unit per number for the text and the hash."""
    total = 0
    vectors = [lower, upper] + [tl.b for tl in target if tl.b is not None]
    for v in vectors:
        d = v.den.bit_length()
        total += sum(cost(abs(n).bit_length(), d) + 1 for n in v.nums)
    for tl in target:
        skip = tl.skip
        total += 2 * len(skip[2].rows) if skip is not None and skip[1] != "identity" else 1
        W = tl.W
        if W is not None:
            d = W.den.bit_length()
            bits = max((abs(n).bit_length() for row in W.rows for n in row), default=0)
            total += W.nrows * W.ncols * (cost(bits, d) + 1)
    return total


def target_seed(lower: IntVector, upper: IntVector, target: list[TargetRecord]) -> int:
    """The seed of rule ``target``: the first 8 bytes of SHAKE-256 of the canonical text, read
    as a little-endian unsigned integer."""
    h = hashlib.shake_256()
    for line in canonical_lines(lower, upper, target):
        h.update(line)
    return int.from_bytes(h.digest(8), "little")
