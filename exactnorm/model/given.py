"""A *given* frozen ReLU network whose normalization is to be re-tuned (``exactnorm capacity``).

Contract
--------
A :class:`GivenNetwork` is a chain of linear layers ``z_j = V_j h_{j−1} + c_j``, each optionally
followed by a ``BatchNormalization`` with frozen statistics, then ``relu`` or ``identity``. Every
stored float converts to the dyadic rational it denotes (as in :mod:`exactnorm.model.interop`),
so ``V_j`` is the stored matrix exactly. The **tuned parameters** are one scale and one shift per
neuron after each linear layer: the network with tuning ``(γ, β)`` computes

    ``h_j = σ_j(γ_j ⊙ (V_j h_{j−1}) + β_j)``,

and nothing else changes. Where the layer has a ``BatchNormalization``, what is tuned is that
layer's own scale and bias ``(γ_bn, β_bn)``; its frozen running statistics ``μ, σ²`` (and ``ε``),
together with the linear bias ``c``, only reparametrize them:

    ``γ_bn (V h + c − μ)/√(σ² + ε) + β_bn = γ ⊙ (V h) + β`` with ``γ = γ_bn/√(σ² + ε)`` and
    ``β = β_bn + γ ⊙ (c − μ)``,

a bijection of ``(γ_bn, β_bn)`` onto ``(γ, β)`` (``√(σ² + ε) > 0``). So a target is reachable by
re-tuning the BatchNorms if and only if it is reachable by ``(γ, β)``, and the exact ``(γ, β)``
exactnorm finds correspond to ``γ_bn = γ√(σ² + ε)``, ``β_bn = β − γ ⊙ (c − μ)``
(:meth:`GivenNetwork.batchnorm_parameters`; irrational in general, so exported as floats, never
certified). A layer without normalization is tuned as if one were inserted after it (its linear
bias ``c`` is absorbed into ``β``). The network's *own* current function uses
``γ = γ_bn/√(σ² + ε)`` rounded once to float64, as the CNN reader folds BatchNorm
(:func:`exactnorm.model.onnx_common.fold_batchnorm`), and ``γ = 1``, ``β = c`` without one.

Readers: :func:`given_from_onnx` (the one ONNX walker of targets, with ``BatchNormalization``
kept after a linear layer instead of folded: ``Gemm``, ``MatMul`` + ``Add``, element-wise affine
maps that fold into ``V`` and ``c``, ``Relu``, ``Flatten``/``Reshape``/``Identity``/``Cast``, a
classifier head), :func:`given_from_state_dict` (an ``nn.Sequential`` of ``Linear`` and
``BatchNorm1d``; the activations are declared), :func:`given_from_sklearn` (a fitted MLP or a
``Pipeline`` of scalers and an MLP; scalers fold into ``V_1``), :func:`given_from_target` (any
target network read by exactnorm), and :func:`load_given` for files.

>>> from exactnorm.model.network import TargetNetwork
>>> g = TargetNetwork.from_lists([[[1, 2], [3, 4]], [[1, -1]]], [[0, 1], [2]],
...                              lower=[0, 0], upper=[1, 1])
>>> n = given_from_target(g, "demo")
>>> n.widths, n.activations
((2, 2, 1), ('relu', 'identity'))
>>> n.retuned([[2, 0], [1]], [[1, 1], [0]], [0, 0], [1, 1]).evaluate([1, 1])
(6,)
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from flint import fmpq, fmpq_mat

from exactnorm.errors import InputError, LimitExceededError, ShapeError, require_extra
from exactnorm.exact.files import npz_array, npz_header, read_npz_archive
from exactnorm.exact.linalg import to_fmpq_mat
from exactnorm.model.interop.chain import Chain, Constants, exact_matrix, exact_vector
from exactnorm.model.interop.onnx import read_onnx
from exactnorm.model.interop.sklearn import sklearn_mlp, target_from_sklearn
from exactnorm.model.interop.torch import parse_activations
from exactnorm.model.network import DEFAULT_MAX_WIDTH, TargetNetwork
from exactnorm.model.onnx_common import node_label
from exactnorm.model.operators.dense import dense_layers
from exactnorm.model.targets import load_target, npz_activations

__all__ = ["BatchNorm", "GivenLayer", "GivenNetwork", "given_from_onnx",
           "given_from_state_dict", "given_from_sklearn", "given_from_target", "load_given"]


@dataclass(frozen=True)
class BatchNorm:
    """A frozen ``BatchNormalization``: its own scale and bias and its running statistics, as
    stored (float64 arrays)."""

    gamma: np.ndarray
    beta: np.ndarray
    mean: np.ndarray
    var: np.ndarray
    eps: float

    def scale(self) -> list[Fraction]:
        """``γ_bn/√(σ² + ε)`` rounded once to float64, converted exactly."""
        s = self.gamma / np.sqrt(self.var + np.float64(self.eps))
        return exact_vector(s, "batch-normalization scale")


@dataclass(frozen=True)
class GivenLayer:
    """``σ(BN(V h + c))``: ``weight`` ``V`` (``fmpq_mat``), ``bias`` ``c``, optional ``norm``,
    and where ``V`` came from (``source``, the ``why`` of a fixed matrix)."""

    weight: fmpq_mat
    bias: tuple[fmpq, ...]
    norm: BatchNorm | None
    activation: str
    source: str


@dataclass(frozen=True)
class GivenNetwork:
    """A chain of :class:`GivenLayer` (module docstring); ``name`` says where it came from."""

    layers: tuple[GivenLayer, ...]
    name: str

    def __post_init__(self) -> None:
        if not self.layers:
            raise ShapeError("the given network has no linear layers")
        width = self.layers[0].weight.ncols()
        for j, layer in enumerate(self.layers, 1):
            if layer.weight.ncols() != width:
                raise ShapeError(f"linear layer {j} of {self.name} reads {layer.weight.ncols()} "
                                 f"values, the layer before gives {width}")
            if len(layer.bias) != layer.weight.nrows():
                raise ShapeError(f"linear layer {j} of {self.name}: bias of length "
                                 f"{len(layer.bias)} for {layer.weight.nrows()} rows")
            if layer.norm is not None and len(layer.norm.gamma) != layer.weight.nrows():
                raise ShapeError(f"linear layer {j} of {self.name}: a BatchNormalization of "
                                 f"{len(layer.norm.gamma)} channels after {layer.weight.nrows()} "
                                 f"rows")
            width = layer.weight.nrows()

    def __repr__(self) -> str:
        return (f"GivenNetwork({self.name!r}, widths={'-'.join(map(str, self.widths))}, "
                f"batchnorm={[j for j, layer in enumerate(self.layers, 1) if layer.norm]})")

    @property
    def widths(self) -> tuple[int, ...]:
        return (self.layers[0].weight.ncols(),) + tuple(layer.weight.nrows()
                                                       for layer in self.layers)

    @property
    def activations(self) -> tuple[str, ...]:
        return tuple(layer.activation for layer in self.layers)

    @property
    def weights(self) -> list[fmpq_mat]:
        return [layer.weight for layer in self.layers]

    def own_tuning(self) -> tuple[list[list[fmpq]], list[list[fmpq]]]:
        """The ``(γ, β)`` of the network as stored (module docstring)."""
        gammas, betas = [], []
        for layer in self.layers:
            n = layer.weight.nrows()
            if layer.norm is None:
                gammas.append([fmpq(1)] * n)
                betas.append(list(layer.bias))
                continue
            s = [fmpq(x.numerator, x.denominator) for x in layer.norm.scale()]
            mu = exact_vector(layer.norm.mean, "batch-normalization mean")
            be = exact_vector(layer.norm.beta, "batch-normalization shift")
            gammas.append(s)
            betas.append([fmpq(t.numerator, t.denominator) + g * (c - fmpq(m.numerator,
                                                                          m.denominator))
                          for g, c, m, t in zip(s, layer.bias, mu, be)])
        return gammas, betas

    def retuned(self, gammas: Sequence[Sequence[Any]], betas: Sequence[Sequence[Any]],
                lower: Sequence[Any], upper: Sequence[Any]) -> TargetNetwork:
        """The function of this network with tuning ``(γ, β)`` as a target on the box: layer
        ``j`` is ``σ_j(diag(γ_j) V_j a + β_j)`` exactly."""
        if len(gammas) != len(self.layers) or len(betas) != len(self.layers):
            raise ShapeError(f"{len(gammas)}/{len(betas)} γ/β vectors for "
                             f"{len(self.layers)} layers")
        weights, biases = [], []
        for j, (layer, g, b) in enumerate(zip(self.layers, gammas, betas), 1):
            rows = layer.weight.tolist()
            if len(g) != len(rows) or len(b) != len(rows):
                raise ShapeError(f"layer {j}: γ/β of length {len(g)}/{len(b)} for "
                                 f"{len(rows)} neurons")
            gq = to_fmpq_mat([list(g)], f"γ of layer {j}").entries()
            weights.append([[gk * v for v in row] for gk, row in zip(gq, rows)])
            biases.append(list(b))
        return TargetNetwork.from_lists(weights, biases, list(self.activations), lower=lower,
                                        upper=upper)

    def as_target(self, lower: Sequence[Any], upper: Sequence[Any]) -> TargetNetwork:
        """The network's own function on the box (BatchNorm folded, one float64 rounding of
        its scale)."""
        return self.retuned(*self.own_tuning(), lower, upper)

    def batchnorm_parameters(self, j: int, gamma: Sequence[Any],
                             beta: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
        """Float ``(γ_bn, β_bn)`` of layer ``j`` (from 1) that realize the exact ``(γ, β)``:
        ``γ_bn = γ√(σ² + ε)``, ``β_bn = β − γ(c − μ)``; without a BatchNormalization, the
        ``(γ, β)`` of one inserted with mean 0, variance 1, ε 0. Floats: not certified."""
        layer = self.layers[j - 1]
        g = np.array([float(x) for x in gamma])
        b = np.array([float(x) for x in beta])
        if layer.norm is None:
            return g, b
        c = np.array([float(x) for x in layer.bias])
        s = np.sqrt(layer.norm.var + np.float64(layer.norm.eps))
        return g * s, b - g * (c - layer.norm.mean)


def _layer(W: list[list[Fraction]], c: list[Fraction], source: str, max_width: int,
           norm: BatchNorm | None = None, activation: str = "identity") -> GivenLayer:
    if not W or not W[0]:
        raise ShapeError(f"{source}: an empty weight matrix")
    if max(len(W), len(W[0])) > max_width:
        raise LimitExceededError(f"{source} has shape {len(W)}×{len(W[0])}, above the width "
                                 f"limit {max_width} (raise it with --max-width)")
    return GivenLayer(to_fmpq_mat(W, source), tuple(fmpq(x.numerator, x.denominator) for x in c),
                      norm, activation, source)


def given_from_target(target: TargetNetwork, name: str) -> GivenNetwork:
    """A network read by exactnorm's target readers, as a given network: ``V_j = W_j``,
    ``c_j = b_j``, no normalization."""
    layers = tuple(GivenLayer(layer.weight, tuple(layer.bias), None, layer.activation,
                              f"{name}: layer {j} weight")
                   for j, layer in enumerate(dense_layers(target.layers, "a given network"), 1))
    return GivenNetwork(layers, name)


def given_from_sklearn(model: Any, name: str | None = None) -> GivenNetwork:
    """A fitted scikit-learn ``MLPClassifier``/``MLPRegressor`` (relu), or a ``Pipeline`` of
    ``StandardScaler``/``MinMaxScaler`` steps and such an MLP (the scalers fold exactly into
    ``V_1`` and ``c_1``, as for targets)."""
    label = name or f"scikit-learn {type(model).__name__}"
    steps = getattr(model, "steps", None)
    mlp = steps[-1][1] if steps else model
    weights, _ = sklearn_mlp(mlp)
    d = len(weights[0][0])
    # the target reader folds the scalers; the box does not matter for the weights
    g = target_from_sklearn(model, [0] * d, [0] * d)
    layers = tuple(GivenLayer(layer.weight, tuple(layer.bias), None, layer.activation,
                              f"{label}: coefs_[{j - 1}] (transposed"
                              f"{', scalers folded in' if steps and j == 1 else ''})")
                   for j, layer in enumerate(dense_layers(g.layers, "a given network"), 1))
    return GivenNetwork(layers, label)


def _keep_batchnorm(chain: Chain, node: Any, attrs: dict[str, Any], consts: Constants) -> None:
    """The walker's hook for ``BatchNormalization``: kept as the tuned normalization of the
    linear layer it directly follows (module docstring), not folded."""
    last = chain.layers[-1] if chain.layers else None
    if last is None or not last.linear or last.norm is not None or chain.pending is not None:
        raise InputError(f"{node_label(node)}: a BatchNormalization must directly follow a "
                         f"linear layer")
    if len(node.output) > 1 and any(node.output[1:]):
        raise InputError(f"{node_label(node)}: only the inference form (one output) is read")
    g, be, mu, var = (np.asarray(consts.get(node, k), dtype=np.float64).reshape(-1)
                      for k in (1, 2, 3, 4))
    last.norm = BatchNorm(g, be, mu, var, float(attrs.get("epsilon", 1e-5)))


def given_from_onnx(model: Any, *, max_width: int = DEFAULT_MAX_WIDTH) -> GivenNetwork:
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
    layers = tuple(GivenLayer(t.weight, tuple(t.bias), raw.norm, t.activation,
                              f"{name}: {raw.label} weight")
                   for t, raw in zip(targets, chain.layers))
    return GivenNetwork(layers, name)


def given_from_state_dict(arrays: Mapping[str, Any], activations: str | Sequence[str] | None,
                          name: str = "state dict", *,
                          max_width: int = DEFAULT_MAX_WIDTH) -> GivenNetwork:
    """An ``nn.Sequential`` state dict of ``Linear`` and ``BatchNorm1d`` modules (``"<i>.weight"``
    2-D for a ``Linear``; ``"<i>.weight"``, ``bias``, ``running_mean``, ``running_var`` for a
    ``BatchNorm1d`` directly after one, ``ε = 10⁻⁵`` as PyTorch's default: a state dict does not
    store it, and it only reparametrizes the tuning). ``activations``: one of ``relu``/
    ``identity`` per ``Linear`` (a state dict does not record them)."""
    modules: dict[int, dict[str, Any]] = {}
    for key, value in arrays.items():
        if key in ("lower", "upper", "activations"):
            continue
        idx, _, what = key.partition(".")
        if not idx.isdigit() or what not in ("weight", "bias", "running_mean", "running_var",
                                             "num_batches_tracked"):
            raise InputError(f"state dict key {key!r} is not a parameter of an nn.Sequential of "
                             f"Linear and BatchNorm1d modules")
        modules.setdefault(int(idx), {})[what] = value
    linear = [i for i in sorted(modules) if np.asarray(modules[i].get("weight")).ndim == 2]
    if activations is None:
        raise InputError("a state dict does not record its activations; declare one of "
                         "relu/identity per Linear layer (--activations relu,identity)")
    acts = parse_activations(activations, len(linear))
    layers: list[GivenLayer] = []
    for i in sorted(modules):
        m = modules[i]
        if "weight" not in m or "bias" not in m:
            raise InputError(f"state dict module {i} has no weight or bias")
        if np.asarray(m["weight"]).ndim == 2:
            layers.append(_layer(exact_matrix(m["weight"], f"{i}.weight"),
                                 exact_vector(m["bias"], f"{i}.bias"),
                                 f"{name}: {i}.weight", max_width,
                                 activation=acts[len(layers)]))
            continue
        if "running_mean" not in m or "running_var" not in m or not layers \
                or layers[-1].norm is not None:
            raise InputError(f"state dict module {i}: a BatchNorm1d (weight, bias, running_mean, "
                             f"running_var) must directly follow a Linear module")
        g, be, mu, var = (np.asarray(m[k], dtype=np.float64).reshape(-1)
                          for k in ("weight", "bias", "running_mean", "running_var"))
        norm = BatchNorm(g, be, mu, var, 1e-5)
        last = layers[-1]
        layers[-1] = GivenLayer(last.weight, last.bias, norm, last.activation, last.source)
    return GivenNetwork(tuple(layers), name)


def _npz_arrays(data: Any, max_width: int) -> dict[str, Any]:
    return {k: npz_array(data, k, max_width, matrix=k.endswith(".weight")
                         and len(_header_shape(data, k)) == 2)
            for k in data.files if k not in ("lower", "upper", "activations")}


def _header_shape(data: Any, key: str) -> tuple[int, ...]:
    return tuple(npz_header(data, key)[0])


def load_given(path: str | os.PathLike[str], *, activations: str | Sequence[str] | None = None,
               max_width: int = DEFAULT_MAX_WIDTH) -> GivenNetwork:
    """A given network from a file: ``.onnx`` (:func:`given_from_onnx`), an ``nn.Sequential``
    state dict in ``.npz`` or ``.pt`` (:func:`given_from_state_dict`, with ``activations``), or
    any other target file exactnorm reads (``.json``, ``W1, b1`` ``.npz``)."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"no such network file: {p}")
    suffix = p.suffix.lower()
    if suffix == ".onnx":
        if activations is not None:
            raise InputError(f"--activations applies to state dicts; {p} records its "
                             f"activations itself")
        return given_from_onnx(p, max_width=max_width)
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
        return given_from_state_dict(arrays, activations, str(p), max_width=max_width)
    if suffix == ".npz":
        names = read_npz_archive(p, lambda data: list(data.files))
        if "W1" in names:
            return read_npz_archive(p, lambda data: _w_b_network(data, p, activations,
                                                                 max_width))
        arrays = read_npz_archive(p, lambda data: _npz_arrays(data, max_width))
        return given_from_state_dict(arrays, activations, str(p), max_width=max_width)
    if suffix == ".json":
        if activations is not None:
            raise InputError(f"--activations applies to state dicts; {p} records its "
                             f"activations itself")
        return given_from_target(load_target(p, max_width=max_width), str(p))
    raise InputError(f"{p}: a given network is an .onnx model, an nn.Sequential state dict "
                     f"(.npz/.pt), a W1, b1, … .npz or a JSON target file")


def _w_b_network(data: Any, p: Path, activations: str | Sequence[str] | None,
                 max_width: int) -> GivenNetwork:
    """``W1, b1, …, WL, bL`` arrays (the target ``.npz`` format) as a given network; the
    activations from the file's ``activations`` array, the argument, or relu…relu, identity."""
    count = 0
    while f"W{count + 1}" in data.files:
        count += 1
    file_acts = npz_activations(data, p, count)
    if file_acts is not None and activations is not None:
        raise InputError(f"{p} declares its activations and --activations was given too")
    acts = parse_activations(file_acts or activations or
                             ["relu"] * (count - 1) + ["identity"], count)
    layers = []
    for j in range(1, count + 1):
        W = npz_array(data, f"W{j}", max_width, matrix=True)
        b = npz_array(data, f"b{j}", max_width, matrix=False)
        layers.append(_layer(exact_matrix(W, f"W{j}"), exact_vector(b, f"b{j}"),
                             f"{p}: W{j}", max_width, activation=acts[j - 1]))
    return GivenNetwork(tuple(layers), str(p))
