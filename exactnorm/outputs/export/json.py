"""The exact export (format ``exactnorm.batchnorm`` version 1): the certificate's frozen network
with every ``(Γ, β)`` replaced by BatchNorm-style ``(γ̂, β̂, μ, s)``, all as exact numbers, for
every layer kind. Part of :mod:`exactnorm.outputs.export`, which re-exports these functions and
states the conversion.

Contract
--------
Each layer is the certificate's own entry (its ``kind``, ``input``, geometry and ``activation``
unchanged) with its frozen ``weight`` and ``skip`` matrices written out as plain rows of exact
numbers (the version-1 certificate form, readable without the generator; a convolution's kernel
as its ``c × C·kh·kw`` matrix) and, where the certificate recorded one, the draw record as
``source``; ``gamma`` and ``beta`` become ``gamma_hat``, ``beta_hat``, ``mean`` and ``scale``
(``γ̂ = Γ s``, ``β̂ = β + Γ μ``, per neuron or per channel); a fixed map (a pooling) is copied as
it is. A document with layers of other kinds than dense also carries the certificate's
``target``, so that it is read back by the same reader. :func:`read_exported_json` inverts the
conversion exactly, so the network read back is the certified one (the one loader of frozen
networks, :func:`exactnorm.api.load_frozen`, reads an export with it).

How it stays fast at real size
------------------------------
The certificate is read by the checker's reader (:func:`exactnorm.checker.document.
read_certificate`: every structural rule and draw-record rule, no matrix regenerated), then each
frozen matrix is written from exact NumPy integers (:func:`exactnorm.exact.generator.
record_values`) or from the reader's integer rows over one denominator: no ``fmpq_mat`` is
built. Writing a 784-128-10 certificate (2,738 layers, 13.6 million frozen entries) through the
exact network took 200 s and 3.3 GB. A document the reader refuses is read through the exact
network instead (:func:`~exactnorm.certificate.read_frozen`), which names what is wrong. Both
paths write the same document; a test compares them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
from flint import fmpq

from exactnorm.certificate import decode_compact, read_frozen
from exactnorm.certificate.arrays import kernel_record
from exactnorm.certificate.compact import compact_skip
from exactnorm.certificate.kinds import CODECS
from exactnorm.certificate.write import route_json
from exactnorm.checker.document import read_certificate
from exactnorm.checker.numbers import CertificateError, IntMatrix
from exactnorm.checker.provenance import Draw
from exactnorm.checker.records import FrozenRecord
from exactnorm.checker.topology import Picks
from exactnorm.checker.vocabulary import FORMAT
from exactnorm.errors import ExactnormError, InputError
from exactnorm.exact import generator
from exactnorm.exact.files import atomic_write_bytes
from exactnorm.exact.rationals import (
    DEFAULT_MAX_DIGITS,
    JSON_INT_LIMIT,
    format_number,
    parse_number,
    strict_json_loads,
    unlimited_int_digits,
)
from exactnorm.model.network import FrozenNetwork
from exactnorm.model.routes import Route
from exactnorm.outputs.export.batchnorm import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    certificate_network,
    from_batchnorm,
    layer_stats,
    to_batchnorm,
)
from exactnorm.outputs.stages import ProgressHook

__all__ = ["export_document", "export_json", "read_exported_json", "evaluate_exported_json"]

def _integer_rows(values: np.ndarray, rows: int, cols: int) -> list[list[Any]]:
    """Exact integers → JSON rows as :func:`format_number` writes them (big ones as strings)."""
    if values.size == 0 or int(np.abs(values).max()) < JSON_INT_LIMIT:
        return values.reshape(rows, cols).tolist()  # Python ints already
    return [[format_number(int(x)) for x in r] for r in values.reshape(rows, cols).tolist()]


def _rows_of(matrix: Any) -> list[list[Any]]:
    """One frozen matrix as the checker's reader holds it → plain JSON rows."""
    if isinstance(matrix, Draw):
        values = generator.record_values(kernel_record(matrix.record))
        if not isinstance(values, tuple):
            return _integer_rows(values, matrix.rows, matrix.cols)
        num, den = values
        flat = [format_number(fmpq(int(a), int(b))) for a, b in zip(num.tolist(), den.tolist())]
        return [flat[r * matrix.cols:(r + 1) * matrix.cols] for r in range(matrix.rows)]
    if isinstance(matrix, Picks):
        return [[1 if c == t else 0 for c in range(matrix.cols)] for t in matrix.rows]
    if isinstance(matrix, IntMatrix):
        if matrix.den == 1:
            return [[format_number(x) for x in row] for row in matrix.rows]
        return [[format_number(fmpq(x, matrix.den)) for x in row] for row in matrix.rows]
    raise TypeError(f"unexpected matrix {type(matrix).__name__}")  # the reader's types only


