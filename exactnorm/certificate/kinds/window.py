"""The geometry fields shared by the windowed kinds' codecs (docs/certificate-format.md §8)."""

from __future__ import annotations

from typing import Any

from exactnorm.model.operators.window import ConvGeometry

__all__ = ["geometry_json", "geometry_of"]


def geometry_json(g: ConvGeometry, *, dilation: bool = True) -> dict[str, Any]:
    """``input_shape``, ``kernel_shape``, ``stride``, ``padding`` (and ``dilation``) as lists."""
    out: dict[str, Any] = {"input_shape": list(g.input_shape),
                           "kernel_shape": list(g.kernel_shape), "stride": list(g.stride),
                           "padding": list(g.padding)}
    if dilation:
        out["dilation"] = list(g.dilation)
    return out


def geometry_of(entry: dict[str, Any]) -> ConvGeometry:
    """The geometry of a layer entry (its lists; ``dilation`` absent: 1)."""
    return ConvGeometry(tuple(entry["input_shape"]), tuple(entry["kernel_shape"]),
                        tuple(entry["stride"]), tuple(entry["padding"]),
                        tuple(entry.get("dilation", [1, 1])))
