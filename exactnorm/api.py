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
    DEFAULT_MAX_CERTIFICATE_BYTES,
    certificate_document,
    load_certificate,
    read_certificate_bytes,
    save_certificate,
)
from exactnorm.constructions.common import Construction
from exactnorm.constructions.lowrank import certify_lowrank
from exactnorm.constructions.theorem1 import certify_theorem1
from exactnorm.constructions.tradeoff import certify_tradeoff
from exactnorm.errors import InputError
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS
from exactnorm.model.network import TargetNetwork
from exactnorm.model.targets import demo_target, load_target

__all__ = [
    "CONSTRUCTIONS",
    "certify",
    "check",
    "check_file",
    "demo_target",
    "load_target",
    "certificate_document",
    "save_certificate",
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


def check(doc: dict[str, Any], *, pure: bool = False) -> Any:
    """Check a certificate document with the independent checker (pure Python or python-flint).

    Returns a ``Verdict`` with ``ok``, ``rule``, ``message``, ``layer``, ``neuron``.
    """
    if pure:
        from exactnorm import checker
        return checker.check_certificate(doc)
    from exactnorm import checker_flint
    return checker_flint.check_certificate(doc)


def check_file(path: str | os.PathLike[str], *, pure: bool = False,
               max_bytes: int = DEFAULT_MAX_CERTIFICATE_BYTES,
               max_digits: int = DEFAULT_MAX_DIGITS) -> Any:
    """Check a certificate file (``.json`` or ``.json.gz``), size-limited before parsing.

    Raises :class:`~exactnorm.errors.InputError` for an unreadable file; a corrupt or oversized
    file is an error too, never a crash.
    """
    from exactnorm import checker, checker_flint

    raw = read_certificate_bytes(path, max_bytes=max_bytes)
    module = checker if pure else checker_flint
    return module.check_certificate_text(raw, max_digits=max_digits)
