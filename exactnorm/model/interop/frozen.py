"""Given networks in: a trained model read as a :class:`~exactnorm.model.network.FrozenNetwork`
whose normalization is to be re-tuned (``exactnorm capacity``).

Contract
--------
Each reader returns a frozen network of dense layers: frozen layer ``j`` has the stored weight
``V_j`` exactly (every float is the dyadic rational it denotes), declared ``{"kind": "fixed",
"why": "given network <name>: <where> (exact)"}``, its activation, and as γ, β the stored
network's own tuning (:mod:`exactnorm.model.batchnorm`): ``γ = γ_bn/√(σ² + ε)`` rounded once to
float64 and ``β = β_bn + γ(c − μ)`` after a ``BatchNormalization``, kept as the layer's
:class:`~exactnorm.model.batchnorm.BatchNorm` record in ``normalizations``; ``γ = 1``, ``β = c``
without one. The reader of a file keeps what the file says about its wiring: a target network's
layer that reads another node reads it here too, and its skip is the checkpoint's residual
(:func:`frozen_from_target`), so nothing a file states is dropped; a verb that decides chains
only (``capacity``) says so (:func:`~exactnorm.model.batchnorm.given_chain`).

Readers: :func:`frozen_from_onnx` (the one ONNX walker, with ``BatchNormalization`` after a
linear layer kept instead of folded), :func:`frozen_from_state_dict` (an ``nn.Sequential`` of
``Linear`` and ``BatchNorm1d``; the activations are declared), :func:`frozen_from_sklearn` (a
fitted MLP or a ``Pipeline`` of scalers and an MLP; scalers fold into ``V_1``),
:func:`frozen_from_target` (any dense target network), and :func:`frozen_from_file` for the
model files (the JSON files are read by the one reader of documents, above this layer:
:func:`exactnorm.api.load_frozen`).

>>> from exactnorm.model.network import TargetNetwork
>>> g = TargetNetwork.from_lists([[[1, 2], [3, 4]], [[1, -1]]], [[0, 1], [2]],
...                              lower=[0, 0], upper=[1, 1])
>>> n = frozen_from_target(g, "demo")
>>> n.node_dims, [layer.activation for layer in n.layers]
((2, 2, 1), ['relu', 'identity'])
>>> n.evaluate([1, 1]) == g.evaluate([1, 1])
True
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from flint import fmpq

from exactnorm.errors import InputError, LimitExceededError, ShapeError, require_extra
from exactnorm.exact.files import npz_array, npz_header, read_npz_archive, require_file
from exactnorm.exact.linalg import to_fmpq_mat
from exactnorm.model.batchnorm import BatchNorm
from exactnorm.model.box import Box
from exactnorm.model.interop.chain import Chain, Constants, exact_matrix, exact_vector
from exactnorm.model.interop.onnx import read_onnx
from exactnorm.model.interop.sklearn import target_from_sklearn
from exactnorm.model.interop.torch import parse_activations
from exactnorm.model.layers import FrozenLayer
from exactnorm.model.network import DEFAULT_MAX_WIDTH, FrozenNetwork, TargetNetwork
from exactnorm.model.onnx_common import attributes, node_label
from exactnorm.model.operators.dense import Dense, dense_layers
from exactnorm.model.targets import npz_activations

__all__ = ["fixed", "frozen_from_onnx", "frozen_from_state_dict", "frozen_from_sklearn",
           "frozen_from_target", "frozen_from_file", "GIVEN_SUFFIXES"]

#: model files a given network is read from here (JSON documents are read above this layer)
GIVEN_SUFFIXES = (".onnx", ".npz", ".pt", ".pth")


def fixed(name: str, where: str) -> dict[str, str]:
    """The declaration of a given matrix: fixed, with where it came from."""
    return {"kind": "fixed", "why": f"given network {name}: {where} (exact)"}


def _q(values: Sequence[Fraction]) -> tuple[fmpq, ...]:
    return tuple(fmpq(x.numerator, x.denominator) for x in values)


def _layer(j: int, W: list[list[Fraction]], c: list[Fraction], activation: str,
           norm: BatchNorm | None, name: str, where: str, max_width: int) -> FrozenLayer:
    """Frozen layer ``j`` with the stored ``V = W`` and the stored network's own tuning."""
    if not W or not W[0]:
        raise ShapeError(f"{where}: an empty weight matrix")
    if max(len(W), len(W[0])) > max_width:
        raise LimitExceededError(f"{where} has shape {len(W)}×{len(W[0])}, above the width "
                                 f"limit {max_width} (raise it with --max-width)",
                                 parameter="max_width")
    if len(c) != len(W):
        raise ShapeError(f"{where}: bias of length {len(c)} for {len(W)} rows")
    if norm is None:
        gamma, beta = [Fraction(1)] * len(W), list(c)
    else:
        if norm.width != len(W):
            raise ShapeError(f"{where}: a BatchNormalization of {norm.width} channels after "
                             f"{len(W)} rows")
        gamma, beta = norm.own_tuning()
    return FrozenLayer(j - 1, Dense(to_fmpq_mat(W, where)), _q(gamma), _q(beta), activation,
                       record=fixed(name, where))


