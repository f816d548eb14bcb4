"""Normalization parameters out: exact JSON, float64 ``.npz``, ONNX and PyTorch (docs/model.md), for
certificates of every layer kind.

Contract
--------
A certificate's frozen network ``f`` computes, at layer ``j``, ``u = Γ ⊙ (V h_in) + β``,
``h = σ(u) + Σ_s P_s h_s``. Every export carries the same ``V``, skips ``P_s``, activations and
topology, and replaces ``(Γ, β)`` by a normalization layer with frozen statistics: mean ``μ``,
scale ``s > 0`` and affine parameters ``γ̂, β̂``, computing ``γ̂ (v − μ)/s + β̂``.

Correctness argument
--------------------
``γ̂ (v − μ)/s + β̂ = Γ v + β`` for every ``v`` exactly when

    ``γ̂ = Γ·s``,  ``β̂ = β + Γ·μ``   (and back: ``Γ = γ̂/s``, ``β = β̂ − γ̂ μ/s``),

both directions exact for rational ``μ, s`` (:func:`to_batchnorm`, :func:`from_batchnorm`).
Frameworks store a variance and divide by ``sqrt(running_var + eps)``; ``running_var = s² − eps``
makes that ``s``. Only the JSON export is exact; every float export (``npz``, ``onnx``, ``torch``)
rounds each parameter once to float32/float64 and is **not certified**: the certificate is the
proof, a float model is a convenient copy whose error is measured (tests compare onnxruntime and
``torch.nn`` against exact evaluation at random points of the box).

The statistics are per tuned entry: per neuron of a dense layer, per channel of a convolution
(one normalization at every position, as BatchNorm2d); a fixed map (a pooling) has none and is
exported as the same map.

Formats (one module each; the dispatch :func:`render_export` is kind-free, each kind's pieces
are its exporter in :mod:`exactnorm.outputs.export.kinds`)
-------
* ``json`` (:mod:`~exactnorm.outputs.export.json`, format ``exactnorm.batchnorm`` version 1):
  exact ``"p/q"``; :func:`read_exported_json` recovers the certified network exactly.
* ``npz`` (:mod:`~exactnorm.outputs.export.npz`): float64 arrays per layer; forward pass
  :func:`evaluate_npz_export`.
* ``onnx`` (:mod:`~exactnorm.outputs.export.onnx`): one builder; per layer its kind's nodes
  (``MatMul``, ``Conv`` or its im2col form, pooling) and ``BatchNormalization`` (inference mode;
  opset 15) or ``Mul(γ)`` + ``Add(β)`` (``normalization="muladd"``, one rounding fewer), ``Relu``,
  and ``MatMul(h_s, P_sᵀ)`` + ``Add`` per skip, in float64 (default) or float32; around it the
  source model's interface (:mod:`exactnorm.outputs.onnx_interface`) or input ``x`` and output
  ``y`` without a recorded source. Built with the ``onnx`` helper API (no torch).
* ``torch`` (:mod:`~exactnorm.outputs.export.torch`): a state dict for one module layout of every
  kind, written with ``torch.save`` (needs torch).

The PyTorch module layout is documented in :mod:`exactnorm.outputs.export.torch`.

References
----------
A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the Normalization
Layers", COLT 2023, arXiv:2302.07937 (the normalization layer ``γ ⊙ (V h) + β``).

>>> from fractions import Fraction as F
>>> gh, bh = to_batchnorm((F(1, 3),), (F(-2),), (F(5),), (F(1, 2),))
>>> gh, bh
((1/6,), (-1/3,))
>>> from_batchnorm(gh, bh, (F(5),), (F(1, 2),))
((1/3,), (-2,))
"""

from __future__ import annotations

import os
import sys
from typing import Any

