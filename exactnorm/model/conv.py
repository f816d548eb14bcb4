"""Deprecated names, kept for one release (a ``DeprecationWarning`` on use).

The layer kinds are operators (:mod:`exactnorm.model.operators`) and a layer is one of three
kind-free roles around one (:mod:`exactnorm.model.layers`); one
:class:`~exactnorm.model.network.TargetNetwork` and one :class:`~exactnorm.model.network.
FrozenNetwork` hold layers of every kind. The old names are thin constructors of the roles:

* ``ConvTargetLayer(g, W, b, σ)`` is ``TargetLayer(Conv(g, W), b, σ)``; ``FrozenConvLayer(j, g,
  V, γ, β, σ, record, skips, drawn_columns, stability)`` and ``FloatConvLayer(j, g, V, γ, β, σ,
  skips, skip_kinds)`` the frozen and float roles around ``Conv(g, V)``;
* ``PoolTargetLayer(g)``, ``FrozenPoolLayer(j, g)``, ``FloatPoolLayer(j, g)`` around
  ``AvgPool(g)``; ``GlobalPoolTargetLayer(s)``, ``FrozenGlobalPoolLayer(j, s)``,
  ``FloatGlobalPoolLayer(j, s)`` around ``GlobalAvgPool(s)``;
* ``TargetKind``, ``FrozenKind``, ``FloatKind`` (and ``AnyTargetLayer``, ``AnyFrozenLayer``) are
  the roles; ``ConvTargetNetwork``, ``ConvFrozenNetwork`` the networks; ``evaluate_checkpoints``
  is :meth:`FrozenNetwork.evaluate_checkpoints <exactnorm.model.network.FrozenNetwork.
  evaluate_checkpoints>`.
"""

from __future__ import annotations

import warnings
from typing import Any

from exactnorm.model.layers import FloatLayer, FrozenLayer, TargetLayer
from exactnorm.model.network import FrozenNetwork, TargetNetwork
from exactnorm.model.operators import AvgPool, Conv, GlobalAvgPool
from exactnorm.model.operators.window import MAX_PATCH_ENTRIES, ConvGeometry
from exactnorm.model.routes import Skip

__all__ = ["ConvGeometry", "MAX_PATCH_ENTRIES", "Skip"]

_RENAMED: dict[str, Any] = {
    "ConvTargetLayer": lambda g, W, b, act: TargetLayer(Conv(g, W), b, act),
    "FrozenConvLayer": lambda j, g, V, gamma, beta, act, record=None, skips=(),
    drawn_columns=None, stability="positions": FrozenLayer(
        j, Conv(g, V), gamma, beta, act, skips, record, drawn_columns, stability),
    "FloatConvLayer": lambda j, g, V, gamma, beta, act, skips=(), skip_kinds=(): FloatLayer(
        j, Conv(g, V), gamma, beta, act, skips, skip_kinds),
    "PoolTargetLayer": lambda g, act="identity": TargetLayer(AvgPool(g), (), act),
    "FrozenPoolLayer": lambda j, g, act="identity": FrozenLayer(j, AvgPool(g), activation=act),
    "FloatPoolLayer": lambda j, g, act="identity": FloatLayer(j, AvgPool(g), activation=act),
    "GlobalPoolTargetLayer": lambda s, act="identity": TargetLayer(GlobalAvgPool(s), (), act),
    "FrozenGlobalPoolLayer": lambda j, s, act="identity": FrozenLayer(
        j, GlobalAvgPool(s), activation=act),
    "FloatGlobalPoolLayer": lambda j, s, act="identity": FloatLayer(
        j, GlobalAvgPool(s), activation=act),
    "TargetKind": TargetLayer, "FrozenKind": FrozenLayer, "FloatKind": FloatLayer,
    "AnyTargetLayer": TargetLayer, "AnyFrozenLayer": FrozenLayer, "TargetLayer": TargetLayer,
    "FrozenLayer": FrozenLayer, "FloatLayer": FloatLayer,
    "ConvTargetNetwork": TargetNetwork, "ConvFrozenNetwork": FrozenNetwork,
    "evaluate_checkpoints": lambda net, x: net.evaluate_checkpoints(x),
}


def __getattr__(name: str) -> Any:
    if name in _RENAMED:
        warnings.warn(f"{__name__}.{name} is deprecated: layers are the roles of "
                      f"exactnorm.model.layers around the operators of exactnorm.model.operators",
                      DeprecationWarning, stacklevel=2)
        return _RENAMED[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