def _network(layers: Sequence[FrozenLayer], norms: Sequence[BatchNorm | None],
             name: str) -> FrozenNetwork:
    if not layers:
        raise ShapeError(f"the given network {name} has no linear layers")
    d0 = layers[0].weight.ncols()
    for j, layer in enumerate(layers[1:], 2):
        if layer.weight.ncols() != layers[j - 2].weight.nrows():
            raise ShapeError(f"linear layer {j} of {name} reads {layer.weight.ncols()} values, "
                             f"the layer before gives {layers[j - 2].weight.nrows()}")
    return FrozenNetwork(d0, tuple(layers), (len(layers),), normalizations=tuple(norms),
                         name=name)


def frozen_from_target(target: TargetNetwork, name: str) -> FrozenNetwork:
    """A dense target network read by exactnorm as a given network: ``V_j = W_j``, ``γ = 1``,
    ``β = b_j``, no normalization; the wiring kept (a layer reads the node its target layer
    reads, a target skip is its checkpoint's residual; every layer is a checkpoint)."""
    layers = []
    for j, tl in enumerate(dense_layers(target.layers, "a given network"), 1):
        w = target.wire(j)
        layers.append(FrozenLayer(w.input, tl.weight, (fmpq(1),) * tl.width, tuple(tl.bias),
                                  tl.activation, record=fixed(name, f"layer {j} weight")))
    residuals = tuple((j, target.wire(j).skip) for j in range(1, target.depth + 1)
                      if target.wire(j).skip is not None)
    return FrozenNetwork(target.widths[0], tuple(layers), tuple(range(1, target.depth + 1)),
                         residuals=residuals,  # type: ignore[arg-type]
                         normalizations=(None,) * target.depth, name=name)


def frozen_from_sklearn(model: Any, name: str | None = None) -> FrozenNetwork:
    """A fitted scikit-learn ``MLPClassifier``/``MLPRegressor`` (relu), or a ``Pipeline`` of
    ``StandardScaler``/``MinMaxScaler`` steps and such an MLP (the scalers fold exactly into
    ``V_1`` and ``c_1``, as for targets)."""
    label = name or f"scikit-learn {type(model).__name__}"
    steps = getattr(model, "steps", None)
    # the target reader folds the scalers; the box does not matter for the weights
    g = target_from_sklearn(model, Box.of_cube(0, 0))
    folded = ", scalers folded in" if steps else ""
    layers = [FrozenLayer(j - 1, tl.weight, (fmpq(1),) * tl.width, tuple(tl.bias),
                          tl.activation, record=fixed(label, f"coefs_[{j - 1}] (transposed"
                                                             f"{folded if j == 1 else ''})"))
              for j, tl in enumerate(dense_layers(g.layers, "a given network"), 1)]
    return _network(layers, [None] * len(layers), label)


def _keep_batchnorm(chain: Chain, node: Any, attrs: dict[str, Any], consts: Constants) -> None:
    """The walker's hook for ``BatchNormalization``: kept, exactly, as the tuned normalization of
    the linear layer it directly follows (module docstring), not folded."""
    last = chain.layers[-1] if chain.layers else None
    if last is None or not last.linear or last.norm is not None or chain.pending is not None:
        raise InputError(f"{node_label(node)}: a BatchNormalization must directly follow a "
                         f"linear layer")
    if len(node.output) > 1 and any(node.output[1:]):
        raise InputError(f"{node_label(node)}: only the inference form (one output) is read")
    g, be, mu, var = (exact_vector(consts.get(node, k), f"{node_label(node)} input {k}")
                      for k in (1, 2, 3, 4))
    eps = attributes(node).get("epsilon", 1e-5)  # the attribute is a float32: exactly that
    last.norm = (g, be, mu, var, Fraction(float(eps)))


