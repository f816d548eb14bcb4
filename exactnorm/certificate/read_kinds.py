"""Reading documents of every layer kind (docs/certificate-format.md §8), version 2: the
target alone (:func:`conv_target_from_dict`), both networks (:func:`conv_networks_from_dict`),
an exact cross-check of a construction (:func:`exact_agreement`); and the one choice between
this reader and the dense one for callers that read any document (:func:`read_networks`,
:func:`read_target`).

The reader parses, it does not check: it rebuilds both networks exactly so that
:func:`exact_agreement` can evaluate them at rational points (a dense cross-check, not the
checker). It stays as it is until one reader is built on the checker's typed records.

>>> from flint import fmpq, fmpq_mat
>>> from exactnorm.certificate.write import certificate_document
>>> from exactnorm.constructions.plan import construct
>>> from exactnorm.model.kinds import ConvGeometry, ConvTargetLayer
>>> from exactnorm.model.network import TargetNetwork
>>> g = ConvGeometry((1, 3, 3), (2, 2))
>>> t = TargetNetwork((ConvTargetLayer(g, fmpq_mat([[1, -1, 2, 0]]), (fmpq(1),), "relu"),),
...                   (fmpq(0),) * 9, (fmpq(1),) * 9)
>>> exact_agreement(certificate_document(construct(t, seed=0)), points=2, seed=0)
2
"""

from __future__ import annotations

import random
from typing import Any

from flint import fmpq, fmpq_mat, fmpz_mat

from exactnorm.certificate.compact import (
    DEFAULT_MAX_ENTRIES,
    compact_integer,
    decode_compact,
    expand_skip,
    route_of,
)
from exactnorm.certificate.kinds import CODECS
from exactnorm.certificate.read import network_from_dict, regenerate_record
from exactnorm.errors import (
    ExactnormError,
    InputError,
    InvalidCertificateError,
    InvariantError,
    ShapeError,
)
from exactnorm.exact.linalg import to_fmpq_mat
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS, parse_number
from exactnorm.model.kinds import (
    ConvGeometry,
    ConvTargetLayer,
    FrozenConvLayer,
    FrozenKind,
    FrozenPoolLayer,
    PoolTargetLayer,
    TargetKind,
)
from exactnorm.model.network import (
    FrozenLayer,
    FrozenNetwork,
    Skip,
    TargetLayer,
    TargetNetwork,
    Wiring,
)
from exactnorm.model.routes import Route
from exactnorm.model.targets import target_from_dict

__all__ = ["conv_networks_from_dict", "conv_target_from_dict", "exact_agreement",
           "needs_kind_reader", "read_target", "read_networks"]


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
    return regenerate_record(record, what, max_entries)


def _conv_skip(skip: dict[str, Any], what: str) -> Route:
    """A convolution's post-activation skip as its route (identity or selection, compact form):
    never written out, since an identity on a feature map has ``(c·H·W)²`` entries."""
    weight = skip.get("weight")
    if isinstance(weight, dict) and set(weight) == {"identity"} \
            and type(weight["identity"]) is int and weight["identity"] >= 1:
        return Route.identity(weight["identity"])
    if isinstance(weight, dict) and set(weight) == {"selection", "columns"}:
        return Route(tuple(weight["selection"]), weight["columns"])
    raise InputError(f"{what}: a convolution's skip is an identity or selection in compact form")


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
                          max_digits: int = DEFAULT_MAX_DIGITS) -> TargetNetwork:
    """The target of a convolutional certificate alone (domain and target sections; no frozen
    matrix is regenerated)."""
    try:
        lower = _read_numbers(doc["domain"]["lower"], "domain lower", max_digits)
        upper = _read_numbers(doc["domain"]["upper"], "domain upper", max_digits)
        tlayers: list[TargetKind] = []
        wiring: list[Wiring] = []
        for i, L in enumerate(doc["target"]["layers"], 1):
            what = f"target layer {i}"
            kind = L.get("kind", "dense")
            # the topology is kind-free: the node read and a skip before the activation
            wiring.append(Wiring(int(L.get("input", i - 1)),
                                 route_of(L["skip"], f"{what} skip") if "skip" in L else None))
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
            elif hasattr(CODECS.get(kind), "target_from_json"):  # a kind that reads itself
                tlayers.append(CODECS[kind].target_from_json(L, what))  # type: ignore[attr-defined]
            else:
                raise InputError(f"{what}: unknown kind {kind!r}")
        chain = all(w == Wiring(i) for i, w in enumerate(wiring))
        return TargetNetwork(tuple(tlayers), lower, upper,
                             wiring=None if chain else tuple(wiring))
    except ExactnormError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError, IndexError) as exc:
        raise InputError(f"convolutional certificate is malformed: {exc!r}"[:300]) from None


