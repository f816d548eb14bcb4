"""Deprecated: the convolution and pooling layers moved to :mod:`exactnorm.model.kinds`.

One :class:`~exactnorm.model.network.TargetNetwork` and one
:class:`~exactnorm.model.network.FrozenNetwork` now hold layers of every kind, so
``ConvTargetNetwork`` and ``ConvFrozenNetwork`` are those classes under their old names (a
``DeprecationWarning`` on use). The layer classes and the geometry are re-exported unchanged.
This module will be removed in a later release.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from exactnorm.model.kinds import (
    ConvGeometry,
    ConvTargetLayer,
    FrozenConvLayer,
    FrozenKind,
    FrozenPoolLayer,
    PoolTargetLayer,
    TargetKind,
)
from exactnorm.model.kinds.window import MAX_PATCH_ENTRIES, unfolded_matrix
from exactnorm.model.network import FrozenNetwork, TargetNetwork
from exactnorm.model.values import Vector

__all__ = ["ConvGeometry", "ConvTargetLayer", "PoolTargetLayer", "FrozenConvLayer",
           "FrozenPoolLayer", "AnyTargetLayer", "AnyFrozenLayer", "unfolded_matrix",
           "evaluate_checkpoints", "MAX_PATCH_ENTRIES"]

AnyTargetLayer = TargetKind
AnyFrozenLayer = FrozenKind

_RENAMED = {"ConvTargetNetwork": TargetNetwork, "ConvFrozenNetwork": FrozenNetwork}


def __getattr__(name: str) -> Any:
    if name in _RENAMED:
        new = _RENAMED[name]
        warnings.warn(f"exactnorm.model.conv.{name} is {new.__module__}.{new.__name__}, which "
                      f"holds layers of every kind", DeprecationWarning, stacklevel=2)
        return new
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def evaluate_checkpoints(net: FrozenNetwork, x: Sequence[Any]) -> list[Vector]:
    """Deprecated: :meth:`FrozenNetwork.evaluate_checkpoints <exactnorm.model.network.
    FrozenNetwork.evaluate_checkpoints>`."""
    return net.evaluate_checkpoints(x)
