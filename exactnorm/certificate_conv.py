"""Certificates of convolutional constructions (docs/certificate-format.md, "Convolutional
layers"): writer and reader of the ``conv`` and ``avgpool`` layer kinds, version 3.

Values between layers are vectors (a ``(C, H, W)`` tensor in C order), so flatten is never a
layer. Target layers: dense layers as in every certificate; ``{"kind": "conv", "input_shape",
"kernel_shape", "stride", "padding", "dilation", "weight", "bias", "activation"}`` with the
``c_out × C·kh·kw`` kernel matrix in plain exact numbers; ``{"kind": "avgpool", "input_shape",
"kernel_shape", "stride", "padding": [0, 0], "activation": "identity"}``. Frozen layers: dense
layers as :mod:`exactnorm.certificate` writes them; ``{"kind": "conv", "input", "input_shape",
"kernel_shape", "stride", "padding", "dilation", "weight": {"random": R}, "gamma", "beta",
"activation"}`` with one γ and one β per channel (compact numbers) and ``R`` a draw record of
4-d shape ``[c1, C, kh, kw]`` (the same words as ``[c1, C·kh·kw]``); ``{"kind": "avgpool",
"input", "input_shape", "kernel_shape", "stride", "padding", "activation"}``, no weight, γ or β.

The reader (:func:`conv_networks_from_dict`) parses, it does not check: it rebuilds both networks
exactly so that :func:`exact_agreement` can evaluate them at rational points (a dense cross-check,
not the checker).

>>> from exactnorm.constructions.conv import certify_conv
>>> from exactnorm.model.conv import ConvGeometry, ConvTargetLayer, ConvTargetNetwork
>>> from flint import fmpq, fmpq_mat
>>> g = ConvGeometry((1, 3, 3), (2, 2))
>>> t = ConvTargetNetwork((ConvTargetLayer(g, fmpq_mat([[1, -1, 2, 0]]), (fmpq(1),), "relu"),),
...                       (fmpq(0),) * 9, (fmpq(1),) * 9)
>>> doc = conv_certificate_document(certify_conv(t, seed=0))
>>> layers = doc["network"]["layers"]
>>> [L["kind"] for L in layers], layers[0]["weight"]["random"]["shape"]
(['conv', 'conv'], [4, 1, 2, 2])
>>> exact_agreement(doc, points=2, seed=0)
2
"""

from __future__ import annotations

import os
import random
from typing import Any

from flint import fmpq, fmpq_mat, fmpz_mat

from exactnorm.certificate import (
    DEFAULT_FROZEN_WEIGHTS,
    DEFAULT_MAX_ENTRIES,
    FORMAT,
    FROZEN_WEIGHTS,
    _compact_integer,
    _encode_stream,
    _layer_dict,
    _LazyList,
    _numbers,
    _regenerate,
    _weight,
    _write_pieces,
    expand_skip,
    positional,
)
from exactnorm.constructions.conv import ConvConstruction
from exactnorm.errors import (
    ExactnormError,
    InputError,
    InvalidCertificateError,
    InvariantError,
    ShapeError,
)
from exactnorm.exact.linalg import compact_when_shorter, to_fmpq_mat, to_fractions
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS, format_number, parse_number
from exactnorm.model.conv import (
    AnyFrozenLayer,
    AnyTargetLayer,
    ConvFrozenNetwork,
    ConvGeometry,
    ConvTargetLayer,
    ConvTargetNetwork,
    FrozenConvLayer,
    FrozenPoolLayer,
    PoolTargetLayer,
    evaluate_checkpoints,
)
from exactnorm.model.network import FrozenLayer, Skip, TargetLayer

__all__ = ["conv_certificate_document", "write_conv_certificate", "conv_target_to_dict",
           "conv_networks_from_dict", "conv_target_from_dict", "exact_agreement",
           "is_conv_document"]

CONV_VERSION = 3


def _geometry(g: ConvGeometry, *, dilation: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"input_shape": list(g.input_shape),
                           "kernel_shape": list(g.kernel_shape), "stride": list(g.stride),
                           "padding": list(g.padding)}
    if dilation:
        out["dilation"] = list(g.dilation)
    return out


def _plain(v: Any) -> list[Any]:
    return [format_number(x) for x in v]


