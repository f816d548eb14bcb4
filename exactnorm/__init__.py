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
    "certify", "check", "check_file", "check_bytes", "tables", "sparse_sweep", "detpoly",
    "check_detpoly", "realizable", "export", "report", "load_target", "target_of",
    "demo_target", "factors_of", "certificate_document", "save_certificate",
    "write_certificate", "load_certificate", "require_version", "plan_certify",
    "certify_target", "plan_capacity", "progress_bar", "CONSTRUCTIONS", "CertifyResult",
    "CertifyPlan", "ReportResult", "ExportResult", "Verdict", "capacity", "CapacityResult",
    "CapacityPlan", "TablesResult", "SweepResult", "DetpolyResult", "plan_transformer",
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