from exactnorm.errors import InputError
from exactnorm.exact.files import atomic_write_bytes
from exactnorm.outputs.export.batchnorm import (
    DEFAULT_EPS,
    EXPORT_FORMAT,
    EXPORT_VERSION,
    FLOAT_WARNING,
    ONNX_OPSET,
    from_batchnorm,
    to_batchnorm,
)
from exactnorm.outputs.export.json import (
    evaluate_exported_json,
    export_bytes,
    export_document,
    export_json,
    read_exported_json,
)
from exactnorm.outputs.export.npz import evaluate_npz_export, export_npz, npz_bytes_of
from exactnorm.outputs.export.onnx import INTERFACES, onnx_model, verify_onnx
from exactnorm.outputs.export.torch import (
    evaluate_state_dict,
    torch_bytes,
    torch_module,
    torch_state_dict,
)
from exactnorm.outputs.stages import ProgressHook

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "DEFAULT_EPS",
    "FLOAT_WARNING",
    "to_batchnorm",
    "from_batchnorm",
    "export_npz",
    "evaluate_npz_export",
    "EXPORT_FORMATS",
    "ONNX_OPSET",
    "INTERFACES",
    "torch_state_dict",
    "torch_module",
    "evaluate_state_dict",
    "render_export",
    "export_certificate",
    "export_document",
    "export_json",
    "read_exported_json",
    "evaluate_exported_json",
    "onnx_model",
    "verify_onnx",
]

#: ``--format`` values of :func:`export_certificate`.
EXPORT_FORMATS = ("json", "npz", "onnx", "torch")


def render_export(cert_doc: dict[str, Any], format: str, *, mean: Any = 0, scale: Any = 1,
                  eps: float | None = None, dtype: str = "float32",
                  normalization: str = "batchnorm",
                  progress: ProgressHook | None = None,
                  interface: str = "source") -> tuple[bytes, str | None]:
    """The bytes of one export format and its not-certified warning (``None`` for JSON), for a
    certificate of any layer kinds.

    Parameters
    ----------
    cert_doc
        A certificate document.
    format
        One of :data:`EXPORT_FORMATS`.
    mean, scale
        Frozen statistics (exact numbers).
    eps
        Float formats only (default :data:`DEFAULT_EPS`); refused for JSON.
    dtype, normalization
        ONNX only (``torch`` is saved in float64; ``module.float()`` converts).
    interface
        ONNX only: ``"source"`` (the source model's input, outputs and head, when recorded) or
        ``"plain"`` (:mod:`exactnorm.outputs.onnx_interface`).
    progress
        ``progress(done, total)`` over the frozen layers read.

    Returns
    -------
    (bytes, str or None)

    Raises
    ------
    InputError
        Unknown format, ``eps`` with JSON.
    """
    if format not in EXPORT_FORMATS:
        raise InputError(f"unknown export format {format!r}; expected one of {EXPORT_FORMATS}",
                         parameter="format")
    if format == "json":
        if eps is not None:
            raise InputError("eps applies to the float formats only (the JSON export stores s)",
                             parameter="eps")
        return export_bytes(export_document(cert_doc, mean, scale, progress=progress)), None
    e = DEFAULT_EPS if eps is None else eps
    if format == "npz":
        return npz_bytes_of(cert_doc, mean, scale, e, progress), FLOAT_WARNING
    if format == "onnx":
        model = onnx_model(cert_doc, dtype=dtype, normalization=normalization, mean=mean,
                           scale=scale, eps=e, progress=progress, interface=interface)
        return model.SerializeToString(), FLOAT_WARNING
    state = torch_state_dict(cert_doc, mean=mean, scale=scale, eps=e, progress=progress)
    return torch_bytes(state), FLOAT_WARNING


def export_certificate(cert_doc: dict[str, Any], format: str, out: str | os.PathLike[str],
                       **options: Any) -> str | None:
    """Write one export format to ``out`` (atomic) or to standard output for ``out = "-"``.

    Parameters
    ----------
    cert_doc
        A certificate document.
    format
        One of :data:`EXPORT_FORMATS`.
    out
        A file path, or ``"-"`` for standard output (binary formats write raw bytes).
    **options
        Passed to :func:`render_export`.

    Returns
    -------
    str or None
        The not-certified warning of a float format.
    """
    data, warning = render_export(cert_doc, format, **options)
    if os.fspath(out) == "-":
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        atomic_write_bytes(out, lambda fh: fh.write(data))
    return warning