def conv_target_to_dict(t: ConvTargetNetwork, *, compact: bool = False) -> dict[str, Any]:
    """The ``domain`` and ``target`` sections: plain exact numbers, or (``compact``, the
    certificate writer) each vector and matrix over one denominator when that is shorter."""
    def mat(M: Any) -> Any:
        if compact:
            return compact_when_shorter(fmpq_mat(M))
        return [[format_number(x) for x in row] for row in to_fractions(M)]

    def vec(v: Any) -> Any:
        return compact_when_shorter(fmpq_mat([list(v)]), vector=True) if compact else _plain(v)

    layers = []
    for layer in t.layers:
        if isinstance(layer, ConvTargetLayer):
            layers.append({"kind": "conv", **_geometry(layer.geometry),
                           "weight": mat(layer.weight), "bias": vec(layer.bias),
                           "activation": layer.activation})
        elif isinstance(layer, PoolTargetLayer):
            layers.append({"kind": "avgpool", **_geometry(layer.geometry, dilation=False),
                           "activation": "identity"})
        else:
            layers.append({"weight": mat(layer.weight), "bias": vec(layer.bias),
                           "activation": layer.activation})
    return {"domain": {"lower": vec(t.lower), "upper": vec(t.upper)},
            "target": {"layers": layers}}


def _frozen_conv_dict(layer: FrozenConvLayer, j: int, frozen_weights: str) -> dict[str, Any]:
    record = layer.record
    if not isinstance(record, dict) or "generator" not in record:
        raise InputError(f"frozen convolution {j} has no draw record")
    entry: dict[str, Any] = {"kind": "conv", "input": layer.input, **_geometry(layer.geometry)}
    if frozen_weights == "reference":
        entry["weight"] = {"random": record}
    else:
        entry["weight"] = _weight(layer.weight, compact=True)
        entry["source"] = record
    entry.update(gamma=_numbers(layer.gamma, True), beta=_numbers(layer.beta, True),
                 activation=layer.activation)
    return entry


def _frozen_dict(layer: AnyFrozenLayer, j: int, frozen_weights: str) -> dict[str, Any]:
    if isinstance(layer, FrozenConvLayer):
        return _frozen_conv_dict(layer, j, frozen_weights)
    if isinstance(layer, FrozenPoolLayer):
        return {"kind": "avgpool", "input": layer.input,
                **_geometry(layer.geometry, dilation=False), "activation": "identity"}
    return _layer_dict(layer, j, CONV_VERSION, frozen_weights)


def _document(c: ConvConstruction, frozen_weights: str, lazy: bool) -> dict[str, Any]:
    if frozen_weights not in FROZEN_WEIGHTS:
        raise InputError(f"frozen_weights must be one of {', '.join(FROZEN_WEIGHTS)}, "
                         f"got {frozen_weights!r}", parameter="frozen_weights")
    doc: dict[str, Any] = {"format": FORMAT, "version": CONV_VERSION}
    doc.update(conv_target_to_dict(c.target, compact=True))
    items = (_frozen_dict(layer, j, frozen_weights)
             for j, layer in enumerate(c.network.layers, 1))
    doc["network"] = {"layers": _LazyList(items) if lazy else list(items),
                      "checkpoints": list(c.network.checkpoints)}
    doc["provenance"] = dict(c.provenance, frozen_weights=frozen_weights)
    doc["witnesses"] = c.witnesses
    positional(doc, c.provenance, CONV_VERSION)
    return doc


def conv_certificate_document(c: ConvConstruction, *,
                              frozen_weights: str = DEFAULT_FROZEN_WEIGHTS) -> dict[str, Any]:
    """The certificate document of a convolutional construction (version 3)."""
    return _document(c, frozen_weights, lazy=False)


def write_conv_certificate(c: ConvConstruction, path: str | os.PathLike[str], *,
                           frozen_weights: str = DEFAULT_FROZEN_WEIGHTS) -> int:
    """Stream the certificate to ``path`` (gzip for ``.gz``), atomically; returns bytes written.
    Equal to ``save_certificate(conv_certificate_document(c), path)`` byte for byte."""
    return _write_pieces(path, _encode_stream(_document(c, frozen_weights, lazy=True)))


def is_conv_document(doc: Any) -> bool:
    """Whether a certificate or target document has a convolution or pooling layer."""
    if not isinstance(doc, dict):
        return False
    sections = [doc.get("target", {}), doc.get("network", {})]
    return any(isinstance(s, dict) and isinstance(s.get("layers"), list)
               and any(isinstance(L, dict) and L.get("kind") in ("conv", "avgpool")
                       for L in s["layers"]) for s in sections)