def _vector(v: Any) -> tuple[fmpq, ...]:
    return tuple(fmpq(n, v.den) for n in v.nums)


def _record(entry: dict[str, Any], matrix: Any) -> dict[str, Any] | None:
    """Where a matrix comes from: its draw record (by reference), or an explicit matrix's
    ``source`` — a draw record or a ``fixed`` declaration (a given network's matrix), kept so
    that the export is read back by the checker's rules of provenance."""
    if isinstance(matrix, Draw):
        return matrix.record
    source = entry.get("source")
    return source if isinstance(source, dict) else None


def _read_fast(cert_doc: dict[str, Any]) -> tuple[list[FrozenRecord], list[int]] | None:
    """The frozen layers and checkpoints as the checker's reader returns them, or ``None`` when
    that reader refuses the document."""
    try:
        _, _, _, layers, cps, _ = read_certificate(cert_doc, DEFAULT_MAX_DIGITS)
    except (CertificateError, RecursionError):
        return None
    return layers, cps


def _batchnorm_fields(gamma: Any, beta: Any, mu: Any, s: Any) -> dict[str, list[Any]]:
    """``gamma_hat``, ``beta_hat``, ``mean``, ``scale`` of one layer, written exactly."""
    gh, bh = to_batchnorm(gamma, beta, mu, s)
    return {"gamma_hat": [format_number(x) for x in gh], "beta_hat": [format_number(x) for x in bh],
            "mean": [format_number(x) for x in mu], "scale": [format_number(x) for x in s]}


def _document(cert_doc: dict[str, Any], layers: list[dict[str, Any]],
              checkpoints: list[int]) -> dict[str, Any]:
    doc = {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, "convention": _CONVENTION,
           "domain": decode_compact(cert_doc.get("domain"), "domain"), "layers": layers,
           "checkpoints": list(checkpoints)}
    if _carries_target(cert_doc):
        doc["target"] = decode_compact(cert_doc.get("target"), "target")
    return doc


def _carries_target(cert_doc: Any) -> bool:
    """Whether the export carries the certificate's target: a layer with a ``kind`` field, or a
    residual network's topology (a target layer's ``input`` or ``skip``, a checkpoint's
    ``residual``), so that it is read back as the certificate was."""
    if not isinstance(cert_doc, dict):
        return False
    sections = [cert_doc.get("target", {}), cert_doc.get("network", {})]
    # a frozen layer's "input" is always written; a target layer's only off a chain
    fields = (("kind", "input", "skip"), ("kind", "residual"))
    return any(isinstance(s, dict) and isinstance(s.get("layers"), list)
               and any(isinstance(L, dict) and any(f in L for f in names) for L in s["layers"])
               for s, names in zip(sections, fields))


#: fields of a frozen layer entry that the export rewrites (the rest is copied)
_REWRITTEN = ("weight", "source", "skip", "gamma", "beta")