def conv_networks_from_dict(doc: dict[str, Any], *, max_digits: int = DEFAULT_MAX_DIGITS,
                            max_entries: int = DEFAULT_MAX_ENTRIES
                            ) -> tuple[TargetNetwork, FrozenNetwork]:
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
            return regenerate_record(w["random"], what, max_entries), w["random"]
        return _read_matrix(w, what, max_digits), L.get("source")

    target = conv_target_from_dict(doc, max_digits=max_digits)
    try:
        flayers: list[FrozenKind] = []
        for j, L in enumerate(doc["network"]["layers"], 1):
            what = f"frozen layer {j}"
            kind = L.get("kind", "dense")
            if kind == "conv":
                V, rec = frozen(L, what, kernel=True)
                mask = rec.get("mask") if isinstance(rec, dict) else None
                columns = mask.get("columns") if isinstance(mask, dict) else None
                flayers.append(FrozenConvLayer(
                    int(L["input"]), _read_geometry(L, what), V, nums(L["gamma"], what),
                    nums(L["beta"], what), L["activation"], record=rec,
                    skips=tuple(Skip(int(s["from"]), _conv_skip(s, f"{what} skip"), s["kind"])
                                for s in L.get("skip", [])),
                    drawn_columns=None if columns is None else tuple(columns),
                    stability=L.get("stability", "positions")))
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
            elif hasattr(CODECS.get(kind), "frozen_from_json"):  # a kind that reads itself
                flayers.append(CODECS[kind].frozen_from_json(L, what))  # type: ignore[attr-defined]
            else:
                raise InputError(f"{what}: unknown kind {kind!r}")
        residuals = tuple((j, route_of(L["residual"], f"frozen layer {j} residual"))
                          for j, L in enumerate(doc["network"]["layers"], 1)
                          if "residual" in L)
        network = FrozenNetwork(len(target.lower), tuple(flayers),
                                tuple(int(c) for c in doc["network"]["checkpoints"]),
                                residuals=residuals)
    except ExactnormError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError, IndexError) as exc:
        raise InputError(f"convolutional certificate is malformed: {exc!r}"[:300]) from None
    return target, network


def _compact(obj: dict[str, Any], what: str) -> fmpq_mat:
    """``{"den": D, "num": …}`` (vector or matrix) as an ``fmpq_mat`` (a vector is one row)."""
    if set(obj) != {"den", "num"} or not isinstance(obj["num"], list):
        raise InvalidCertificateError(f"{what}: malformed compact numbers")
    den = compact_integer(obj["den"], f"{what} den")
    if den <= 0:
        raise InvalidCertificateError(f"{what}: compact denominator must be positive")
    rows = obj["num"]
    if rows and isinstance(rows[0], list):
        ints = [[compact_integer(x, what) for x in row] for row in rows]
    else:
        ints = [[compact_integer(x, what) for x in rows]]
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
        values = net.evaluate_checkpoints(x)
        nodes = target.evaluate_nodes(x)  # the target's graph: a layer may read any node
        for i, (cp, value) in enumerate(zip(net.checkpoints, values), 1):
            if value != nodes[i]:
                raise InvariantError(f"checkpoint {cp} differs from target layer {i} at a point "
                                     f"of the box")
    return len(pts)


def needs_kind_reader(doc: Any) -> bool:
    """Whether a certificate or target document has a layer with a ``kind`` field, or a
    residual network's topology (a target layer's ``input`` or ``skip``, a checkpoint's
    ``residual``) — what the dense-only readers (:func:`~exactnorm.certificate.read.
    network_from_dict`, the float reader, the JSON export) do not read; such documents are read
    by :func:`read_networks`."""
    if not isinstance(doc, dict):
        return False
    sections = [doc.get("target", {}), doc.get("network", {})]
    # a frozen layer's "input" is always written; a target layer's only off a chain
    fields = (("kind", "input", "skip"), ("kind", "residual"))
    return any(isinstance(s, dict) and isinstance(s.get("layers"), list)
               and any(isinstance(L, dict) and any(f in L for f in names) for L in s["layers"])
               for s, names in zip(sections, fields))


def read_target(doc: dict[str, Any], *, max_digits: int = DEFAULT_MAX_DIGITS) -> TargetNetwork:
    """The target of a certificate of any kinds (no frozen matrix is regenerated)."""
    if needs_kind_reader(doc):
        return conv_target_from_dict(doc, max_digits=max_digits)
    # only the target is decoded: the network's compact numbers stay as they are
    sections = decode_compact({k: doc.get(k) for k in ("domain", "target")})
    return target_from_dict(sections, max_digits=max_digits)


def read_networks(doc: dict[str, Any], *, max_digits: int = DEFAULT_MAX_DIGITS
                  ) -> tuple[TargetNetwork, FrozenNetwork]:
    """Both networks of a certificate of any kinds and versions (parse only, no check)."""
    if needs_kind_reader(doc):
        return conv_networks_from_dict(doc, max_digits=max_digits)
    return read_target(doc, max_digits=max_digits), network_from_dict(doc, max_digits=max_digits)
