"""The construction plan: runs claimed by each kind's realizer, whole-target options refused for
a target of several kinds, estimates before work, a certificate that does not depend on jobs."""

from __future__ import annotations

import random

import pytest
from flint import fmpq, fmpq_mat

from exactnorm import api
from exactnorm.constructions.choice import choose_construction
from exactnorm.constructions.plan import certify_target, construct, plan_certify
from exactnorm.errors import InputError
from exactnorm.model.network import TargetLayer, TargetNetwork
from exactnorm.model.operators import AvgPool, Conv, ConvGeometry
from tests.certificate.test_golden_certificates import cnn_wide_head, lenet_small


def _wide_head_cnn() -> TargetNetwork:
    """conv 1×10×10 → 4 channels (256 values), then a dense head 256 → 120 → 10 whose Theorem 1
    system (30,720) is far beyond the budget: only planned here, never built."""
    rng = random.Random(3)

    def mat(r, c):
        return fmpq_mat(r, c, [fmpq(rng.randint(-4, 4), 4) for _ in range(r * c)])

    def vec(n):
        return tuple(fmpq(rng.randint(-4, 4), 4) for _ in range(n))

    g = ConvGeometry((1, 10, 10), (3, 3))
    return TargetNetwork((TargetLayer(Conv(g, mat(4, 9)), vec(4), "relu"),
                          TargetLayer(mat(120, 256), vec(120), "relu"),
                          TargetLayer(mat(10, 120), vec(10), "identity")),
                         (fmpq(0),) * 100, (fmpq(1),) * 100)


def test_each_kind_claims_its_run_in_target_order():
    plan = plan_certify(lenet_small(), jobs=1)
    assert [(r.kind, r.first, r.count) for r in plan.runs] == \
        [("conv", 1, 1), ("avgpool", 2, 1), ("conv", 3, 1), ("dense", 4, 1)]
    plan = plan_certify(cnn_wide_head(), max_system=40, jobs=1)
    assert [(r.kind, r.first, r.count) for r in plan.runs][-1] == ("dense", 3, 2)
    assert plan.runs[-1].construction == "tradeoff"
    # a target of dense layers only is one run, planned whole by its kind
    assert plan_certify(api.demo_target()).runs == ()


def test_the_plan_realizes_every_run_at_its_start_node():
    c = construct(lenet_small(), seed=0)
    net = c.network
    # each checkpoint is the last node of its run, and every layer reads an earlier node of its
    # own run (or the previous checkpoint)
    assert len(net.checkpoints) == c.target.depth
    starts = [0, *net.checkpoints[:-1]]
    for start, end in zip(starts, net.checkpoints):
        for layer in net.layers[start:end]:
            assert start <= layer.input < end
    x = [fmpq(k % 3, 3) for k in range(64)]
    assert net.evaluate_checkpoints(x) == [v for v in _target_values(c.target, x)]


def _target_values(t, x):
    a = tuple(fmpq(v) for v in x)
    for layer in t.layers:
        a = layer.evaluate(a)
        yield a


@pytest.mark.parametrize("options, parameter", [
    ({"construction": "theorem1"}, "construction"),
    # block is taken by the convolutions too (input channels per block:
    # tests/constructions/test_conv_blocks.py)
    ({"routing": "mask"}, "routing"),
    ({"rank": 1}, "rank"),
    ({"sparsity": "1/2"}, "sparsity"),
])
def test_whole_target_options_are_refused_for_several_kinds(options, parameter):
    with pytest.raises(InputError) as info:
        plan_certify(lenet_small(), **options)
    assert info.value.parameter == parameter
    assert "conv, avgpool, dense" in str(info.value) and "--" not in str(info.value)


def test_the_estimate_comes_before_the_work_and_covers_every_run():
    plan = plan_certify(_wide_head_cnn(), jobs=1)
    conv, head = plan.runs
    assert conv.estimate.system_size == 4 * 9 and head.construction == "tradeoff"
    # the runs' footprints add up (fixed costs of a phase are paid once)
    assert max(conv.estimate.seconds, head.estimate.seconds) < plan.estimate.seconds \
        <= conv.estimate.seconds + head.estimate.seconds
    assert plan.estimate.certificate_bytes <= conv.estimate.certificate_bytes \
        + head.estimate.certificate_bytes
    assert plan.estimate.depth == conv.estimate.depth + head.estimate.depth
    assert plan.estimate.system_size == max(conv.estimate.system_size, head.estimate.system_size)
    assert plan.note.startswith("conv (run by run): target layer 1 conv") and "tradeoff" in \
        plan.note


def test_the_recorded_choice_does_not_depend_on_jobs():
    """The reason written into the certificate's provenance is the one-process estimate: the
    same bytes on a machine with 1 or 64 cores (with the estimate divided by ``jobs`` it said
    "4 h" on 2 cores and "9 h" on 1)."""
    reasons = {jobs: plan_certify(_wide_head_cnn(), jobs=jobs).runs[-1].choice["reason"]
               for jobs in (1, 2, 7)}
    assert len(set(reasons.values())) == 1
    head = TargetNetwork(_wide_head_cnn().layers[1:], *_wide_head_cnn().interval_boxes()[1])
    # the choice compares one-process estimates whatever the caller's jobs
    assert choose_construction(head, "nonzero:8", jobs=2).reason == reasons[1]
    assert choose_construction(head, "nonzero:8", jobs=1).reason == reasons[1]


def test_jobs_do_not_change_a_composite_certificate():
    one = construct(cnn_wide_head(), seed=1, max_system=40, jobs=1)
    two = construct(cnn_wide_head(), seed=1, max_system=40, jobs=2)
    assert (one.provenance, one.witnesses) == (two.provenance, two.witnesses)
    assert one.network == two.network


def test_a_plan_is_applied_as_planned():
    t = lenet_small()
    plan = plan_certify(t, seed=3, jobs=1)
    c = certify_target(t, plan)
    assert c.name == plan.construction == "conv"
    assert c.provenance["seed"] == 3 and c.provenance["shift_mode"] == "integer"
    assert c.provenance["dense_runs"] == [{"layers": [4, 4], "construction": "theorem1",
                                           "block": None,
                                           "reason": plan.runs[-1].choice["reason"]}]
    pool = TargetLayer(AvgPool(ConvGeometry((1, 4, 4), (2, 2), stride=(2, 2))))
    only_pool = TargetNetwork((pool,), (fmpq(0),) * 16, (fmpq(1),) * 16)
    c = construct(only_pool)
    assert c.provenance["dense_runs"] == [] and c.network.tuned_parameters == 0
