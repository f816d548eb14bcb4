"""ONNX pieces shared by the one ONNX walker (:mod:`~exactnorm.model.interop.onnx`), its per-kind
handlers and the given-network reader: loading a file with a precise message, the graph's
constants, a table of element-wise affine operators that fold exactly into a linear layer, the
classifier head after the certified logits, the refusal of everything else by name with what
would work instead, and the description of the model's interface that ``certify`` records in
``provenance.source`` so that an export can stand in for the model.

Contract
--------
* :func:`load_model` returns an ``onnx.ModelProto`` or raises a one-line
  :class:`~exactnorm.errors.InputError` saying what the file is instead: missing, a folder,
  empty, truncated or not ONNX, or a model without a graph.
* :func:`affine_of` reads an element-wise affine operator ``v ↦ D ⊙ v + c`` with exact rational
  ``D`` and ``c`` (length 1: broadcast) — ``Add``/``Sub``/``Mul``/``Div`` with one stored
  constant, ``BatchNormalization`` in inference form and ``ai.onnx.ml`` ``Scaler`` — or returns
  ``None`` for any other node.
* :func:`classifier_head` splits off what follows the logits: a ``Softmax``, ``LogSoftmax`` or
  ``Sigmoid`` and after it only post-processing (``ArgMax``, ``ZipMap``, ``Cast``, …; the table
  :data:`POST_OPS`). The logits are certified; the head is recorded as data (nodes, constants,
  opsets, output types) and re-created unchanged by the ONNX export.
* :func:`refuse` is the one refusal: it names the node (op type, domain, name) and says what
  would work instead (:data:`HINTS`).

Correctness argument
--------------------
``Add(v, c)`` is ``D = 1``; ``Sub(v, c)`` is ``D = 1, −c``; ``Sub(c, v)`` is ``D = −1, c``;
``Mul(v, c)`` is ``D = c``; ``Div(v, c)`` is ``D = 1/c`` (exact for rational ``c ≠ 0``);
``Scaler`` computes ``(v − offset)·scale``, so ``D = scale, c = −offset·scale``;
``BatchNormalization`` computes ``γ (v − μ)/√(var + ε) + β``, so ``D = s = γ/√(var + ε)`` and
``c = β − s μ``: the square root is the one rounding (``s`` is its float64 value, converted
exactly), as for a ``Conv`` followed by a batch normalization. After a linear layer
``σ = identity``: ``D ⊙ (W a + b) + c = (diag(D) W) a + (D ⊙ b + c)``; before one:
``W (D ⊙ v + c) + b = (W diag(D)) v + (W c + b)``. Both are exact identities of rational
matrices, so a folded target is the stored model's function, nothing rounded but ``s``.
A head is a fixed map of the logits: equal logits give equal probabilities and labels, so a
certificate about the logits is a certificate about the classifier's decisions too.

>>> from fractions import Fraction
>>> compose(([Fraction(2)], [Fraction(1)]), ([Fraction(3)], [Fraction(-1)]))
([Fraction(6, 1)], [Fraction(2, 1)])
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from flint import fmpq, fmpq_mat

from exactnorm.errors import InputError, ShapeError, require_extra
from exactnorm.exact.files import require_file
from exactnorm.exact.linalg import to_fmpq_mat

__all__ = ["external_data_files", "exact_values", "ONNX_ML", "HEAD_OPS", "POST_OPS",
           "AFFINE_OPS", "HINTS", "load_model", "is_token_model",
           "constants", "attributes", "node_label", "refuse", "affine_of", "compose",
           "fold_after", "fold_before", "fold_batchnorm", "classifier_head", "interface",
           "head_note", "DTYPES"]

#: the domain of scikit-learn's operators (skl2onnx)
ONNX_ML = "ai.onnx.ml"
#: a classifier's output activation: the logits before it are certified, the head is kept
HEAD_OPS = ("Softmax", "LogSoftmax", "Sigmoid")
#: what may follow a head: post-processing of probabilities into labels and maps, no weights
POST_OPS = frozenset({("", op) for op in (
    "Softmax", "LogSoftmax", "Sigmoid", "ArgMax", "Cast", "Reshape", "Identity", "Flatten",
    "Squeeze", "Unsqueeze", "Concat", "Sub", "Gather")} | {
    (ONNX_ML, "ZipMap"), (ONNX_ML, "ArrayFeatureExtractor")})
#: element-wise affine operators folded exactly into a neighbouring linear layer (module doc)
AFFINE_OPS = ("Add", "Sub", "Mul", "Div", "BatchNormalization", "Scaler")
#: the recorded head: at most this many nodes and constant entries (descriptive data)
MAX_HEAD_NODES = 64
MAX_HEAD_ENTRIES = 100_000

#: what would work instead, by op type (the refusal appends it)
HINTS = {
    "Tanh": "tanh is not piecewise linear; exactnorm certifies ReLU networks (retrain with Relu)",
    "Sigmoid": "a sigmoid is kept only as the final classifier head (the logits before it are "
               "certified); inside the network it is not piecewise linear",
    "Gelu": "GELU is not piecewise linear; retrain with Relu",
    "Elu": "ELU is not piecewise linear; retrain with Relu",
    "Selu": "SELU is not piecewise linear; retrain with Relu",
    "LeakyRelu": "only Relu (slope 0) is supported",
    "PRelu": "only Relu (slope 0) is supported",
    "Clip": "only Relu is supported (a clip has two kinks)",
    "MaxPool": "max pooling is not affine on a box; AveragePool is supported (retrain with "
               "average pooling)",
    "Dropout": "export the model in eval mode (torch.onnx.export of model.eval()) so that "
               "dropout is removed",
    "Softmax": "a softmax is kept only as the final classifier head; inside the network it "
               "is not piecewise linear",
    "LogSoftmax": "a log-softmax is kept only as the final classifier head",
    "Normalizer": "it divides each sample by its norm, which is not affine; remove it from the "
                  "pipeline",
}
_ML_HINT = ("for a scikit-learn model, load it in Python and call "
            "exactnorm.model.interop.target_from_sklearn(model, lower, upper) (scalers fold "
            "exactly)")

#: ONNX element types that a recorded interface may name
DTYPES = {1: "float32", 2: "uint8", 3: "int8", 5: "int16", 6: "int32", 7: "int64", 8: "string",
          9: "bool", 10: "float16", 11: "float64", 16: "bfloat16"}


def load_model(model: Any) -> Any:
    """An ``onnx.ModelProto`` from a path (or the proto itself), with a one-line error that says
    what the file is instead (module doc)."""
    onnx = require_extra("onnx", "reading an ONNX model")
    if not isinstance(model, (str, os.PathLike)):
        if not hasattr(model, "graph"):
            raise InputError(f"expected an onnx.ModelProto or a path, got "
                             f"{type(model).__name__}")
        return model
    path = Path(model)
    require_file(path, "ONNX model")
    try:
        # external data (PyTorch writes large weights to MODEL.onnx.data) is read below, after
        # its files are named and found: a missing one is not a "truncated" model
        proto = onnx.load(os.fspath(path), load_external_data=False)
    except Exception as exc:  # protobuf DecodeError and friends
        raise InputError(f"{path} is truncated or not an ONNX model (the protobuf reader "
                         f"says {type(exc).__name__})") from None
    if not proto.HasField("graph") or not (proto.graph.node or proto.graph.input):
        raise InputError(f"{path} is not an ONNX model: it has no graph (an empty or foreign "
                         f"protobuf file)")
    _load_external_data(onnx, proto, path)
    return proto


def is_token_model(model: Any) -> bool:
    """Whether the ONNX model reads integer token ids (the transformer reader's input): its one
    graph input that is not an initializer has an integer element type."""
    graph = load_model(model).graph
    inits = {t.name for t in graph.initializer}
    inputs = [i for i in graph.input if i.name not in inits]
    return len(inputs) == 1 and inputs[0].type.tensor_type.elem_type in (6, 7)


def external_data_files(proto: Any) -> list[str]:
    """The external data files the tensors of a model name (``location`` entries), in order."""
    from onnx.external_data_helper import _get_all_tensors, uses_external_data

    found: dict[str, None] = {}
    for t in _get_all_tensors(proto):
        if uses_external_data(t):
            entry = {e.key: e.value for e in t.external_data}
            found[entry.get("location", "")] = None
    return list(found)


def _load_external_data(onnx: Any, proto: Any, path: Path) -> None:
    """Read the tensors a model keeps in external files beside it, each file named when it is
    missing or points outside the model's folder (a model is data: it names no other path)."""
    files = external_data_files(proto)
    if not files:
        return
    folder = path.resolve().parent
    for name in files:
        where = Path(name)
        if not name or where.is_absolute() or ".." in where.parts:
            raise InputError(f"{path} keeps weights in external data {name!r}, outside the "
                             f"model's folder: refused (only files beside the model are read)")
        data = folder / where
        if not data.is_file():
            raise InputError(f"{path} keeps its weights in the external data file {data.name}, "
                             f"which is missing: copy {data.name} into {folder} beside the "
                             f"model (exporters write it next to the .onnx file)")
    try:
        onnx.load_external_data_for_model(proto, os.fspath(folder))
    except Exception as exc:  # a short or damaged data file
        detail = str(exc).splitlines()[0][:160] if str(exc) else ""
        raise InputError(f"{path}: its external data ({', '.join(files)}) cannot be read: "
                         f"{type(exc).__name__}: {detail}") from None


def attributes(node: Any) -> dict[str, Any]:
    """A node's attributes as Python values."""
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


#: operators on integer tensors that a constant subgraph may use (the pads TorchScript computes
#: for ``F.pad``); evaluated when every input is a stored integer constant
INTEGER_CONSTANT_OPS = ("ConstantOfShape", "Concat", "Reshape", "Slice", "Transpose", "Cast",
                        "Unsqueeze", "Squeeze")
#: at most this many entries in an integer constant computed from constants (shapes, pads)
MAX_INTEGER_CONSTANT = 4096


def _integer_constant(node: Any, consts: dict[str, Any]) -> Any | None:
    """The output of ``node`` computed from stored integer constants (a shape computation),
    exactly (integers), or ``None`` when it is not one."""
    ins = [i for i in node.input if i]
    if node.op_type not in INTEGER_CONSTANT_OPS or node.domain not in ("", "ai.onnx") \
            or not ins or any(i not in consts for i in ins) or len(node.output) != 1:
        return None
    # imported only for such a node: the reference evaluator takes longer to import than a
    # model without one takes to read
    from onnx import numpy_helper
    from onnx.reference import ReferenceEvaluator

    values = {i: array(consts[i]) for i in ins}
    if any(v.dtype.kind not in "iu" or v.size > MAX_INTEGER_CONSTANT for v in values.values()):
        return None
    if node.op_type == "ConstantOfShape" and int(np.prod(values[ins[0]])) > MAX_INTEGER_CONSTANT:
        return None
    result: Any = ReferenceEvaluator(node).run(None, values)
    out = np.asarray(result[0])
    if out.dtype.kind not in "iu" or out.size > MAX_INTEGER_CONSTANT:
        return None
    return numpy_helper.from_array(out, node.output[0])


def constants(graph: Any) -> dict[str, Any]:
    """Name → ``TensorProto`` of every constant: initializers, ``Constant`` nodes,
    ``Identity`` chains of constants (PyTorch writes weights behind them) and small integer
    computations from them (:data:`INTEGER_CONSTANT_OPS`: the pads TorchScript computes for an
    option-A shortcut's ``F.pad``; integers, so exact)."""
    consts = {t.name: t for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.output and "value" in attributes(node):
            consts[node.output[0]] = attributes(node)["value"]
        elif node.op_type == "Identity" and node.input and node.input[0] in consts:
            consts[node.output[0]] = consts[node.input[0]]
        else:
            value = _integer_constant(node, consts)
            if value is not None:
                consts[node.output[0]] = value
    return consts


def array(t: Any) -> np.ndarray:
    from onnx import numpy_helper

    return np.asarray(numpy_helper.to_array(t))


def node_label(node: Any) -> str:
    """``ONNX node 'fc1' (Gemm)``; the domain is named when it is not the default one."""
    op = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain} {node.op_type}"
    return f"ONNX node {node.name or '(unnamed)'!r} ({op})"


def refuse(node: Any, allowed: Sequence[str], what: str = "an exact target") -> InputError:
    """The refusal of an unsupported node: its name and op, why, and what would work instead."""
    hint = HINTS.get(node.op_type)
    if node.domain == ONNX_ML:
        hint = f"{hint}; {_ML_HINT}" if hint else f"{_ML_HINT}; of {ONNX_ML}, only Scaler folds"
    text = f"{node_label(node)} is not supported"
    if hint:
        text += f": {hint}"
    return InputError(f"{text}; {what} may use {', '.join(allowed)}")


# --------------------------------------------------------------------------- affine operators

Affine = tuple[list[Fraction], list[Fraction]]


def exact_values(values: Any, what: str) -> list[Fraction]:
    arr = np.asarray(values)
    if np.issubdtype(arr.dtype, np.floating) and arr.dtype.itemsize > 8:
        raise InputError(f"{what} has dtype {arr.dtype}; save it as float64 or integers")
    if arr.dtype.kind not in "iuf":
        raise InputError(f"{what} has dtype {arr.dtype}, not a number type")
    flat = arr.reshape(-1)
    if np.issubdtype(arr.dtype, np.floating) and not np.all(np.isfinite(flat)):
        raise InputError(f"{what} has a NaN or infinite entry")
    return [Fraction(int(x)) if arr.dtype.kind in "iu" else Fraction(float(x))
            for x in flat.tolist()]


def _broadcast(values: list[Fraction], n: int, what: str) -> list[Fraction]:
    if len(values) == 1:
        return values * n
    if len(values) != n:
        raise ShapeError(f"{what} has {len(values)} entries for {n} values")
    return values


def _per_feature(t: Any, n: int | None, channels: bool, what: str) -> list[Fraction]:
    """A constant operand as one value per feature (or per channel): a scalar, or a shape whose
    only non-1 dimension is the feature (channel) axis."""
    arr = array(t)
    if arr.size > 1:
        # NumPy/ONNX broadcasting aligns the last axes: features are the last axis of (N, d),
        # channels the third from last of (N, C, H, W)
        axis = arr.ndim - (3 if channels else 1)
        if axis < 0 or any(d != 1 for k, d in enumerate(arr.shape) if k != axis):
            raise ShapeError(f"{what} has shape {list(arr.shape)}: only a scalar or one value "
                             f"per {'channel, shape (C, 1, 1),' if channels else 'feature'} "
                             f"folds into a linear layer")
    vals = exact_values(arr, what)
    return vals if n is None else _broadcast(vals, n, what)


def affine_of(node: Any, consts: dict[str, Any], n: int | None, *,
              channels: bool = False) -> Affine | None:
    """The element-wise affine map ``v ↦ D ⊙ v + c`` of ``node`` on a value of ``n`` features
    (channels when ``channels``), exactly, or ``None`` when the node is not one of
    :data:`AFFINE_OPS` (module doc). ``n = None`` keeps length-1 operands unbroadcast."""
    label = node_label(node)
    op = node.op_type
    one = Fraction(1)
    if node.domain == ONNX_ML and op == "Scaler":
        a = attributes(node)
        scale = exact_values(np.asarray(a.get("scale", [1.0]), dtype=np.float32), f"{label} scale")
        offset = exact_values(np.asarray(a.get("offset", [0.0]), dtype=np.float32),
                        f"{label} offset")
        if n is not None:
            scale, offset = (_broadcast(scale, n, f"{label} scale"),
                             _broadcast(offset, n, f"{label} offset"))
        elif len(scale) != len(offset):
            scale, offset = _broadcast(scale, len(offset), f"{label} scale"), \
                _broadcast(offset, len(scale), f"{label} offset")
        return scale, [-o * s for o, s in zip(offset, scale)]
    if node.domain not in ("", "ai.onnx"):
        return None
    if op == "BatchNormalization":
        if len(node.output) > 1 and any(node.output[1:]):
            raise InputError(f"{label}: only the inference form (one output) folds")
        missing = [k for k in (1, 2, 3, 4) if len(node.input) <= k or node.input[k] not in consts]
        if missing:
            raise InputError(f"{label}: scale, bias, mean and variance must be stored "
                             f"constants")
        gamma, beta, mean, var = (array(consts[node.input[k]]) for k in (1, 2, 3, 4))
        eps = float(attributes(node).get("epsilon", 1e-5))
        s = exact_values(gamma.astype(np.float64)
                         / np.sqrt(var.astype(np.float64) + np.float64(eps)), f"{label} scale")
        mu, be = exact_values(mean, f"{label} mean"), exact_values(beta, f"{label} bias")
        if not len(s) == len(mu) == len(be):
            raise ShapeError(f"{label}: scale, bias, mean and variance differ in length")
        if n is not None:
            s, mu, be = (_broadcast(v, n, label) for v in (s, mu, be))
        return s, [b - k * m for k, m, b in zip(s, mu, be)]
    if op not in ("Add", "Sub", "Mul", "Div") or len(node.input) != 2:
        return None
    stored = [i in consts for i in node.input]
    if stored.count(True) != 1:
        return None  # two data operands (a residual Add) or two constants: not a fold
    k = stored.index(True)
    c = _per_feature(consts[node.input[k]], n, channels, f"{label} constant")
    ones = [one] * len(c)
    if op == "Add":
        return ones, c
    if op == "Sub":
        return (ones, [-x for x in c]) if k == 1 else ([-one] * len(c), c)
    if op == "Mul":
        return c, [Fraction(0)] * len(c)
    if k == 0:
        raise InputError(f"{label} divides a constant by the data, which is not affine")
    if any(x == 0 for x in c):
        raise InputError(f"{label} divides by zero")
    return [1 / x for x in c], [Fraction(0)] * len(c)


def compose(first: Affine, second: Affine) -> Affine:
    """``second ∘ first`` of two element-wise affine maps (broadcasting length 1)."""
    (d1, c1), (d2, c2) = first, second
    n = max(len(d1), len(d2))
    d1, c1, d2, c2 = (_broadcast(v, n, "affine map") for v in (d1, c1, d2, c2))
    return [b * a for a, b in zip(d1, d2)], [b * x + y for x, b, y in zip(c1, d2, c2)]


def _q(x: Fraction) -> fmpq:
    return fmpq(x.numerator, x.denominator)


def fold_after(weight: fmpq_mat | Sequence[Sequence[Any]], bias: list[Fraction],
               affine: Affine) -> tuple[fmpq_mat, list[Fraction]]:
    """``D ⊙ (W a + b) + c`` as one layer: ``(diag(D) W, D ⊙ b + c)`` (module doc); ``W`` an
    exact matrix (or its rows), each row scaled in FLINT.

    >>> F = Fraction
    >>> W, b = fold_after([[F(1), F(2)]], [F(1)], ([F(3)], [F(-1)]))
    >>> W.tolist(), b
    ([[3, 6]], [Fraction(2, 1)])
    """
    W = to_fmpq_mat(weight, "weight")
    D, c = (_broadcast(v, W.nrows(), "affine map") for v in affine)
    cols, entries = W.ncols(), W.entries()
    scaled: list[fmpq] = []
    for r, d in enumerate(D):
        dq = _q(d)
        scaled.extend(w * dq for w in entries[r * cols:(r + 1) * cols])
    return (fmpq_mat(W.nrows(), cols, scaled) if scaled else W,
            [d * b + x for d, b, x in zip(D, bias, c)])


def fold_before(weight: fmpq_mat | Sequence[Sequence[Any]], bias: list[Fraction],
                affine: Affine) -> tuple[fmpq_mat, list[Fraction]]:
    """``W (D ⊙ v + c) + b`` as one layer: ``(W diag(D), W c + b)`` (module doc); ``W`` an exact
    matrix (or its rows), its columns scaled and ``W c`` one product in FLINT.

    >>> F = Fraction
    >>> W, b = fold_before([[F(1), F(2)]], [F(1)], ([F(3), F(1)], [F(-1), F(0)]))
    >>> W.tolist(), b
    ([[3, 2]], [Fraction(0, 1)])
    """
    W = to_fmpq_mat(weight, "weight")
    D, c = (_broadcast(v, W.ncols(), "affine map") for v in affine)
    if W.nrows() == 0 or W.ncols() == 0:
        return W, list(bias)
    dq = [_q(d) for d in D] * W.nrows()
    shifted = (W * fmpq_mat(W.ncols(), 1, [_q(x) for x in c])).entries()
    return (fmpq_mat(W.nrows(), W.ncols(), [w * d for w, d in zip(W.entries(), dq)]),
            [b + Fraction(int(x.p), int(x.q)) for b, x in zip(bias, shifted)])


def fold_batchnorm(weight: fmpq_mat | Sequence[Sequence[Any]], bias: Sequence[Fraction],
                   gamma: Any, beta: Any, mean: Any, var: Any, eps: float
                   ) -> tuple[fmpq_mat, list[Fraction]]:
    """Fold an eval-mode batch normalization into the rows of ``weight``: ``W' = s·W``,
    ``b' = s·(b − μ) + β`` with ``s = γ/√(var + ε)`` rounded once to float64 (module doc).

    >>> W, b = fold_batchnorm([[Fraction(1), Fraction(2)]], [Fraction(1)], [2.0], [0.5], [1.0],
    ...                       [3.0], 1.0)
    >>> W.tolist(), b
    ([[1, 2]], [Fraction(1, 2)])
    """
    g = np.asarray(gamma, dtype=np.float64).reshape(-1)
    v = np.asarray(var, dtype=np.float64).reshape(-1)
    W = to_fmpq_mat(weight, "weight")
    scale = exact_values(g / np.sqrt(v + np.float64(eps)), "batch-normalization scale")
    mu = exact_values(np.asarray(mean, dtype=np.float64), "batch-normalization mean")
    be = exact_values(np.asarray(beta, dtype=np.float64), "batch-normalization shift")
    if not len(scale) == len(mu) == len(be) == W.nrows():
        raise ShapeError(f"batch normalization has {len(scale)} channels, the layer before it "
                         f"{W.nrows()}")
    return fold_after(W, list(bias), (scale, [t - s * m for s, m, t in zip(scale, mu, be)]))


# --------------------------------------------------------------------------- the head


def classifier_head(graph: Any, start: int, logits: str, consts: dict[str, Any],
                    allowed: Sequence[str]) -> list[Any]:
    """The nodes of ``graph`` from index ``start`` on (the head activation reading ``logits``
    and the post-processing after it), checked: each is in :data:`POST_OPS`, reads only the
    logits, earlier head values and constants, and every graph output comes from them.

    Raises
    ------
    InputError
        The head activation itself, named, when something other than post-processing follows
        it (it is then inside the network, where it is not piecewise linear); a node that
        reads another value; a graph output the head does not produce.
    """
    head = graph.node[start]
    known = {logits}
    nodes = []
    for node in graph.node[start:]:
        if node.output and all(o in consts for o in node.output if o):
            continue  # a Constant (recorded with the head's constants when used)
        if (node.domain if node.domain != "ai.onnx" else "", node.op_type) not in POST_OPS:
            exc = refuse(head, allowed)
            raise InputError(f"{exc} ({node_label(node)} follows it; only post-processing "
                             f"such as ArgMax or ZipMap may follow a head)")
        for i in node.input:
            if i and i not in known and i not in consts:
                raise InputError(f"{node_label(node)} reads {i!r}, which is neither the logits "
                                 f"{logits!r} nor a value of the classifier head")
        known.update(o for o in node.output if o)
        nodes.append(node)
    if len(nodes) > MAX_HEAD_NODES:
        raise InputError(f"the classifier head after {logits!r} has {len(nodes)} nodes; at "
                         f"most {MAX_HEAD_NODES} are recorded")
    for out in graph.output:
        if out.name not in known:
            raise InputError(f"the ONNX graph output {out.name!r} is not computed from the "
                             f"logits {logits!r}")
    return nodes


def _type_json(t: Any) -> dict[str, Any]:
    """An ONNX ``TypeProto`` (tensor, sequence, map) as JSON data, exact and small."""
    if t.HasField("tensor_type"):
        elem = t.tensor_type.elem_type
        if elem not in DTYPES:
            raise InputError(f"ONNX element type {elem} is not recorded")
        dims = t.tensor_type.shape.dim if t.tensor_type.HasField("shape") else None
        out: dict[str, Any] = {"tensor": DTYPES[elem]}
        if dims is not None:
            out["shape"] = [int(d.dim_value) if d.HasField("dim_value") else None for d in dims]
        return out
    if t.HasField("sequence_type"):
        return {"sequence": _type_json(t.sequence_type.elem_type)}
    if t.HasField("map_type"):
        key = t.map_type.key_type
        if key not in DTYPES:
            raise InputError(f"ONNX map key type {key} is not recorded")
        return {"map": [DTYPES[key], _type_json(t.map_type.value_type)]}
    raise InputError("an ONNX output of an unsupported type (tensor, sequence and map are "
                     "recorded)")


def _number(x: Any) -> Any:
    """A constant's or attribute's number as exact JSON data (a float as ``"p/q"``)."""
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    f = Fraction(float(x))
    return str(f) if f.denominator != 1 else int(f)


def _attribute_json(value: Any) -> Any:
    from onnx import TensorProto

    if isinstance(value, TensorProto):
        return {"tensor": _constant_json(value.name or "value", value)}
    if isinstance(value, bytes):
        return {"string": value.decode("utf-8", "replace")}
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, bytes) for v in value):
            return {"strings": [v.decode("utf-8", "replace") for v in value]}
        if all(isinstance(v, int) for v in value):
            return {"ints": [int(v) for v in value]}
        return {"floats": [_number(v) for v in value]}
    if isinstance(value, int):
        return {"int": int(value)}
    if isinstance(value, float):
        return {"float": _number(value)}
    raise InputError(f"an attribute of type {type(value).__name__} is not recorded")


