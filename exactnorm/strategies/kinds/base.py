"""What a layer kind's Hypothesis strategy provides: a small target layer reading a given shape.

``layers(shape)`` draws a target layer of the kind that reads a value of tensor shape
``(C, H, W)`` (a dense layer reads its ``C·H·W`` entries); every kind can read every shape.
Entries are small exact rationals that shrink towards 0, denominators towards 1, windows towards
1×1, channels towards 1.
"""

from __future__ import annotations

from typing import Any

from flint import fmpq, fmpq_mat
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

__all__ = ["small_rationals", "rational_matrix", "rational_vector", "ACTIVATION"]

ACTIVATION = st.sampled_from(["relu", "identity"])


def small_rationals(bound: int = 3, max_den: int = 4) -> SearchStrategy[fmpq]:
    """``fmpq`` with numerator in ``[−bound, bound]`` and denominator in ``[1, max_den]``."""
    return st.builds(lambda n, d: fmpq(n, d), st.integers(-bound, bound),
                     st.integers(1, max_den))


def rational_matrix(draw: Any, rows: int, cols: int) -> fmpq_mat:
    return fmpq_mat(rows, cols, [draw(small_rationals()) for _ in range(rows * cols)])


def rational_vector(draw: Any, n: int) -> tuple[fmpq, ...]:
    return tuple(draw(small_rationals()) for _ in range(n))
