"""The model files in and the exports out, for every registered layer kind (the second half of
the kind contract, :mod:`tests.kinds.test_kind_contract`).

For every kind of the format's ``LAYER_KINDS``:

* a target of that kind written as an ONNX graph here, node by node from the kind's definition
  (:data:`TO_ONNX`, no exactnorm code), is read back by the one ONNX walker to the same target
  (every float the dyadic rational it denotes) and onnxruntime agrees with its exact evaluation;
* the certified network exported to ONNX runs under onnxruntime and matches the exact target
  (float64: to 1e-9 relative; float32 with NCHW operators: to 1e-3), the npz export's numpy
  forward pass matches it, and the exact JSON export reads back to the certified frozen network.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, find, settings

from exactnorm import api
from exactnorm.certificate import read_networks
from exactnorm.checker.vocabulary import LAYER_KINDS
from exactnorm.model.interop import target_from_onnx
from exactnorm.outputs.export import evaluate_npz_export, onnx_model, read_exported_json
from exactnorm.outputs.floatnet import box_points
from exactnorm.strategies import kind_targets

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

ALL = sorted(LAYER_KINDS)


# --------------------------------------------------------------------------- writing ONNX here


def _floats(M: Any) -> np.ndarray:
    """float32, as exporters write weights (onnxruntime has no double Conv or pooling)."""
    return np.array([[float(Fraction(int(x.p), int(x.q))) for x in row] for row in M.tolist()],
                    dtype=np.float32)


def _vector(v: Any) -> np.ndarray:
    return np.array([float(Fraction(int(x.p), int(x.q))) for x in v], dtype=np.float32)


def _dense(layer: Any, k: int, src: str, inits: list) -> tuple[list, str]:
    inits += [numpy_helper.from_array(_floats(layer.weight), f"W{k}"),
              numpy_helper.from_array(_vector(layer.bias), f"b{k}")]
    return [helper.make_node("Gemm", [src, f"W{k}", f"b{k}"], [f"z{k}"], transB=1)], f"z{k}"


def _conv(layer: Any, k: int, src: str, inits: list) -> tuple[list, str]:
    g, G = layer.operator.geometry, layer.operator.groups
    K = _floats(layer.weight).reshape(layer.channels, g.input_shape[0] // G, *g.kernel_shape)
    inits += [numpy_helper.from_array(K, f"K{k}"),
              numpy_helper.from_array(_vector(layer.bias), f"c{k}")]
    return [helper.make_node("Conv", [src, f"K{k}", f"c{k}"], [f"z{k}"],
                             kernel_shape=list(g.kernel_shape), strides=list(g.stride),
                             pads=[*g.padding, *g.padding], dilations=list(g.dilation),
                             group=G)], f"z{k}"


def _avgpool(layer: Any, k: int, src: str, inits: list) -> tuple[list, str]:
    g = layer.operator.geometry
    return [helper.make_node("AveragePool", [src], [f"z{k}"], kernel_shape=list(g.kernel_shape),
                             strides=list(g.stride))], f"z{k}"


def _global(layer: Any, k: int, src: str, inits: list) -> tuple[list, str]:
    # as PyTorch's dynamo exporter writes AdaptiveAvgPool2d(1): ReduceMean, axes as an input
    inits.append(numpy_helper.from_array(np.array([-1, -2], dtype=np.int64), f"axes{k}"))
    return [helper.make_node("ReduceMean", [src, f"axes{k}"], [f"z{k}"], keepdims=1)], f"z{k}"


#: kind → the ONNX nodes of one target layer of that kind (written from the kind's definition)
TO_ONNX = {"dense": _dense, "conv": _conv, "avgpool": _avgpool, "globalavgpool": _global}


def _image(layer: Any) -> tuple[int, ...] | None:
    """The image a layer reads (None for a dense layer, which reads a flat value)."""
    g = getattr(layer.operator, "geometry", None)
    return g.input_shape if g is not None else getattr(layer.operator, "input_shape", None)


def _as_onnx(t: Any) -> Any:
    """The target as an ONNX graph: an image input when its first layer reads one, flattened
    before a dense layer that reads an image."""
    first = _image(t.layers[0])
    shape = ["N", *first] if first is not None else ["N", t.layers[0].input_size]
    nodes, inits, src = [], [], "x"
    spatial = first is not None
    for k, layer in enumerate(t.layers):
        if layer.kind == "dense" and spatial:
            nodes.append(helper.make_node("Flatten", [src], [f"f{k}"], axis=1))
            src, spatial = f"f{k}", False
        new, src = TO_ONNX[layer.kind](layer, k, src, inits)
        nodes += new
        if layer.activation == "relu":
            nodes.append(helper.make_node("Relu", [src], [f"r{k}"]))
            src = f"r{k}"
    nodes.append(helper.make_node("Flatten", [src], ["y"], axis=1))
    graph = helper.make_graph(nodes, "kind", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, shape)], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, ["N", t.widths[-1]])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _rounded(t: Any) -> Any:
    """The target with every weight and bias rounded to float32 (what the ONNX file holds)."""
    import dataclasses

    from flint import fmpq, fmpq_mat

    def q(x: float) -> fmpq:
        f = Fraction(x)
        return fmpq(f.numerator, f.denominator)

    layers = []
    for layer in t.layers:
        if layer.weight is not None:
            W = _floats(layer.weight).astype(np.float64)
            op = dataclasses.replace(layer.operator,
                                     weight=fmpq_mat([[q(x) for x in row] for row in W]))
            layer = dataclasses.replace(layer, operator=op,
                                        bias=tuple(q(float(x)) for x in _vector(layer.bias)))
        layers.append(layer)
    return type(t)(tuple(layers), t.lower, t.upper)


def _example(kind: str, dense_head: bool, seed: int) -> Any:
    return find(kind_targets(kind, dense_head=dense_head, open_box=True),
                lambda t: t.layers[0].input_size >= 2 + seed,
                settings=settings(database=None, max_examples=400, deadline=None,
                                  derandomize=True, phases=[Phase.generate],
                                  suppress_health_check=list(HealthCheck)))


@pytest.mark.parametrize("kind", ALL)
@pytest.mark.parametrize("dense_head", [False, True])
def test_the_onnx_walker_reads_each_kind_written_from_its_definition(kind, dense_head):
    t = _example(kind, dense_head, 0)
    model = _as_onnx(t)
    read = target_from_onnx(model, t.lower, t.upper)
    assert read == _rounded(t)
    X = np.array([[float(Fraction(int(v.p), int(v.q))) for v in x]
                  for x in box_points(t.lower, t.upper, 4, seed=1)], dtype=np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    first = _image(t.layers[0])
    feed = X.reshape(len(X), *first) if first is not None else X
    ours = np.array([[float(v) for v in read.evaluate([Fraction(float(a)) for a in x])]
                     for x in X])
    assert np.allclose(session.run(None, {"x": feed})[0], ours, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- exports


@pytest.fixture(scope="module")
def certified() -> dict[str, tuple[Any, dict]]:
    out = {}
    for kind in ALL:
        t = _example(kind, True, 1)
        out[kind] = (t, api.certificate_document(api.certify(t, seed=0, jobs=1)))
    return out


def _run(path: Any, X: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    inp = session.get_inputs()[0]
    dtype = np.float64 if inp.type == "tensor(double)" else np.float32
    shape = [d for d in inp.shape[1:]]
    feed = X.reshape(len(X), *shape).astype(dtype) if all(isinstance(d, int) for d in shape) \
        else X.astype(dtype)
    return np.asarray(session.run(None, {inp.name: feed})[0], dtype=np.float64)


@pytest.mark.parametrize("kind", ALL)
def test_export_under_onnxruntime_matches_the_exact_target(certified, kind, tmp_path):
    t, doc = certified[kind]
    X = np.array([[float(Fraction(int(v.p), int(v.q))) for v in x]
                  for x in box_points(t.lower, t.upper, 6, seed=2)])
    exact = np.array([[float(v) for v in t.evaluate([Fraction(a) for a in x])] for x in X])
    scale = max(1.0, float(np.max(np.abs(exact))))
    for options, tol in (({}, 1e-9), ({"normalization": "muladd"}, 1e-9),
                         ({"dtype": "float32", "layout": "nchw"}, 1e-3),
                         ({"mean": "1/2", "scale": "3/2"}, 1e-9)):
        path = tmp_path / f"{kind}.onnx"
        path.write_bytes(onnx_model(doc, **options).SerializeToString())
        assert np.max(np.abs(_run(path, X) - exact)) <= tol * scale, (kind, options)
    # the drop-in interface with the same checks through the API (verify at 8 box points)
    text = api.export(doc, tmp_path / "api.onnx", format="onnx", verify=8).text
    assert "largest output agrees at 8/8" in text
    api.export(doc, tmp_path / f"{kind}.npz", format="npz", mean="1/3", scale="2")
    assert np.max(np.abs(evaluate_npz_export(tmp_path / f"{kind}.npz", X) - exact)) \
        <= 1e-9 * scale
    api.export(doc, tmp_path / f"{kind}.json", format="json", mean="1/3", scale="2")
    assert read_exported_json(tmp_path / f"{kind}.json") == read_networks(doc)[1]


@pytest.mark.parametrize("kind", ALL)
def test_the_torch_layout_matches_the_exact_target(certified, kind):
    """The state dict of the PyTorch layout, evaluated by its numpy forward pass (always) and
    loaded into the module itself (with torch), against the exact target."""
    from exactnorm.certificate import float_network
    from exactnorm.outputs.export import evaluate_state_dict, torch_module, torch_state_dict

    t, doc = certified[kind]
    X = np.array([[float(Fraction(int(v.p), int(v.q))) for v in x]
                  for x in box_points(t.lower, t.upper, 5, seed=3)])
    exact = np.array([[float(v) for v in t.evaluate([Fraction(a) for a in x])] for x in X])
    scale = max(1.0, float(np.max(np.abs(exact))))
    net = float_network(doc)
    state = torch_state_dict(doc, mean="1/4", scale="2", eps=1e-3)
    Y = evaluate_state_dict(state, [layer.activation for layer in net.layers], X, eps=1e-3,
                            kinds=[layer.kind for layer in net.layers])
    assert np.max(np.abs(Y - exact)) <= 1e-9 * scale
    torch = pytest.importorskip("torch")
    module = torch_module(doc, mean="1/4", scale="2", eps=1e-3)
    with torch.no_grad():
        out = module(torch.from_numpy(X)).numpy()
    assert np.max(np.abs(out - exact)) <= 1e-9 * scale
    frozen = [name for name, p in module.named_parameters() if not p.requires_grad]
    assert all(".norm." not in name for name in frozen)
