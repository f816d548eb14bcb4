"""The interface of an exported ONNX model: the source model's input and outputs around the
frozen network, so that the export stands in for the model it was certified from.

Contract
--------
``certify`` records the source model's interface in ``provenance.source``
(:func:`exactnorm.model.onnx_common.interface`: input name, dtype and shape; the certified
logits' name and dtype; the graph's outputs with their types; a classifier head's nodes,
constants and opsets). :func:`interface_of` reads it back, checked as untrusted data (names,
dtypes, shapes, op types from :data:`~exactnorm.model.onnx_common.POST_OPS`, sizes), and
:func:`assemble` wraps a frozen network's graph (the *body*, input ``x`` and output ``y`` in the
arithmetic dtype) into a model with

* the source's input, cast to the arithmetic dtype (float64 by default) by a leading ``Cast``
  and reshaped when the source took an image and the body reads vectors;
* the body's logits cast back to the source's logits dtype under the source's logits name;
* the source's head nodes unchanged after them, giving the source's outputs (logits,
  probabilities, labels, probability maps) with the source's names and types.

The body's own tensors are renamed ``exactnorm/…`` so that they cannot collide with the source's
names. Without a recorded source (a target from a JSON or ``.npz`` file) the model keeps input
``x`` and output ``y`` in the arithmetic dtype. The internal logits in the arithmetic dtype are
named in the model's metadata (``exactnorm.logits``), where the verification reads them.

Only the frozen network is certified (exactly, by the certificate); the export rounds it once
(floats), and the head is the source's own post-processing, kept as it was.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from exactnorm.errors import InputError
from exactnorm.model.onnx_common import DTYPES, MAX_HEAD_ENTRIES, MAX_HEAD_NODES, POST_OPS

__all__ = ["Interface", "interface_of", "assemble", "source_differences", "LOGITS_KEY",
           "BODY_PREFIX"]

#: metadata key of an exported model naming its logits in the arithmetic dtype
LOGITS_KEY = "exactnorm.logits"
#: prefix of the frozen network's own tensor names in an export with a source interface
BODY_PREFIX = "exactnorm/"
_ELEM = {name: code for code, name in DTYPES.items()}
_NUMPY = {"float32": np.float32, "float64": np.float64, "float16": np.float16,
          "int64": np.int64, "int32": np.int32, "int16": np.int16, "int8": np.int8,
          "uint8": np.uint8, "bool": np.bool_, "string": object}


@dataclass(frozen=True)
class Interface:
    """What an export takes and gives: the source model's, or ``x``/``y`` without one."""

    input_name: str = "x"
    input_dtype: str | None = None  #: ``None``: the arithmetic dtype
    input_shape: list[int | None] | None = None  #: ``None``: the body's own input shape
    logits_name: str = "y"
    logits_dtype: str | None = None
    outputs: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    head: list[dict[str, Any]] = field(default_factory=list)
    constants: list[dict[str, Any]] = field(default_factory=list)
    opsets: dict[str, int] = field(default_factory=dict)
    recorded: bool = False

    @property
    def head_ops(self) -> list[str]:
        return [n["op"] for n in self.head]


def _name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= 200 or not value.isprintable():
        raise InputError(f"provenance.source: {what} is not a printable name of at most 200 "
                         f"characters")
    return value


