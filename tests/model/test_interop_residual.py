"""Reading residual networks: ONNX graphs as PyTorch's exporters write an eval-mode ResNet, and
state dicts with a declared ``block`` architecture.

The reader's target is compared with onnxruntime (an independent implementation of the graph) in
float on the digits data and on random points, and its topology with the model's definition: the
node each layer reads, the kind and source of each skip. Every refusal names the node.
"""

from __future__ import annotations

import copy
import sys
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from exactnorm.errors import InputError, LimitExceededError, ShapeError
from exactnorm.model.interop import target_from_onnx, target_from_state_dict

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import helper, numpy_helper  # noqa: E402

from tests.model.resnet_onnx import reference_forward, small_resnet_onnx  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
RESNETS = ["resnet8_digits.onnx", "resnet8_digits_bn.onnx", "resnet8_digits_16_32_64.onnx"]


def _topology(t):
    return [(w.input, None if w.skip is None else (w.skip.source, w.skip.kind))
            for w in t.wiring]


@pytest.fixture(scope="module")
def digits():
    sys.path.insert(0, str(BENCH))
    try:
        from mlp_models import digits_images
    finally:
        sys.path.remove(str(BENCH))
    X, y = digits_images(28)
    return X[::6].astype(np.float32), y[::6]  # 300 digits


@pytest.mark.parametrize("name", RESNETS)
def test_the_shipped_resnets_read_as_the_exporter_wrote_them(name, digits):
    """Stem, block 1 (identity shortcut), blocks 2 and 3 (projection: its own 1×1 stride-2 layer
    with identity activation reading the block input, the block's output adding it), global
    pooling, classifier; the float evaluation equals onnxruntime's on the digits and predicts
    the same digits."""
    t = target_from_onnx(BENCH / name, 0, 1)
    assert [layer.kind for layer in t.layers] == ["conv"] * 9 + ["globalavgpool", "dense"]
    assert _topology(t) == [(0, None), (1, None), (2, (1, "identity")), (3, None), (3, None),
                            (4, (5, "identity")), (6, None), (6, None), (7, (8, "identity")),
                            (9, None), (10, None)]
    projections = [t.layers[4], t.layers[7]]
    assert all(p.activation == "identity" and p.operator.geometry.kernel_shape == (1, 1)
               and p.operator.geometry.stride == (2, 2) for p in projections)
    assert [t.layers[i].activation for i in (2, 5, 8)] == ["relu"] * 3
    X, y = digits
    theirs = reference_forward(onnx.load(BENCH / name), X)
    mine = t.evaluate_float(X.astype(np.float64))
    assert np.allclose(mine, theirs, rtol=1e-4, atol=1e-4)
    assert np.array_equal(mine.argmax(1), theirs.argmax(1))
    assert (mine.argmax(1) == y).mean() > 0.9


