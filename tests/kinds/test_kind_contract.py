"""One contract for every registered layer kind (SymPy's ``test_xxm`` style: the kinds are meant
to be interchangeable, so the same tests run on each).

For every kind of the format's ``LAYER_KINDS``:

* every registry (operators, readers, construction, certificate codec, exporters, strategies)
  has it, under its word; the kind is one operator class with the protocol's members, and the
  three roles around it are the same classes for every kind;
* the operator's exact map (one vector, a batch of columns) equals a dense unfolded reference
  built here from the kind's definition alone (plain ``Fraction`` arithmetic, no model code),
  and its interval image of a box is the exact range of that matrix; the target and frozen
  layers around it equal the reference with the roles' bias, γ and β per group;
* ``interval`` contains ``evaluate`` at the box's points (and is ``evaluate`` on a point box);
  ``evaluate_float`` agrees with ``evaluate`` up to rounding;
* construction → certificate → both checkers (``exactnorm.checker`` and the FLINT one) VALID
  with equal verdicts, and the certificate reads back to the same networks;
* hostile edits of the kind's fields are refused by both checkers with the same rule, message,
  layer and neuron.

A kind added to the vocabulary without its model, realizer, codec, strategy, reference or hostile
edits fails here, by name.
"""

from __future__ import annotations

import copy
import dataclasses
import random
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from flint import fmpq, fmpq_mat
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from exactnorm import api, checker, checker_flint
from exactnorm.certificate import read_networks
from exactnorm.certificate.kinds import CODECS
from exactnorm.checker.vocabulary import LAYER_KINDS
from exactnorm.constructions.kinds import REALIZERS
from exactnorm.exact.linalg import clear_denominators
from exactnorm.model import layers as roles
from exactnorm.model.interop.kinds import READERS
from exactnorm.model.operators import OPERATORS
from exactnorm.model.operators.base import Operator
from exactnorm.outputs.export.kinds import EXPORTERS
from exactnorm.strategies import kind_targets
from exactnorm.strategies.kinds import LAYERS

ALL = sorted(LAYER_KINDS)

# --------------------------------------------------------------------------- registries

REGISTRIES: dict[str, dict[str, Any]] = {
    "exactnorm.model.operators.OPERATORS": OPERATORS,
    "exactnorm.model.interop.kinds.READERS": READERS,
    "exactnorm.constructions.kinds.REALIZERS": REALIZERS,
    "exactnorm.certificate.kinds.CODECS": CODECS,
    "exactnorm.outputs.export.kinds.EXPORTERS": EXPORTERS,
    "exactnorm.strategies.kinds.LAYERS": LAYERS,
}


@pytest.mark.parametrize("name", sorted(REGISTRIES))
def test_every_registry_has_exactly_the_formats_kinds(name):
    assert set(REGISTRIES[name]) == set(LAYER_KINDS), name


@pytest.mark.parametrize("kind", ALL)
def test_each_registry_entry_names_its_own_kind(kind):
    assert OPERATORS[kind].kind == kind
    assert REALIZERS[kind].kind == CODECS[kind].kind == EXPORTERS[kind].kind == kind
    assert kind == READERS[kind].NAME
    assert CODECS[kind].since_version in (1, 2)


def _protocol_members(protocol: type) -> set[str]:
    """The members a protocol class declares: annotations, methods and properties."""
    own = {name for name in vars(protocol) if not name.startswith("_")}
    return own | set(getattr(protocol, "__annotations__", {}))


def test_the_operator_protocol_has_at_most_ten_members():
    members = _protocol_members(Operator)
    assert "apply" in members and "kind" in members  # the count sees what it should
    assert len(members) <= 10, sorted(members)


@pytest.mark.parametrize("kind", ALL)
def test_a_kind_is_one_operator_class_with_the_protocol(kind):
    cls = OPERATORS[kind]
    module = __import__(cls.__module__, fromlist=["*"])
    defined = [v for v in vars(module).values()
               if isinstance(v, type) and v.__module__ == module.__name__]
    assert defined == [cls], f"{module.__name__} defines {defined}: one class per kind"
    for name in _protocol_members(Operator):
        assert hasattr(cls, name) or name in getattr(cls, "__dataclass_fields__", {}), name


