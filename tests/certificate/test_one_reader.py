"""The package's one exact reader (exactnorm.certificate.read_kinds) is the checker's reader plus
a change of representation: every edit of a document either reads back or is refused with an
``InputError`` naming one of the checker's rules, never a traceback; what the checker's reader
refuses, the package refuses with the same rule; and a document that reads back gives the
networks the writer wrote (evaluated exactly at points of the box).
"""

from __future__ import annotations

import copy
import re

import pytest
from flint import fmpq

from exactnorm.certificate import certificate_document, read_networks, read_target
from exactnorm.checker.document import read_certificate
from exactnorm.checker.numbers import CertificateError
from exactnorm.constructions.plan import construct
from exactnorm.errors import ExactnormError, InputError
from exactnorm.model.network import TargetNetwork
from tests.model.test_conv import lenet_like


@pytest.fixture(scope="module")
def small():
    c = construct(lenet_like(), seed=0)
    return c, certificate_document(c)


def _edits(doc):
    """Every document with one key of one layer deleted, or its value replaced by a string."""
    for section in ("target", "network"):
        for n, layer in enumerate(doc[section]["layers"]):
            for key in list(layer):
                for how in ("drop", "text"):
                    bad = copy.deepcopy(doc)
                    if how == "drop":
                        del bad[section]["layers"][n][key]
                    else:
                        bad[section]["layers"][n][key] = "x"
                    yield f"{section} {n} {key} {how}", bad


def test_the_reader_gives_back_the_construction(small):
    c, doc = small
    g, f = read_networks(doc)
    assert g == c.target and read_target(doc) == c.target
    assert f.checkpoints == c.network.checkpoints
    x = [fmpq(k % 3, 2) for k in range(len(g.lower))]
    assert f.evaluate_checkpoints(x) == c.network.evaluate_checkpoints(x)


def test_every_edit_reads_back_or_is_refused_with_the_checkers_rule(small):
    _, doc = small
    refused = 0
    for what, bad in _edits(doc):
        try:
            read_certificate(copy.deepcopy(bad), 1000)
            checker_rule = None
        except CertificateError as exc:
            checker_rule = exc.rule
        try:
            read_networks(bad)
        except InputError as exc:
            refused += 1
            rule = re.match(r"certificate is malformed \(rule (\w+)\)", str(exc))
            assert rule is not None and rule.group(1) == checker_rule, (what, str(exc))
            continue
        except ExactnormError as exc:  # a model-level refusal of a document the rules accept
            assert checker_rule is None, (what, exc)
            continue
        assert checker_rule is None, what
    assert refused > 10


def test_not_a_document_is_an_input_error():
    for bad in (None, [], {"format": "exactnorm.certificate"}, {"format": "other"}):
        with pytest.raises(InputError, match="rule format"):
            read_networks(bad)
        with pytest.raises(InputError, match="rule format"):
            read_target(bad)


def test_a_convolutional_document_written_out_reads_back_the_same(small):
    """expand_document writes a kernel given by reference ([c, C, kh, kw]) as its explicit
    c × C·kh·kw matrix with the record as its source; the checker's reader compares the two, and
    the networks are the same."""
    from exactnorm.certificate import expand_document

    c, doc = small
    full = expand_document(doc)
    conv = next(L for L in full["network"]["layers"] if L.get("kind") == "conv")
    assert isinstance(conv["weight"], list) and len(conv["source"]["shape"]) == 4
    g, f = read_networks(full)
    assert g == c.target and f.layers == read_networks(doc)[1].layers
    edited = copy.deepcopy(full)
    edited["network"]["layers"][0]["weight"][0][0] = "12345"
    with pytest.raises(InputError, match="rule provenance"):
        read_networks(edited)


# ------------------------------------------------------------------ one loader per role


def _public_network_loaders() -> dict[str, set]:
    """Every public function named ``load_*`` in every module of the package whose return
    annotation is a network, by name (a name bound to two functions, or two names, fail)."""
    import importlib
    import inspect
    import pkgutil

    import exactnorm

    found: dict[str, set] = {}
    for info in pkgutil.walk_packages(exactnorm.__path__, "exactnorm."):
        if info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional extra (torch) that is not installed
            continue
        for name, obj in vars(module).items():
            if not name.startswith("load_") or not inspect.isfunction(obj) \
                    or not obj.__module__.startswith("exactnorm"):
                continue
            returns = str(inspect.signature(obj).return_annotation)
            if "Network" in returns:
                found.setdefault(name, set()).add(obj)
    return found


def test_one_loader_per_role():
    """One public ``load_target`` and one ``load_frozen``; no other public ``load_*`` returns a
    network (five names loaded a target before: ``model.targets.load_target``,
    ``model.interop.load_target_any`` and its alias ``load_target_file``, the API's
    ``load_target``, the given network's ``load_given``)."""
    from exactnorm import api

    found = _public_network_loaders()
    assert set(found) == {"load_target", "load_frozen"}, sorted(found)
    assert found["load_target"] == {api.load_target}
    assert found["load_frozen"] == {api.load_frozen}


# ------------------------------------------------------------------ target files of every kind