def test_the_exact_target_is_its_float_evaluation():
    """One rational point through the exact evaluation of the real ResNet-8 (every node an
    exact rational): within float error of the float64 evaluation, so both read the same
    function."""
    t = target_from_onnx(BENCH / "resnet8_digits.onnx", 0, 1)
    x = [Fraction((7 * k) % 11, 10) for k in range(784)]
    exact = [float(v) for v in t.evaluate(x)]
    assert np.allclose(exact, t.evaluate_float(np.array([[float(v) for v in x]]))[0],
                       rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("options", [
    {}, {"shortcut_first": True}, {"bn": False, "dynamo": True}, {"shortcut": "optionA"},
    {"shortcut": "optionA", "shortcut_first": True, "dynamo": True}])
def test_small_resnets_equal_onnxruntime(options):
    model = small_resnet_onnx(3, **options)
    t = target_from_onnx(model, 0, 1)
    X = np.random.default_rng(1).random((20, 36)).astype(np.float32)
    assert np.allclose(t.evaluate_float(X.astype(np.float64)), reference_forward(model, X),
                       rtol=1e-5, atol=1e-5)
    exact = [float(v) for v in t.evaluate([Fraction(float(v)) for v in X[0]])]
    assert np.allclose(exact, reference_forward(model, X[:1])[0], rtol=1e-5, atol=1e-5)
    if options.get("shortcut") == "optionA":
        skip = t.wiring[-3].skip
        assert skip is not None and skip.kind == "selection" and skip.source == 3
        # every second pixel of each of the 2 input channels, then a zero channel
        assert skip.weight.picks[:9] == tuple(y * 6 + x for y in (0, 2, 4) for x in (0, 2, 4))
        assert skip.weight.picks[18:] == (None,) * 9
    else:
        assert _topology(t)[4:6] == [(3, None), (4, (5, "identity"))]


def test_the_order_of_the_branches_does_not_matter():
    """The same graph with the shortcut's nodes listed before the main branch (another
    topological order) reads as the same target, layer for layer."""
    model = small_resnet_onnx(5)
    nodes = list(model.graph.node)
    short = [n for n in nodes if n.name.startswith("b2sc")]
    first = next(i for i, n in enumerate(nodes) if n.name == "b2c1")
    rest = [n for n in nodes if n not in short]
    moved = copy.deepcopy(model)
    del moved.graph.node[:]
    moved.graph.node.extend(rest[:first] + short + rest[first:])
    assert [n.name for n in moved.graph.node] != [n.name for n in nodes]
    a, b = target_from_onnx(model, 0, 1), target_from_onnx(moved, 0, 1)
    assert a == b and a.wiring == b.wiring and not a.is_chain


def test_the_skip_matters():
    """Removing a block's Add changes the function: the comparisons above can fail."""
    model = small_resnet_onnx(3)
    t = target_from_onnx(model, 0, 1)
    cut = copy.deepcopy(model)
    add = next(n for n in cut.graph.node if n.name == "b1_add")
    add.op_type, add.input[:] = "Identity", [add.input[0]]
    u = target_from_onnx(cut, 0, 1)
    X = np.random.default_rng(2).random((5, 36))
    assert u.wiring[2].skip is None
    assert not np.allclose(t.evaluate_float(X), u.evaluate_float(X))


def _edit(model, name, **changes):
    out = copy.deepcopy(model)
    node = next(n for n in out.graph.node if n.name == name)
    for key, value in changes.items():
        if key == "inputs":
            node.input[:] = value
        else:
            setattr(node, key, value)
    return out


def _insert_after(model, name, op, **attrs):
    """A node ``op`` on the output of node ``name``, read by what read that output."""
    out = copy.deepcopy(model)
    nodes = list(out.graph.node)
    k = next(i for i, n in enumerate(nodes) if n.name == name)
    src = nodes[k].output[0]
    extra_inputs = attrs.pop("extra_inputs", [])
    new = helper.make_node(op, [src, *extra_inputs], [f"{src}_{op}"], name=f"inserted_{op}",
                           **attrs)
    for n in nodes[k + 1:]:
        n.input[:] = [f"{src}_{op}" if i == src else i for i in n.input]
    del out.graph.node[:]
    out.graph.node.extend(nodes[:k + 1] + [new] + nodes[k + 1:])
    return out


def test_unsupported_residual_graphs_are_refused_by_node():
    model = small_resnet_onnx(3)
    cases = [
        # two activated branches: no linear layer takes the sum before its activation
        (_edit(model, "b1_add", inputs=["b1_relu1_out", "stem_relu_out"]),
         r"'b1_add' \(Add\) adds two branches neither"),
        (_edit(model, "b1_add", op_type="Mul"), r"'b1_add' \(Mul\) reads 2 computed tensors of "
                                                 r"two branches"),
        (_edit(model, "b1_add", op_type="Sub"), r"'b1_add' \(Sub\) reads 2 computed"),
        (_edit(model, "b1_add", op_type="Concat"), r"'b1_add' \(Concat\) is not supported"),
    ]
    # an element-wise map after the sum would scale the shortcut too
    scale = numpy_helper.from_array(np.full((1, 1, 1), 2.0, dtype=np.float32), "two")
    scaled = _insert_after(model, "b1_add", "Mul", extra_inputs=["two"])
    scaled.graph.initializer.append(scale)
    cases.append((scaled, r"'inserted_Mul' \(Mul\) follows the residual Add"))
    # a second Add on the same layer: one skip per layer
    twice = _insert_after(model, "b1_add", "Add", extra_inputs=["stem_relu_out"])
    cases.append((twice, r"'inserted_Add' \(Add\) adds two branches neither"))
    for bad, message in cases:
        with pytest.raises(InputError, match=message):
            target_from_onnx(bad, 0, 1)


def test_a_fold_on_a_shared_tensor_is_refused():
    """The block's conv output read by the Add and by a BatchNormalization on another path:
    folding it would change what the Add reads."""
    model = small_resnet_onnx(3, bn=False)
    out = copy.deepcopy(model)
    nodes = list(out.graph.node)
    k = next(i for i, n in enumerate(nodes) if n.name == "b1c2")
    conv_out = nodes[k].output[0]
    add = next(n for n in nodes if n.name == "b1_add")
    add.input[:] = [conv_out, "stem_relu_out"]
    extra = helper.make_node("Relu", [conv_out], ["dangling"], name="second_reader")
    del out.graph.node[:]
    out.graph.node.extend(nodes[:k + 1] + [extra] + nodes[k + 1:])
    with pytest.raises(InputError, match=r"'second_reader' \(Relu\).*also read by another"):
        target_from_onnx(out, 0, 1)


def test_a_shortcut_of_another_shape_is_refused():
    model = small_resnet_onnx(3)
    bad = _edit(model, "b2_add", inputs=["b2c2_bn_out", "b1_relu2_out"])
    with pytest.raises(ShapeError, match=r"'b2_add' \(Add\) adds branches of 27 and 72 values"):
        target_from_onnx(bad, 0, 1)


def test_a_given_network_is_a_chain():
    from exactnorm.model.interop import frozen_from_onnx

    with pytest.raises(InputError, match=r"'b1_add' \(Add\) adds two branches \(a residual "
                                         r"block\); a network read with replaced handlers"):
        frozen_from_onnx(small_resnet_onnx(3))


def test_a_huge_padding_is_refused_before_it_is_built():
    model = small_resnet_onnx(3, shortcut="optionA")
    pads = next(t for t in model.graph.initializer if t.name == "pads")
    pads.CopyFrom(numpy_helper.from_array(np.array([0, 0, 0, 0, 0, 10**9, 0, 0], np.int64),
                                          "pads"))
    with pytest.raises(LimitExceededError, match="'b2_zero_channels' \\(Pad\\) pads has "
                                                 "shape"):
        target_from_onnx(model, 0, 1)


def test_a_slice_read_by_a_layer_is_refused():
    model = small_resnet_onnx(3, shortcut="optionA", shortcut_first=True)
    bad = _edit(model, "b2c1", inputs=["b2_zero_channels_out", "b2c1.weight"])
    with pytest.raises(InputError, match="read only as a residual Add's shortcut"):
        target_from_onnx(bad, 0, 1)


# ----------------------------------------------------------------------------- state dicts

ARCH = ("conv(padding=1),bn,relu,block(8),block(16,stride=2,proj),block(32,stride=2,proj),"
        "globalavgpool,flatten,linear")


def _state_dict_of_onnx(path: Path) -> dict[str, np.ndarray]:
    """The PyTorch state dict of the model exported as ``resnet8_digits_bn.onnx`` (TorchScript
    keeps every module's parameters under its state-dict name), in module order."""
    from exactnorm.model.onnx_common import constants

    consts = {k: numpy_helper.to_array(v) for k, v in constants(onnx.load(path).graph).items()}
    modules = ["stem.0", "stem.1"]
    for layer, proj in (("layer1", False), ("layer2", True), ("layer3", True)):
        modules += [f"{layer}.{m}" for m in ("conv1", "bn1", "conv2", "bn2")]
        modules += [f"{layer}.shortcut.0", f"{layer}.shortcut.1"] if proj else []
    return {f"{m}.{k}": consts[f"{m}.{k}"] for m in modules + ["fc"]
            for k in ("weight", "bias", "running_mean", "running_var") if f"{m}.{k}" in consts}


def test_a_state_dict_with_declared_blocks_reads_like_the_onnx_export(digits):
    """The same trained ResNet-8 as a state dict with ``block`` tokens and as TorchScript's ONNX
    file: the same topology and kinds, and the same predictions (the folds differ by the
    BatchNorm ε only: PyTorch's 1e-5 in float64, ONNX's float32 attribute)."""
    path = BENCH / "resnet8_digits_bn.onnx"
    a = target_from_state_dict(_state_dict_of_onnx(path), 0, 1, architecture=ARCH,
                               input_shape=(1, 28, 28))
    b = target_from_onnx(path, 0, 1)
    assert a.wiring == b.wiring
    assert [(x.kind, x.activation, getattr(x, "geometry", None)) for x in a.layers] == \
        [(x.kind, x.activation, getattr(x, "geometry", None)) for x in b.layers]
    X, _ = digits
    fa, fb = a.evaluate_float(X.astype(np.float64)), b.evaluate_float(X.astype(np.float64))
    assert np.allclose(fa, fb, rtol=1e-6, atol=1e-6)
    assert np.array_equal(fa.argmax(1), fb.argmax(1))


def test_block_tokens_parse_and_refuse():
    from exactnorm.model.interop.torch import parse_architecture

    assert parse_architecture("block(16,stride=2,proj),block(8)") == [
        ("block", {"channels": 16, "stride": 2, "proj": 1}), ("block", {"channels": 8})]
    arrays = _state_dict_of_onnx(BENCH / "resnet8_digits_bn.onnx")
    with pytest.raises(InputError, match="the architecture has 17 modules with parameters, "
                                         "the state dict 19"):
        target_from_state_dict(arrays, 0, 1, architecture=ARCH.replace("stride=2,proj),g",
                                                                         "stride=2),g"),
                               input_shape=(1, 28, 28))
    with pytest.raises(ShapeError, match="has 8 output channels, the block declares 4"):
        target_from_state_dict(arrays, 0, 1, architecture=ARCH.replace("block(8)", "block(4)"),
                               input_shape=(1, 28, 28))


def test_a_state_dict_with_an_identity_block_where_shapes_differ_is_refused():
    arrays = _state_dict_of_onnx(BENCH / "resnet8_digits_bn.onnx")
    # layer2's projection dropped: its block adds the 8×28×28 input to a 16×14×14 output
    del arrays["layer2.shortcut.0.weight"]
    for k in ("weight", "bias", "running_mean", "running_var"):
        del arrays[f"layer2.shortcut.1.{k}"]
    with pytest.raises(ShapeError, match=r"architecture entry 5 \(block\) adds branches of "
                                         r"3136 and 6272 values"):
        target_from_state_dict(arrays, 0, 1,
                               architecture=ARCH.replace("block(16,stride=2,proj)",
                                                         "block(16,stride=2)"),
                               input_shape=(1, 28, 28))


def test_a_torch_resnet_reads_from_its_onnx_export_and_its_state_dict(tmp_path):
    """benchmarks/train_resnet8.py's architecture (4/8/8 channels, BatchNorm statistics made
    nontrivial), exported by TorchScript in eval mode, and its state dict with a declared
    architecture: both targets agree with PyTorch itself on random images."""
    torch = pytest.importorskip("torch")
    sys.path.insert(0, str(BENCH))
    try:
        from train_resnet8 import build
    finally:
        sys.path.remove(str(BENCH))
    torch.manual_seed(0)
    model = build((4, 8, 8))
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.3, 0.3)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.3, 0.3)
    model.eval()
    path = tmp_path / "resnet.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter is deprecated
        torch.onnx.export(model, (torch.zeros(1, 1, 28, 28),), str(path),
                          input_names=["image"], output_names=["logits"], dynamo=False,
                          do_constant_folding=False, training=torch.onnx.TrainingMode.EVAL)
    X = np.random.default_rng(3).random((6, 784)).astype(np.float32)
    with torch.no_grad():
        theirs = model(torch.from_numpy(X.reshape(-1, 1, 28, 28))).numpy()
    arrays = {k: v.numpy() for k, v in model.state_dict().items()}
    arch = ARCH.replace("block(8)", "block(4)").replace("16", "8").replace("32", "8")
    for t in (target_from_onnx(path, 0, 1),
              target_from_state_dict(arrays, 0, 1, architecture=arch,
                                     input_shape=(1, 28, 28))):
        assert _topology(t)[2] == (2, (1, "identity"))
        assert np.allclose(t.evaluate_float(X.astype(np.float64)), theirs, rtol=1e-4,
                           atol=1e-4)


