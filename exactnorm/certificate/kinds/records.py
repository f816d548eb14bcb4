"""From the checker's typed records (:mod:`exactnorm.checker.records`) to the exact model: the
pieces every kind's ``target_from_record`` and ``frozen_from_record`` share.

The checker's reader (:func:`exactnorm.checker.document.read_certificate`) has parsed and
validated the document; what is left is a change of representation, exact and without choices:
integers over one denominator become FLINT matrices and vectors, a weight given by reference (a
:class:`~exactnorm.checker.provenance.Draw`, its record validated by the reference generator)
is drawn by the fast generator (:func:`~exactnorm.exact.generator.matrix_from_record`, the same
matrix: ``tests/certificate/test_golden_certificates.py``), 0/1 skips kept as picks become
routes, and a
window becomes a :class:`~exactnorm.model.operators.window.ConvGeometry`. The float view's
frame of a frozen layer (:func:`float_frozen`: γ, β, activation, skips) is here too: a codec
reads only its operator.

>>> from exactnorm.checker.numbers import IntMatrix
>>> flint_matrix(IntMatrix([[1, 2], [3, 4]], 2))
[1/2, 1]
[3/2, 2]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flint import fmpq, fmpq_mat, fmpz_mat

from exactnorm.certificate.arrays import exact_numbers, frozen_array
from exactnorm.checker.numbers import IntMatrix, IntVector
from exactnorm.checker.provenance import Draw
from exactnorm.checker.records import Geometry
from exactnorm.checker.topology import Picks
from exactnorm.exact.generator import matrix_from_record
from exactnorm.model.layers import FloatLayer
from exactnorm.model.operators import Operator
from exactnorm.model.operators.window import ConvGeometry
from exactnorm.model.routes import FloatIdentity, Route, Skip

__all__ = ["Sources", "flint_matrix", "flint_numbers", "frozen_matrix", "geometry", "route",
           "route_skip", "picks_matrix", "float_frozen"]

#: ``source(j, role)``: the draw record or fixed declaration of frozen layer ``j``'s matrix of
#: that role (:func:`exactnorm.checker.provenance.skip_role`), None for a matrix without one
Sources = Callable[[int, int], "dict[str, Any] | None"]


def flint_matrix(M: IntMatrix) -> Any:
    """An integer matrix over one denominator as a FLINT matrix: ``fmpz_mat`` when the
    denominator is 1, else ``fmpq_mat`` (FLINT reduces the fractions)."""
    ints = fmpz_mat(M.rows)
    return ints if M.den == 1 else fmpq_mat(ints) / M.den


def flint_numbers(v: IntVector) -> tuple[fmpq, ...]:
    """An integer vector over one denominator as exact numbers (FLINT divides the whole row at
    once: about 2x faster than one ``fmpq`` per entry on a LeNet's γ and β)."""
    if not v.nums:
        return ()
    row = fmpq_mat(fmpz_mat([v.nums]))
    return tuple((row if v.den == 1 else row / v.den).entries())


def frozen_matrix(V: IntMatrix | Draw, source: dict[str, Any] | None) -> tuple[Any, Any]:
    """A frozen matrix and its record: a draw is regenerated (its record as the document writes
    it, a kernel's 4-d shape included), an explicit matrix keeps its ``source``."""
    if isinstance(V, Draw):
        return matrix_from_record(V.flat_record()), V.record
    return flint_matrix(V), source


def geometry(g: Geometry) -> ConvGeometry:
    """The checker's window as the model's."""
    return ConvGeometry((g.C, g.H, g.W), (g.kh, g.kw), (g.sh, g.sw), (g.ph, g.pw), (g.dh, g.dw))


def route(p: Picks) -> Route:
    """A 0/1 skip kept as picks, as a route (an identity's ``range`` read once)."""
    return Route(tuple(p.rows), p.cols)


def route_skip(skip: tuple[int, str, Picks] | None) -> Skip | None:
    """A target layer's skip or a checkpoint's residual ``(q, kind, picks)`` as a skip."""
    if skip is None:
        return None
    q, kind, p = skip
    return Skip(q, route(p), kind)


def picks_matrix(p: Picks) -> fmpz_mat:
    """A dense layer's 0/1 skip as its integer rows (what the dense layer holds)."""
    M = fmpz_mat(len(p.rows), p.cols)
    for r, t in enumerate(p.rows):
        if t is not None:
            M[r, t] = 1
    return M


def float_frozen(entry: dict[str, Any], j: int, operator: Operator) -> FloatLayer:
    """Frozen layer ``j`` of the ``network`` section as a float copy around ``operator`` (read
    by its kind's codec): γ and β exact (none for a fixed map), its skips' matrices in float64
    (an identity in its compact form never written out)."""
    skips = entry.get("skip", [])
    tuned = "gamma" in entry
    return FloatLayer(int(entry["input"]), operator,
                      exact_numbers(entry["gamma"], f"layer {j} gamma") if tuned else (),
                      exact_numbers(entry["beta"], f"layer {j} beta") if tuned else (),
                      str(entry["activation"]),
                      tuple((int(s["from"]), _float_skip(s, f"layer {j} skip weight"))
                            for s in skips), tuple(str(s["kind"]) for s in skips))


def _float_skip(skip: dict[str, Any], what: str) -> Any:
    """A skip's float matrix; an identity is not written out (:class:`FloatIdentity`)."""
    weight = skip.get("weight")
    if skip.get("kind") == "identity" and isinstance(weight, dict) \
            and set(weight) == {"identity"} and type(weight["identity"]) is int \
            and weight["identity"] >= 1:
        return FloatIdentity(weight["identity"])
    return frozen_array(skip, what)