def frozen_from_onnx(model: Any, *, max_width: int = DEFAULT_MAX_WIDTH) -> FrozenNetwork:
    """An ONNX MLP chain with or without ``BatchNormalization`` after its linear layers
    (module docstring), read by the one ONNX walker (:func:`~exactnorm.model.interop.onnx.
    read_onnx`) with its ``BatchNormalization`` handler replaced by one that keeps the
    statistics; any other operator is refused as for a target, with its op type and node
    name."""
    name = os.fspath(model) if isinstance(model, (str, os.PathLike)) else "ONNX model"
    chain = read_onnx(model, max_width, hooks={("", "BatchNormalization"): _keep_batchnorm},
                      source=False).chain
    targets = dense_layers(chain.finish(), "a given network")
    if chain.wiring() is not None:
        raise InputError(f"{name}: a given network is a chain of layers (one path from the "
                         f"input to the output)")
    layers: list[FrozenLayer] = []
    norms: list[BatchNorm | None] = []
    for j, (tl, raw) in enumerate(zip(targets, chain.layers), 1):
        where = f"{raw.label} weight"
        if raw.norm is None:
            norms.append(None)
            layers.append(FrozenLayer(j - 1, tl.weight, (fmpq(1),) * tl.width, tuple(tl.bias),
                                      tl.activation, record=fixed(name, where)))
            continue
        g, be, mu, var, eps = raw.norm
        bias = [Fraction(int(x.numer()), int(x.denom())) for x in tl.bias]
        norm = BatchNorm(tuple(g), tuple(be), tuple(mu), tuple(var), eps, tuple(bias))
        norms.append(norm)
        rows = [[Fraction(int(x.numer()), int(x.denom())) for x in row]
                for row in tl.weight.tolist()]
        layers.append(_layer(j, rows, bias, tl.activation, norm, name, where, max_width))
    return _network(layers, norms, name)


_STATE_KEYS = ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")


def frozen_from_state_dict(arrays: Mapping[str, Any], activations: str | Sequence[str] | None,
                           name: str = "state dict", *,
                           max_width: int = DEFAULT_MAX_WIDTH) -> FrozenNetwork:
    """An ``nn.Sequential`` state dict of ``Linear`` and ``BatchNorm1d`` modules (``"<i>.weight"``
    2-D for a ``Linear``; ``"<i>.weight"``, ``bias``, ``running_mean``, ``running_var`` for a
    ``BatchNorm1d`` directly after one, ``ε = 10⁻⁵`` as PyTorch's default: a state dict does not
    store it). ``activations``: one of ``relu``/``identity`` per ``Linear`` (a state dict does
    not record them)."""
    modules: dict[int, dict[str, Any]] = {}
    for key, value in arrays.items():
        if key in ("lower", "upper", "activations"):
            continue
        idx, _, what = key.partition(".")
        if not idx.isdigit() or what not in _STATE_KEYS:
            raise InputError(f"state dict key {key!r} is not a parameter of an nn.Sequential of "
                             f"Linear and BatchNorm1d modules")
        modules.setdefault(int(idx), {})[what] = value
    linear = [i for i in sorted(modules) if np.asarray(modules[i].get("weight")).ndim == 2]
    if activations is None:
        raise InputError("a state dict does not record its activations; declare one of "
                         "relu/identity per Linear layer (--activations relu,identity)",
                         parameter="activations")
    acts = parse_activations(activations, len(linear))
    rows: list[tuple[list[list[Fraction]], list[Fraction], str, str]] = []
    norms: list[BatchNorm | None] = []
    for i in sorted(modules):
        m = modules[i]
        if "weight" not in m or "bias" not in m:
            raise InputError(f"state dict module {i} has no weight or bias")
        if np.asarray(m["weight"]).ndim == 2:
            rows.append((exact_matrix(m["weight"], f"{i}.weight"),
                         exact_vector(m["bias"], f"{i}.bias"), acts[len(rows)], f"{i}.weight"))
            norms.append(None)
            continue
        if "running_mean" not in m or "running_var" not in m or not rows \
                or norms[-1] is not None:
            raise InputError(f"state dict module {i}: a BatchNorm1d (weight, bias, running_mean, "
                             f"running_var) must directly follow a Linear module")
        g, be, mu, var = (exact_vector(m[k], f"{i}.{k}")
                          for k in ("weight", "bias", "running_mean", "running_var"))
        norms[-1] = BatchNorm(tuple(g), tuple(be), tuple(mu), tuple(var), Fraction(1e-5),
                              tuple(rows[-1][1]))
    layers = [_layer(j, W, c, act, norm, name, f"{name}: {where}", max_width)
              for j, ((W, c, act, where), norm) in enumerate(zip(rows, norms), 1)]
    return _network(layers, norms, name)


