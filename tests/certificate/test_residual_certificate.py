"""The certificate writer for residual networks (/docs/certificate-format.md): a target layer's
``input`` and ``skip``, a checkpoint's ``residual``, version 3 only.

The document is compared with the model it was written from, field by field (the skip's route
read back from its compact form and applied to the source node must give the model's value), so
a writer that drops, moves or rewrites a skip fails here.
"""

from __future__ import annotations

import pytest
from flint import fmpq

from exactnorm.certificate import certificate_document
from exactnorm.constructions.plan import construct
from exactnorm.errors import InputError
from exactnorm.model.routes import Route
from tests.model.test_residual_model import _points, small_resnet


@pytest.fixture(scope="module")
def built():
    c = construct(small_resnet(), seed=0)
    return c, certificate_document(c)


def _route(weight: dict) -> Route:
    if "identity" in weight:
        return Route.identity(weight["identity"])
    return Route(tuple(weight["selection"]), weight["columns"])


def test_target_layers_carry_their_input_and_skip(built):
    c, doc = built
    g = c.target
    for i, entry in enumerate(doc["target"]["layers"], 1):
        w = g.wire(i)
        assert entry.get("input", i - 1) == w.input
        if w.skip is None:
            assert "skip" not in entry
        else:
            skip = entry["skip"]
            assert (skip["from"], skip["kind"]) == (w.skip.source, w.skip.kind)
            assert _route(skip["weight"]) == w.skip.weight


def test_checkpoints_carry_the_residual_that_reproduces_the_target(built):
    c, doc = built
    f, g = c.network, c.target
    layers = doc["network"]["layers"]
    cps = doc["network"]["checkpoints"]
    carried = {j: L["residual"] for j, L in enumerate(layers, 1) if "residual" in L}
    assert set(carried) == {cps[i - 1] for i, w in enumerate(g.wiring, 1) if w.skip}
    x = _points(36, 1, 4)[0]
    nodes = f.evaluate_nodes(x)
    tnodes = g.evaluate_nodes(x)
    for i, w in enumerate(g.wiring, 1):
        if w.skip is None:
            continue
        R = carried[cps[i - 1]]
        assert R["kind"] == w.skip.kind
        # the residual reads the frozen node equal to the target's skip source
        assert nodes[R["from"]] == tnodes[w.skip.source]
        assert _route(R["weight"]).apply(nodes[R["from"]]) == \
            w.skip.weight.apply(tnodes[w.skip.source])


def test_a_chain_writes_no_topology(built):
    from exactnorm.model.targets import demo_target

    doc = certificate_document(construct(demo_target(), seed=0))
    assert not any("input" in L or "skip" in L for L in doc["target"]["layers"])
    assert not any("residual" in L for L in doc["network"]["layers"])


@pytest.mark.parametrize("version", [1, 2])
def test_residual_networks_need_version_3(built, version):
    c, _ = built
    # a dense residual target too: the topology, not the kind, needs version 3
    with pytest.raises(InputError, match="need certificate version [23]"):
        certificate_document(c, version=version)


def test_a_skip_that_is_not_its_kind_is_refused():
    from exactnorm.certificate.write import route_json
    from exactnorm.model.routes import Skip

    bad = Skip(0, Route((1, 0), 2), "selection")
    assert route_json(bad)["weight"] == {"selection": [1, 0], "columns": 2}
    object.__setattr__(bad, "kind", "identity")  # a writer bug: the route is not the identity
    with pytest.raises(InputError, match="not a route of its kind"):
        route_json(bad)


def test_a_dense_residual_target_needs_version_3():
    from flint import fmpq_mat

    from exactnorm.model.layers import TargetLayer
    from exactnorm.model.network import TargetNetwork, Wiring
    from exactnorm.model.routes import Skip

    W = fmpq_mat([[1, -1], [2, 1]])
    g = TargetNetwork((TargetLayer(W, (fmpq(0),) * 2, "relu"), TargetLayer(W, (fmpq(1),) * 2,
                                                                           "relu")),
                      (fmpq(0),) * 2, (fmpq(1),) * 2,
                      wiring=(Wiring(0), Wiring(1, Skip(0, Route.identity(2), "identity"))))
    c = construct(g, seed=0)
    for x in _points(2, 4, 0):
        assert c.network.evaluate(x) == g.evaluate(x)
    for version in (1, 2):
        with pytest.raises(InputError, match="residual networks need certificate version 3"):
            certificate_document(c, version=version)
    assert certificate_document(c)["target"]["layers"][1]["skip"]["weight"] == {"identity": 2}