def export_document(cert_doc: dict[str, Any], mean: Any = 0, scale: Any = 1, *,
                    progress: ProgressHook | None = None) -> dict[str, Any]:
    """The exact ``exactnorm.batchnorm`` document for a certificate's network.

    ``progress(done, total)`` is told the frozen layers written so far.

    >>> from exactnorm import api
    >>> doc = api.certificate_document(api.certify(api.demo_target(), seed=1))
    >>> out = export_document(doc, mean=0, scale=2)
    >>> out["format"], len(out["layers"]) == len(doc["network"]["layers"])
    ('exactnorm.batchnorm', True)
    """
    if not isinstance(cert_doc, dict):
        raise InputError("expected a certificate document (a JSON object)")
    fast = _read_fast(cert_doc)
    # a grouped convolution's record holds the block-diagonal kernel of the whole patch, the
    # document its groups' blocks: written from the exact network, by its kind's codec
    if fast is None or any(L.geom is not None and L.geom.group > 1 for L in fast[0]):
        return _export_document_exact(cert_doc, mean, scale)
    layers_in, checkpoints = fast
    entries = cert_doc["network"]["layers"]
    stats = layer_stats(mean, scale, SimpleNamespace(
        depth=len(layers_in), layers=[SimpleNamespace(gamma=x.gamma.nums if x.gamma
                                                      is not None else ()) for x in layers_in]))
    layers = []
    for j, (layer, entry, (mu, s)) in enumerate(zip(layers_in, entries, stats), 1):
        # kind, input, geometry and activation as the certificate states them
        out: dict[str, Any] = {k: v for k, v in entry.items() if k not in _REWRITTEN}
        if layer.V is not None:
            out["weight"] = _rows_of(layer.V)
            record = _record(entry, layer.V)
            if record is not None:
                out["source"] = record
        if layer.skips:
            skips = []
            for skip_entry, (frm, P) in zip(entry["skip"], layer.skips):
                route = skip_entry["kind"]
                skip = {"from": frm, "kind": route, "weight": _rows_of(P)}
                skip_record = _record(skip_entry, P) if route == "random" else None
                if skip_record is not None:
                    skip["source"] = skip_record
                skips.append(skip)
            out["skip"] = skips
        if layer.gamma is not None:
            out.update(_batchnorm_fields(_vector(layer.gamma), _vector(layer.beta), mu, s))
        layers.append(out)
        if progress is not None:
            progress(j, len(layers_in))
    return _document(cert_doc, layers, checkpoints)


_CONVENTION = ("u = gamma_hat * (V h - mean) / scale + beta_hat; "
               "framework running_var = scale^2 - eps")


def _export_document_exact(cert_doc: dict[str, Any], mean: Any, scale: Any) -> dict[str, Any]:
    """The same document through the exact network (any certificate the library reads): each
    frozen layer written by its kind's codec with explicit matrices, then as plain numbers."""
    net = certificate_network(cert_doc)
    layers = []
    for j, (layer, (mu, s)) in enumerate(zip(net.layers, layer_stats(mean, scale, net)), 1):
        if layer.weight is not None and layer.record is None:  # no provenance: version 1
            entry = CODECS[layer.kind].frozen_json(layer, j, 1, "explicit")
        else:
            entry = CODECS[layer.kind].frozen_json(layer, j, 2, "explicit")
        out = {k: v for k, v in decode_compact(entry, f"layer {j}").items()
               if k not in ("gamma", "beta")}
        for skip, sk in zip(out.get("skip", []), layer.skips):
            if sk.record is not None:
                skip["source"] = sk.record
        r = net.residual(j)
        if r is not None:  # the checkpoint's skip before its activation, as written
            out["residual"] = route_json(r)
        if layer.tuned_parameters:
            out.update(_batchnorm_fields(layer.gamma, layer.beta, mu, s))
        layers.append(out)
    return _document(cert_doc, layers, list(net.checkpoints))


def export_json(cert_doc: dict[str, Any], path: str | os.PathLike[str], mean: Any = 0,
                scale: Any = 1, *, progress: ProgressHook | None = None) -> dict[str, Any]:
    """Write the exact BatchNorm-style export as JSON (atomic); return the document."""
    doc = export_document(cert_doc, mean, scale, progress=progress)
    atomic_write_bytes(path, lambda fh: fh.write(export_bytes(doc)))
    return doc


def export_bytes(doc: dict[str, Any]) -> bytes:
    """The JSON text of an export document: sorted keys, one line per key of the top level and
    per layer (a layer's matrices compact on its line).

    Readable at the top and fast at real size: an indented dump of the 784-128-10 export puts
    each of its 13.6 million frozen entries on a line of its own and takes 22 s in the
    pure-Python encoder; this layout uses the C encoder (3 s) and writes 145 MB instead of 343.

    >>> doc = {"version": 1, "layers": [{"b": [1, 2]}, {"a": "1/2"}]}
    >>> print(export_bytes(doc).decode(), end="")
    {
     "layers": [
      {"b":[1,2]},
      {"a":"1/2"}
     ],
     "version": 1
    }
    """
    def compact(value: Any) -> str:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    lines = ["{"]
    keys = sorted(doc)
    with unlimited_int_digits():
        for i, key in enumerate(keys):
            end = "," if i < len(keys) - 1 else ""
            value = doc[key]
            if key == "layers" and isinstance(value, list) and value:
                lines.append(f" {compact(key)}: [")
                lines += [f"  {compact(v)}{',' if k < len(value) - 1 else ''}"
                          for k, v in enumerate(value)]
                lines.append(f" ]{end}")
            else:
                lines.append(f" {compact(key)}: {compact(value)}{end}")
    lines.append("}")
    return ("\n".join(lines) + "\n").encode()


