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

#: every name of ``exactnorm.api.__all__`` (tests/project/test_architecture.py compares them)
_API_NAMES = frozenset({
    "CONSTRUCTIONS", "certify", "plan_certify", "certify_target", "factors_of", "CertifyPlan",
    "CertifyResult", "Verdict", "ReportResult", "ExportResult", "progress_bar", "target_of",
    "require_version", "check", "check_file", "check_bytes", "tables", "TablesResult",
    "sparse_sweep", "SweepResult", "detpoly", "check_detpoly", "DetpolyResult", "realizable",
    "capacity", "CapacityResult", "plan_capacity", "CapacityPlan", "export", "report",
    "demo_target", "load_target", "load_frozen", "frozen_of", "Box", "certificate_document",
    "save_certificate", "write_certificate", "load_certificate", "plan_transformer",
    "certify_transformer", "is_transformer_file", "TransformerResult",
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
