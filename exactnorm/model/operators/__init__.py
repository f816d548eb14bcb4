"""The layer kinds of the model: one operator class each, in one closed registry.

``OPERATORS`` maps the certificate's ``kind`` word to the kind's :class:`~exactnorm.model.
operators.base.Operator` class; it is built from explicit imports, so reading this file lists
every kind, and ``tests/kinds/test_kind_contract.py`` demands that its keys equal the format's
``LAYER_KINDS`` and runs one contract suite for each.

>>> sorted(OPERATORS)
['avgpool', 'conv', 'dense', 'globalavgpool']
"""

from __future__ import annotations

from typing import Any

import numpy as np
from flint import fmpq_mat, fmpz_mat

from exactnorm.errors import InputError
from exactnorm.model.operators.avgpool import AvgPool
from exactnorm.model.operators.base import Operator, float_copy, matrix_shape, rounded
from exactnorm.model.operators.conv import Conv
from exactnorm.model.operators.dense import Dense
from exactnorm.model.operators.globalavgpool import GlobalAvgPool
from exactnorm.model.operators.window import ConvGeometry

__all__ = ["OPERATORS", "Operator", "Dense", "Conv", "AvgPool", "GlobalAvgPool", "ConvGeometry",
           "as_operator", "float_copy", "rounded", "matrix_shape"]

#: kind word → its operator class (the format's LAYER_KINDS, each implemented once)
OPERATORS: dict[str, type[Any]] = {
    Dense.kind: Dense,
    Conv.kind: Conv,
    AvgPool.kind: AvgPool,
    GlobalAvgPool.kind: GlobalAvgPool,
}


def as_operator(x: Any) -> Operator:
    """``x`` as a layer's operator: an operator itself, or a bare matrix (FLINT, or a float64
    array in a float copy) as the dense map ``x ↦ W x``."""
    if isinstance(x, (fmpq_mat, fmpz_mat, np.ndarray)):
        return Dense(x)
    if not any(isinstance(x, cls) for cls in OPERATORS.values()):
        raise InputError(f"a layer's map is an operator of {', '.join(OPERATORS)} or a matrix, "
                         f"got {type(x).__name__}")
    return x