def test_pads_computed_from_constants_are_read():
    """TorchScript computes an ``F.pad``'s pads from constants (``ConstantOfShape``,
    ``Concat``, ``Reshape``, …): small integer computations are evaluated; the target equals
    the one with the pads stored."""
    model = small_resnet_onnx(3, shortcut="optionA")
    computed = copy.deepcopy(model)
    pads = next(t for t in computed.graph.initializer if t.name == "pads")
    values = numpy_helper.to_array(pads)
    computed.graph.initializer.remove(pads)
    computed.graph.initializer.extend([
        numpy_helper.from_array(np.array([5], dtype=np.int64), "five"),
        numpy_helper.from_array(values[5:], "rest")])
    nodes = list(computed.graph.node)
    k = next(i for i, n in enumerate(nodes) if n.name == "b2_zero_channels")
    nodes[k:k] = [helper.make_node("ConstantOfShape", ["five"], ["zeros"], name="zeros",
                                   value=helper.make_tensor("v", onnx.TensorProto.INT64, [1],
                                                            [0])),
                  helper.make_node("Concat", ["zeros", "rest"], ["pads"], name="cat", axis=0)]
    del computed.graph.node[:]
    computed.graph.node.extend(nodes)
    a, b = target_from_onnx(model, 0, 1), target_from_onnx(computed, 0, 1)
    assert a == b and a.wiring == b.wiring
    # a float computation from constants is not evaluated: it stays a refusal
    floaty = copy.deepcopy(computed)
    floaty.graph.initializer.append(numpy_helper.from_array(np.ones(1, np.float32), "f"))
    cat = next(n for n in floaty.graph.node if n.name == "cat")
    cat.op_type, cat.input[:] = "Cast", ["f"]
    with pytest.raises(InputError, match="'cat' \\(Cast\\) reads 0 computed tensors"):
        target_from_onnx(floaty, 0, 1)


