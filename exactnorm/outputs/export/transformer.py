"""The rewritten transformer of an ``exactnorm.transformer`` document as a drop-in ONNX model,
and its exact JSON export (floats are not certified; docs/transformers.md, "Export").

Contract
--------
:func:`transformer_onnx` builds, from the document's architecture (docs/certificate-format.md
§11.1) and each slot's frozen network, a fresh ONNX graph computing the *rewritten* transformer:
the original's graph with every slot's target replaced by the slot's frozen ReLU network with
its tuned ``γ, β`` as ``BatchNormalization`` with frozen statistics (or ``Mul``/``Add``). Per
node ``k`` of the architecture, on every token of every sequence at once (a per-token value is
held flat, ``(B·n, w_k)``, batch-major):

* ``input``: ``e_V(t) ⊕ e_T(p)``: ``Equal`` of the token ids (and of the positions
  ``Range(0, n)``) with ``0 … V−1`` (``0 … T−1``), cast to the arithmetic dtype — exact, and a
  token outside the vocabulary reads a zero row;
* ``slot``: the slot's frozen network exactly as the dense exporter writes it
  (:func:`~exactnorm.outputs.export.onnx.onnx_model` of the slot's certificate with the plain
  interface, spliced in with its tensors renamed ``exactnorm/<slot>/…``): ``MatMul`` by the
  frozen matrices, the normalization, ``Relu``;
* ``layernorm``: ``LayerNormalization`` (axis −1) with the document's ``g, b`` and ``ε``;
* ``attention``: per head, queries, keys and values reshaped to ``(B, n, ·)``, ``MatMul`` of
  queries and transposed keys, ``Mul`` by the scale, the mask (``Where`` of ``−∞`` or of the
  fill value above the diagonal, or ``Add`` of the value there), ``Softmax`` over the keys,
  ``MatMul`` by the values; the heads concatenated in order;
* ``add``: ``Add``.

Around it the source model's interface: its token input (name, integer type, shape with the
batch free) and its logits (name, type, shape) — from the source model file when one is given,
else the names ``provenance.source`` records with ``int64`` tokens and logits in the arithmetic
dtype. The arithmetic-dtype logits are named in the metadata
(:data:`~exactnorm.outputs.onnx_interface.LOGITS_KEY`) for the verification.

Correctness argument
--------------------
Each node is the operation §11.1 defines on the values of the nodes it reads: the one-hot rows
are exactly ``e_V(t_p) ⊕ e_T(p)``; a slot's subgraph is the dense exporter's float copy of the
slot's frozen network, which the certificate proves equal (exactly) to the slot's target on the
box every value it reads lies in; LayerNorm, scores, mask, softmax, weighted sum and add are the
operations of the format. So the model computes, up to the floating-point rounding of each
parameter and operation, the rewritten transformer, which the certificate proves equal to the
original on every sequence. The rounding is not certified; it is measured
(:mod:`exactnorm.outputs.transformer_runs`).

:func:`transformer_json_document` is the exact export: the architecture as the certificate
states it and, per slot, the dense exact export (``exactnorm.batchnorm``) of its certificate.
The npz and torch formats hold one network's arrays and are refused for a transformer, naming
what works (:func:`refuse_format`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from exactnorm.certificate.transformer import transformer_of
from exactnorm.errors import InputError, require_extra
from exactnorm.model.onnx_common import DTYPES, load_model
from exactnorm.model.transformer import Node, Transformer
from exactnorm.outputs.export.batchnorm import DEFAULT_EPS, FLOAT_DTYPES, FLOAT_WARNING
from exactnorm.outputs.export.json import export_document
from exactnorm.outputs.export.onnx import NORMALIZATIONS, onnx_model
from exactnorm.outputs.onnx_interface import BODY_PREFIX, LOGITS_KEY
from exactnorm.outputs.stages import ProgressHook

__all__ = ["TRANSFORMER_OPSET", "TRANSFORMER_EXPORT_FORMAT", "TokenInterface",
           "token_interface", "transformer_onnx", "transformer_json_document", "refuse_format",
           "slot_depths"]

#: ``LayerNormalization`` is an operator from opset 17 on
TRANSFORMER_OPSET = 17
#: the exact export of a transformer document
TRANSFORMER_EXPORT_FORMAT = "exactnorm.batchnorm.transformer"
#: metadata key naming what an export is
KIND_KEY = "exactnorm.export"
_INT64, _INT32 = 7, 6


@dataclass(frozen=True)
class TokenInterface:
    """The export's input and output: names, ONNX element types and shapes (``None`` entries
    are free dimensions; the batch is always free)."""

    input_name: str = "tokens"
    input_elem: int = _INT64
    input_shape: tuple[Any, ...] = ("N", None)
    output_name: str = "logits"
    output_elem: int | None = None  #: ``None``: the arithmetic dtype
    output_shape: tuple[Any, ...] | None = None  #: ``None``: the input's shape, then the width
    from_source: bool = False


def _dims(info: Any) -> list[int | None]:
    return [d.dim_value if d.HasField("dim_value") else None
            for d in info.type.tensor_type.shape.dim]


def _printable(name: Any, what: str) -> str:
    if not isinstance(name, str) or not 0 < len(name) <= 200 or not name.isprintable():
        raise InputError(f"provenance.source: {what} is not a printable name of at most 200 "
                         f"characters")
    return name


def token_interface(tr: Transformer, source: Any = None) -> TokenInterface:
    """The interface of the export (module doc): the names ``provenance.source`` records (the
    defaults ``tokens``/``logits`` without), and with a ``source`` model (path or proto) its
    input's and output's types and shapes — refused when its names are not the recorded ones
    (the certificate was not made from it)."""
    recorded = tr.source if isinstance(tr.source, dict) else {}
    x = _printable((recorded.get("input") or {}).get("name", "tokens"), "the input name")
    y = _printable((recorded.get("output") or {}).get("name", "logits"), "the output name")
    if x == y:
        raise InputError("provenance.source: the input and the output have the same name")
    T = tr.positions or None
    if source is None:
        return TokenInterface(x, _INT64, ("N", T), y)
    graph = load_model(source).graph
    inits = {t.name for t in graph.initializer}
    inputs = [i for i in graph.input if i.name not in inits]
    outputs = list(graph.output)
    if len(inputs) != 1 or inputs[0].name != x or y not in [o.name for o in outputs]:
        ins = ", ".join(i.name for i in inputs)
        raise InputError(f"the source model's input and outputs ({ins} → "
                         f"{', '.join(o.name for o in outputs)}) are not the certificate's "
                         f"({x} → {y}): it is not the model the certificate was made from",
                         parameter="source")
    inp = inputs[0]
    out = next(o for o in outputs if o.name == y)
    in_elem = inp.type.tensor_type.elem_type
    out_elem = out.type.tensor_type.elem_type
    if in_elem not in (_INT64, _INT32):
        raise InputError(f"the source model's input {x!r} has type "
                         f"{DTYPES.get(in_elem, in_elem)}; a transformer reads int64 or int32 "
                         f"token ids", parameter="source")
    if out_elem not in (1, 11):
        raise InputError(f"the source model's output {y!r} has type "
                         f"{DTYPES.get(out_elem, out_elem)}; float32 or float64 logits are "
                         f"written", parameter="source")
    in_dims, out_dims = _dims(inp), _dims(out)
    if len(in_dims) not in (1, 2) or len(out_dims) not in (len(in_dims), len(in_dims) + 1):
        raise InputError(f"the source model's input has shape {in_dims} and its output "
                         f"{out_dims}: a transformer's logits are one row per token",
                         parameter="source")
    in_shape: tuple[Any, ...] = tuple(in_dims) if len(in_dims) == 1 else ("N", in_dims[1])
    out_shape: tuple[Any, ...] = tuple(out_dims)
    if len(in_dims) == 2:
        out_shape = ("N", *out_dims[1:])
    return TokenInterface(x, in_elem, in_shape, y, out_elem, out_shape, True)


class _Graph:
    """The nodes and constants under construction; every name is prefixed ``exactnorm/``."""

    def __init__(self, np_dtype: Any) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.np_dtype = np_dtype
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._names: set[str] = set()
        self._ints: dict[tuple[str, Any, bytes], str] = {}

    def name(self, base: str) -> str:
        name, k = BODY_PREFIX + base, 1
        while name in self._names:
            name, k = f"{BODY_PREFIX}{base}_{k}", k + 1
        self._names.add(name)
        return name

    def const(self, base: str, value: Any, dtype: Any = None) -> str:
        name = self.name(base)
        arr = np.ascontiguousarray(value, dtype=dtype or self.np_dtype)
        self.inits.append(self.numpy_helper.from_array(arr, name))
        return name

    def ints(self, base: str, values: Any) -> str:
        """An int64 constant, written once per name and value."""
        arr = np.asarray(values, dtype=np.int64)
        key = (base, arr.shape, arr.tobytes())
        if key not in self._ints:
            self._ints[key] = self.const(base, arr, np.int64)
        return self._ints[key]

    def node(self, op: str, inputs: list[str], base: str, doc: str = "", **attrs: Any) -> str:
        out = self.name(base)
        n = self.helper.make_node(op, inputs, [out], name=out, **attrs)
        if doc:
            n.doc_string = doc
        self.nodes.append(n)
        return out

    def splice(self, model: Any, prefix: str, x: str, y: str) -> None:
        """The graph of a plain-interface export (input ``x``, output ``y``) with its tensors
        renamed under ``prefix``, reading ``x`` and writing ``y``."""
        io = {"x": x, "y": y}

        def rename(t: str) -> str:
            return io.get(t, prefix + t) if t else t

        for node in model.graph.node:
            n = copy.deepcopy(node)
            n.input[:] = [rename(i) for i in n.input]
            n.output[:] = [rename(o) for o in n.output]
            n.name = prefix + n.name
            self.nodes.append(n)
        for t in model.graph.initializer:
            t2 = copy.deepcopy(t)
            t2.name = prefix + t2.name
            self.inits.append(t2)


def slot_depths(doc: dict[str, Any]) -> dict[str, int]:
    """The number of frozen layers each slot's certificate declares (0 when malformed: its
    reader says why later), for sizing progress before anything is read."""
    slots = doc.get("slots") if isinstance(doc, dict) else None
    out: dict[str, int] = {}
    for name, d in (slots.items() if isinstance(slots, dict) else []):
        layers = (d.get("network") or {}).get("layers") if isinstance(d, dict) else None
        out[name] = len(layers) if isinstance(layers, list) else 0
    return out


def _tokens(g: _Graph, tr: Transformer, face: TokenInterface, need_positions: bool
            ) -> tuple[str, str, str | None]:
    """Node 0 (flat one-hot rows), the ``(B, n)`` shape tensor and the positions ``0 … n−1``."""
    tok = face.input_name
    if face.input_elem != _INT64:
        tok = g.node("Cast", [tok], "tokens_int64", to=_INT64)
    if len(face.input_shape) == 1:
        tok = g.node("Unsqueeze", [tok, g.ints("batch_axis", [0])], "tokens_batch")
    shape_bn = g.node("Shape", [tok], "shape_bn")
    flat = g.node("Reshape", [tok, g.ints("flat_shape", [-1])], "tokens_flat")
    column = g.node("Unsqueeze", [flat, g.ints("column_axis", [1])], "tokens_column")
    parts = [g.node("Cast", [g.node("Equal", [column, g.ints("vocabulary", np.arange(
        tr.vocabulary))], "token_is")], "onehot_tokens", to=_elem(g.np_dtype))]
    positions = None
    if tr.positions or need_positions:
        n = g.node("Gather", [shape_bn, g.ints("length_index", 1)], "length", axis=0)
        positions = g.node("Range", [g.ints("zero", 0), n, g.ints("one", 1)], "positions")
    if tr.positions:
        assert positions is not None
        per_token = g.node("Reshape", [g.node("Expand", [positions, shape_bn], "positions_bn"),
                                       g.ints("flat_shape", [-1])], "positions_flat")
        pcol = g.node("Unsqueeze", [per_token, g.ints("column_axis", [1])], "positions_column")
        parts.append(g.node("Cast", [g.node("Equal", [pcol, g.ints("position_range", np.arange(
            tr.positions))], "position_is")], "onehot_positions", to=_elem(g.np_dtype)))
    x0 = parts[0] if len(parts) == 1 else g.node("Concat", parts, "node0_input", axis=1,
                                                 doc="node 0: e_V(t) ⊕ e_T(p)")
    return x0, shape_bn, positions


def _elem(np_dtype: Any) -> int:
    return 1 if np_dtype == np.float32 else 11


def _attention(g: _Graph, k: int, node: Node, x: str, slot_out: Any, tr: Transformer,
               shape3: str, later: str | None) -> str:
    outs = []
    for h, head in enumerate(node.heads):
        q, key, v = (g.node("Reshape", [slot_out(name, x), shape3], f"node{k}_head{h}_{r}3")
                     for r, name in zip("qkv", (head.q, head.k, head.v)))
        kt = g.node("Transpose", [key], f"node{k}_head{h}_kT", perm=[0, 2, 1])
        scores = g.node("MatMul", [q, kt], f"node{k}_head{h}_scores")
        scores = g.node("Mul", [scores, g.const(f"node{k}_scale", float(node.scale or 0))],
                        f"node{k}_head{h}_scaled")
        mask = node.mask
        if mask == "causal":
            assert later is not None
            scores = g.node("Where", [later, g.const(f"node{k}_minus_inf", -np.inf), scores],
                            f"node{k}_head{h}_masked")
        elif isinstance(mask, tuple):
            assert later is not None
            how, c = mask
            value = g.const(f"node{k}_mask_value", float(c))
            fill = g.node("Add", [scores, value], f"node{k}_head{h}_plus") if how == "add" \
                else value
            scores = g.node("Where", [later, fill, scores], f"node{k}_head{h}_masked")
        p = g.node("Softmax", [scores], f"node{k}_head{h}_weights", axis=-1)
        o = g.node("MatMul", [p, v], f"node{k}_head{h}_out")
        width = tr.slots[head.v].width
        outs.append(g.node("Reshape", [o, g.ints(f"node{k}_head{h}_flat", [-1, width])],
                           f"node{k}_head{h}_flat"))
    return outs[0] if len(outs) == 1 else g.node("Concat", outs, f"node{k}_heads", axis=1)


def transformer_onnx(doc: dict[str, Any], *, dtype: str = "float64",
                     normalization: str = "batchnorm", mean: Any = 0, scale: Any = 1,
                     eps: float = DEFAULT_EPS, source: Any = None,
                     progress: ProgressHook | None = None) -> Any:
    """The rewritten transformer of ``doc`` as an ``onnx.ModelProto`` (module doc; floats, not
    certified).

    Parameters
    ----------
    doc
        An ``exactnorm.transformer`` document (the checker's verdict is the caller's concern).
    dtype, normalization, mean, scale, eps
        As for a dense export (:func:`~exactnorm.outputs.export.onnx.onnx_model`), per slot.
    source
        The model the certificate was made from (path or proto): its interface's types and
        shapes (:func:`token_interface`).
    progress
        ``progress(done, total)`` over the frozen layers of every slot.

    Returns
    -------
    onnx.ModelProto
        Checked with ``onnx.checker``.
    """
    require_extra("onnx", "the ONNX export")
    import onnx
    from onnx import helper

    if dtype not in FLOAT_DTYPES:
        raise InputError(f"dtype must be one of {tuple(FLOAT_DTYPES)}, got {dtype!r}",
                         parameter="dtype")
    if normalization not in NORMALIZATIONS:
        raise InputError(f"normalization must be 'batchnorm' or 'muladd', got {normalization!r}",
                         parameter="normalization")
    tr = transformer_of(doc)
    face = token_interface(tr, source)
    np_dtype = FLOAT_DTYPES[dtype]
    elem = _elem(np_dtype)
    g = _Graph(np_dtype)
    depths = slot_depths(doc)
    total, done = sum(depths.values()), 0
    masked = any(n.op == "attention" and n.mask != "none" for n in tr.nodes)
    x0, shape_bn, positions = _tokens(g, tr, face, masked)
    shape3 = g.node("Concat", [shape_bn, g.ints("free", [-1])], "shape_bn_free", axis=0)
    later = None
    if masked:
        assert positions is not None
        rows = g.node("Unsqueeze", [positions, g.ints("column_axis", [1])], "query_positions")
        later = g.node("Less", [rows, positions], "key_after_query")
    values: list[str] = [x0]

    def slot_out(name: str, x: str) -> str:
        nonlocal done
        base = done

        def hook(d: int, _t: int) -> None:
            if progress is not None:
                progress(base + d, total)

        model = onnx_model(doc["slots"][name], dtype=dtype, normalization=normalization,
                           mean=mean, scale=scale, eps=eps, interface="plain",
                           progress=hook if progress is not None else None)
        y = g.name(f"{name}/y")
        g.splice(model, f"{BODY_PREFIX}{name}/", x, y)
        done += depths.get(name, 0)
        return y

    sources = (tr.source or {}).get("nodes", {}) if isinstance(tr.source, dict) else {}
    for k, node in enumerate(tr.nodes):
        if k == 0:
            continue
        note = f"node {k} ({node.op})" + (f"; the source's tensor {sources[str(k)]}"
                                         if isinstance(sources.get(str(k)), str) else "")
        x = values[node.reads[0]]
        if node.op == "slot":
            out = slot_out(node.slot or "", x)
        elif node.op == "layernorm":
            ln = node.layernorm
            assert ln is not None
            out = g.node("LayerNormalization",
                         [x, g.const(f"node{k}_gain", [float(v) for v in ln.gain]),
                          g.const(f"node{k}_bias", [float(v) for v in ln.bias])],
                         f"node{k}_layernorm", doc=note, axis=-1, epsilon=float(ln.epsilon))
        elif node.op == "attention":
            out = _attention(g, k, node, x, slot_out, tr, shape3, later)
        else:
            out = g.node("Add", [x, values[node.reads[1]]], f"node{k}_add", doc=note)
        values.append(out)
    width = tr.widths()[tr.output]
    flat_out = len(face.output_shape or ()) == len(face.input_shape)
    if flat_out:
        logits = g.node("Identity", [values[tr.output]], "logits")
    else:
        out_shape = g.node("Concat", [g.node("Shape", [face.input_name], "input_shape"),
                                      g.ints("width", [width])], "logits_shape", axis=0)
        logits = g.node("Reshape", [values[tr.output], out_shape], "logits")
    out_elem = face.output_elem or elem
    g.nodes.append(helper.make_node("Cast", [logits], [face.output_name], to=out_elem,
                                    name=BODY_PREFIX + "logits_cast")
                   if out_elem != elem else
                   helper.make_node("Identity", [logits], [face.output_name],
                                    name=BODY_PREFIX + "logits_out"))
    declared = face.output_shape or (*face.input_shape, width)
    inputs = [helper.make_tensor_value_info(face.input_name, face.input_elem,
                                            ["L" if d is None else d for d in face.input_shape])]
    outputs = [helper.make_tensor_value_info(face.output_name, out_elem,
                                             ["L" if d is None else d for d in declared])]
    graph = helper.make_graph(g.nodes, "exactnorm_rewritten_transformer", inputs, outputs,
                              initializer=g.inits)
    imports = [helper.make_opsetid("", TRANSFORMER_OPSET)]
    model = helper.make_model(graph, opset_imports=imports, producer_name="exactnorm")
    model.ir_version = max(8, helper.find_min_ir_version_for(imports))
    model.doc_string = (FLOAT_WARNING + "; the rewritten transformer: every slot is its frozen "
                        "network with tuned normalization")
    helper.set_model_props(model, {LOGITS_KEY: logits, KIND_KEY: "transformer"})
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as exc:  # pragma: no cover - a builder bug
        raise InputError(f"the exported transformer is not valid ONNX: "
                         f"{str(exc).splitlines()[0][:200]}") from None
    if progress is not None:
        progress(total, total)
    return model


def transformer_json_document(doc: dict[str, Any], mean: Any = 0, scale: Any = 1, *,
                              progress: ProgressHook | None = None) -> dict[str, Any]:
    """The exact export (module doc): ``{"format": "exactnorm.batchnorm.transformer",
    "version": 1, "architecture", "slots": {name: exactnorm.batchnorm document}}``; the
    architecture is the certificate's, byte for byte as parsed."""
    transformer_of(doc)  # the architecture and the slots' targets, read by the checker's readers
    depths = slot_depths(doc)
    total, done = sum(depths.values()), 0
    slots: dict[str, Any] = {}
    for name, slot_doc in doc["slots"].items():
        base = done

        def hook(d: int, _t: int, base: int = base) -> None:
            if progress is not None:
                progress(base + d, total)

        slots[name] = export_document(slot_doc, mean, scale,
                                      progress=hook if progress is not None else None)
        done += depths.get(name, 0)
    return {"format": TRANSFORMER_EXPORT_FORMAT, "version": 1,
            "architecture": doc["architecture"], "slots": slots}


def refuse_format(format: str) -> InputError:
    """The refusal of a format that holds one network's arrays (npz, torch)."""
    return InputError(f"a transformer certificate exports as onnx (the rewritten transformer, "
                      f"a drop-in for the source model) or json (exact: the architecture and "
                      f"each slot's BatchNorm parameters); {format} holds one network's arrays "
                      f"and has no place for attention, LayerNorm or softmax", parameter="format")