def _compact_route(skip: Any) -> Any:
    """A target skip whose 0/1 weight is written out, in its compact form (else as it is: the
    reader names what is wrong)."""
    if not isinstance(skip, dict) or not isinstance(skip.get("weight"), list):
        return skip
    try:
        weight = compact_skip(Route.from_matrix(skip["weight"]), str(skip.get("kind")))
    except (ExactnormError, TypeError, ValueError, IndexError):
        return skip
    return skip if weight is None else {**skip, "weight": weight}


def read_exported_json(path: str | os.PathLike[str], *,
                       max_digits: int = DEFAULT_MAX_DIGITS) -> FrozenNetwork:
    """Read an :func:`export_json` file back; ``Γ, β`` are recovered exactly by
    :func:`from_batchnorm`, so ``FrozenNetwork.evaluate`` gives the certified ``f`` exactly."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {p}: {exc}") from None
    doc = strict_json_loads(raw, what=str(p), max_digits=max_digits)
    if not isinstance(doc, dict) or doc.get("format") != EXPORT_FORMAT:
        raise InputError(f"{p} is not an {EXPORT_FORMAT} document")
    if doc.get("version") != EXPORT_VERSION:
        raise InputError(f"{p}: unsupported {EXPORT_FORMAT} version {doc.get('version')!r}")
    try:
        layers = []
        for j, L in enumerate(doc["layers"], 1):
            if "gamma_hat" not in L:  # a fixed map: nothing tuned
                layers.append(L)
                continue
            num = {k: [parse_number(x, max_digits=max_digits, where=f"layer {j} {k}")
                       for x in L[k]] for k in ("gamma_hat", "beta_hat", "mean", "scale")}
            G, B = from_batchnorm(num["gamma_hat"], num["beta_hat"], num["mean"], num["scale"])
            entry = {k: v for k, v in L.items() if k not in num}
            entry["gamma"] = [format_number(x) for x in G]
            entry["beta"] = [format_number(x) for x in B]
            layers.append(entry)
        cert_like = {"domain": doc["domain"],
                     "network": {"layers": layers, "checkpoints": doc["checkpoints"]}}
        if "target" in doc:
            # the export writes the target's numbers out (0/1 skips as rows); a certificate's
            # target skip is a route in compact form
            cert_like["target"] = {**doc["target"], "layers": [
                {**L, "skip": _compact_route(L["skip"])} if isinstance(L, dict) and "skip" in L
                else L for L in doc["target"].get("layers", [])]}
        # read as a certificate (the checker's reader): the first version with its fields
        topology = any(isinstance(L, dict) and ("input" in L or "skip" in L)
                       for L in cert_like.get("target", {}).get("layers", [])) or \
            any(isinstance(L, dict) and "residual" in L for L in layers)
        cert_like.update(format=FORMAT, version=3 if topology else 2)
    except ExactnormError:
        raise
    except (KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"{p}: malformed {EXPORT_FORMAT} document: {exc!r}"[:300]) from None
    return read_frozen(cert_like, max_digits=max_digits)


def evaluate_exported_json(path: str | os.PathLike[str], points: Sequence[Sequence[Any]], *,
                           max_digits: int = DEFAULT_MAX_DIGITS) -> list[tuple[fmpq, ...]]:
    """Run an exact JSON export on exact inputs: ``f(x)`` for each ``x`` in ``points``.

    Reads with :func:`read_exported_json` (``Γ = γ̂/s``, ``β = β̂ − γ̂ μ/s``, exact) and evaluates
    with :meth:`~exactnorm.model.network.FrozenNetwork.evaluate`, so the outputs are the certified
    network's, in exact rationals. Inputs are ints, Fractions or ``"p/q"`` strings (no floats).
    The certificate's statement ``f(x) = g(x)`` covers points in the box ``D`` only.
    """
    net = read_exported_json(path, max_digits=max_digits)
    return [net.evaluate(x) for x in points]