def test_the_roles_are_three_classes_for_every_kind():
    defined = {name for name, v in vars(roles).items()
               if isinstance(v, type) and v.__module__ == roles.__name__
               and not name.startswith("_")}  # their shared base is private
    assert defined == {"TargetLayer", "FrozenLayer", "FloatLayer"}


# --------------------------------------------------------------------------- references


def _q(x: Any) -> Fraction:
    if hasattr(x, "p"):  # fmpq
        return Fraction(int(x.p), int(x.q))
    return Fraction(x) if isinstance(x, (int, Fraction)) else Fraction(int(x))  # fmpz


def _rows(M: Any) -> list[list[Fraction]]:
    return [[_q(x) for x in row] for row in M.tolist()]


def _window_matrix(g: Any, K: list[list[Fraction]] | None,
                   groups: int = 1) -> list[list[Fraction]]:
    """The dense matrix of a window map from its definition: output (o, y, x) reads input
    (c, y·s − p + u·d, x·s − p + v·d), zero outside, for the channels ``c`` of its group (a
    group's kernel row holds ``C/groups`` channels); ``K`` None is the mean of one channel."""
    C, H, W = g.input_shape
    (kh, kw), (sh, sw) = g.kernel_shape, g.stride
    (ph, pw), (dh, dw) = g.padding, g.dilation
    Ho = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    Wo = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = []
    outputs = len(K) if K is not None else C
    for o in range(outputs):
        first = o // (outputs // groups) * (C // groups)
        for y in range(Ho):
            for x in range(Wo):
                row = [Fraction(0)] * (C * H * W)
                for c in (range(first, first + C // groups) if K is not None else [o]):
                    for u in range(kh):
                        for v in range(kw):
                            r, s = y * sh - ph + u * dh, x * sw - pw + v * dw
                            if 0 <= r < H and 0 <= s < W:
                                row[(c * H + r) * W + s] += (
                                    Fraction(1, kh * kw) if K is None
                                    else K[o][((c - first) * kh + u) * kw + v])
                out.append(row)
    return out


def _channel_means(shape: tuple[int, int, int]) -> list[list[Fraction]]:
    """Row c has 1/(H·W) at the H·W entries of channel c (C order), 0 elsewhere."""
    C, H, W = shape
    n = H * W
    return [[Fraction(1, n) if c * n <= t < (c + 1) * n else Fraction(0) for t in range(C * n)]
            for c in range(C)]


#: kind → the dense matrix ``A`` of its operator, from the kind's definition
UNFOLD: dict[str, Callable[[Any], list[list[Fraction]]]] = {
    "dense": lambda op: _rows(op.weight),
    "conv": lambda op: _window_matrix(op.geometry, _rows(op.weight), op.groups),
    "avgpool": lambda op: _window_matrix(op.geometry, None),
    "globalavgpool": lambda op: _channel_means(op.input_shape)}


def _per_group(values: Any, n: int, empty: Fraction) -> list[Fraction]:
    """One entry per output: a group's value over its consecutive outputs (``empty`` when the
    layer has no groups: a fixed map)."""
    if not len(values):
        return [empty] * n
    per = n // len(values)
    return [_q(v) for v in values for _ in range(per)]


def _target_ref(layer: Any) -> tuple[list[list[Fraction]], list[Fraction]]:
    """``(M, b)`` with the target layer ``σ(M a + b)``."""
    M = UNFOLD[layer.kind](layer.operator)
    return M, _per_group(layer.bias, len(M), Fraction(0))


def _frozen_ref(layer: Any) -> tuple[list[list[Fraction]], list[Fraction], list[Fraction]]:
    """``(M, γ, β)`` of a frozen layer, per output entry: ``u = γ ⊙ (M a) + β``."""
    M = UNFOLD[layer.kind](layer.operator)
    return M, _per_group(layer.gamma, len(M), Fraction(1)), \
        _per_group(layer.beta, len(M), Fraction(0))


def _affine(M: list[list[Fraction]], a: list[Fraction]) -> list[Fraction]:
    return [sum((w * x for w, x in zip(row, a)), Fraction(0)) for row in M]


def _act(name: str, v: list[Fraction]) -> list[Fraction]:
    return [max(x, Fraction(0)) for x in v] if name == "relu" else v


def _points(t: Any, n: int, seed: int) -> list[list[Fraction]]:
    rng = random.Random(seed)
    lo, hi = [_q(x) for x in t.lower], [_q(x) for x in t.upper]
    pts = [lo, hi]
    for _ in range(n):
        pts.append([a + (b - a) * Fraction(rng.randrange(0, 9), 8) for a, b in zip(lo, hi)])
    return pts


def _values(v: Any) -> list[Fraction]:
    return [_q(x) for x in v]


def test_the_references_cover_every_kind():
    assert set(UNFOLD) == set(HOSTILE) == set(INTERESTING) == set(LAYER_KINDS)


# --------------------------------------------------------------------------- the model

SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.mark.parametrize("kind", ALL)
def test_exact_evaluation_equals_the_unfolded_reference(kind):
    @SETTINGS
    @given(kind_targets(kind), st.integers(0, 3))
    def check(t, seed):
        for x in _points(t, 2, seed):
            a = x
            for layer in t.layers:
                M, b = _target_ref(layer)
                ref = _act(layer.activation, [m + c for m, c in zip(_affine(M, a), b)])
                assert _values(layer.evaluate(tuple(api_q(v) for v in a))) == ref
                a = ref
            assert _values(t.evaluate(x)) == a

    check()


@pytest.mark.parametrize("kind", ALL)
def test_the_operator_on_columns_and_its_interval_are_the_references(kind):
    from flint import fmpq_mat

    from exactnorm.model.batch import from_columns, to_columns

    @SETTINGS
    @given(kind_targets(kind, dense_head=False), st.integers(0, 3))
    def check(t, seed):
        op = t.layers[0].operator
        M = UNFOLD[kind](op)
        pts = _points(t, 2, seed)
        X = fmpq_mat([[api_q(x[r]) for x in pts] for r in range(len(pts[0]))])
        got = [[_q(v) for v in row] for row in to_columns(op.apply_columns(from_columns(X)))
               .tolist()]
        assert got == [list(col) for col in zip(*(_affine(M, x) for x in pts))]
        lo, hi = [_q(v) for v in t.lower], [_q(v) for v in t.upper]
        mn = [sum((w * (a if w > 0 else b) for w, a, b in zip(row, lo, hi)), Fraction(0))
              for row in M]
        mx = [sum((w * (b if w > 0 else a) for w, a, b in zip(row, lo, hi)), Fraction(0))
              for row in M]
        assert [_values(v) for v in op.interval(t.lower, t.upper)] == [mn, mx]

    check()


@pytest.mark.parametrize("kind", ALL)
def test_the_magnitude_of_an_operator_is_its_matrix_in_absolute_value(kind):
    """The interval rule of every kind reads ``|A|`` from :func:`~exactnorm.model.operators.base.
    magnitude`: each entry of the kind's matrix is one weight entry or 0, a fixed map's are
    ``≥ 0``."""
    from exactnorm.model.operators.base import magnitude

    @SETTINGS
    @given(kind_targets(kind, dense_head=False))
    def check(t):
        op = t.layers[0].operator
        assert UNFOLD[kind](magnitude(op)) == [[abs(x) for x in row] for row in UNFOLD[kind](op)]

    check()


def api_q(x: Fraction) -> Any:
    from flint import fmpq

    return fmpq(x.numerator, x.denominator)


@pytest.mark.parametrize("kind", ALL)
def test_interval_contains_evaluate_and_is_a_point_on_a_point_box(kind):
    @SETTINGS
    @given(kind_targets(kind, dense_head=False), st.integers(0, 3))
    def check(t, seed):
        layer = t.layers[0]
        lo, hi = layer.interval(t.lower, t.upper)
        assert len(lo) == len(hi) == layer.width
        for x in _points(t, 3, seed):
            v = layer.evaluate(tuple(api_q(a) for a in x))
            assert all(a <= y <= b for a, y, b in zip(lo, v, hi))
        point = tuple(api_q(a) for a in _points(t, 1, seed)[-1])
        assert layer.interval(point, point) == (layer.evaluate(point),) * 2

    check()


@pytest.mark.parametrize("kind", ALL)
def test_float_evaluation_agrees_with_exact(kind):
    @SETTINGS
    @given(kind_targets(kind), st.integers(0, 3))
    def check(t, seed):
        xs = _points(t, 2, seed)
        X = np.array([[float(a) for a in x] for x in xs])
        got = t.evaluate_float(X)
        want = np.array([[float(v) for v in t.evaluate(x)] for x in xs])
        assert np.allclose(got, want, rtol=1e-9, atol=1e-9)
        layer = t.layers[0]
        assert np.allclose(layer.evaluate_float(X), [[float(v) for v in layer.evaluate(
            tuple(api_q(a) for a in x))] for x in xs], rtol=1e-9, atol=1e-9)

    check()


@pytest.mark.parametrize("kind", ALL)
def test_float_products_of_integers_are_exact_for_every_batch_size(kind):
    """``apply_float`` multiplies a whole batch at once; on integer weights and inputs (every
    sum an integer far below 2^53) it is the exact map entry for entry, for batches of 0, 1
    and 5 samples, whatever the order of its sums: the residue evaluation relies on it
    (``exactnorm.model.residues``, item 1). A fixed map gives its means, within rounding."""
    @SETTINGS
    @given(kind_targets(kind), st.integers(0, 3))
    def check(t, seed):
        op = t.layers[0].operator
        if op.weight is not None:
            num, _ = clear_denominators(op.weight)
            exact_op = dataclasses.replace(op, weight=fmpq_mat(num))
            float_op = dataclasses.replace(op, weight=np.array(
                [[float(int(v)) for v in row] for row in num.tolist()]))
        else:
            exact_op = float_op = op
        rng = np.random.default_rng(seed)
        for n in (0, 1, 5):
            A = rng.integers(-9, 10, size=(n, op.shape[1]))
            got = float_op.apply_float(A.astype(np.float64))
            assert got.shape == (n, op.shape[0])
            want = [[_q(v) for v in exact_op.apply(tuple(fmpq(int(a)) for a in row))]
                    for row in A]
            if op.weight is not None:
                assert got.tolist() == [[float(v) for v in row] for row in want]
            elif n:
                assert np.allclose(got, [[float(v) for v in row] for row in want],
                                   rtol=1e-15, atol=0)

    check()


# --------------------------------------------------------------------------- construction


def _both(doc: dict) -> Any:
    v1 = checker.check_certificate(copy.deepcopy(doc))
    v2 = checker_flint.check_certificate(copy.deepcopy(doc))
    assert (v1.ok, v1.rule, v1.message, v1.layer, v1.neuron) == \
        (v2.ok, v2.rule, v2.message, v2.layer, v2.neuron)
    return v1


@pytest.mark.parametrize("kind", ALL)
def test_construction_certificate_and_both_checkers(kind):
    @settings(max_examples=8, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(kind_targets(kind), st.integers(0, 2))
    def check(t, seed):
        c = api.certify(t, seed=seed, jobs=1)
        assert any(layer.kind == kind for layer in c.network.layers)
        # the frozen network against its own unfolded reference, checkpoint by checkpoint
        for x in _points(t, 1, seed):
            nodes = [x]
            for layer in c.network.layers:
                M, g, b = _frozen_ref(layer)
                u = [gi * m + bi for gi, m, bi in zip(g, _affine(M, nodes[layer.input]), b)]
                h = _act(layer.activation, u)
                for s in layer.skips:
                    h = [y + p for y, p in zip(h, _affine(_rows(s.weight), nodes[s.source]))]
                nodes.append(h)
            # the model's exact frozen evaluation (plain and integer-over-one-denominator)
            assert [_values(n) for n in c.network.evaluate_nodes(x)] == nodes
            assert [_values(n) for n in c.network.evaluate_checkpoints(x)] == \
                [nodes[cp] for cp in c.network.checkpoints]
            X = np.array([[float(v) for v in x]])
            assert np.allclose(c.network.evaluate_float(X)[0], [float(v) for v in nodes[-1]],
                               rtol=1e-6, atol=1e-6)
            a = x
            for layer, cp in zip(t.layers, c.network.checkpoints):
                a = _values(layer.evaluate(tuple(api_q(v) for v in a)))
                assert nodes[cp] == a
        doc = api.certificate_document(c)
        verdict = _both(doc)
        assert verdict.ok, verdict
        target, network = read_networks(doc)
        assert target == c.target and network == c.network

    check()


# --------------------------------------------------------------------------- hostile edits


def _frozen_of(doc: dict, kind: str) -> list[dict]:
    return [L for L in doc["network"]["layers"] if L.get("kind", "dense") == kind]


def _bump(obj: dict, key: str) -> None:
    nums = obj[key]["num"] if isinstance(obj[key], dict) else obj[key]
    first = nums[0] if not isinstance(nums[0], list) else nums[0]
    if isinstance(first, list):
        first[0] = str(int(first[0]) + 1)
    else:
        nums[0] = str(int(nums[0]) + 1)


def _edit_key(L: dict) -> None:
    L["weight"]["random"]["key"][-1] += 1


def _grow(key: str, by: int = 1) -> Callable[[dict], None]:
    def edit(L: dict) -> None:
        L[key] = [v + by for v in L[key]]
    return edit


def _set(key: str, value: Any) -> Callable[[dict], None]:
    def edit(L: dict) -> None:
        L[key] = value
    return edit


#: kind → named edits of one frozen layer of that kind (each must make the certificate invalid)
HOSTILE: dict[str, dict[str, Callable[[dict], None]]] = {
    "dense": {"gamma": lambda L: _bump(L, "gamma"), "beta": lambda L: _bump(L, "beta"),
              "weight": _edit_key, "input": _set("input", 99)},
    "conv": {"gamma": lambda L: _bump(L, "gamma"), "beta": lambda L: _bump(L, "beta"),
             "weight": _edit_key, "stride": _grow("stride"), "padding": _grow("padding"),
             "dilation": _grow("dilation"), "kernel_shape": _grow("kernel_shape"),
             "input_shape": _grow("input_shape"),
             "group": lambda L: L.update(group=L.get("group", 1) + 1)},
    "avgpool": {"kernel_shape": _set("kernel_shape", [1, 1]), "stride": _grow("stride"),
                "padding": _set("padding", [1, 1]), "activation": _set("activation", "relu"),
                "input": _set("input", 99)},
    "globalavgpool": {"input_shape": lambda L: L.update(input_shape=L["input_shape"][::-1]),
                      "activation": _set("activation", "relu"), "input": _set("input", 99),
                      "gamma": _set("gamma", [1]), "kind": _set("kind", "avgpool")},
}

def _open_box(t: Any) -> bool:
    # on a point box every γ reads a constant input: an edit can be harmless there
    return all(lo < hi for lo, hi in zip(t.lower, t.upper))


#: kind → what makes a small target of that kind worth attacking (a non-trivial window, a box
#: with interior)
INTERESTING: dict[str, Callable[[Any], bool]] = {
    "dense": lambda t: _open_box(t) and t.layers[0].width >= 2 and t.layers[0].input_size >= 2,
    "conv": lambda t: _open_box(t) and t.layers[0].operator.geometry.kernel_shape != (1, 1)
    and t.layers[0].operator.geometry.positions >= 2,
    "avgpool": lambda t: _open_box(t) and t.layers[0].operator.geometry.kernel_shape == (2, 2),
    # a reshaped input_shape is another map only when the channels change
    "globalavgpool": lambda t: _open_box(t) and t.layers[0].operator.input_shape[0] >= 2
    and t.layers[0].operator.input_shape[0] != t.layers[0].operator.input_shape[2],
}


@pytest.fixture(scope="module")
def attacked() -> dict[str, dict]:
    docs = {}
    for kind in ALL:
        t = find(kind_targets(kind, dense_head=True, open_box=True), INTERESTING[kind],
                 # the first example found, the same every run (no shrinking: it is slow and the
                 # smallest example is not the most interesting one)
                 settings=settings(database=None, max_examples=500, deadline=None,
                                   derandomize=True, phases=[Phase.generate],
                                   suppress_health_check=list(HealthCheck)))
        docs[kind] = api.certificate_document(api.certify(t, seed=0, jobs=1))
    return docs


@pytest.mark.parametrize("kind, edit", [(k, e) for k in ALL for e in sorted(HOSTILE[k])])
def test_hostile_edits_of_a_kinds_fields_are_refused_identically(attacked, kind, edit):
    doc = copy.deepcopy(attacked[kind])
    assert _both(doc).ok
    targets = _frozen_of(doc, kind)
    assert targets, f"no frozen {kind} layer to attack"
    HOSTILE[kind][edit](targets[0])
    verdict = _both(doc)
    assert not verdict.ok, (kind, edit)
