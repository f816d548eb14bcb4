"""The one helpers module of the test suite.

* ``ROOT`` (the checkout) and ``checkout_env``/``run_cli``: subprocesses run the checkout's
  package, never an installed copy (``tests/conftest.py`` also puts the checkout first on
  ``PYTHONPATH`` for every subprocess);
* ``both``/``refused``: a document checked by both arithmetics (the standard-library reference
  and python-flint), whose verdicts must be equal — rule, message, layer, neuron and facts;
* ``case_target``/``sample_points``: seeded random targets with awkward features, and points of
  their boxes (the round-trip and mutation suites);
* ``given``/``leaves``/``mutated``/``refuse_every_mutation``: small given networks and witness
  mutations (the capacity suites).
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from flint import fmpq

from exactnorm import checker, checker_flint
from exactnorm.checker.vocabulary import OUTPUT_SCALES, WITNESS_KINDS
from exactnorm.exact.linalg import to_fractions
from exactnorm.model.interop import frozen_from_target
from exactnorm.model.network import FrozenNetwork, TargetNetwork
from exactnorm.model.targets import random_target

#: the checkout this test suite belongs to
ROOT = Path(__file__).resolve().parents[1]


def checkout_env(env: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
    """``env`` (default: this process's environment) with the checkout first on ``PYTHONPATH``,
    so that ``python -m exactnorm`` in a subprocess runs this checkout, whatever is installed."""
    out = dict(os.environ if env is None else env)
    rest = out.get("PYTHONPATH", "")
    out["PYTHONPATH"] = str(ROOT) + (os.pathsep + rest if rest else "")
    out.update(extra)
    return out


def run_cli(*args: str, env: Mapping[str, str] | None = None, timeout: float = 600,
            **kw: Any) -> subprocess.CompletedProcess[str]:
    """``python -m exactnorm ARGS`` of the checkout in a subprocess (text output captured)."""
    return subprocess.run([sys.executable, "-m", "exactnorm", *args], env=checkout_env(env),
                          capture_output=True, text=True, timeout=timeout, check=False, **kw)


def both(doc: Any, **kw: Any) -> checker.Verdict:
    """Both arithmetics on a document (a dict, checked on a deep copy, or its JSON text);
    identical verdicts required (rule, message, layer, neuron and facts), a one-line message."""
    if isinstance(doc, (str, bytes, bytearray)):
        pure = checker.check_certificate_text(doc, **kw)
        fast = checker_flint.check_certificate_text(doc, **kw)
    else:
        pure = checker.check_certificate(copy.deepcopy(doc), **kw)
        fast = checker_flint.check_certificate(copy.deepcopy(doc), **kw)
    assert pure == fast, (pure, fast)
    assert isinstance(pure.message, str) and pure.message and "\n" not in pure.message, pure
    return pure


def refused(doc: Any, rule: str, words: str = "", **kw: Any) -> checker.Verdict:
    """Both arithmetics refuse ``doc`` by ``rule`` with ``words`` in the message."""
    v = both(doc, **kw)
    assert (v.ok, v.rule) == (False, rule) and words in v.message, v
    return v


def case_target(i: int) -> TargetNetwork:
    """Target number ``i``: widths 1–6, depth 1–4, mixed activations and awkward features.

    Every fifth case has a zero row, every fourth a rank-one (rank-deficient) first layer, every
    third a degenerate box coordinate (lo = hi); the final activation alternates.
    """
    rng = np.random.default_rng(10_000 + i)
    depth = int(rng.integers(1, 5))
    widths = [int(w) for w in rng.integers(1, 7, size=depth + 1)]
    acts = [str(a) for a in rng.choice(["relu", "identity"], size=depth)]
    acts[-1] = "relu" if i % 2 else "identity"
    g = random_target(widths, seed=i, activations=acts, box=(Fraction(-1), Fraction(3, 2)))
    weights = [to_fractions(layer.weight) for layer in g.layers]
    if i % 5 == 0:
        weights[0][0] = [Fraction(0)] * widths[0]
    if i % 4 == 0 and min(widths[0], widths[1]) >= 2:
        u = [Fraction(int(x), 3) for x in rng.integers(-3, 4, size=widths[1])]
        v = [Fraction(int(x)) for x in rng.integers(-3, 4, size=widths[0])]
        weights[0] = [[a * b for b in v] for a in u]
    lower = [Fraction(int(x.numer()), int(x.denom())) for x in g.lower]
    upper = [Fraction(int(x.numer()), int(x.denom())) for x in g.upper]
    if i % 3 == 0:
        k = int(rng.integers(0, widths[0]))
        lower[k] = upper[k] = Fraction(int(rng.integers(-2, 3)), 2)
    biases = [[fmpq_to_fraction(x) for x in layer.bias] for layer in g.layers]
    return TargetNetwork.from_lists(weights, biases, acts, lower=lower, upper=upper)


def fmpq_to_fraction(x: fmpq) -> Fraction:
    return Fraction(int(x.numer()), int(x.denom()))


def sample_points(g: TargetNetwork, n: int, seed: int) -> list[tuple[Fraction, ...]]:
    """Box corners (up to 16) and ``n`` random rational points of the box."""
    rng = np.random.default_rng(seed)
    pts = [tuple(fmpq_to_fraction(c) for c in corner) for corner in g.corners(16)]
    for _ in range(n):
        pt = []
        for lo, hi in zip(g.lower, g.upper):
            t = Fraction(int(rng.integers(0, 1001)), 1000)
            pt.append(fmpq_to_fraction(lo) + t * (fmpq_to_fraction(hi) - fmpq_to_fraction(lo)))
        pts.append(tuple(pt))
    return pts


def given(weights: list[list[list[Any]]], acts: list[str]) -> FrozenNetwork:
    """A given network with these matrices (biases 0) and activations."""
    d0 = len(weights[0][0])
    g = TargetNetwork.from_lists(weights, [[0] * len(W) for W in weights], acts,
                                 lower=[0] * d0, upper=[1] * d0)
    return frozen_from_target(g, "test network")


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