def _dtype(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if value not in _ELEM:
        raise InputError(f"provenance.source: {what} has an unknown dtype {value!r}")
    return str(value)


def _type(t: Any, depth: int = 0) -> dict[str, Any]:
    if not isinstance(t, dict) or depth > 4:
        raise InputError("provenance.source: an output type is malformed")
    if "tensor" in t:
        _dtype(t["tensor"], "an output")
        shape = t.get("shape")
        if shape is not None and (not isinstance(shape, list) or len(shape) > 8 or any(
                d is not None and (type(d) is not int or d < 0) for d in shape)):
            raise InputError("provenance.source: an output shape is malformed")
        return t
    if "sequence" in t:
        _type(t["sequence"], depth + 1)
        return t
    if "map" in t and isinstance(t["map"], list) and len(t["map"]) == 2:
        _dtype(t["map"][0], "a map key")
        _type(t["map"][1], depth + 1)
        return t
    raise InputError("provenance.source: an output type is not a tensor, sequence or map")


def interface_of(doc: Any, d0: int) -> Interface:
    """The interface recorded in a certificate document (module doc), checked; the default
    ``x``/``y`` interface when none is recorded. A recorded input shape is kept when its
    known dimensions after the batch multiply to ``d0``.

    >>> interface_of({}, 4).input_name, interface_of({}, 4).recorded
    ('x', False)
    """
    prov = doc.get("provenance") if isinstance(doc, dict) else None
    source = prov.get("source") if isinstance(prov, dict) else None
    if not isinstance(source, dict) or not isinstance(source.get("input"), dict) \
            or not isinstance(source.get("output"), dict):
        return Interface()
    inp, out = source["input"], source["output"]
    x_name = _name(inp.get("name", "x"), "the input name")
    y_name = _name(out.get("name", "y"), "the logits name")
    shape = inp.get("shape")
    image = None
    if isinstance(shape, list) and len(shape) >= 2 and all(
            type(d) is int and d > 0 for d in shape[1:]) and math.prod(shape[1:]) == d0:
        image = [None] + list(shape[1:])
    outputs = source.get("outputs")
    if outputs is None:  # a certificate written before heads were recorded: one output
        return Interface(x_name, _dtype(inp.get("dtype"), "the input"), image,
                         y_name if y_name != x_name else f"{y_name}_out",
                         _dtype(out.get("dtype"), "the logits"), recorded=True)
    if not isinstance(outputs, list) or not 0 < len(outputs) <= 16:
        raise InputError("provenance.source: outputs must be a list of 1 to 16 entries")
    outs = [(_name(o.get("name") if isinstance(o, dict) else None, "an output name"),
             _type(o.get("type"))) for o in outputs]
    head = source.get("head") or {}
    if not isinstance(head, dict):
        raise InputError("provenance.source: head must be an object")
    nodes, consts = head.get("nodes", []), head.get("constants", [])
    opsets = head.get("opset", {})
    if not isinstance(nodes, list) or len(nodes) > MAX_HEAD_NODES or not isinstance(
            consts, list) or not isinstance(opsets, dict):
        raise InputError("provenance.source: the head is malformed")
    for n in nodes:
        if not isinstance(n, dict) or (n.get("domain", ""), n.get("op")) not in POST_OPS:
            raise InputError(f"provenance.source: head node "
                             f"{str(n.get('op') if isinstance(n, dict) else n)[:40]!r} is not "
                             f"post-processing")
    if sum(math.prod(c.get("dims", [0])) if isinstance(c, dict) else 0 for c in consts) \
            > MAX_HEAD_ENTRIES:
        raise InputError("provenance.source: the head's constants are too large")
    produced = {y_name} | {o for n in nodes for o in n.get("outputs", [])}
    for name, _ in outs:
        if name not in produced:
            raise InputError(f"provenance.source: output {name!r} is not produced by the head")
    if x_name in produced:
        raise InputError("provenance.source: the input name is also an output name")
    return Interface(x_name, _dtype(inp.get("dtype"), "the input"), image, y_name,
                     _dtype(out.get("dtype"), "the logits"), outs, nodes, consts,
                     {str(k): int(v) for k, v in opsets.items() if type(v) is int},
                     recorded=True)


def _constant(c: dict[str, Any]) -> Any:
    from onnx import numpy_helper

    try:
        scalar = _NUMPY[c["dtype"]]
        values = c["values"]
        if scalar is object:
            arr = np.array([str(v).encode() for v in values], dtype=object)
        elif np.issubdtype(scalar, np.floating):
            arr = np.array([float(Fraction(v)) for v in values], dtype=np.float64).astype(scalar)
        else:
            arr = np.array([int(v) for v in values], dtype=scalar)
        return numpy_helper.from_array(arr.reshape([int(d) for d in c["dims"]]),
                                       _name(c["name"], "a head constant"))
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        raise InputError(f"provenance.source: a head constant is malformed "
                         f"({type(exc).__name__})") from None


def _attribute(value: Any) -> Any:
    if not isinstance(value, dict) or len(value) != 1:
        raise InputError("provenance.source: a head attribute is malformed")
    (atype, v), = value.items()
    if atype in ("int", "string"):
        return int(v) if atype == "int" else str(v)
    if atype == "float":
        return float(Fraction(v))
    if atype == "ints":
        return [int(x) for x in v]
    if atype == "floats":
        return [float(Fraction(x)) for x in v]
    if atype == "strings":
        return [str(x).encode() for x in v]
    if atype == "tensor":
        return _constant(v)
    raise InputError(f"provenance.source: a head attribute of kind {atype!r}")


def _type_proto(t: dict[str, Any]) -> Any:
    from onnx import helper

    if "tensor" in t:
        return helper.make_tensor_type_proto(_ELEM[t["tensor"]], t.get("shape"))
    if "sequence" in t:
        return helper.make_sequence_type_proto(_type_proto(t["sequence"]))
    return helper.make_map_type_proto(_ELEM[t["map"][0]], _type_proto(t["map"][1]))


def _any_batch(t: dict[str, Any]) -> dict[str, Any]:
    """A recorded tensor type with its first (batch) dimension symbolic."""
    shape = t.get("shape") if "tensor" in t else None
    return dict(t, shape=["N", *shape[1:]]) if shape else t


def _rename(nodes: list[Any], inits: list[Any]) -> None:
    """Prefix every tensor and node name of the body (module doc)."""
    for node in nodes:
        node.input[:] = [BODY_PREFIX + i if i else i for i in node.input]
        node.output[:] = [BODY_PREFIX + o for o in node.output]
        node.name = BODY_PREFIX + node.name
    for t in inits:
        t.name = BODY_PREFIX + t.name


def assemble(body: list[Any], inits: list[Any], *, elem: int, body_input: list[Any],
             width: int, interface: Interface, opset: int, graph_name: str,
             doc_string: str = "") -> Any:
    """The exported model: the body (input ``x`` of shape ``body_input``, output ``y`` of
    ``width`` logits, both of ONNX element type ``elem``) inside the interface (module doc),
    checked with ``onnx.checker``."""
    import onnx
    from onnx import helper, numpy_helper

    arith = DTYPES[elem]
    meta = {LOGITS_KEY: "y"}
    if not interface.recorded:
        inputs = [helper.make_tensor_value_info("x", elem, body_input)]
        outputs = [helper.make_tensor_value_info("y", elem, ["N", width])]
        nodes, all_inits = list(body), list(inits)
        opsets = {"": opset}
    else:
        _rename(body, inits)
        meta[LOGITS_KEY] = BODY_PREFIX + "y"
        in_dtype = interface.input_dtype or arith
        in_shape = interface.input_shape or body_input
        in_shape = ["N" if d is None else d for d in in_shape]
        pre: list[Any] = []
        cur = interface.input_name
        if in_dtype != arith:
            pre.append(helper.make_node("Cast", [cur], [BODY_PREFIX + "input_cast"],
                                        to=elem, name=BODY_PREFIX + "input_cast"))
            cur = BODY_PREFIX + "input_cast"
        if list(in_shape[1:]) != list(body_input[1:]):
            shape = numpy_helper.from_array(np.asarray([-1, *body_input[1:]], dtype=np.int64),
                                            BODY_PREFIX + "input_shape")
            inits.append(shape)
            pre.append(helper.make_node("Reshape", [cur, shape.name], [BODY_PREFIX + "x"],
                                        name=BODY_PREFIX + "input_reshape"))
        else:
            pre.append(helper.make_node("Identity", [cur], [BODY_PREFIX + "x"],
                                        name=BODY_PREFIX + "input"))
        out_dtype = interface.logits_dtype or arith
        post = [helper.make_node("Cast", [BODY_PREFIX + "y"], [interface.logits_name],
                                 to=_ELEM[out_dtype], name=BODY_PREFIX + "logits_cast")
                if out_dtype != arith else
                helper.make_node("Identity", [BODY_PREFIX + "y"], [interface.logits_name],
                                 name=BODY_PREFIX + "logits")]
        for n in interface.head:
            try:
                attrs = {k: _attribute(v) for k, v in n.get("attributes", {}).items()}
                post.append(helper.make_node(
                    n["op"], [str(i) for i in n["inputs"]], [str(o) for o in n["outputs"]],
                    name=str(n.get("name", "")), domain=n.get("domain") or None, **attrs))
            except (KeyError, TypeError, ValueError) as exc:
                raise InputError(f"provenance.source: head node {n.get('op')!r} is malformed "
                                 f"({type(exc).__name__})") from None
        nodes = pre + list(body) + post
        all_inits = list(inits) + [_constant(c) for c in interface.constants]
        inputs = [helper.make_tensor_value_info(interface.input_name, _ELEM[in_dtype],
                                                in_shape)]
        if interface.outputs:
            # the batch is free, as on the input: a source exported with batch 1 declares it
            outputs = [helper.make_value_info(name, _type_proto(_any_batch(t)))
                       for name, t in interface.outputs]
        else:
            outputs = [helper.make_tensor_value_info(interface.logits_name, _ELEM[out_dtype],
                                                     ["N", width])]
        opsets = {"": max(opset, interface.opsets.get("", 0))}
        opsets.update({k: v for k, v in interface.opsets.items()
                       if k and any(n.get("domain") == k for n in interface.head)})
        opsets[""] = min(opsets[""], onnx.defs.onnx_opset_version())
    graph = helper.make_graph(nodes, graph_name, inputs, outputs, initializer=all_inits)
    imports = [helper.make_opsetid(k, v) for k, v in sorted(opsets.items())]
    model = helper.make_model(graph, opset_imports=imports, producer_name="exactnorm")
    # the oldest IR that carries these opsets (8 for opset 15): the widest runtime support
    model.ir_version = max(8, helper.find_min_ir_version_for(imports))
    model.doc_string = doc_string
    helper.set_model_props(model, meta)
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as exc:
        raise InputError(f"the exported model with the source's interface is not valid ONNX: "
                         f"{str(exc).splitlines()[0][:200]}; export with interface 'plain' "
                         f"to leave the interface out") from None
    return model


def _recorded_shape(doc: Any) -> list[int | None] | None:
    prov = doc.get("provenance") if isinstance(doc, dict) else None
    source = prov.get("source") if isinstance(prov, dict) else None
    inp = source.get("input") if isinstance(source, dict) else None
    shape = inp.get("shape") if isinstance(inp, dict) else None
    if not isinstance(shape, list) or len(shape) > 8:
        return None
    return [d if type(d) is int and d > 0 else None for d in shape]


def source_differences(doc: Any, model: Any, d0: int) -> list[str]:
    """How the ONNX ``model`` (a ``ModelProto``) differs from the model a certificate was made
    from, as recorded in its ``provenance.source``: the input's name, dtype and shape, the
    outputs' names; without a recorded interface, the input width against the target's ``d0``.
    Empty when nothing differs (the export's ``--source`` check, before anything is written).
    """
    graph = model.graph
    stored = {t.name for t in graph.initializer}
    inputs = [i for i in graph.input if i.name not in stored]
    if len(inputs) != 1:
        return [f"it has {len(inputs)} inputs, the certified model one"]
    inp = inputs[0]
    tensor = inp.type.tensor_type if inp.type.HasField("tensor_type") else None
    dtype = DTYPES.get(tensor.elem_type) if tensor is not None else None
    dims: list[int | None] = [int(d.dim_value) if d.HasField("dim_value") else None
                              for d in tensor.shape.dim] if tensor is not None else []
    face = interface_of(doc, d0)
    out: list[str] = []
    if not face.recorded:
        known = [d for d in dims[1:] if d is not None]
        if len(known) == len(dims[1:]) and dims[1:] and math.prod(known) != d0:
            out.append(f"its input {inp.name!r} has {math.prod(known)} values per sample, the "
                       f"certified target reads {d0}")
        return out
    if inp.name != face.input_name:
        out.append(f"input name {inp.name!r} (the certificate records {face.input_name!r})")
    if face.input_dtype is not None and dtype != face.input_dtype:
        out.append(f"input dtype {dtype} (the certificate records {face.input_dtype})")
    recorded = _recorded_shape(doc)
    if recorded is not None and dims and (len(dims) != len(recorded) or any(
            a is not None and b is not None and a != b
            for a, b in zip(dims[1:], recorded[1:]))):
        shown = ["N" if d is None else d for d in dims]
        want = ["N" if d is None else d for d in recorded]
        out.append(f"input shape {shown} (the certificate records {want})")
    names = [o.name for o in graph.output]
    want_names = [name for name, _ in face.outputs] or [face.logits_name]
    if names != want_names:
        out.append(f"output names {names} (the certificate records {want_names})")
    return out
