"""Helpers of the capacity tests: small given networks, both checkers, witness mutations."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from exactnorm import checker, checker_flint
from exactnorm.checker.vocabulary import OUTPUT_SCALES, WITNESS_KINDS
from exactnorm.model.given import GivenNetwork, given_from_target
from exactnorm.model.network import TargetNetwork


def given(weights: list[list[list[Any]]], acts: list[str]) -> GivenNetwork:
    """A given network with these matrices (biases 0) and activations."""
    d0 = len(weights[0][0])
    g = TargetNetwork.from_lists(weights, [[0] * len(W) for W in weights], acts,
                                 lower=[0] * d0, upper=[1] * d0)
    return given_from_target(g, "test network")


def both(doc: dict[str, Any], **kw: Any) -> checker.Verdict:
    """The verdict of both arithmetics, demanded equal (message, rule and facts)."""
    pure = checker.check_certificate(doc, **kw)
    flint = checker_flint.check_certificate(doc, **kw)
    assert pure == flint, (pure, flint)
    return pure


def _changed(value: Any, key: str | None) -> Any:
    if key == "kind":
        return WITNESS_KINDS[(WITNESS_KINDS.index(value) + 1) % len(WITNESS_KINDS)]
    if key == "scale":
        return OUTPUT_SCALES[(OUTPUT_SCALES.index(value) + 1) % len(OUTPUT_SCALES)]
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        x = Fraction(value) + 1
        return str(x)
    raise AssertionError(f"no mutation for {value!r}")


def leaves(obj: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """Every leaf of a JSON value with its path; the ``den`` of an all-zero compact vector is
    skipped (changing it changes no value)."""
    if isinstance(obj, dict):
        zero = set(obj) == {"den", "num"} and isinstance(obj["num"], list) and not any(
            (x if not isinstance(x, list) else any(x)) for x in obj["num"])
        for k, v in obj.items():
            if zero and k == "den":
                continue
            yield from leaves(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from leaves(v, path + (i,))
    else:
        yield path, obj


def mutated(doc: dict[str, Any], path: tuple) -> dict[str, Any]:
    """``doc`` with the witness leaf at ``path`` changed."""
    out = copy.deepcopy(doc)
    node = out["witness"]
    for k in path[:-1]:
        node = node[k]
    key = path[-1]
    node[key] = _changed(node[key], key if isinstance(key, str) else None)
    return out


def refuse_every_mutation(doc: dict[str, Any], every: int = 1) -> int:
    """Change each witness entry (every ``every``-th leaf, plus all scalar fields) and demand that
    both arithmetics refuse the document; returns the number of mutations tried."""
    tried = 0
    for n, (path, _) in enumerate(leaves(doc["witness"])):
        if every > 1 and len(path) > 1 and n % every:
            continue
        v = both(mutated(doc, path))
        assert not v.ok, (path, v.message)
        tried += 1
    return tried