def _constant_json(name: str, t: Any) -> dict[str, Any]:
    arr = array(t)
    if arr.size > MAX_HEAD_ENTRIES:
        raise InputError(f"the head's constant {name!r} has {arr.size} entries; at most "
                         f"{MAX_HEAD_ENTRIES} are recorded")
    if t.data_type not in DTYPES:
        raise InputError(f"the head's constant {name!r} has ONNX type {t.data_type}")
    flat = arr.reshape(-1).tolist()
    values = ([v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in flat]
              if t.data_type == 8 else [_number(v) for v in flat])
    return {"name": name, "dtype": DTYPES[t.data_type], "dims": [int(d) for d in arr.shape],
            "values": values}


def _node_json(node: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"op": node.op_type, "inputs": list(node.input),
                           "outputs": list(node.output)}
    if node.domain not in ("", "ai.onnx"):
        out["domain"] = node.domain
    if node.name:
        out["name"] = node.name
    attrs = {a: _attribute_json(v) for a, v in attributes(node).items()}
    if attrs:
        out["attributes"] = attrs
    return out


def _elem_of(name: str, graph: Any, consts: dict[str, Any]) -> str | None:
    for info in (*graph.value_info, *graph.output, *graph.input):
        if info.name == name and info.type.HasField("tensor_type"):
            return DTYPES.get(info.type.tensor_type.elem_type)
    return None


