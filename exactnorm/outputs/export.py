"""Normalization parameters out: exact JSON, float64 ``.npz``, ONNX and PyTorch (SPEC §1).

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

Formats
-------
* ``json`` (:func:`export_json`, format ``exactnorm.batchnorm`` version 1): exact ``"p/q"``;
  :func:`load_exported_json` recovers the certified network exactly.
* ``npz`` (:func:`export_npz`): float64 ``V{j}``, ``gamma{j}`` (γ̂), ``beta{j}`` (β̂),
  ``running_mean{j}``, ``running_var{j}``, ``input{j}``, ``skip{j}_{s}``; forward pass
  :func:`evaluate_npz_export`.
* ``onnx`` (:func:`onnx_model`): per layer ``MatMul(h_in, Vᵀ)``, then ``BatchNormalization``
  (inference mode; opset 15) or ``Mul(γ)`` + ``Add(β)`` (``normalization="muladd"``, one rounding
  fewer), ``Relu``, and ``MatMul(h_s, P_sᵀ)`` + ``Add`` per skip, in float64 (default) or
  float32; around it the source model's interface — its input name, dtype and shape (a
  leading ``Cast`` to the arithmetic dtype), its output names and classifier head
  (:mod:`exactnorm.outputs.onnx_interface`) — or input ``x`` ``(N, d_0)`` and output ``y``
  without a recorded source. Built with the ``onnx`` helper API (no torch).
* ``torch`` (:func:`torch_state_dict`, :func:`torch_module`): a state dict for the module layout
  below, written with ``torch.save`` (needs torch).

PyTorch module layout (``exactnorm.frozen_bn`` v1)
--------------------------------------------------
``ExactnormFrozenNet(blocks=nn.ModuleList([Block_1, …, Block_L]))`` where block ``j`` has::

    linear = nn.Linear(width(input_node), width_j, bias=False)   # V_j, frozen
    norm   = nn.BatchNorm1d(width_j, eps=eps)   # weight γ̂, bias β̂, running_mean μ,
                                                # running_var s² − eps; eval mode
    act    = nn.ReLU() or nn.Identity()
    skips  = nn.ModuleDict({"<s>": nn.Linear(width(s), width_j, bias=False), …})   # P_{j,s}
    buffer input_node (int64 scalar)

and ``forward(x)``: ``nodes = [x]``; for each block
``h = act(norm(linear(nodes[input_node]))) + Σ_s skips[s](nodes[s])``; ``nodes.append(h)``;
return ``nodes[-1]``. State-dict keys: ``blocks.{j-1}.linear.weight``,
``blocks.{j-1}.norm.{weight,bias,running_mean,running_var,num_batches_tracked}``,
``blocks.{j-1}.skips.{s}.weight``, ``blocks.{j-1}.input_node``. Only normalization parameters
would ever be trained; :func:`torch_module` sets ``requires_grad = False`` on every ``Linear``.

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

import io
import os
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from exactnorm.certificate import needs_kind_reader
from exactnorm.errors import InputError, require_extra
from exactnorm.exact.files import atomic_write_bytes, npz_bytes
from exactnorm.outputs.batchnorm import (
    DEFAULT_EPS,
    EXPORT_FORMAT,
    EXPORT_VERSION,
    FLOAT_DTYPES,
    FLOAT_WARNING,
    ONNX_OPSET,
    certificate_network,
    float_layers,
    from_batchnorm,
    to_batchnorm,
)
from exactnorm.outputs.export_cnn import onnx_model_cnn, torch_state_dict_cnn
from exactnorm.outputs.export_json import (
    evaluate_exported_json,
    export_bytes,
    export_document,
    export_json,
    load_exported_json,
)
from exactnorm.outputs.export_onnx import onnx_model, verify_onnx
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
    "torch_state_dict",
    "torch_module",
    "evaluate_state_dict",
    "render_export",
    "export_certificate",
    # the JSON and ONNX formats (their own modules), importable from here too
    "export_document",
    "export_json",
    "load_exported_json",
    "evaluate_exported_json",
    "onnx_model",
    "verify_onnx",
]


def export_npz(cert_doc: dict[str, Any], path: str | os.PathLike[str], mean: Any = 0,
               scale: Any = 1, *, eps: float = DEFAULT_EPS) -> str:
    """Write float64 BatchNorm-style arrays (atomic) and return the not-certified warning.

    Per layer ``j``: ``V{j}`` (frozen weight, ``(out, in)``), ``gamma{j}`` = γ̂, ``beta{j}`` = β̂,
    ``running_mean{j}`` = μ, ``running_var{j}`` = s² − eps, ``input{j}`` (node read), and
    ``skip{j}_{s}`` for a skip from node ``s``; plus ``activations``, ``checkpoints`` and
    ``WARNING_floats_not_certified``. Refuses ``s² ≤ eps`` (the variance would not be positive).
    """
    data = _npz_bytes(cert_doc, mean, scale, eps)
    atomic_write_bytes(path, lambda fh: fh.write(data))
    return FLOAT_WARNING


def _npz_bytes(cert_doc: dict[str, Any], mean: Any, scale: Any, eps: float,
               progress: ProgressHook | None = None) -> bytes:
    net, layers = float_layers(cert_doc, mean, scale, eps, progress=progress)
    arrays: dict[str, np.ndarray] = {}
    for j, (layer, p) in enumerate(zip(net.layers, layers), 1):
        arrays[f"V{j}"] = p["V"]
        arrays[f"gamma{j}"] = p["gamma_hat"]
        arrays[f"beta{j}"] = p["beta_hat"]
        arrays[f"running_mean{j}"] = p["mean"]
        arrays[f"running_var{j}"] = p["var"]
        arrays[f"input{j}"] = np.array(layer.input, dtype=np.int64)
        for source, P in p["skips"]:
            arrays[f"skip{j}_{source}"] = P
    arrays["activations"] = np.array([layer.activation for layer in net.layers])
    arrays["checkpoints"] = np.array(net.checkpoints, dtype=np.int64)
    arrays["eps"] = np.array(eps, dtype=np.float64)
    arrays["WARNING_floats_not_certified"] = np.array([FLOAT_WARNING])
    return npz_bytes(arrays)  # fixed zip metadata: same certificate, same bytes


# --------------------------------------------------------------------------- float frameworks

#: ``--format`` values of :func:`export_certificate`.
EXPORT_FORMATS = ("json", "npz", "onnx", "torch")

def _batchnorm_eval(v: np.ndarray, gamma_hat: np.ndarray, beta_hat: np.ndarray,
                    mean: np.ndarray, var: np.ndarray, eps: float) -> np.ndarray:
    """A framework BatchNorm in eval mode: ``γ̂ (v − μ)/sqrt(var + eps) + β̂``."""
    return gamma_hat * (v - mean) / np.sqrt(var + eps) + beta_hat


def evaluate_npz_export(path: str | os.PathLike[str], X: np.ndarray) -> np.ndarray:
    """float64 forward pass of an :func:`export_npz` file, as a framework's BatchNorm in eval mode
    computes it (rounded; for comparison only).

    Parameters
    ----------
    path
        An :func:`export_npz` file.
    X
        Inputs, ``(n, d_0)``.

    Returns
    -------
    numpy.ndarray
        ``(n, d_L)`` float64 outputs.
    """
    with np.load(path, allow_pickle=False) as z:
        acts = [str(a) for a in z["activations"]]
        eps = float(z["eps"])
        nodes = [np.asarray(X, dtype=np.float64)]
        for j in range(1, len(acts) + 1):
            v = nodes[int(z[f"input{j}"])] @ z[f"V{j}"].T
            u = _batchnorm_eval(v, z[f"gamma{j}"], z[f"beta{j}"], z[f"running_mean{j}"],
                                z[f"running_var{j}"], eps)
            h = np.maximum(u, 0.0) if acts[j - 1] == "relu" else u
            for key in z.files:
                if key.startswith(f"skip{j}_"):
                    h = h + nodes[int(key.split("_")[1])] @ z[key].T
            nodes.append(h)
    return nodes[-1]


def torch_state_dict(cert_doc: dict[str, Any], *, mean: Any = 0, scale: Any = 1,
                     eps: float = DEFAULT_EPS,
                     progress: ProgressHook | None = None) -> dict[str, np.ndarray]:
    """The state dict of the documented PyTorch layout as float64 numpy arrays (no torch needed).

    Parameters
    ----------
    cert_doc
        A certificate document.
    mean, scale, eps
        Frozen BatchNorm statistics (``running_var = s² − eps``).

    Returns
    -------
    dict
        ``blocks.{k}.…`` keys of the module docstring; ``torch.from_numpy`` of each value loads
        into :func:`torch_module` (``strict=True``).
    """
    net, layers = float_layers(cert_doc, mean, scale, eps, progress=progress)
    state: dict[str, np.ndarray] = {}
    for k, (layer, p) in enumerate(zip(net.layers, layers)):
        pre = f"blocks.{k}."
        state[pre + "linear.weight"] = p["V"]
        state[pre + "norm.weight"] = p["gamma_hat"]
        state[pre + "norm.bias"] = p["beta_hat"]
        state[pre + "norm.running_mean"] = p["mean"]
        state[pre + "norm.running_var"] = p["var"]
        state[pre + "norm.num_batches_tracked"] = np.array(0, dtype=np.int64)
        for source, P in p["skips"]:
            state[pre + f"skips.{source}.weight"] = P
        state[pre + "input_node"] = np.array(layer.input, dtype=np.int64)
    return state


def evaluate_state_dict(state: dict[str, Any], activations: Sequence[str], X: np.ndarray, *,
                        eps: float = DEFAULT_EPS) -> np.ndarray:
    """float64 forward pass of :func:`torch_state_dict` arrays (the documented layout, in numpy).

    Parameters
    ----------
    state
        The state dict (numpy arrays or tensors converted with ``.numpy()``).
    activations
        ``relu``/``identity`` per block (the state dict has no activations).
    X
        Inputs ``(n, d_0)``.
    eps
        The BatchNorm ``eps`` the state dict was written with.

    Returns
    -------
    numpy.ndarray
        Outputs ``(n, d_L)``; rounded, for comparison only.
    """
    nodes = [np.asarray(X, dtype=np.float64)]
    for k, act in enumerate(activations):
        pre = f"blocks.{k}."
        v = nodes[int(state[pre + "input_node"])] @ np.asarray(state[pre + "linear.weight"]).T
        norm = {n: np.asarray(state[pre + f"norm.{n}"])
                for n in ("weight", "bias", "running_mean", "running_var")}
        u = _batchnorm_eval(v, norm["weight"], norm["bias"], norm["running_mean"],
                            norm["running_var"], eps)
        h = np.maximum(u, 0.0) if act == "relu" else u
        for key in sorted(state):
            if key.startswith(pre + "skips."):
                source = int(key[len(pre + "skips."):].split(".")[0])
                h = h + nodes[source] @ np.asarray(state[key]).T
        nodes.append(h)
    return nodes[-1]


def torch_module(cert_doc: dict[str, Any], *, mean: Any = 0, scale: Any = 1,
                 eps: float = DEFAULT_EPS, dtype: str = "float64") -> Any:
    """The certificate's network as a ``torch.nn.Module`` of the documented layout, eval mode.

    Parameters
    ----------
    cert_doc
        A certificate document.
    mean, scale, eps
        Frozen BatchNorm statistics.
    dtype
        ``"float32"`` or ``"float64"``.

    Returns
    -------
    torch.nn.Module
        With :func:`torch_state_dict` loaded (``strict=True``), frozen ``Linear`` layers
        (``requires_grad = False``) and ``BatchNorm1d`` in eval mode.

    Raises
    ------
    MissingExtraError
        Without torch.
    """
    torch = require_extra("torch", "the PyTorch export")
    if dtype not in FLOAT_DTYPES:
        raise InputError(f"dtype must be one of {tuple(FLOAT_DTYPES)}, got {dtype!r}")
    net = certificate_network(cert_doc)
    nn = torch.nn
    dims = net.node_dims

    class Block(nn.Module):  # type: ignore[misc, name-defined]
        def __init__(self, input_node: int, width: int, relu: bool,
                     sources: Sequence[int]) -> None:
            super().__init__()
            self.linear = nn.Linear(dims[input_node], width, bias=False)
            self.norm = nn.BatchNorm1d(width, eps=eps)
            self.act = nn.ReLU() if relu else nn.Identity()
            self.skips = nn.ModuleDict({str(s): nn.Linear(dims[s], width, bias=False)
                                        for s in sources})
            self.register_buffer("input_node", torch.tensor(input_node, dtype=torch.int64))

        def forward(self, nodes: list[Any]) -> Any:
            h = self.act(self.norm(self.linear(nodes[int(self.input_node)])))
            for s, skip in self.skips.items():
                h = h + skip(nodes[int(s)])
            return h

    class ExactnormFrozenNet(nn.Module):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.ModuleList([
                Block(layer.input, layer.width, layer.activation == "relu",
                      [sk.source for sk in layer.skips]) for layer in net.layers])

        def forward(self, x: Any) -> Any:
            nodes = [x]
            for block in self.blocks:
                nodes.append(block(nodes))
            return nodes[-1]

    # float64 before loading: load_state_dict copies into the parameters' dtype, and a float32
    # module would round the float64 state once more than the requested dtype needs
    module = ExactnormFrozenNet().to(torch.float64)
    state = {k: torch.from_numpy(np.array(v, order="C"))
             for k, v in torch_state_dict(cert_doc, mean=mean, scale=scale, eps=eps).items()}
    module.load_state_dict(state, strict=True)
    module = module.to(torch.float32 if dtype == "float32" else torch.float64)
    for name, param in module.named_parameters():
        if ".linear." in name or ".skips." in name:
            param.requires_grad_(False)
    # train(False) is eval mode: BatchNorm1d uses the frozen running statistics
    return module.train(False)


def render_export(cert_doc: dict[str, Any], format: str, *, mean: Any = 0, scale: Any = 1,
                  eps: float | None = None, dtype: str = "float32",
                  normalization: str = "batchnorm",
                  progress: ProgressHook | None = None,
                  interface: str = "source") -> tuple[bytes, str | None]:
    """The bytes of one export format and its not-certified warning (``None`` for JSON).

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
        raise InputError(f"unknown export format {format!r}; expected one of {EXPORT_FORMATS}")
    if needs_kind_reader(cert_doc):
        return _render_conv(cert_doc, format, mean=mean, scale=scale, eps=eps, dtype=dtype,
                            normalization=normalization, interface=interface)
    if format == "json":
        if eps is not None:
            raise InputError("eps applies to the float formats only (the JSON export stores s)")
        return export_bytes(export_document(cert_doc, mean, scale, progress=progress)), None
    e = DEFAULT_EPS if eps is None else eps
    if format == "npz":
        return _npz_bytes(cert_doc, mean, scale, e, progress), FLOAT_WARNING
    if format == "onnx":
        model = onnx_model(cert_doc, dtype=dtype, normalization=normalization, mean=mean,
                           scale=scale, eps=e, progress=progress, interface=interface)
        return model.SerializeToString(), FLOAT_WARNING
    state = torch_state_dict(cert_doc, mean=mean, scale=scale, eps=e, progress=progress)
    return _torch_bytes(state), FLOAT_WARNING


