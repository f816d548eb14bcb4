"""The checker's closed registry of layer kinds (``exactnorm.checker.kinds.RULES``): complete for
the format's words, every hook of the contract implemented by every kind, and the kind-free
reader and walk reaching each kind only through it.

Behaviour is pinned elsewhere (the verdicts and messages of tests/test_checker*.py, the golden
certificates); these tests keep the registry honest, so that a kind missing from it, or a hook
missing from a kind, fails here instead of in a user's check.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from exactnorm.checker import document, walk
from exactnorm.checker.kinds import RULES
from exactnorm.checker.kinds.base import Kind
from exactnorm.checker.vocabulary import LAYER_KINDS

ROOT = Path(__file__).resolve().parent.parent.parent
HOOKS = sorted(Kind.__abstractmethods__)


def test_the_registry_has_exactly_the_formats_kinds():
    assert tuple(RULES) == LAYER_KINDS


def test_every_hook_is_called_by_the_kind_free_reader_or_walk():
    """No hook of the contract is dead: the reader or the walk calls each (``.hook(``)."""
    source = inspect.getsource(document) + inspect.getsource(walk)
    assert HOOKS and [hook for hook in HOOKS if f".{hook}(" not in source] == []


@pytest.mark.parametrize("word", LAYER_KINDS)
def test_every_kind_implements_every_hook_in_its_own_module(word):
    rules = RULES[word]
    assert isinstance(rules, Kind) and rules.name == word
    cls = type(rules)
    assert cls.__module__ == f"exactnorm.checker.kinds.{word}"
    assert not getattr(cls, "__abstractmethods__", None)
    for hook in HOOKS:
        method = getattr(cls, hook)
        assert method is not getattr(Kind, hook), (word, hook)
        # the same parameters as the contract, so the kind-free callers fit every kind
        assert list(inspect.signature(method).parameters) == \
            list(inspect.signature(getattr(Kind, hook)).parameters), (word, hook)


def test_a_kind_missing_a_hook_cannot_be_registered():
    """The check above can fail: a kind without its last hook is not even constructible."""
    dense = type(RULES[LAYER_KINDS[0]])
    partial = type("Partial", (Kind,), {"name": "partial",
                                        **{hook: getattr(dense, hook) for hook in HOOKS[:-1]}})
    with pytest.raises(TypeError, match=HOOKS[-1]):
        partial()


def test_the_architecture_document_lists_every_hook():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert "checker/kinds/<kind>.py" in text
    missing = [hook for hook in HOOKS if f"`{hook}`" not in text]
    assert not missing, missing


def test_the_reader_returns_frozen_typed_records(tmp_path):
    """The reader's declared API: every target layer a ``TargetRecord``, every frozen layer a
    ``FrozenRecord`` (immutable: a consumer cannot change what the walk checks), windows as
    ``Geometry``, and each record's kind a word of ``LAYER_KINDS``."""
    from exactnorm import api
    from exactnorm.checker.document import read_certificate
    from exactnorm.checker.records import FrozenRecord, Geometry, TargetRecord
    from tests.model.test_conv import lenet_like

    doc = api.certificate_document(api.certify(lenet_like(), seed=0, jobs=1))
    _, _, target, layers, cps, _ = read_certificate(doc, 10**6)
    assert all(type(t) is TargetRecord for t in target)
    assert all(type(L) is FrozenRecord for L in layers)
    assert {t.kind for t in target} | {L.kind for L in layers} <= set(LAYER_KINDS)
    windowed = [t for t in target if t.geom is not None]
    assert windowed and all(type(t.geom) is Geometry for t in windowed)
    assert [t.width for t in target][-1] == layers[cps[-1] - 1].V.nrows
    with pytest.raises(AttributeError):
        layers[0].input = 1  # type: ignore[misc]