def _read_geometry(L: dict[str, Any], what: str) -> ConvGeometry:
    for key in ("input_shape", "kernel_shape", "stride", "padding"):
        if not isinstance(L.get(key), list):
            raise ShapeError(f"{what}: {key} must be a list of integers")
    return ConvGeometry(tuple(L["input_shape"]), tuple(L["kernel_shape"]),
                        tuple(L["stride"]), tuple(L["padding"]),
                        tuple(L.get("dilation", [1, 1])))


def _kernel_matrix(record: Any, what: str, max_entries: int) -> Any:
    """A kernel's draw record of shape ``[c, C, kh, kw]`` regenerated as ``[c, C·kh·kw]``."""
    if not isinstance(record, dict) or not isinstance(record.get("shape"), list):
        raise InputError(f"{what}: malformed draw record")
    shape = record["shape"]
    if len(shape) == 4 and all(type(v) is int and v >= 1 for v in shape):
        if "mask" in record:
            raise InputError(f"{what}: masks are not allowed on 4-d kernel records")
        record = dict(record, shape=[shape[0], shape[1] * shape[2] * shape[3]])
    return _regenerate(record, what, max_entries)


def _read_numbers(obj: Any, what: str, max_digits: int) -> tuple[fmpq, ...]:
    if isinstance(obj, dict):
        return tuple(_compact(obj, what).entries())
    if not isinstance(obj, list):
        raise ShapeError(f"{what} must be a list")
    if not obj:
        return ()
    return tuple(to_fmpq_mat([[parse_number(x, max_digits=max_digits, where=what)
                               for x in obj]], what).entries())


def _read_matrix(obj: Any, what: str, max_digits: int) -> Any:
    if isinstance(obj, dict) and set(obj) == {"den", "num"}:
        return _compact(obj, what)
    if not isinstance(obj, list) or not obj:
        raise ShapeError(f"{what} must be a non-empty list of rows")
    if all(isinstance(row, list) and all(type(x) is int for x in row) for row in obj):
        return fmpz_mat(obj)
    return to_fmpq_mat([[parse_number(x, max_digits=max_digits, where=what) for x in row]
                        for row in obj], what)


def conv_target_from_dict(doc: dict[str, Any], *,
                          max_digits: int = DEFAULT_MAX_DIGITS) -> ConvTargetNetwork:
    """The target of a convolutional certificate alone (domain and target sections; no frozen
    matrix is regenerated)."""
    try:
        lower = _read_numbers(doc["domain"]["lower"], "domain lower", max_digits)
        upper = _read_numbers(doc["domain"]["upper"], "domain upper", max_digits)
        tlayers: list[AnyTargetLayer] = []
        for i, L in enumerate(doc["target"]["layers"], 1):
            what = f"target layer {i}"
            kind = L.get("kind", "dense")
            if kind == "conv":
                W = fmpq_mat(_read_matrix(L["weight"], what, max_digits))
                tlayers.append(ConvTargetLayer(_read_geometry(L, what), W,
                                               _read_numbers(L["bias"], what, max_digits),
                                               L["activation"]))
            elif kind == "avgpool":
                tlayers.append(PoolTargetLayer(_read_geometry(L, what), L["activation"]))
            elif kind == "dense":
                tlayers.append(TargetLayer(fmpq_mat(_read_matrix(L["weight"], what, max_digits)),
                                           _read_numbers(L["bias"], what, max_digits),
                                           L["activation"]))
            else:
                raise InputError(f"{what}: unknown kind {kind!r}")
        return ConvTargetNetwork(tuple(tlayers), lower, upper)
    except ExactnormError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError, IndexError) as exc:
        raise InputError(f"convolutional certificate is malformed: {exc!r}"[:300]) from None