def _w_b_network(data: Any, p: Path, activations: str | Sequence[str] | None,
                 max_width: int) -> FrozenNetwork:
    """``W1, b1, …, WL, bL`` arrays (the target ``.npz`` format) as a given network; the
    activations from the file's ``activations`` array, the argument, or relu…relu, identity."""
    count = 0
    while f"W{count + 1}" in data.files:
        count += 1
    file_acts = npz_activations(data, p, count)
    if file_acts is not None and activations is not None:
        raise InputError(f"{p} declares its activations and --activations was given too",
                         parameter="activations")
    acts = parse_activations(file_acts or activations or
                             ["relu"] * (count - 1) + ["identity"], count)
    layers = []
    for j in range(1, count + 1):
        if f"b{j}" not in data.files:
            raise InputError(f"{p} has W{j} but no b{j}")
        W = npz_array(data, f"W{j}", max_width, matrix=True)
        b = npz_array(data, f"b{j}", max_width, matrix=False)
        layers.append(_layer(j, exact_matrix(W, f"W{j}"), exact_vector(b, f"b{j}"),
                             acts[j - 1], None, str(p), f"W{j}", max_width))
    return _network(layers, [None] * count, str(p))


def _npz_arrays(data: Any, max_width: int) -> dict[str, Any]:
    return {k: npz_array(data, k, max_width,
                         matrix=k.endswith(".weight") and len(npz_header(data, k)[0]) == 2)
            for k in data.files if k not in ("lower", "upper", "activations")}


def frozen_from_file(path: str | os.PathLike[str], *,
                     activations: str | Sequence[str] | None = None,
                     max_width: int = DEFAULT_MAX_WIDTH) -> FrozenNetwork:
    """A given network from a model file: ``.onnx`` (:func:`frozen_from_onnx`), an
    ``nn.Sequential`` state dict in ``.npz`` or ``.pt`` (:func:`frozen_from_state_dict`, with
    ``activations``), or a ``W1, b1, …`` ``.npz``."""
    p = require_file(path, "network file")
    suffix = p.suffix.lower()
    if suffix == ".onnx":
        if activations is not None:
            raise InputError(f"--activations applies to state dicts; {p} records its "
                             f"activations itself", parameter="activations")
        return frozen_from_onnx(p, max_width=max_width)
    if suffix in (".pt", ".pth"):
        torch = require_extra("torch", f"reading {p.name}")
        try:
            obj = torch.load(p, map_location="cpu", weights_only=True)
        except Exception as exc:  # torch raises many kinds for foreign files
            raise InputError(f"{p} is not a weights-only state dict: "
                             f"{(str(exc).splitlines() or [''])[0][:200]}") from None
        if not isinstance(obj, Mapping):
            raise InputError(f"{p} holds a {type(obj).__name__}, not a state dict")
        arrays = {str(k): v.detach().cpu().float().numpy() if v.dtype == torch.bfloat16
                  else v.detach().cpu().numpy() for k, v in obj.items()
                  if isinstance(v, torch.Tensor)}
        return frozen_from_state_dict(arrays, activations, str(p), max_width=max_width)
    if suffix == ".npz":
        names = read_npz_archive(p, lambda data: list(data.files))
        if "W1" in names:
            return read_npz_archive(p, lambda data: _w_b_network(data, p, activations,
                                                                 max_width))
        arrays = read_npz_archive(p, lambda data: _npz_arrays(data, max_width))
        return frozen_from_state_dict(arrays, activations, str(p), max_width=max_width)
    raise InputError(f"{p}: a given network is an .onnx model, an nn.Sequential state dict "
                     f"(.npz/.pt), a W1, b1, … .npz, or a JSON target file or certificate")
