"""exactnorm: exact certificates that tuning only the normalization parameters (γ, β) of a frozen
random ReLU network reproduces a target network.

The public functions of :mod:`exactnorm.api` (one per command-line verb) are attributes of the
package, resolved on first use so that ``import exactnorm`` does not import python-flint, NumPy
or the constructions:

>>> from exactnorm import certificate_document, certify, check, demo_target
>>> check(certificate_document(certify(demo_target(), seed=0))).ok
True
"""

from __future__ import annotations

from typing import Any

from exactnorm.version import __version__

_API_NAMES = frozenset({
    "certify", "check", "check_file", "tables", "sparse_sweep", "detpoly", "check_detpoly",
    "realizable", "export", "report", "load_target", "load_frozen", "Box", "demo_target",
    "certificate_document",
    "save_certificate", "load_certificate", "plan_certify", "progress_bar",
    "CertifyResult", "ReportResult", "ExportResult", "Verdict", "capacity", "CapacityResult",
})

__all__ = ["__version__", *sorted(_API_NAMES)]


def __getattr__(name: str) -> Any:
    # PEP 562: the API (and with it FLINT and NumPy) is imported on first access, not by
    # ``import exactnorm`` — the standard-library checker and ``--version`` stay light
    if name in _API_NAMES:
        from exactnorm import api

        return getattr(api, name)
    raise AttributeError(f"module 'exactnorm' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _API_NAMES)
