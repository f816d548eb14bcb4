"""Deprecated: the layer kinds are :mod:`exactnorm.model.operators`, the layers the roles of
:mod:`exactnorm.model.layers`; the old names of this module are those of
:mod:`exactnorm.model.conv`, for one release (a ``DeprecationWarning`` on use)."""

from exactnorm.model.conv import ConvGeometry, Skip
from exactnorm.model.conv import __getattr__ as __getattr__

__all__ = ["ConvGeometry", "Skip"]