def test_an_option_a_torch_block_reads_from_the_torchscript_export(tmp_path):
    """``F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, 2, 2))`` as TorchScript writes it (Slices, and
    pads computed from constants): a selection skip, equal to PyTorch."""
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F
    from torch import nn

    class OptionA(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Conv2d(1, 4, 3, 1, 1)
            self.c1, self.b1 = nn.Conv2d(4, 8, 3, 2, 1), nn.BatchNorm2d(8)
            self.c2, self.b2 = nn.Conv2d(8, 8, 3, 1, 1), nn.BatchNorm2d(8)
            self.fc = nn.Linear(8, 3)

        def forward(self, x):
            x = torch.relu(self.stem(x))
            h = torch.relu(self.b1(self.c1(x)))
            h = torch.relu(self.b2(self.c2(h)) + F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, 2, 2)))
            return self.fc(torch.flatten(F.adaptive_avg_pool2d(h, 1), 1))

    torch.manual_seed(1)
    model = OptionA().eval()
    path = tmp_path / "a.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.zeros(1, 1, 8, 8),), str(path), input_names=["x"],
                          output_names=["y"], dynamo=False)
    t = target_from_onnx(path, 0, 1)
    assert _topology(t)[2] == (2, (1, "selection"))
    X = np.random.default_rng(0).random((5, 64)).astype(np.float32)
    with torch.no_grad():
        theirs = model(torch.from_numpy(X.reshape(-1, 1, 8, 8))).numpy()
    assert np.allclose(t.evaluate_float(X.astype(np.float64)), theirs, rtol=1e-5, atol=1e-5)


