"""The geometry fields shared by the windowed kinds' codecs (docs/certificate-format.md §8)."""

from __future__ import annotations

from typing import Any

from exactnorm.model.kinds.window import ConvGeometry

__all__ = ["geometry_json"]


def geometry_json(g: ConvGeometry, *, dilation: bool = True) -> dict[str, Any]:
    """``input_shape``, ``kernel_shape``, ``stride``, ``padding`` (and ``dilation``) as lists."""
    out: dict[str, Any] = {"input_shape": list(g.input_shape),
                           "kernel_shape": list(g.kernel_shape), "stride": list(g.stride),
                           "padding": list(g.padding)}
    if dilation:
        out["dilation"] = list(g.dilation)
    return out