def _torch_bytes(state: dict[str, np.ndarray]) -> bytes:
    """``torch.save`` of a state dict given as NumPy arrays (needs torch)."""
    torch = require_extra("torch", "the PyTorch export")
    buf = io.BytesIO()
    torch.save({k: torch.from_numpy(np.array(v, order="C")) for k, v in state.items()}, buf)
    return buf.getvalue()


def _render_conv(cert_doc: dict[str, Any], format: str, *, mean: Any, scale: Any,
                 eps: float | None, dtype: str, normalization: str,
                 interface: str = "source") -> tuple[bytes, str | None]:
    """A convolutional certificate for a framework: ONNX (``Conv``/im2col + BatchNormalization),
    or the ``nn.Sequential`` parameters of :func:`~exactnorm.outputs.export_cnn.
    torch_state_dict_cnn` as npz (with an ``architecture`` array of layer strings) or a torch
    state dict. Their BatchNorm statistics are fixed (mean 0, variance 1, eps 0), so γ and β
    are the tuned values themselves."""
    if format == "json":
        raise InputError("the json export of a convolutional certificate is not available: the "
                         "certificate itself holds the exact γ and β (docs/convolutions.md); use "
                         "onnx, npz or torch for a framework", parameter="format")
    if mean not in (0, "0") or scale not in (1, "1") or eps not in (None, 0):
        raise InputError("a convolutional export uses mean 0, scale 1 and eps 0 (its γ and β "
                         "are the tuned values)", parameter="mean")
    if normalization != "batchnorm":
        raise InputError("a convolutional export writes BatchNormalization only",
                         parameter="normalization")
    if format == "onnx":
        return (onnx_model_cnn(cert_doc, dtype=dtype, interface=interface).SerializeToString(),
                FLOAT_WARNING)
    state, architecture = torch_state_dict_cnn(cert_doc)
    if format == "npz":
        arrays = dict(state, architecture=np.array(architecture))
        return npz_bytes(arrays), FLOAT_WARNING
    return _torch_bytes(state), f"{FLOAT_WARNING}; nn.Sequential layout: {', '.join(architecture)}"


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