SMALL_ARCH = ("conv(padding=1),bn,relu,block(2),block(3,stride=2,proj),globalavgpool,flatten,"
              "linear")


def _small_state_dict(model) -> dict[str, np.ndarray]:
    """The parameters of :func:`small_resnet_onnx` (BatchNorm form) in module order, under
    state-dict names: the stem, the blocks' conv1, bn1, conv2, bn2 (and the projection), fc."""
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    return {k: v for k, v in inits.items() if k.endswith(("weight", "bias", "mean", "var"))}


def test_a_state_dict_file_that_declares_its_architecture(tmp_path):
    """An ``.npz`` state dict with ``architecture`` and ``input_shape`` members is read by the
    one loader (CLI and API): the same topology as the ONNX file of the same weights, and the
    same function up to the BatchNorm ε's rounding (float32 in ONNX)."""
    model = small_resnet_onnx(4)
    arrays = _small_state_dict(model)
    path = tmp_path / "resnet_state.npz"
    np.savez(path, **arrays, architecture=np.array([SMALL_ARCH]),
             input_shape=np.array([1, 6, 6]))
    from exactnorm import api

    t = api.load_target(path, box="0:1")
    u = target_from_onnx(model, 0, 1)
    assert t.wiring == u.wiring and not t.is_chain
    X = np.random.default_rng(4).random((8, 36))
    assert np.allclose(t.evaluate_float(X), u.evaluate_float(X), rtol=1e-6, atol=1e-6)
    with pytest.raises(InputError, match="declares its architecture; --activations"):
        api.load_target(path, box="0:1", activations="relu")
    np.savez(tmp_path / "half.npz", **arrays, architecture=np.array([SMALL_ARCH]))
    with pytest.raises(InputError, match="needs both members 'architecture' and 'input_shape'"):
        api.load_target(tmp_path / "half.npz", box="0:1")
    big = dict(arrays, extra=np.zeros((2, 5000)))
    np.savez(tmp_path / "big.npz", **big, architecture=np.array([SMALL_ARCH]),
             input_shape=np.array([1, 6, 6]))
    with pytest.raises(LimitExceededError, match="above the width limit"):
        api.load_target(tmp_path / "big.npz", box="0:1")


