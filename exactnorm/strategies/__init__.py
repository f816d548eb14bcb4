"""Public Hypothesis strategies for exact matrices, boxes and networks (docs/lemmas.md).

Hypothesis is an optional dependency of exactnorm: install it with ``pip install exactnorm[test]``.
This module imports it at the top, so importing :mod:`exactnorm.strategies` without Hypothesis fails
with an ``ImportError`` naming it; the rest of exactnorm never imports this module.

Ground types (every strategy says what it returns):

======================================  ==========================================================
strategy                                generates
======================================  ==========================================================
:func:`integer_matrices`                ``fmpz_mat``
:func:`rational_matrices`               ``fmpq_mat``
:func:`matrices_of_rank`                ``fmpz_mat`` (``fmpq_mat`` with ``rational=True``)
:func:`khatri_rao_pairs`                ``(X, Y)``, both ``fmpz_mat`` (``fmpq_mat`` if rational)
:func:`rational_boxes`                  ``(lower, upper)``, tuples of ``fmpq`` with lower ≤ upper
:func:`target_networks`                 :class:`~exactnorm.model.network.TargetNetwork`
:func:`seeds`                           ``int`` in [0, 2³²)
:func:`theorem1_cases`                  ``(TargetNetwork, seed)`` for ``certify_theorem1``
:func:`theorem1_constructions`          :class:`~exactnorm.constructions.common.Construction`
:func:`frozen_networks`                 :class:`~exactnorm.model.network.FrozenNetwork`, random γ/β
:func:`sparse_masks`                    ``numpy.ndarray`` of ``bool`` (``True`` = weight kept)
:func:`kind_targets`                    :class:`~exactnorm.model.network.TargetNetwork`, one kind
:func:`conv_targets`                    :class:`~exactnorm.model.network.TargetNetwork` (CNN)
======================================  ==========================================================

Shrinking is designed for readable counterexamples: dimensions are drawn before entries and
shrink towards the smallest allowed size; entries are drawn from ``[-2, 2]`` first and only then
from the full range, and shrink towards 0; denominators shrink towards 1; permutations towards the
identity; box widths towards 0 (a degenerate coordinate); masks towards "everything kept". Frozen
weights drawn from a seed do not shrink entry by entry, but the seed shrinks towards 0.

>>> from hypothesis import find
>>> find(matrices_of_rank(3, 3, rank=2), lambda M: True).tolist()
[[1, 0, 0], [0, 1, 0], [0, 0, 0]]
>>> X, Y = find(khatri_rao_pairs(), lambda p: p[0].ncols() == 2)
>>> (X.nrows(), Y.nrows(), X.ncols(), Y.ncols())
(1, 1, 2, 2)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
from flint import fmpq, fmpq_mat, fmpz_mat
from hypothesis import reject
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.strategies import SearchStrategy

from exactnorm.constructions.common import Construction
from exactnorm.constructions.theorem1 import certify_theorem1
from exactnorm.errors import InputError, SingularSystemError
from exactnorm.exact.generator import draw as draw_frozen
from exactnorm.exact.sampling import DEFAULT_DISTRIBUTION, Distribution, parse_distribution
from exactnorm.exact.streams import StreamKey, skip_role
from exactnorm.model.network import ACTIVATIONS, FrozenLayer, FrozenNetwork, Skip, TargetNetwork
from exactnorm.model.operators.dense import Dense
from exactnorm.strategies.layered import conv_geometries, conv_targets, kind_targets

__all__ = [
    "Dimension",
    "small_integers",
    "exact_rationals",
    "points_in_box",
    "integer_matrices",
    "rational_matrices",
    "matrices_of_rank",
    "khatri_rao_pairs",
    "rational_boxes",
    "target_networks",
    "seeds",
    "theorem1_cases",
    "theorem1_constructions",
    "frozen_networks",
    "sparse_masks",
    "kind_targets",
    "conv_targets",
    "conv_geometries",
]

#: A dimension argument: a fixed size, a strategy for sizes, or ``None`` (drawn from the bounds).
Dimension = int | SearchStrategy[int] | None

#: Entries are drawn from this small range first (the preferred branch when shrinking).
_SMALL = 2


# ----------------------------------------------------------------------------- helpers


def _distribution(spec: str) -> Distribution:
    """:func:`parse_distribution`, with a bad spec reported the Hypothesis way."""
    try:
        return parse_distribution(spec)
    except InputError as exc:
        raise InvalidArgument(str(exc)) from None


def _check_bounds(name: str, lo: int, hi: int) -> None:
    if isinstance(lo, bool) or isinstance(hi, bool) or not isinstance(lo, int) \
            or not isinstance(hi, int):
        raise InvalidArgument(f"{name}: bounds must be integers, got {lo!r} and {hi!r}")
    if lo < 0 or lo > hi:
        raise InvalidArgument(f"{name}: need 0 ≤ minimum ≤ maximum, got {lo} and {hi}")


def _check_positive_bounds(name: str, lo: int, hi: int) -> None:
    """Bounds of a width or a depth: a network has no empty layer and at least one layer."""
    _check_bounds(name, lo, hi)
    if lo < 1:
        raise InvalidArgument(f"{name}: the minimum must be at least 1, got {lo}")


def _check_dimension(name: str, spec: Dimension) -> None:
    if spec is None or isinstance(spec, SearchStrategy):
        return
    if isinstance(spec, bool) or not isinstance(spec, int) or spec < 0:
        raise InvalidArgument(f"{name} must be a non-negative integer, a strategy or None, "
                         f"got {spec!r}")


def _draw_dimension(draw: Any, spec: Dimension, lo: int, hi: int) -> int:
    if spec is None:
        return draw(st.integers(lo, hi))
    if isinstance(spec, SearchStrategy):
        value = draw(spec)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidArgument(f"a dimension strategy produced {value!r}, not a size")
        return value
    return spec


def _matrix(kind: type, nrows: int, ncols: int, rows: list[list[Any]]) -> Any:
    # FLINT refuses an empty list of rows; build empty shapes explicitly
    if nrows == 0 or ncols == 0:
        return kind(nrows, ncols)
    return kind(rows)


def small_integers(bound: int) -> SearchStrategy[int]:
    """Integers in ``[-bound, bound]``, drawn from ``[-2, 2]`` first (readable shrinking).

    Returns
    -------
    SearchStrategy[int]

    Notes
    -----
    Shrinks towards 0 within ``[-2, 2]``, the preferred branch, before any larger entry.
    """
    _check_bounds("small_integers", 0, bound)
    if bound <= _SMALL:
        return st.integers(-bound, bound)
    return st.one_of(st.integers(-_SMALL, _SMALL), st.integers(-bound, bound))


def _nonzero_integers(bound: int) -> SearchStrategy[int]:
    """Nonzero integers in ``[-bound, bound]``, shrinking towards 1."""
    return st.builds(lambda mag, neg: -mag if neg else mag, st.integers(1, max(1, bound)),
                     st.booleans())


def _rationals(bound: int, max_denominator: int) -> SearchStrategy[fmpq]:
    """``p/q`` with ``|p| ≤ bound``, ``1 ≤ q ≤ max_denominator`` (shrinks to 0, then q = 1)."""
    return st.builds(fmpq, small_integers(bound), st.integers(1, max_denominator))


def exact_rationals(bound: int = 9, max_denominator: int = 6) -> SearchStrategy[fmpq]:
    """Exact rationals ``p/q`` (``fmpq``) with ``|p| ≤ bound`` and ``1 ≤ q ≤ max_denominator``.

    Shrinks towards 0, then towards integers (``q = 1``).

    Returns
    -------
    SearchStrategy[fmpq]

    Notes
    -----
    Shrinks towards 0, then towards integers (``q = 1``).
    """
    _check_bounds("exact_rationals bound", 0, bound)
    _check_bounds("exact_rationals denominator", 1, max_denominator)
    return _rationals(bound, max_denominator)


def points_in_box(lower: Sequence[Any], upper: Sequence[Any], *,
                  max_denominator: int = 8) -> SearchStrategy[tuple[fmpq, ...]]:
    """Rational points ``x`` of the box ``lower ≤ x ≤ upper`` (tuples of ``fmpq``).

    Coordinate ``k`` is ``lower_k + (a/q)·(upper_k − lower_k)`` with ``0 ≤ a ≤ q ≤
    max_denominator``: corners, midpoints and interior points; shrinks towards ``lower``.

    Returns
    -------
    SearchStrategy[tuple[fmpq, ...]]

    Raises
    ------
    InvalidArgument
        If the bounds have different lengths or ``lower_k > upper_k``.

    Notes
    -----
    Shrinks towards the corner ``lower`` (``a = 0``), then towards small denominators.
    """
    lo = tuple(fmpq(x) if not isinstance(x, fmpq) else x for x in lower)
    hi = tuple(fmpq(x) if not isinstance(x, fmpq) else x for x in upper)
    if len(lo) != len(hi):
        raise InvalidArgument(f"box has {len(lo)} lower and {len(hi)} upper bounds")
    for k, (a, b) in enumerate(zip(lo, hi)):
        if a > b:
            raise InvalidArgument(f"inverted box: lower[{k}] = {a} > upper[{k}] = {b}")
    _check_bounds("points_in_box denominator", 1, max_denominator)

    @st.composite
    def coordinate(draw: Any, a: fmpq, b: fmpq) -> fmpq:
        q = draw(st.integers(1, max_denominator))
        t = draw(st.integers(0, q))
        return a + fmpq(t, q) * (b - a)

    return st.tuples(*(coordinate(a, b) for a, b in zip(lo, hi)))


# ----------------------------------------------------------------------------- matrices


def integer_matrices(rows: Dimension = None, cols: Dimension = None, *, min_dim: int = 1,
                     max_dim: int = 4, bound: int = 9) -> SearchStrategy[fmpz_mat]:
    """Integer matrices (``fmpz_mat``) with entries in ``[-bound, bound]``.

    Parameters
    ----------
    rows, cols : int, strategy or None
        Fixed sizes, strategies for them, or ``None`` to draw from ``[min_dim, max_dim]``.
    min_dim, max_dim : int
        Bounds for drawn sizes (0 is allowed: empty matrices).
    bound : int
        Largest absolute value of an entry.

    Returns
    -------
    SearchStrategy[fmpz_mat]

    Notes
    -----
    Shrinks towards the smallest allowed shape first, then each entry towards 0 within
    ``[-2, 2]``.
    """
    _check_bounds("integer_matrices", min_dim, max_dim)
    _check_bounds("integer_matrices bound", 0, bound)
    _check_dimension("rows", rows)
    _check_dimension("cols", cols)

    @st.composite
    def build(draw: Any) -> fmpz_mat:
        p = _draw_dimension(draw, rows, min_dim, max_dim)
        n = _draw_dimension(draw, cols, min_dim, max_dim)
        flat = draw(st.lists(small_integers(bound), min_size=p * n, max_size=p * n))
        return _matrix(fmpz_mat, p, n, [flat[i * n:(i + 1) * n] for i in range(p)])

    return build()


def rational_matrices(rows: Dimension = None, cols: Dimension = None, *, min_dim: int = 1,
                      max_dim: int = 4, bound: int = 9,
                      max_denominator: int = 6) -> SearchStrategy[fmpq_mat]:
    """Rational matrices (``fmpq_mat``): entries ``p/q``, ``|p| ≤ bound``, ``q ≤ max_denominator``.

    Denominators shrink towards 1, so a minimal counterexample is an integer matrix whenever the
    failure does not need fractions.

    Returns
    -------
    SearchStrategy[fmpq_mat]

    Notes
    -----
    Shrinks towards the smallest allowed shape, entries towards 0 and denominators towards 1
    (an integer matrix).
    """
    _check_bounds("rational_matrices", min_dim, max_dim)
    _check_bounds("rational_matrices bound", 0, bound)
    _check_bounds("rational_matrices denominator", 1, max_denominator)
    _check_dimension("rows", rows)
    _check_dimension("cols", cols)

    @st.composite
    def build(draw: Any) -> fmpq_mat:
        p = _draw_dimension(draw, rows, min_dim, max_dim)
        n = _draw_dimension(draw, cols, min_dim, max_dim)
        flat = draw(st.lists(_rationals(bound, max_denominator), min_size=p * n,
                             max_size=p * n))
        return _matrix(fmpq_mat, p, n, [flat[i * n:(i + 1) * n] for i in range(p)])

    return build()


def matrices_of_rank(rows: Dimension = None, cols: Dimension = None, rank: Dimension = None, *,
                     min_dim: int = 1, max_dim: int = 4, bound: int = 3,
                     rational: bool = False) -> SearchStrategy[fmpz_mat | fmpq_mat]:
    """Matrices of exactly the given (or drawn) rank over Q.

    The matrix is ``M = L·R`` with ``L = P·[T; X]`` (``T`` upper triangular with a nonzero
    diagonal, ``P`` a row permutation) of full column rank ``r`` and ``R = [T' | Y]·Q`` (``T'``
    lower triangular, nonzero diagonal, ``Q`` a column permutation) of full row rank ``r``;
    hence ``rank M = r`` by Fact 1 (``null(L) = {0}``). The rank is by construction, not by
    filtering, so shrinking never leaves the requested rank. The simplest example of rank ``r``
    is ``diag(1, …, 1, 0, …, 0)``.

    Parameters
    ----------
    rows, cols : int, strategy or None
        Sizes (``None``: drawn from ``[max(min_dim, rank), max_dim]`` when the rank is fixed).
    rank : int, strategy or None
        The rank ``r`` (``None``: drawn from ``[0, min(rows, cols)]``, shrinking towards 0).
    bound : int
        Entry bound of the factors (entries of ``M`` are at most ``r·bound²`` in size).
    rational : bool
        Divide each row by a drawn positive denominator (rank unchanged); returns ``fmpq_mat``.

    Returns
    -------
    SearchStrategy[fmpz_mat] (``fmpq_mat`` if ``rational``)

    Raises
    ------
    InvalidArgument
        If a fixed rank exceeds a fixed size, or bounds are inconsistent.

    Notes
    -----
    Shrinks towards the smallest shape and rank, and then towards ``diag(1, …, 1, 0, …, 0)``;
    the rank never changes while shrinking.
    """
    _check_bounds("matrices_of_rank", min_dim, max_dim)
    _check_bounds("matrices_of_rank bound", 1, bound)
    for name, spec in (("rows", rows), ("cols", cols), ("rank", rank)):
        _check_dimension(name, spec)
    if isinstance(rank, int):
        for name, spec in (("rows", rows), ("cols", cols)):
            if isinstance(spec, int) and spec < rank:
                raise InvalidArgument(f"matrices_of_rank: rank {rank} exceeds {name} = {spec}")
        if rows is None and cols is None and rank > max_dim:
            raise InvalidArgument(f"matrices_of_rank: rank {rank} exceeds max_dim = {max_dim}")

    @st.composite
    def build(draw: Any) -> fmpz_mat | fmpq_mat:
        floor = max(min_dim, rank) if isinstance(rank, int) else min_dim
        top = max(max_dim, floor)
        p = _draw_dimension(draw, rows, floor, top)
        n = _draw_dimension(draw, cols, floor, top)
        r = _draw_dimension(draw, rank, 0, min(p, n))
        if r > min(p, n):
            raise InvalidArgument(f"matrices_of_rank: rank {r} exceeds the shape {p}×{n}")
        entry, pivot = small_integers(bound), _nonzero_integers(bound)
        # L (p×r): upper triangular block with nonzero diagonal, then free rows, rows permuted
        left = [[draw(pivot) if i == j else (draw(entry) if j > i else 0) for j in range(r)]
                for i in range(r)]
        left += [[draw(entry) for _ in range(r)] for _ in range(p - r)]
        row_order = draw(st.permutations(range(p)))
        L = _matrix(fmpz_mat, p, r, [left[k] for k in row_order])
        # R (r×n): lower triangular block with nonzero diagonal, then free columns, permuted
        right = [[draw(pivot) if i == j else (draw(entry) if j < i else 0) for j in range(r)]
                 + [draw(entry) for _ in range(n - r)] for i in range(r)]
        col_order = draw(st.permutations(range(n)))
        R = _matrix(fmpz_mat, r, n, [[row[k] for k in col_order] for row in right])
        M = fmpz_mat(p, n) if r == 0 else L * R
        if not rational:
            return M
        dens = draw(st.lists(st.integers(1, 6), min_size=p, max_size=p))
        rows_q = [[fmpq(int(x), dens[i]) for x in row] for i, row in enumerate(M.tolist())]
        return _matrix(fmpq_mat, p, n, rows_q)

    return build()


def khatri_rao_pairs(rows_x: Dimension = None, rows_y: Dimension = None,
                     cols: Dimension = None, *, min_dim: int = 1, max_dim: int = 4,
                     bound: int = 9, rational: bool = False,
                     max_denominator: int = 6) -> SearchStrategy[tuple[Any, Any]]:
    """Pairs ``(X, Y)`` with equal column counts, ready for ``khatri_rao(X, Y)``.

    Returns
    -------
    SearchStrategy[tuple[fmpz_mat, fmpz_mat]] (``fmpq_mat`` pairs if ``rational``)

    Notes
    -----
    Shrinks towards one column and one row on each side, entries as :func:`integer_matrices`
    (or :func:`rational_matrices`).
    """
    _check_bounds("khatri_rao_pairs", min_dim, max_dim)
    for name, spec in (("rows_x", rows_x), ("rows_y", rows_y), ("cols", cols)):
        _check_dimension(name, spec)

    @st.composite
    def build(draw: Any) -> tuple[Any, Any]:
        n = _draw_dimension(draw, cols, min_dim, max_dim)
        p = _draw_dimension(draw, rows_x, min_dim, max_dim)
        q = _draw_dimension(draw, rows_y, min_dim, max_dim)
        make: Callable[[int], SearchStrategy[Any]]
        if rational:
            make = lambda r: rational_matrices(r, n, bound=bound,  # noqa: E731
                                               max_denominator=max_denominator)
        else:
            make = lambda r: integer_matrices(r, n, bound=bound)  # noqa: E731
        return draw(make(p)), draw(make(q))

    return build()


# ----------------------------------------------------------------------------- boxes


def rational_boxes(dim: Dimension = None, *, min_dim: int = 1, max_dim: int = 4, bound: int = 3,
                   max_denominator: int = 4, allow_degenerate: bool = True,
                   ) -> SearchStrategy[tuple[tuple[fmpq, ...], tuple[fmpq, ...]]]:
    """Rational boxes ``(lower, upper)`` with ``lower ≤ upper`` coordinate-wise.

    ``lower_k = a/q`` and ``upper_k = lower_k + w/q`` with ``|a| ≤ bound·q`` and
    ``0 ≤ w ≤ 2·bound·q``; with ``allow_degenerate`` the width ``w`` may be 0 (``lo = hi``, a
    degenerate coordinate — the shrink target), otherwise ``w ≥ 1``.

    Returns
    -------
    SearchStrategy[tuple[tuple[fmpq, ...], tuple[fmpq, ...]]]

    Notes
    -----
    Shrinks towards the smallest dimension, ``lower`` towards 0 and widths towards 0 (or 1
    without ``allow_degenerate``).
    """
    _check_bounds("rational_boxes", min_dim, max_dim)
    _check_bounds("rational_boxes bound", 1, bound)
    _check_bounds("rational_boxes denominator", 1, max_denominator)
    _check_dimension("dim", dim)

    @st.composite
    def coordinate(draw: Any) -> tuple[fmpq, fmpq]:
        q = draw(st.integers(1, max_denominator))
        a = draw(small_integers(bound * q))
        w = draw(st.integers(0 if allow_degenerate else 1, 2 * bound * q))
        return fmpq(a, q), fmpq(a + w, q)

    @st.composite
    def build(draw: Any) -> tuple[tuple[fmpq, ...], tuple[fmpq, ...]]:
        d = _draw_dimension(draw, dim, min_dim, max_dim)
        coords = [draw(coordinate()) for _ in range(d)]
        return tuple(c[0] for c in coords), tuple(c[1] for c in coords)

    return build()


# ----------------------------------------------------------------------------- networks


def _activation(choice: str | None, default_first: str) -> SearchStrategy[str]:
    if choice is None:
        other = [a for a in ACTIVATIONS if a != default_first]
        return st.sampled_from([default_first, *other])
    if choice not in ACTIVATIONS:
        raise InvalidArgument(f"unknown activation {choice!r}; expected one of {ACTIVATIONS}")
    return st.just(choice)


def target_networks(*, widths: Sequence[int] | None = None, min_width: int = 1,
                    max_width: int = 4, min_depth: int = 1, max_depth: int = 3,
                    hidden_activation: str | None = None, final_activation: str | None = None,
                    bound: int = 4, max_denominator: int = 3,
                    allow_degenerate: bool = True) -> SearchStrategy[TargetNetwork]:
    """Target networks ``g`` (:class:`~exactnorm.model.network.TargetNetwork`) on a rational box.

    Widths ``d_0 … d_L`` in ``[min_width, max_width]`` (default 1–4), depth ``L`` in
    ``[min_depth, max_depth]`` (default 1–3), rational weights and biases, a box from
    :func:`rational_boxes`. Activations: hidden layers relu or identity (shrinking to relu, the
    default of docs/model.md), the final layer identity or relu (shrinking to identity); fix
    either with ``hidden_activation`` / ``final_activation``.

    Returns
    -------
    SearchStrategy[TargetNetwork]

    Notes
    -----
    Shrinks towards the shallowest, narrowest network, relu hidden layers, an identity final
    layer, small integer weights and the box of :func:`rational_boxes`' shrink target.
    """
    _check_positive_bounds("target_networks width", min_width, max_width)
    _check_positive_bounds("target_networks depth", min_depth, max_depth)
    if widths is not None and (len(widths) < 2 or any(
            isinstance(w, bool) or not isinstance(w, int) or w < 1 for w in widths)):
        raise InvalidArgument(f"widths must list at least two positive integers, got {widths!r}")
    hidden = _activation(hidden_activation, "relu")
    final = _activation(final_activation, "identity")

    @st.composite
    def build(draw: Any) -> TargetNetwork:
        if widths is None:
            depth = draw(st.integers(min_depth, max_depth))
            dims = [draw(st.integers(min_width, max_width)) for _ in range(depth + 1)]
        else:
            dims = list(widths)
            depth = len(dims) - 1
        weights, biases, acts = [], [], []
        for i in range(1, depth + 1):
            W = draw(rational_matrices(dims[i], dims[i - 1], bound=bound,
                                       max_denominator=max_denominator))
            weights.append(W.tolist())
            biases.append(draw(st.lists(_rationals(bound, max_denominator),
                                        min_size=dims[i], max_size=dims[i])))
            acts.append(draw(final if i == depth else hidden))
        lower, upper = draw(rational_boxes(dims[0], allow_degenerate=allow_degenerate))
        return TargetNetwork.from_lists(weights, biases, acts, lower=lower, upper=upper)

    return build()


def seeds() -> SearchStrategy[int]:
    """Seeds of frozen weights (:func:`~exactnorm.exact.generator.draw`): integers in
    ``[0, 2³²)``.

    Notes
    -----
    Shrinks towards 0.
    """
    return st.integers(0, 2**32 - 1)


def theorem1_cases(**target_options: Any) -> SearchStrategy[tuple[TargetNetwork, int]]:
    """Pairs ``(g, seed)``: a target from :func:`target_networks` and a seed for
    :func:`~exactnorm.constructions.theorem1.certify_theorem1` (Theorem 1).

    With the default ``int:8`` distribution a single draw of a small Khatri–Rao system is singular
    with probability up to about 15 % (measured at m = 2), so call ``certify_theorem1`` with
    ``retry`` (see :func:`theorem1_constructions`).

    Returns
    -------
    SearchStrategy[tuple[TargetNetwork, int]]

    Notes
    -----
    Shrinks as :func:`target_networks` for the target and towards seed 0.
    """
    return st.tuples(target_networks(**target_options), seeds())


def theorem1_constructions(*, distribution: str = DEFAULT_DISTRIBUTION, retry: int = 8,
                           shift_mode: str = "neuron",
                           **target_options: Any) -> SearchStrategy[Construction]:
    """Constructions of Theorem 1: ``certify_theorem1(g, seed=…)`` on a drawn target and seed.

    ``retry`` redraws singular systems (each redraw recorded in the provenance). A case still
    singular after ``retry`` redraws (probability below 10⁻⁶ per layer with the defaults) is
    rejected with :func:`hypothesis.reject` rather than returned.

    Returns
    -------
    SearchStrategy[Construction]

    Notes
    -----
    Shrinks as :func:`theorem1_cases` (the construction is a function of the case, so a
    minimal case gives a minimal construction).
    """
    _distribution(distribution)
    if isinstance(retry, bool) or not isinstance(retry, int) or retry < 0:
        raise InvalidArgument(f"retry must be a non-negative integer, got {retry!r}")

    def run(case: tuple[TargetNetwork, int]) -> Construction:
        target, seed = case
        try:
            return certify_theorem1(target, seed=seed, distribution=distribution, retry=retry,
                                    shift_mode=shift_mode)
        except SingularSystemError:
            reject()
            raise  # pragma: no cover - reject() raises

    return theorem1_cases(**target_options).map(run)


def frozen_networks(*, input_dim: Dimension = None, min_width: int = 1, max_width: int = 4,
                    min_depth: int = 1, max_depth: int = 3,
                    distribution: str = DEFAULT_DISTRIBUTION, activation: str | None = None,
                    skips: bool = False, bound: int = 4,
                    max_denominator: int = 3) -> SearchStrategy[FrozenNetwork]:
    """Frozen networks (:class:`~exactnorm.model.network.FrozenNetwork`) with random tuned γ, β.

    The frozen weights ``V_j`` come from a drawn seed with the certificate generator
    (:func:`exactnorm.exact.generator.draw`, stream ``StreamKey(1, j)``, its position) and
    ``distribution``, as the constructions draw them, and carry their draw records; γ and β are
    rationals drawn by Hypothesis (``|p| ≤ bound``, ``q ≤ max_denominator``). Layer ``j`` reads
    node ``j − 1``; with ``skips`` a layer ``j ≥ 2`` may add a random frozen skip ``P h_0`` from
    the input (stream ``StreamKey(1, j, skip_role(0))``, declared ``kind="random"``, with its
    record).
    The only checkpoint is the last node.

    Returns
    -------
    SearchStrategy[FrozenNetwork]

    Notes
    -----
    Shrinks towards the shallowest, narrowest network, seed 0 and γ, β towards 0 with integer
    values; the seeded frozen weights follow the seed, not entry by entry.
    """
    _check_positive_bounds("frozen_networks width", min_width, max_width)
    _check_positive_bounds("frozen_networks depth", min_depth, max_depth)
    _check_dimension("input_dim", input_dim)
    dist = _distribution(distribution)
    act = _activation(activation, "relu")
    scalars = _rationals(bound, max_denominator)

    @st.composite
    def build(draw: Any) -> FrozenNetwork:
        d0 = _draw_dimension(draw, input_dim, min_width, max_width)
        depth = draw(st.integers(min_depth, max_depth))
        seed = draw(seeds())
        dims = [d0]
        layers = []
        for j in range(1, depth + 1):
            w = draw(st.integers(min_width, max_width))
            V, record = draw_frozen(seed, StreamKey(1, j).key, w, dims[-1], dist)
            gamma = tuple(draw(st.lists(scalars, min_size=w, max_size=w)))
            beta = tuple(draw(st.lists(scalars, min_size=w, max_size=w)))
            layer_skips: tuple[Skip, ...] = ()
            if skips and j >= 2 and draw(st.booleans()):
                P, skip_record = draw_frozen(seed, StreamKey(1, j, skip_role(0)).key, w, d0,
                                             dist)
                layer_skips = (Skip(0, P, "random", record=skip_record),)
            layers.append(FrozenLayer(j - 1, Dense(V), gamma, beta, draw(act), layer_skips,
                                      record=record))
            dims.append(w)
        return FrozenNetwork(d0, tuple(layers), (depth,))

    return build()


# ----------------------------------------------------------------------------- masks


def _keep_fraction(keep: Fraction | int | str) -> Fraction:
    if isinstance(keep, bool) or not isinstance(keep, (Fraction, int, str)):
        raise InvalidArgument(f"keep probability must be a Fraction, int or 'p/q' string, got "
                         f"{keep!r}")
    try:
        value = Fraction(keep)
    except (ValueError, ZeroDivisionError):
        raise InvalidArgument(f"bad keep probability {keep!r}") from None
    if not 0 <= value <= 1:
        raise InvalidArgument(f"keep probability must lie in [0, 1], got {value}")
    return value


def sparse_masks(rows: Dimension = None, cols: Dimension = None, *,
                 keep: Fraction | int | str = Fraction(1, 2), min_dim: int = 1,
                 max_dim: int = 6) -> SearchStrategy[np.ndarray]:
    """Bernoulli sparsity masks: ``numpy`` boolean arrays, ``True`` where a weight is kept.

    Each entry is kept independently with probability ``keep`` (an exact fraction ``a/b``:
    an integer ``u`` in ``[0, b)`` is drawn and the entry is kept iff ``u < a``), the same
    convention as :func:`~exactnorm.exact.sampling.bernoulli_mask`. Shrinking keeps entries, so a
    minimal counterexample has as few masked entries as the failure needs.

    Returns
    -------
    SearchStrategy[numpy.ndarray] of dtype ``bool`` and shape ``(rows, cols)``

    Notes
    -----
    Shrinks towards the smallest shape and towards every entry kept (``u`` towards 0).
    """
    _check_bounds("sparse_masks", min_dim, max_dim)
    _check_dimension("rows", rows)
    _check_dimension("cols", cols)
    p = _keep_fraction(keep)
    a, b = p.numerator, p.denominator

    @st.composite
    def build(draw: Any) -> np.ndarray:
        r = _draw_dimension(draw, rows, min_dim, max_dim)
        c = _draw_dimension(draw, cols, min_dim, max_dim)
        draws = draw(st.lists(st.integers(0, b - 1), min_size=r * c, max_size=r * c))
        return np.array([u < a for u in draws], dtype=bool).reshape(r, c)

    return build()
