"""What the two affine kinds, ``dense`` and ``conv``, share (docs/certificate-format.md §0, §8):
the reading of a target layer ``(W, b, σ)`` and of a tuned frozen layer ``(V, γ, β, σ)``, and the
checkpoint rule. Standard library only.

Correctness argument (rule ``identity``). At the checkpoint the walk has the pre-activation as an
exact affine map ``A a + c`` of the segment input ``a`` (a convolution: of the patch at every
position, the same map everywhere). If every coefficient of a coordinate with ``lower < upper``
equals ``W``'s, and ``c`` plus the coordinates with ``lower = upper`` (which are constants on the
box) equals ``b`` plus the same, then ``A a + c = W a + b`` for every ``a`` in the box: exactly
"equal on the box". A convolution compares the kernel and the bias entry by entry (plain
equality, sufficient: it folds nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..boxes import Box
from ..numbers import CertificateError, activation, matrix, show, show_ratio, vector
from ..provenance import ROLE_WEIGHT, Provenance, rule_provenance
from ..records import FrozenRecord, TargetRecord
from ..topology import frozen_residual

__all__ = ["read_weighted_target", "read_tuned", "rule_checkpoint"]


def read_weighted_target(name: str, layer: dict, where: str, cols: int, positions: int,
                         geom: Any, max_digits: int) -> TargetRecord:
    """A target layer ``(W, b, σ)`` whose ``W`` has ``cols`` columns, applied at ``positions``
    output positions."""
    # the keys exist with their JSON types: the layer passed its table (..document.closed_layer)
    W = matrix(layer["weight"], f"{where} weight", None, cols, max_digits)
    b = vector(layer["bias"], f"{where} bias", len(W.rows), max_digits)
    act = activation(layer["activation"], where)
    return TargetRecord(name, W, b, act, W.nrows * positions, geom)


def _stability_mode(layer: dict, where: str, j: int, windowed: bool) -> bool:
    """``"stability": "positions"`` (the default) or ``"hull"``, on a layer with a weight and a
    window (a conv layer) only (rule ``format``); True for the hull."""
    if "stability" not in layer:
        return False
    mode = layer["stability"]
    if not windowed or mode not in ("positions", "hull"):
        raise CertificateError("format", f"{where}: stability {show(mode)}; a conv layer may "
                                         f"declare \"positions\" (the default) or \"hull\", "
                                         f"no other layer any", layer=j)
    return mode == "hull"


def read_tuned(name: str, layer: dict, where: str, j: int, src: int, dims: list[int],
               prov: Provenance, max_digits: int, geom: Any,
               skips_of: Callable[[int, int], list[tuple[int, Any]]]
               ) -> tuple[FrozenRecord, int]:
    """A tuned frozen layer: its matrix with its provenance (of ``dims[src]`` columns, or the
    window's patch coordinates), γ, β, σ, the skips ``skips_of(rows, full width)``, its
    residual and stability mode; returns the record and its full output width."""
    cols = dims[src] if geom is None else geom.patch
    # the keys exist with their JSON types: the layer passed its table (..document.closed_layer)
    V = rule_provenance(layer, layer["weight"], None, where, j, ROLE_WEIGHT, None, cols, prov,
                        max_digits, geom)
    n = V.nrows
    gamma = vector(layer["gamma"], f"{where} gamma", n, max_digits)
    beta = vector(layer["beta"], f"{where} beta", n, max_digits)
    act = activation(layer["activation"], where)
    full = n if geom is None else n * geom.Ho * geom.Wo
    # the optional keys, each read only when present (a chain of 10^5 layers has none)
    skips = tuple(skips_of(n, full)) if "skip" in layer else ()
    residual = frozen_residual(layer, where, j, full, dims, prov.version) \
        if "residual" in layer else None
    hull = _stability_mode(layer, where, j, geom is not None) if "stability" in layer else False
    return FrozenRecord(name, src, V, gamma, beta, act, skips, geom, None, residual,
                        hull), full


def rule_checkpoint(layer: FrozenRecord, plain: tuple, tl: TargetRecord, j: int, i: int,
                    box: Box, fixed: list[int], unit: str) -> None:
    """At checkpoint c_i: sigma equals sigma_i, width equals d_i (``unit``: width, or channels
    for a convolution), and the pre-activation map equals (W_i, b_i) on the box: every
    coefficient of a coordinate not in ``fixed``, and the bias with the ``fixed`` coordinates
    (lower = upper) folded in."""
    W, b, sigma = tl.W, tl.b, tl.act
    assert W is not None and b is not None  # an affine kind's record
    cols, rows, consts, den = plain
    if layer.act != sigma:
        raise CertificateError("activation", f"checkpoint layer {j} has activation "
                                             f"{layer.act}, target layer {i} has {sigma}",
                               layer=j)
    if len(rows) != W.nrows:
        raise CertificateError("width", f"checkpoint layer {j} has {unit} {len(rows)}, target "
                                        f"layer {i} has {W.nrows}", layer=j)
    lo, hi, Q = box
    at = {t: k for k, t in enumerate(cols)}
    skip = set(fixed)
    for r in range(W.nrows):
        wrow = W.rows[r]
        for t in range(len(wrow)):
            a = rows[r][at[t]] if t in at else 0
            if t not in skip and a * W.den != wrow[t] * den:
                raise CertificateError("identity", f"checkpoint layer {j}: pre-activation weight "
                                                   f"[{r}][{t}] is {show_ratio(a, den)}, "
                                                   f"target layer {i} has "
                                                   f"{show_ratio(wrow[t], W.den)}",
                                       layer=j, neuron=r)
        # mine = (consts + Σ_fixed rows·lo/Q)/den, theirs = b + Σ_fixed W·lo/Q
        mine_num = consts[r] * Q + sum((rows[r][at[t]] if t in at else 0) * lo[t] for t in fixed)
        theirs_num = b.nums[r] * W.den * Q + b.den * sum(wrow[t] * lo[t] for t in fixed)
        if mine_num * b.den * W.den != theirs_num * den:
            folded = " (with the coordinates where lower = upper folded in)" if fixed else ""
            mine = show_ratio(mine_num, den * Q) if fixed else show_ratio(consts[r], den)
            theirs = show_ratio(theirs_num, b.den * W.den * Q) if fixed else \
                show_ratio(b.nums[r], b.den)
            raise CertificateError("identity", f"checkpoint layer {j}: pre-activation bias [{r}]"
                                               f"{folded} is {mine}, target layer {i} has "
                                               f"{theirs}", layer=j, neuron=r)