def test_the_cli_certifies_a_declared_state_dict(tmp_path):
    from exactnorm.certificate import load_certificate, read_networks
    from exactnorm.cli import main

    path = tmp_path / "resnet_state.npz"
    np.savez(path, **_small_state_dict(small_resnet_onnx(4, den=8)),
             architecture=np.array([SMALL_ARCH]), input_shape=np.array([1, 6, 6]))
    cert = tmp_path / "c.json.gz"
    assert main(["certify", str(path), "--box", "0:1", "--seed", "0", "--no-check", "--out",
                 str(cert)]) == 0
    g, f = read_networks(load_certificate(cert))
    assert not g.is_chain and f.residuals
    for k in range(3):
        x = [Fraction((k * 5 + 3 * i) % 9, 8) for i in range(36)]
        assert f.evaluate(x) == g.evaluate(x)


def test_a_pt_state_dict_that_declares_its_architecture(tmp_path):
    torch = pytest.importorskip("torch")
    model = small_resnet_onnx(4)
    state = {k: torch.from_numpy(v) for k, v in _small_state_dict(model).items()}
    state.update(architecture=SMALL_ARCH, input_shape=[1, 6, 6])
    torch.save(state, tmp_path / "r.pt")
    from exactnorm import api

    t = api.load_target(tmp_path / "r.pt", box="0:1")
    u = target_from_onnx(model, 0, 1)
    assert t.wiring == u.wiring
    X = np.random.default_rng(5).random((4, 36))
    assert np.allclose(t.evaluate_float(X), u.evaluate_float(X), rtol=1e-6, atol=1e-6)
