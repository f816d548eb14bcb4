"""The Python API that the CLI mirrors: ``certify``, ``check``, ``load_target``.

>>> from exactnorm import api
>>> c = api.certify(api.demo_target(), seed=1)
>>> api.check(api.certificate_document(c)).ok
True
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from typing import Any

from exactnorm.certificate import (
    COMPACT_VERSION,
    DEFAULT_MAX_CERTIFICATE_BYTES,
    certificate_document,
    decode_compact,
    load_certificate,
    read_certificate_bytes,
    save_certificate,
    write_certificate,
)
from exactnorm.constructions.common import Construction
from exactnorm.constructions.lowrank import certify_lowrank
from exactnorm.constructions.theorem1 import certify_theorem1
from exactnorm.constructions.tradeoff import certify_tradeoff
from exactnorm.errors import ExactnormError, InputError
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS, strict_json_loads
from exactnorm.model.network import TargetNetwork
from exactnorm.model.targets import demo_target, load_target

__all__ = [
    "CONSTRUCTIONS",
    "certify",
    "check",
    "check_file",
    "check_bytes",
    "demo_target",
    "load_target",
    "certificate_document",
    "save_certificate",
    "write_certificate",
    "load_certificate",
]


#: name → callable(target, **options) → Construction
CONSTRUCTIONS: dict[str, Callable[..., Construction]] = {
    "theorem1": certify_theorem1,
    "lowrank": certify_lowrank,
    "tradeoff": certify_tradeoff,
}


def certify(target: TargetNetwork, construction: str = "theorem1", **options: Any) -> Construction:
    """Run a construction by name (``theorem1``, …) on ``target`` with its options."""
    if construction not in CONSTRUCTIONS:
        raise InputError(f"unknown construction {construction!r}; "
                         f"choose one of {', '.join(sorted(CONSTRUCTIONS))}")
    build = CONSTRUCTIONS[construction]
    try:
        inspect.signature(build).bind(target, **options)
    except TypeError as exc:
        raise InputError(f"construction {construction!r}: {exc}") from None
    return build(target, **options)


def _checker(pure: bool) -> Any:
    if pure:
        from exactnorm import checker
        return checker
    from exactnorm import checker_flint
    return checker_flint


def _readable_by(module: Any, doc: Any) -> Any:
    """``doc`` as ``module`` can read it.

    A checker that declares version 2 (``VERSIONS``) gets the document as it is. One that reads
    version 1 only gets the version-1 document with the same values: compact numbers decoded
    (:func:`~exactnorm.certificate.decode_compact`) and by-reference frozen weights written out
    (regenerated from their records by :func:`~exactnorm.certificate.network_from_dict`'s
    reader). The provenance rule is then not checked; it is part of version-2 checking.
    """
    if not (isinstance(doc, dict) and doc.get("version") == COMPACT_VERSION) \
            or COMPACT_VERSION in getattr(module, "VERSIONS", (1,)):
        return doc
    from exactnorm.certificate import _regenerate, _shared_matrix

    plain = decode_compact(doc)

    def explicit(entry: dict[str, Any], what: str) -> None:
        weight = entry.get("weight")
        if isinstance(weight, dict) and set(weight) == {"random"}:
            entry["weight"] = _shared_matrix(_regenerate(weight["random"], what, 1 << 26))
        entry.pop("source", None)

    for j, layer in enumerate(plain.get("network", {}).get("layers", []), 1):
        if isinstance(layer, dict):
            explicit(layer, f"layer {j} weight")
            for skip in layer.get("skip", []) if isinstance(layer.get("skip"), list) else []:
                if isinstance(skip, dict):
                    explicit(skip, f"layer {j} skip weight")
    return {**plain, "version": 1}


def check(doc: dict[str, Any], *, pure: bool = False) -> Any:
    """Check a certificate document with the independent checker (pure Python or python-flint).

    Returns a ``Verdict`` with ``ok``, ``rule``, ``message``, ``layer``, ``neuron``.
    """
    module = _checker(pure)
    return module.check_certificate(_readable_by(module, doc))


def check_file(path: str | os.PathLike[str], *, pure: bool = False,
               max_bytes: int = DEFAULT_MAX_CERTIFICATE_BYTES,
               max_digits: int = DEFAULT_MAX_DIGITS) -> Any:
    """Check a certificate file (``.json`` or ``.json.gz``), size-limited before parsing.

    Raises :class:`~exactnorm.errors.InputError` for an unreadable file; a corrupt or oversized
    file is an error too, never a crash.
    """
    raw = read_certificate_bytes(path, max_bytes=max_bytes)
    return check_bytes(raw, pure=pure, max_digits=max_digits, what=f"certificate {path}")


def check_bytes(raw: bytes, *, pure: bool = False, max_digits: int = DEFAULT_MAX_DIGITS,
                what: str = "certificate") -> Any:
    """Check the (uncompressed) text of a certificate of either version; never raises for bad
    content. A version-2 text goes to a checker without version-2 support as the version-1
    document it denotes (:func:`_readable_by`)."""
    module = _checker(pure)
    if COMPACT_VERSION not in getattr(module, "VERSIONS", (1,)) \
            and b'"version":2' in raw:
        try:
            doc = strict_json_loads(raw, what=what, max_digits=max_digits)
            readable = _readable_by(module, doc)
        except ExactnormError:
            pass  # the checker parses the text itself and names what is wrong
        else:
            return module.check_certificate(readable)
    return module.check_certificate_text(raw, max_digits=max_digits)
