"""The Python API that the CLI mirrors: ``certify``, ``check``, ``load_target``.

>>> from exactnorm import api
>>> c = api.certify(api.demo_target(), seed=1)
>>> api.check(api.certificate_document(c)).ok
True
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from exactnorm.certificate import certificate_document, load_certificate, save_certificate
from exactnorm.constructions.common import Construction
from exactnorm.errors import InputError
from exactnorm.io import demo_target, load_target
from exactnorm.network import TargetNetwork

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


def _theorem1(target: TargetNetwork, **kw: Any) -> Construction:
    from exactnorm.constructions.theorem1 import certify_theorem1

    return certify_theorem1(target, **kw)


#: name → callable(target, **options) → Construction
CONSTRUCTIONS: dict[str, Callable[..., Construction]] = {
    "theorem1": _theorem1,
}


def certify(target: TargetNetwork, construction: str = "theorem1", **options: Any) -> Construction:
    """Run a construction by name (``theorem1``, …) on ``target`` with its options."""
    if construction not in CONSTRUCTIONS:
        raise InputError(f"unknown construction {construction!r}; "
                         f"choose one of {', '.join(sorted(CONSTRUCTIONS))}")
    return CONSTRUCTIONS[construction](target, **options)


def check(doc: dict[str, Any], *, pure: bool = False) -> Any:
    """Check a certificate document with the independent checker (pure Python or python-flint).

    Returns a ``Verdict`` with ``ok``, ``rule``, ``message``, ``layer``, ``neuron``.
    """
    if pure:
        from exactnorm import checker
        return checker.check_certificate(doc)
    from exactnorm import checker_flint
    return checker_flint.check_certificate(doc)


def check_file(path: str | os.PathLike[str], *, pure: bool = False) -> Any:
    """Check a certificate file (``.json`` or ``.json.gz``)."""
    if pure:
        from exactnorm import checker
        return checker.check_file(str(path))
    from exactnorm import checker_flint
    return checker_flint.check_file(str(path))