def _kind_targets() -> dict[str, TargetNetwork]:
    """A small target of each kind (its first layer), and a residual one (a layer reading x,
    an identity skip)."""
    from flint import fmpq_mat

    from exactnorm.model.layers import TargetLayer
    from exactnorm.model.network import Wiring
    from exactnorm.model.operators import AvgPool, Conv, ConvGeometry, GlobalAvgPool
    from exactnorm.model.routes import Route, Skip

    q = fmpq

    def dense(W, b, act):
        return TargetLayer(fmpq_mat([[q(*x) if isinstance(x, tuple) else q(x) for x in row]
                                     for row in W]), tuple(q(x) for x in b), act)

    image = ((q(0),) * 8, (q(1),) * 4 + (q(1, 2),) * 4)  # a (2, 2, 2) image
    conv = TargetLayer(Conv(ConvGeometry((2, 2, 2), (2, 1)),
                            fmpq_mat([[1, -2, q(1, 3), 0], [0, 1, 1, q(-1, 2)]])),
                       (q(1, 4), q(-1)), "relu")
    head = dense([[1, -1, 2, 0], [q(1, 2), 1, 0, -1]], [0, q(1, 3)], "identity")
    pool = TargetLayer(AvgPool(ConvGeometry((2, 2, 2), (2, 2), stride=(2, 2))))
    gap = TargetLayer(GlobalAvgPool((2, 2, 2)))
    gap_head = dense([[1, -1], [2, q(1, 5)]], [0, 1], "identity")
    first = dense([[1, -1], [1, 1]], [0, q(1, 2)], "relu")
    second = dense([[-1, 0], [0, 2]], [1, -2], "relu")
    third = dense([[1, q(1, 3)]], [q(-1, 4)], "identity")
    residual = TargetNetwork(
        (first, second, third), (q(-1), q(0)), (q(1), q(2)),
        wiring=(Wiring(0), Wiring(1, Skip(1, Route.identity(2), "identity")), Wiring(0)))
    return {
        "dense": TargetNetwork((first, third), (q(-1), q(0)), (q(1), q(2))),
        "conv": TargetNetwork((conv, head), *image),
        "avgpool": TargetNetwork((pool, gap_head), *image),
        "globalavgpool": TargetNetwork((gap, gap_head), *image),
        "residual": residual,
    }


@pytest.mark.parametrize("kind", ["dense", "conv", "avgpool", "globalavgpool", "residual"])
def test_target_files_of_every_kind_round_trip_through_certify(kind, tmp_path, capsys):
    """A target file is the certificate's ``domain`` and ``target`` sections, of any kind:
    written by ``save_target``, read back equal by the one loader, certified by ``exactnorm
    certify --target``; the certificate's target is the file's, both arithmetics say VALID, and
    the certificate read as a target file gives the same network."""
    import json

    from exactnorm.api import load_target
    from exactnorm.certificate import load_certificate, save_target
    from exactnorm.cli import main
    from tests.helpers import both

    g = _kind_targets()[kind]
    assert (kind == "residual") == (not g.is_chain)
    path = tmp_path / f"{kind}.json"
    save_target(g, path)
    doc = json.loads(path.read_text())
    assert set(doc) == {"domain", "target"}
    assert load_target(path) == g
    out = tmp_path / "c.json"
    assert main(["certify", "--target", str(path), "--out", str(out)]) == 0
    capsys.readouterr()
    cert = load_certificate(out)
    assert read_target(cert) == g and load_target(out) == g
    assert both(cert).ok
    # the certified network equals the target at points of the box, exactly
    _, f = read_networks(cert)
    x = [lo + (hi - lo) * fmpq(k % 3, 2) for k, (lo, hi) in enumerate(zip(g.lower, g.upper))]
    assert f.evaluate_checkpoints(x)[-1] == g.evaluate(x)


def test_a_target_file_without_domain_takes_the_box_and_refuses_two():
    """A file without ``domain`` takes the caller's box (of the dimension its first layer
    declares: the columns of a dense weight, a window's input shape); with both, it is refused;
    unknown top-level keys are refused; ``factors`` and missing activations are the target
    file's own conveniences."""
    from exactnorm.certificate import target_document
    from exactnorm.model.box import Box

    for kind, g in _kind_targets().items():
        doc = target_document(g)
        del doc["domain"]
        lo, hi = Box.of("-1:3").bounds(g.widths[0])
        assert read_target(doc, box=Box.of("-1:3")) == TargetNetwork(g.layers, lo, hi,
                                                                     wiring=g.wiring), kind
        with pytest.raises(InputError, match="no 'domain'"):
            read_target(doc)
    doc = target_document(_kind_targets()["dense"])
    with pytest.raises(InputError, match="own 'domain' and box"):
        read_target(doc, box=Box.of("0:1"))
    with pytest.raises(InputError, match="unknown top-level key 'network'"):
        read_target({**doc, "network": {}})
    plain = copy.deepcopy(doc)
    for layer in plain["target"]["layers"]:
        del layer["activation"]
        layer["factors"] = None
    g = read_target(plain)
    assert [layer.activation for layer in g.layers] == ["relu", "identity"]