def conv_networks_from_dict(doc: dict[str, Any], *, max_digits: int = DEFAULT_MAX_DIGITS,
                            max_entries: int = DEFAULT_MAX_ENTRIES
                            ) -> tuple[ConvTargetNetwork, ConvFrozenNetwork]:
    """Rebuild the target and the frozen network of a convolutional certificate (parse only).

    Compact ``{"den", "num"}`` numbers are read as one integer matrix over their denominator
    (FLINT reduces the fractions), compact skips as 0/1 integer matrices, so a real-size
    certificate is read in seconds."""

    def nums(obj: Any, what: str) -> tuple[fmpq, ...]:
        return _read_numbers(obj, what, max_digits)

    def frozen(L: dict[str, Any], what: str, kernel: bool) -> tuple[Any, Any]:
        w = expand_skip(L["weight"])
        if isinstance(w, dict) and set(w) == {"random"}:
            if kernel:
                return _kernel_matrix(w["random"], what, max_entries), w["random"]
            return _regenerate(w["random"], what, max_entries), w["random"]
        return _read_matrix(w, what, max_digits), L.get("source")

    target = conv_target_from_dict(doc, max_digits=max_digits)
    try:
        flayers: list[AnyFrozenLayer] = []
        for j, L in enumerate(doc["network"]["layers"], 1):
            what = f"frozen layer {j}"
            kind = L.get("kind", "dense")
            if kind == "conv":
                V, rec = frozen(L, what, kernel=True)
                flayers.append(FrozenConvLayer(int(L["input"]), _read_geometry(L, what), V,
                                               nums(L["gamma"], what), nums(L["beta"], what),
                                               L["activation"], record=rec))
            elif kind == "avgpool":
                flayers.append(FrozenPoolLayer(int(L["input"]), _read_geometry(L, what),
                                               L["activation"]))
            elif kind == "dense":
                skips = []
                for s in L.get("skip", []):
                    M, srec = frozen(s, f"{what} skip", kernel=False)
                    skips.append(Skip(int(s["from"]), M, s["kind"], record=srec))
                V, rec = frozen(L, what, kernel=False)
                flayers.append(FrozenLayer(int(L["input"]), V, nums(L["gamma"], what),
                                           nums(L["beta"], what), L["activation"],
                                           tuple(skips), record=rec))
            else:
                raise InputError(f"{what}: unknown kind {kind!r}")
        network = ConvFrozenNetwork(len(target.lower), tuple(flayers),
                                    tuple(int(c) for c in doc["network"]["checkpoints"]))
    except ExactnormError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError, IndexError) as exc:
        raise InputError(f"convolutional certificate is malformed: {exc!r}"[:300]) from None
    return target, network


def _compact(obj: dict[str, Any], what: str) -> fmpq_mat:
    """``{"den": D, "num": …}`` (vector or matrix) as an ``fmpq_mat`` (a vector is one row)."""
    if set(obj) != {"den", "num"} or not isinstance(obj["num"], list):
        raise InvalidCertificateError(f"{what}: malformed compact numbers")
    den = _compact_integer(obj["den"], f"{what} den")
    if den <= 0:
        raise InvalidCertificateError(f"{what}: compact denominator must be positive")
    rows = obj["num"]
    if rows and isinstance(rows[0], list):
        ints = [[_compact_integer(x, what) for x in row] for row in rows]
    else:
        ints = [[_compact_integer(x, what) for x in rows]]
    if not ints or not ints[0]:
        return fmpq_mat(len(ints), 0)
    return fmpq_mat(fmpz_mat(ints)) / den


def exact_agreement(doc: dict[str, Any], *, points: int = 4, seed: int = 0) -> int:
    """Evaluate both networks of a convolutional certificate exactly at ``points`` random
    rational points of the box (its corners ``lower``, ``upper`` first) and at every checkpoint;
    returns the number of points compared.

    A dense cross-check of a construction, not the checker: it can find a wrong certificate, it
    cannot prove one right on the whole box.

    Raises
    ------
    InvariantError
        At the first point where a checkpoint differs from its target layer's value.
    """
    target, net = conv_networks_from_dict(doc)
    rng = random.Random(seed)
    pts = [list(target.lower), list(target.upper)][:points]
    while len(pts) < points:
        pts.append([lo + (hi - lo) * fmpq(rng.randrange(0, 17), 16)
                    for lo, hi in zip(target.lower, target.upper)])
    if len(net.checkpoints) != target.depth:
        raise InvariantError(f"{len(net.checkpoints)} checkpoints for {target.depth} target "
                             f"layers")
    for x in pts:
        values = evaluate_checkpoints(net, x)
        a = tuple(x)
        for i, (layer, cp, value) in enumerate(zip(target.layers, net.checkpoints, values), 1):
            a = _step(layer, a)
            if value != a:
                raise InvariantError(f"checkpoint {cp} differs from target layer {i} at a point "
                                     f"of the box")
    return len(pts)


def _step(layer: AnyTargetLayer, a: tuple[fmpq, ...]) -> tuple[fmpq, ...]:
    from exactnorm.model.network import activate, column

    if isinstance(layer, TargetLayer):
        z = layer.weight * column(a)
        return activate(layer.activation, [z[r, 0] + layer.bias[r] for r in range(z.nrows())])
    return layer.evaluate(a)