def interface(model: Any, data_input: Any, logits: str, head: Sequence[Any],
              consts: dict[str, Any], logits_dtype: str | None) -> dict[str, Any]:
    """What ``certify`` records of the model in ``provenance.source`` (descriptive; the checker
    ignores it; docs/certificate-format.md §0): the input's name, dtype and shape, the certified
    logits' name and dtype, the graph's outputs with their types, and the head's nodes,
    constants and opsets, so that an export takes the same input and gives the same outputs."""
    graph = model.graph
    shape = [int(d.dim_value) if d.HasField("dim_value") else None
             for d in data_input.type.tensor_type.shape.dim] \
        if data_input.type.HasField("tensor_type") else []
    elem = data_input.type.tensor_type.elem_type if data_input.type.HasField("tensor_type") \
        else 0
    source: dict[str, Any] = {
        "format": "onnx",
        "input": {"name": str(data_input.name)[:200], "shape": shape},
        "output": {"name": str(logits)[:200]},
        "outputs": [{"name": o.name, "type": _type_json(o.type)} for o in graph.output],
    }
    if elem in DTYPES:
        source["input"]["dtype"] = DTYPES[elem]
    dtype = logits_dtype or _elem_of(logits, graph, consts)
    if dtype is not None:
        source["output"]["dtype"] = dtype
    if head:
        used = sorted({i for node in head for i in node.input if i in consts})
        opsets = {(o.domain if o.domain != "ai.onnx" else ""): int(o.version)
                  for o in model.opset_import}
        source["head"] = {
            "nodes": [_node_json(n) for n in head],
            "constants": [_constant_json(name, consts[name]) for name in used],
            "opset": {k: v for k, v in sorted(opsets.items())
                      if k == "" or any(n.domain == k for n in head)},
        }
        if sum(math.prod(c["dims"]) for c in source["head"]["constants"]) > MAX_HEAD_ENTRIES:
            raise InputError(f"the classifier head's constants exceed {MAX_HEAD_ENTRIES} "
                             f"entries")
    return source


def head_note(source: dict[str, Any]) -> str | None:
    """The note of a certified head: which logits are certified and what the head computes."""
    head = source.get("head")
    if not head:
        return None
    first = head["nodes"][0]["op"]
    outs = ", ".join(o["name"] for o in source["outputs"])
    return (f"the ONNX graph ends in {first} ({outs}): exactnorm certifies the logits "
            f"{source['output']['name']!r} before it; the probabilities and labels are a fixed "
            f"monotone post-processing of them, kept unchanged in an ONNX export")
