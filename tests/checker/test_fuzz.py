"""Fuzzing target files, certificates and the CLI with bad input (issue 9).

Contract under test: every generated input ends in a *clear error* or a *correct verdict*.

* loaders (``strict_json_loads``, ``read_target``, ``load_target``, ``read_frozen``,
  ``parse_number``) return a value or raise an :class:`~exactnorm.errors.ExactnormError`;
* both checkers (``checker.check_certificate_text`` and ``checker_flint.check_certificate_text``)
  return a ``Verdict``; a failed one names a rule and carries a one-line message; the two agree;
* the CLI (``exactnorm.cli.main``) exits 0, 1 or 2 with at most one line on stderr, never 3;
* a certificate that is accepted is proven correct independently of the checkers: the frozen
  network and the target are rebuilt with ``read_frozen``/``read_target`` and
  ``f(x) = g(x)`` is verified exactly at box corners and at rational points inside the box.

Budget. Each test runs ``EXAMPLES × weight`` Hypothesis examples, where ``EXAMPLES`` is the loaded
profile's ``max_examples`` (``tests/conftest.py``: ci 50, dev 100, thorough 2000) unless the
environment variable ``EXACTNORM_FUZZ_EXAMPLES`` overrides it. The weights add up to
``TOTAL_WEIGHT`` = 8, so the thorough profile generates 8 × 2000 = 16,000 bad inputs (≥ 10,000)
and the ci profile 400 (a few seconds). Run with ``-s`` to see the per-test counts.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import gzip
import io
import json
import os
import tempfile
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exactnorm import api, checker, checker_flint
from exactnorm.api import load_target
from exactnorm.certificate import (
    certificate_bytes,
    certificate_document,
    read_frozen,
    read_target,
    target_document,
)
from exactnorm.checker.regenerate import regenerate
from exactnorm.cli import main
from exactnorm.errors import ExactnormError
from exactnorm.exact.rationals import parse_number, strict_json_loads, unlimited_int_digits
from exactnorm.exact.sampling import layer_rng
from exactnorm.model.targets import random_target

# ----------------------------------------------------------------------------- budget

EXAMPLES = int(os.environ.get("EXACTNORM_FUZZ_EXAMPLES", "0")) or settings.default.max_examples
TOTAL_WEIGHT = 8.0
GENERATED: Counter[str] = Counter()


def fuzz(weight: float) -> settings:
    """Settings for one fuzz test: ``weight × EXAMPLES`` examples on top of the loaded profile."""
    return settings(settings.default, max_examples=max(1, round(EXAMPLES * weight)),
                    deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


@pytest.fixture(scope="module", autouse=True)
def _report_counts():
    yield
    total = sum(GENERATED.values())
    print(f"\nfuzz inputs generated: {total} ({dict(GENERATED)}); "
          f"accepted and proven by the oracle: {dict(ACCEPTED)}; "
          f"known checker bug hits: {dict(KNOWN_BUG_HITS)}")
    report = os.environ.get("EXACTNORM_FUZZ_REPORT")
    if report:
        Path(report).write_text(json.dumps({"total": total, **GENERATED,
                                            "accepted": dict(ACCEPTED),
                                            "known_bug_hits": dict(KNOWN_BUG_HITS)}) + "\n")


# The largest numbers the oracle reads back: a mutant may hold long integers in harmless places.
ORACLE_DIGITS = 10**7

# ----------------------------------------------------------------------------- junk values

SPECIAL_STRINGS = [
    "1/0", "0/0", "-1/0", "1e999", "1e5", "1E-3", "-1e-999", "NaN", "nan", "Infinity", "-Infinity",
    "inf", "", " ", "-", "/", "1/", "/2", "1//2", "1/-2", "--1", "+1", "1.2.3", ".", "-.", "0x10",
    "1_000", "١٢", "１", "½", "1 /2", " 3/4 ", "3/4\n", "\u00a01", "2/4", "-0", "00012", "5.",
    "-.5", "1" * 300, "9" * 5000, "1/" + "7" * 300, "0." + "0" * 400 + "1", "relu", "identity",
    "random", "selection", "x", "\x00", "\ud83d\ude00", "exactnorm.certificate",
    # issue 16.1: rich markup and emoji codes must reach the console as written
    "[/x]", "[red]", "[bold]x[/bold]", ":thumbs_up:", "[link=file:///etc]x", "\\[x]",
]
KEYS = ["format", "version", "domain", "target", "network", "layers", "weight", "bias",
        "activation", "gamma", "beta", "input", "skip", "from", "kind", "checkpoints", "lower",
        "upper", "provenance", "witnesses",
        # version 2 (docs/certificate-format.md)
        "source", "den", "num", "random", "why", "seed", "key", "generator", "distribution",
        "shape", "mask"]

junk_leaf = st.one_of(
    st.none(), st.booleans(),
    st.integers(-3, 3), st.integers(-(10**40), 10**40), st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(SPECIAL_STRINGS), st.text(max_size=12),
    st.fractions(max_denominator=50).map(lambda q: f"{q.numerator}/{q.denominator}"),
)
junk = st.recursive(
    junk_leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), inner,
                                            max_size=4)),
    max_leaves=12,
)
# plausible numbers most of the time, junk sometimes: gets generated documents past the first rule
number_like = st.one_of(st.integers(-4, 4), st.integers(-4, 4).map(str),
                        st.sampled_from(["1/2", "-3/4", "0.25", "-2", "7/3"]), junk_leaf)


@st.composite
def matrix_like(draw: Any, rows: int, cols: int) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(junk)
    r = max(0, rows + draw(st.sampled_from([0, 0, 0, 0, -1, 1])))
    out = []
    for _ in range(r):
        c = max(0, cols + draw(st.sampled_from([0, 0, 0, 0, 0, 0, -1, 1])))
        out.append([draw(number_like) for _ in range(c)])
    return out


@st.composite
def certificate_like(draw: Any) -> Any:
    """A document shaped like a certificate whose every field may be junk or slightly off."""
    d0 = draw(st.integers(1, 3))
    widths = [d0] + draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))

    def maybe(value: Any) -> Any:
        return draw(junk) if draw(st.integers(0, 15)) == 0 else value

    version = draw(st.sampled_from([1, 1, 2, 3]))

    def v2_vector(values: list[Any]) -> Any:
        """Sometimes the compact form {"den", "num"} (integers over one denominator)."""
        if version >= 2 and draw(st.integers(0, 2)) == 0:
            den = draw(st.sampled_from([1, 2, 3, "6", 0, -1, "1/2"]))
            return {"den": den, "num": [draw(st.integers(-4, 4)) for _ in values]}
        return values

    def v2_weight(rows: int, cols: int, layer_key: int) -> tuple[Any, Any]:
        """(weight, source): explicit, by reference, explicit with a record, or fixed."""
        form = draw(st.sampled_from(["explicit", "reference", "sourced", "fixed"]))
        rec = {"generator": "exactnorm.shake256.v1", "seed": draw(st.integers(0, 2)),
               "key": ([1, layer_key, 0, draw(st.integers(0, 1))]  # version 3: positional
                       if version == 3 and draw(st.booleans())
                       else [layer_key, draw(st.integers(0, 1))]),
               "distribution": draw(st.sampled_from(["int:2", "nonzero:1", "set:0,1"])),
               "shape": [rows, cols]}
        if draw(st.integers(0, 7)) == 0:
            rec = draw(junk)
        if version == 1 or form == "explicit":
            return draw(matrix_like(rows, cols)), None
        if form == "reference":
            return {"random": rec}, None
        if form == "sourced":
            return draw(matrix_like(rows, cols)), rec
        return draw(matrix_like(rows, cols)), {"kind": "fixed", "why": draw(st.text(max_size=8))}

    doc: dict[str, Any] = {
        "format": maybe("exactnorm.certificate"), "version": maybe(version),
        "domain": maybe({"lower": [draw(number_like) for _ in range(d0)],
                         "upper": [draw(number_like) for _ in range(d0)]}),
        "target": maybe({"layers": [
            {"weight": draw(matrix_like(widths[i + 1], widths[i])),
             "bias": [draw(number_like) for _ in range(widths[i + 1])],
             "activation": maybe(draw(st.sampled_from(["relu", "identity"])))}
            for i in range(len(widths) - 1)]}),
    }
    layers, dims = [], [d0]
    for _ in range(draw(st.integers(1, 4))):
        j = len(layers) + 1
        src = maybe(draw(st.integers(0, j - 1)))
        n = draw(st.integers(1, 3))
        cols = dims[src] if isinstance(src, int) and 0 <= src < j else 1
        weight, source = v2_weight(n, cols, j)
        layer: dict[str, Any] = {
            "input": src, "weight": weight,
            "gamma": v2_vector([draw(number_like) for _ in range(n)]),
            "beta": [draw(number_like) for _ in range(n)],
            "activation": maybe(draw(st.sampled_from(["relu", "identity"])))}
        if source is not None:
            layer["source"] = source
        if draw(st.integers(0, 3)) == 0:
            frm = draw(st.integers(-1, j))
            layer["skip"] = [{"from": frm, "weight": draw(matrix_like(n, 1)),
                              "kind": draw(st.sampled_from(["identity", "selection", "random",
                                                            "other"]))}]
        layers.append(layer)
        dims.append(n)
    doc["network"] = maybe({"layers": layers,
                            "checkpoints": maybe(draw(st.lists(st.integers(-1, len(layers) + 1),
                                                               max_size=4)))})
    return doc


# ----------------------------------------------------------------------------- valid documents


def _frac(x: Any) -> Fraction:
    return Fraction(int(x.numer()), int(x.denom())) if hasattr(x, "numer") else Fraction(x)


def _fmt(q: Fraction) -> Any:
    return q.numerator if q.denominator == 1 else f"{q.numerator}/{q.denominator}"


def _box_range(row: list[Fraction], const: Fraction, lo: list[Fraction],
               hi: list[Fraction]) -> tuple[Fraction, Fraction]:
    mn = mx = const
    for w, a, b in zip(row, lo, hi):
        mn += min(w * a, w * b)
        mx += max(w * a, w * b)
    return mn, mx


def _compose(V: list[list[Any]], A: list[list[Fraction]],
             c: list[Fraction]) -> tuple[list[list[Fraction]], list[Fraction]]:
    VA = [[sum((Fraction(v[k]) * A[k][t] for k in range(len(A))), Fraction(0))
           for t in range(len(A[0]))] for v in V]
    Vc = [sum((Fraction(v[k]) * c[k] for k in range(len(c))), Fraction(0)) for v in V]
    return VA, Vc


def skip_certificate(seed: int) -> dict[str, Any]:
    """A valid certificate with skip connections, built from the frozen side.

    Random frozen layers (several per segment, reading any node of their segment, with identity,
    selection and random skips); each ReLU neuron gets a shift that makes it stable on the segment's
    box (min ≥ 0, or max ≤ −1/2); the checkpoint's exact pre-activation map *defines* the target
    layer. The map is composed here in plain ``Fraction`` arithmetic, independently of both
    checkers. Theorem 1 never emits skips, so this is how the fuzzer gets skip references to break.
    """
    rng = layer_rng(seed, 9)
    lower, upper = [Fraction(-1), Fraction(0)], [Fraction(1), Fraction(2)]
    lo, hi = lower, upper
    layers: list[dict[str, Any]] = []
    targets: list[dict[str, Any]] = []
    checkpoints: list[int] = []
    dims, start = [2], 0
    for _ in range(2):
        d = dims[start]
        maps = {start: ([[Fraction(int(r == t)) for t in range(d)] for r in range(d)],
                        [Fraction(0)] * d)}
        inner = int(rng.integers(1, 3))
        for t in range(inner + 1):
            j = len(layers) + 1
            is_checkpoint = t == inner
            src = int(rng.integers(start, j))
            n = int(rng.integers(1, 4))
            V = [[int(v) for v in rng.integers(-3, 4, size=dims[src])] for _ in range(n)]
            gamma = [Fraction(int(rng.integers(1, 4)) * int(rng.choice([-1, 1])),
                              int(rng.integers(1, 3))) for _ in range(n)]
            VA, Vc = _compose(V, *maps[src])
            A = [[g * x for x in row] for g, row in zip(gamma, VA)]
            c0 = [g * x for g, x in zip(gamma, Vc)]
            act = "relu" if not is_checkpoint else str(rng.choice(["relu", "identity"]))
            keep = [True] * n
            if act == "relu" and not is_checkpoint:
                beta = []
                for k, (row, const) in enumerate(zip(A, c0)):
                    mn, mx = _box_range(row, const, lo, hi)
                    if rng.integers(0, 4):
                        beta.append(-mn + Fraction(int(rng.integers(0, 3)), 2))
                    else:
                        beta.append(-mx - Fraction(int(rng.integers(1, 3)), 2))
                        keep[k] = False
            else:
                beta = [Fraction(int(v), 3) for v in rng.integers(-3, 4, size=n)]
            c = [x + b for x, b in zip(c0, beta)]
            entry: dict[str, Any] = {"input": src, "weight": V, "gamma": [_fmt(g) for g in gamma],
                                     "beta": [_fmt(b) for b in beta], "activation": act}
            layers.append(entry)
            dims.append(n)
            if is_checkpoint:
                targets.append({"weight": [[_fmt(x) for x in row] for row in A],
                                "bias": [_fmt(x) for x in c], "activation": act})
                checkpoints.append(j)
                ranges = [_box_range(row, const, lo, hi) for row, const in zip(A, c)]
                if act == "relu":
                    ranges = [(max(a, Fraction(0)), max(b, Fraction(0))) for a, b in ranges]
                lo, hi = [a for a, _ in ranges], [b for _, b in ranges]
                start = j
                break
            A = [row if k else [Fraction(0)] * len(row) for row, k in zip(A, keep)]
            c = [x if k else Fraction(0) for x, k in zip(c, keep)]
            skips = []
            for _ in range(int(rng.integers(0, 3))):
                frm = int(rng.integers(start, j))
                m = dims[frm]
                kind = str(rng.choice(["identity", "selection", "random"]))
                if kind == "identity" and m != n:
                    kind = "selection"
                if kind == "identity":
                    P = [[int(r == q) for q in range(m)] for r in range(n)]
                elif kind == "selection":
                    P = [[int(q == pick) for q in range(m)]
                         for pick in rng.integers(-1, m, size=n)]
                else:
                    P = [[int(v) for v in rng.integers(-2, 3, size=m)] for _ in range(n)]
                skips.append({"from": frm, "weight": P, "kind": kind})
                PA, Pc = _compose(P, *maps[frm])
                A = [[x + y for x, y in zip(r1, r2)] for r1, r2 in zip(A, PA)]
                c = [x + y for x, y in zip(c, Pc)]
            if skips:
                entry["skip"] = skips
            maps[j] = (A, c)
    return {"format": "exactnorm.certificate", "version": 1,
            "domain": {"lower": [_fmt(x) for x in lower], "upper": [_fmt(x) for x in upper]},
            "target": {"layers": targets},
            "network": {"layers": layers, "checkpoints": checkpoints},
            "provenance": {"construction": "hand-built skip fixture", "seed": seed}}


POOL_TARGETS = [((1, 1), None), ((2, 2), None), ((2, 3, 1), ["relu", "relu"]),
                ((1, 2, 2, 1), ["identity", "relu", "identity"]), ((3, 1, 2), None)]


@functools.cache
def certificate_pool() -> tuple[str, ...]:
    """Serialized valid certificates: Theorem 1 on small random targets and skip fixtures."""
    texts = []
    for k, (widths, acts) in enumerate(POOL_TARGETS):
        g = random_target(widths, seed=k, activations=acts, box=(Fraction(-1), Fraction(3, 2)))
        c = api.certify(g, seed=k + 1, retry=8)
        texts.append(certificate_bytes(certificate_document(c)).decode())
    for seed in range(4):
        texts.append(certificate_bytes(skip_certificate(seed)).decode())
    # the trade-off: by-reference draws, compact identity and selection skips, long skip chains
    for k, routing in enumerate(("selection", "mask")):
        g = random_target((3, 2, 1), seed=10 + k, box=(Fraction(-1), Fraction(3, 2)))
        c = api.certify(g, "tradeoff", block=1, routing=routing, seed=k, retry=8)
        texts.append(certificate_bytes(certificate_document(c)).decode())
    for seed in range(2):
        texts.append(certificate_bytes(compact_skip_certificate(seed)).decode())
    # a pair redrawn after singular draws (int:1 values): the redraws section and its kernels
    g = random_target((1, 3), seed=0)
    c = api.certify(g, "theorem1", seed=4, distribution="int:1")
    texts.append(certificate_bytes(certificate_document(c)).decode())
    return tuple(texts)


@functools.cache
def conv_certificate_pool() -> tuple[str, ...]:
    """Serialized valid convolutional certificates (conv, pointwise conv, pooling, dense head)."""
    from exactnorm.certificate import certificate_document
    from exactnorm.constructions.plan import construct
    from tests.model.test_conv import lenet_like

    docs = [certificate_document(construct(lenet_like(seed), seed=0)) for seed in (1, 2)]
    return tuple(certificate_bytes(doc).decode() for doc in docs)


def compact_skip_certificate(seed: int) -> dict[str, Any]:
    """:func:`skip_certificate` with its identity and selection skips in their compact forms
    (docs/certificate-format.md §1.5; readers take them in a version-1 document too, and this
    fixture's random skips have no draw record, which version 2 would demand)."""
    doc = skip_certificate(seed)
    for layer in doc["network"]["layers"]:
        for skip in layer.get("skip", []):
            P = skip["weight"]
            if skip["kind"] == "identity":
                skip["weight"] = {"identity": len(P)}
            elif skip["kind"] == "selection":
                skip["weight"] = {"selection": [row.index(1) if 1 in row else None for row in P],
                                  "columns": len(P[0])}
    return doc


@functools.cache
def target_pool() -> tuple[str, ...]:
    """Serialized valid target files (JSON), including one without a domain."""
    texts = []
    for k, (widths, acts) in enumerate(POOL_TARGETS):
        g = random_target(widths, seed=k, activations=acts)
        texts.append(json.dumps(target_document(g)))
    return tuple(texts)


# ----------------------------------------------------------------------------- the oracle


def sample_points(g: Any) -> list[tuple[Fraction, ...]]:
    """Up to 16 box corners and 6 rational points spread through the box."""
    lower = [_frac(x) for x in g.lower]
    upper = [_frac(x) for x in g.upper]
    pts = [tuple(_frac(x) for x in corner) for corner in g.corners(16)]
    ts = [Fraction(1, 2), Fraction(1, 3), Fraction(5, 7), Fraction(1, 11), Fraction(9, 10),
          Fraction(2, 9)]
    for s in range(6):
        pts.append(tuple(lo + ts[(k + s) % len(ts)] * (hi - lo)
                         for k, (lo, hi) in enumerate(zip(lower, upper))))
    return pts


def expand_v2(node: Any) -> Any:
    """Version-2 forms written out as version-1 lists, independently of the checkers: draw
    records regenerated by the reference generator, {"den", "num"} divided out."""
    if isinstance(node, list):
        return [expand_v2(x) for x in node]
    if not isinstance(node, dict):
        return node
    if set(node) == {"random"}:
        return [[f"{x.numerator}/{x.denominator}" for x in row] for row in regenerate(
            node["random"])]
    if set(node) == {"den", "num"}:
        with unlimited_int_digits():  # the oracle reads numbers of any length
            den = int(node["den"])
            return [[f"{int(x)}/{den}" for x in row] if isinstance(row, list)
                    else f"{int(row)}/{den}" for row in node["num"]]
    out = {k: expand_v2(v) for k, v in node.items()}
    weight = node.get("weight")
    if isinstance(weight, dict) and set(weight) == {"random"} and "source" not in node:
        out["source"] = weight["random"]  # written out, the record stays its provenance
    return out


def assert_really_valid(doc: Any) -> None:
    """An accepted certificate: rebuild f and g and demand f = g exactly at sample points."""
    doc = expand_v2(doc)
    f = read_frozen(doc, max_digits=ORACLE_DIGITS)
    g = read_target(doc, max_digits=ORACLE_DIGITS, max_width=10**6)
    assert f.input_dim == g.widths[0]
    for x in sample_points(g):
        assert f.evaluate(x) == g.evaluate(x), f"accepted certificate has f != g at {x}"


# ----------------------------------------------------------------------------- known checker bug
#
# exactnorm/checker.py (owned by another helper while this was written): ``short()`` formats a
# number for a message with ``str(Fraction)`` outside the lifted int/str digit limit, so a
# certificate whose *rejection message* quotes a number of more than 4300 digits makes both
# checkers raise ``ValueError`` instead of returning a failed Verdict. Reproduced exactly by
# ``test_checker_short_message_with_huge_number`` (strict xfail). The fuzz tests tolerate *only*
# that exception and *only* while the reproduction still fails; fixing the checker turns the
# tolerance off by itself.

SHORT_BUG_INPUT = ('{"format":"exactnorm.certificate","version":1,"domain":{"lower":[1'
                   + "0" * 5000 + '],"upper":[0]},"target":{"layers":[]},'
                   '"network":{"layers":[],"checkpoints":[]}}')
KNOWN_BUG_HITS: Counter[str] = Counter()
ACCEPTED: Counter[str] = Counter()  # accepted inputs, each one proven by the exact oracle


@functools.cache
def short_bug_present() -> bool:
    try:
        checker.check_certificate_text(SHORT_BUG_INPUT)
    except ValueError as exc:
        return "integer string conversion" in str(exc)
    return False


def run_checker(fn: Any, arg: Any) -> Any:
    """``fn(arg)``; ``None`` only for the known, still-present checker bug above."""
    try:
        return fn(arg)
    except ValueError as exc:
        if "integer string conversion" in str(exc) and short_bug_present():
            KNOWN_BUG_HITS["checker.short > 4300 digits"] += 1
            return None
        raise


def check_both(text: str | bytes) -> Any:
    """Run both checkers on raw text; they must agree; a rejection must explain itself."""
    v_pure = run_checker(checker.check_certificate_text, text)
    v_flint = run_checker(checker_flint.check_certificate_text, text)
    if v_pure is None or v_flint is None:
        return None
    assert (v_pure.ok, v_pure.rule) == (v_flint.ok, v_flint.rule), (v_pure, v_flint)
    for v in (v_pure, v_flint):
        assert isinstance(v.message, str) and v.message.strip()
        assert "\n" not in v.message
        if not v.ok:
            assert v.rule != "valid"
    if v_pure.ok:
        assert_really_valid(strict_json_loads(text, max_digits=ORACLE_DIGITS))
        ACCEPTED["text"] += 1
    return v_pure


def check_doc(doc: Any) -> Any:
    """Both checkers on a Python object (the API path: floats, NaN, tuples may appear)."""
    v_pure = run_checker(checker.check_certificate, doc)
    v_flint = run_checker(checker_flint.check_certificate, doc)
    if v_pure is None or v_flint is None:
        return None
    assert (v_pure.ok, v_pure.rule) == (v_flint.ok, v_flint.rule), (v_pure, v_flint)
    if v_pure.ok:
        assert_really_valid(doc)
        ACCEPTED["document"] += 1
    else:
        assert v_pure.message.strip() and "\n" not in v_pure.message
    return v_pure


def to_text(doc: Any) -> str:
    """``json.dumps`` that writes Python floats as JSON floats and NaN/Infinity tokens."""
    return json.dumps(doc)


# ----------------------------------------------------------------------------- mutations


def json_paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += json_paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += json_paths(v, prefix + (i,))
    return out


def get_at(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def set_at(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    get_at(doc, path[:-1])[path[-1]] = value
    return doc


DELTAS = [1, -1, Fraction(1, 2), Fraction(-1, 3), Fraction(1, 10**6), Fraction(7, 5), 0]


@st.composite
def mutated_document(draw: Any, pool: tuple[str, ...]) -> Any:
    """A valid document with 1–3 structured mutations."""
    doc = json.loads(draw(st.sampled_from(pool)))
    for _ in range(draw(st.integers(1, 3))):
        doc = draw(one_mutation(doc))
    return doc


@st.composite
def one_mutation(draw: Any, doc: Any) -> Any:
    paths = json_paths(doc)
    kind = draw(st.sampled_from([
        "replace", "perturb", "perturb", "delete", "ragged", "empty", "nest", "checkpoints",
        "index", "index", "add_skip", "activation", "swap_layers", "dup_layer", "domain",
        "version"]))
    net = doc.get("network") if isinstance(doc, dict) else None
    layers = net.get("layers") if isinstance(net, dict) else None
    layers = layers if isinstance(layers, list) and layers else None
    if kind == "replace":
        return set_at(doc, draw(st.sampled_from(paths)), draw(junk))
    if kind == "perturb":
        numeric = [p for p in paths if isinstance(get_at(doc, p), (int, str))
                   and not isinstance(get_at(doc, p), bool) and p and p[0] != "format"]
        if numeric:
            p = draw(st.sampled_from(numeric))
            try:
                value = parse_number(get_at(doc, p))
            except ExactnormError:
                return doc
            new = value + Fraction(draw(st.sampled_from(DELTAS)))
            return set_at(doc, p, _fmt(new) if draw(st.booleans()) else str(new))
        return doc
    if kind == "delete":
        keyed = [p for p in paths if p and isinstance(get_at(doc, p[:-1]), dict)]
        if keyed:
            p = draw(st.sampled_from(keyed))
            del get_at(doc, p[:-1])[p[-1]]
        return doc
    if kind in ("ragged", "empty", "nest"):
        lists = [p for p in paths if isinstance(get_at(doc, p), list)]
        if not lists:
            return doc
        p = draw(st.sampled_from(lists))
        node = get_at(doc, p)
        if kind == "empty":
            return set_at(doc, p, [])
        if kind == "nest":
            return set_at(doc, p, [node])
        if node and draw(st.booleans()):
            node.pop(draw(st.integers(0, len(node) - 1)))
        else:
            node.append(copy.deepcopy(node[-1]) if node and draw(st.booleans()) else draw(junk))
        return doc
    if kind == "checkpoints" and isinstance(net, dict):
        n = len(layers or [])
        net["checkpoints"] = draw(st.one_of(
            st.lists(st.integers(-2, n + 2), max_size=5), junk,
            st.lists(st.sampled_from([True, False, None, "1", 10**30, -(10**30)]), max_size=3)))
        return doc
    if kind == "index" and layers:
        j = draw(st.integers(0, len(layers) - 1))
        layer = layers[j]
        if not isinstance(layer, dict):
            return doc
        # forward references, outside the segment, negative, the layer itself, junk
        value = draw(st.one_of(st.integers(-3, len(layers) + 3),
                               st.sampled_from([True, None, "0", 10**30, -(10**30), 2**63])))
        skips = layer.get("skip")
        if isinstance(skips, list) and skips and isinstance(skips[0], dict) and draw(st.booleans()):
            skips[draw(st.integers(0, len(skips) - 1))]["from"] = value
        else:
            layer["input"] = value
        return doc
    if kind == "add_skip" and layers:
        j = draw(st.integers(0, len(layers) - 1))
        layer = layers[j]
        if not isinstance(layer, dict):
            return doc
        frm = draw(st.integers(-1, j + 2))
        n = len(layer.get("gamma", [])) if isinstance(layer.get("gamma"), list) else 1
        cols = draw(st.integers(0, 3))
        skind = draw(st.sampled_from(["identity", "selection", "random", "zero", None]))
        if skind == "identity":
            P = [[int(r == c) for c in range(cols)] for r in range(n)]
        elif skind == "selection":
            P = [[int(c == 0) for c in range(cols)] for _ in range(n)]
        else:
            P = [[draw(st.integers(-2, 2)) for _ in range(cols)] for _ in range(n)]
        skip = {"from": frm, "weight": P, "kind": skind}
        if not isinstance(layer.get("skip"), list):
            layer["skip"] = []
        layer["skip"].append(skip)
        return doc
    if kind == "activation" and layers:
        layer = layers[draw(st.integers(0, len(layers) - 1))]
        if isinstance(layer, dict):
            layer["activation"] = draw(st.sampled_from(["relu", "identity", "Relu", "sigmoid",
                                                        None, 1, ["relu"]]))
        return doc
    if kind == "swap_layers" and layers and len(layers) > 1:
        a, b = draw(st.lists(st.integers(0, len(layers) - 1), min_size=2, max_size=2,
                             unique=True))
        layers[a], layers[b] = layers[b], layers[a]
        return doc
    if kind == "dup_layer" and layers:
        j = draw(st.integers(0, len(layers) - 1))
        layers.insert(j, copy.deepcopy(layers[j]))
        return doc
    if kind == "domain" and isinstance(doc, dict) and isinstance(doc.get("domain"), dict):
        dom = doc["domain"]
        side = draw(st.sampled_from(["lower", "upper"]))
        if isinstance(dom.get(side), list) and dom[side]:
            k = draw(st.integers(0, len(dom[side]) - 1))
            try:
                value = parse_number(dom[side][k])
            except ExactnormError:
                return doc
            # narrowing keeps a valid certificate valid; widening or inverting must be caught
            dom[side][k] = _fmt(value + Fraction(draw(st.sampled_from([-3, -1, 1, 3])), 4))
        return doc
    if kind == "version" and isinstance(doc, dict):
        doc[draw(st.sampled_from(["version", "format"]))] = draw(st.sampled_from(
            [True, "1", 2, 0, None, "exactnorm.certificate", "exactnorm.detpoly", [1]]))
        return doc
    return doc


TEXT_EDITS = ["float", "duplicate", "truncate", "insert", "deep", "long_int", "bom", "trailing"]


@st.composite
def mutated_text(draw: Any, pool: tuple[str, ...]) -> bytes:
    """A valid serialized document with 1–2 text-level edits (tokens the JSON parser sees)."""
    text = draw(st.sampled_from(pool))
    for _ in range(draw(st.integers(1, 2))):
        edit = draw(st.sampled_from(TEXT_EDITS))
        if edit in ("float", "deep", "long_int"):
            # replace one numeric JSON value (an integer token or a "p/q" string)
            spots = [i for i, ch in enumerate(text) if ch in "[,:" and i + 1 < len(text)
                     and (text[i + 1].isdigit() or text[i + 1] in '-"')]
            if not spots:
                continue
            i = draw(st.sampled_from(spots)) + 1
            j = i
            if text[i] == '"':
                j = text.find('"', i + 1) + 1
                if j == 0:  # an earlier truncation cut the string open
                    continue
            else:
                while j < len(text) and (text[j].isdigit() or text[j] == "-"):
                    j += 1
            if edit == "float":
                token = draw(st.sampled_from(["1.5", "-0.0", "1e999", "1E5", "2.5e-3", "NaN",
                                              "Infinity", "-Infinity", "1.0"]))
            elif edit == "deep":
                depth = draw(st.sampled_from([3, 50, 2000, 200_000]))
                token = "[" * depth + "1" + "]" * depth
            else:
                token = "9" * draw(st.sampled_from([19, 400, 5000, 200_001]))
            text = text[:i] + token + text[j:]
        elif edit == "duplicate":
            key = draw(st.sampled_from(['"activation":', '"gamma":', '"input":', '"format":',
                                        '"checkpoints":', '"lower":']))
            at = text.find(key)
            if at >= 0:
                value = {'"activation":': '"identity",', '"gamma":': '[1],', '"input":': '0,',
                         '"format":': '"exactnorm.certificate",', '"checkpoints":': '[1],',
                         '"lower":': '[0],'}[key]
                text = text[:at] + key + value + text[at:]
        elif edit == "truncate":
            text = text[:draw(st.integers(0, max(0, len(text) - 1)))]
        elif edit == "insert":
            at = draw(st.integers(0, len(text)))
            text = text[:at] + draw(st.sampled_from(["\x00", "}", "]", ",", "\"", "\\", "\ud800",
                                                    "/*c*/", "\u2028", "\xff"])) + text[at:]
        elif edit == "bom":
            text = "\ufeff" + text
        elif edit == "trailing":
            text = text + draw(st.sampled_from(["x", "{}", "\n\n", " ,"]))
    raw = text.encode("utf-8", errors="surrogatepass")
    if draw(st.integers(0, 9)) == 0:  # invalid UTF-8 bytes
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + b"\xff\xfe\xc3" + raw[at:]
    return raw


# ------------------------------------------------------------------ sanity of the fixtures


def test_pool_is_valid_and_oracle_sound():
    """Every pool document passes both checkers and the oracle; a broken one fails the oracle."""
    for text in certificate_pool():
        v = check_both(text)
        assert v.ok, v.message
    doc = json.loads(certificate_pool()[-1])
    doc["target"]["layers"][-1]["bias"][0] = _fmt(parse_number(
        doc["target"]["layers"][-1]["bias"][0]) + 1)
    with pytest.raises(AssertionError, match="f != g"):
        assert_really_valid(doc)
    assert not checker.check_certificate(doc).ok


def test_skip_fixtures_really_use_skips():
    kinds = Counter(s["kind"] for text in certificate_pool()
                    for layer in json.loads(text)["network"]["layers"]
                    for s in layer.get("skip", []))
    assert set(kinds) == {"identity", "selection", "random"}, kinds


# ----------------------------------------------------------------------------- loaders


@fuzz(1.0)
@given(value=st.one_of(junk_leaf, st.text(alphabet="0123456789-/. e\t", max_size=12), junk))
def test_parse_number_clear_error_and_agrees_with_checker(value):
    GENERATED["parse_number"] += 1
    try:
        ours = parse_number(value, max_digits=1000)
    except ExactnormError as exc:
        ours = exc
    assert isinstance(ours, (Fraction, ExactnormError))
    try:
        theirs = checker.number(value, "fuzz", max_digits=1000)
    except checker.CertificateError as exc:
        theirs = exc
    # two independent parsers: on strings without blanks they accept the same numbers, equally
    if isinstance(value, (int, str)) and not isinstance(value, bool) \
            and not (isinstance(value, str) and (value != value.strip() or "\n" in value)):
        assert isinstance(ours, Fraction) == isinstance(theirs, Fraction), (value, ours, theirs)
        if isinstance(ours, Fraction):
            assert ours == theirs


@fuzz(1.0)
@given(data=st.data())
def test_target_loader_fuzz(data):
    """Random JSON and mutated target files → a TargetNetwork or a clear error."""
    GENERATED["target_loader"] += 1
    how = data.draw(st.sampled_from(["junk", "mutated", "mutated", "text"]))
    if how == "junk":
        doc = data.draw(junk)
        raw = to_text(doc).encode()
    elif how == "mutated":
        doc = data.draw(mutated_document(target_pool()))
        raw = to_text(doc).encode()
    else:
        raw = data.draw(mutated_text(target_pool()))
    try:
        g = read_target(strict_json_loads(raw), max_width=16)
    except ExactnormError as exc:
        assert str(exc).strip()
        return
    # accepted: a well-formed network whose exact evaluation works on its own box
    for x in sample_points(g)[:4]:
        assert len(g.evaluate(x)) == g.widths[-1]
    # the API path (Python objects, floats included) must not crash either
    if how != "text":
        with contextlib.suppress(ExactnormError):
            read_target(doc, max_width=16)


# ----------------------------------------------------------------------------- checkers


@fuzz(1.0)
@given(doc=st.one_of(junk, certificate_like()))
def test_checkers_on_generated_documents(doc):
    GENERATED["checker_generated"] += 1
    check_doc(doc)
    check_both(to_text(doc))


@fuzz(2.0)
@given(doc=st.deferred(lambda: mutated_document(certificate_pool())))
def test_checkers_on_mutated_certificates(doc):
    GENERATED["checker_mutated"] += 1
    check_doc(doc)
    check_both(to_text(doc))


@fuzz(0.5)
@given(doc=st.deferred(lambda: mutated_document(conv_certificate_pool())))
def test_checkers_on_mutated_convolutional_certificates(doc):
    """Both arithmetics agree on mutants of convolutional certificates; an accepted one must
    agree with the exact evaluation of both networks (an oracle independent of the checker)."""
    from exactnorm.certificate import exact_agreement

    GENERATED["checker_mutated_conv"] += 1
    v_pure = run_checker(checker.check_certificate, doc)
    v_flint = run_checker(checker_flint.check_certificate, doc)
    if v_pure is None or v_flint is None:
        return
    assert (v_pure.ok, v_pure.rule, v_pure.message) == (v_flint.ok, v_flint.rule,
                                                         v_flint.message)
    if v_pure.ok:
        assert exact_agreement(doc, points=3) == 3
        ACCEPTED["convolutional document"] += 1


@fuzz(1.0)
@given(raw=st.deferred(lambda: mutated_text(certificate_pool())))
def test_checkers_on_mutated_text(raw):
    GENERATED["checker_text"] += 1
    check_both(raw)
    # the reader used by the rest of exactnorm: a value or a clear error
    with contextlib.suppress(ExactnormError):
        strict_json_loads(raw)


# ----------------------------------------------------------------------------- CLI


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def assert_clean_exit(code: int, err: str, allowed: tuple[int, ...], out: str = "") -> None:
    """Exit code in ``allowed``; a failure says why in one line (stderr, or the verdict line)."""
    assert code in allowed, (code, err)
    lines = err.strip().splitlines()
    assert len(lines) <= 1, err
    assert "Traceback" not in err and "internal error" not in err
    if code:
        assert (lines and lines[0].startswith("exactnorm")) or "INVALID" in out \
            or '"ok": false' in out, (err, out)


@fuzz(1.0)
@given(data=st.data())
def test_cli_check_fuzz(data):
    """``exactnorm check --both`` on mutated certificates (plain, gzip, corrupt gzip)."""
    GENERATED["cli_check"] += 1
    if data.draw(st.booleans()):
        raw = data.draw(mutated_text(certificate_pool()))
    else:
        raw = to_text(data.draw(mutated_document(certificate_pool()))).encode()
    container = data.draw(st.sampled_from(["json", "json", "gz", "corrupt_gz"]))
    # issue 16.1: the path is printed too, markup and all
    stem = data.draw(st.sampled_from(["c", "c[/x]", "[red]c", "c:smile:"]))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / (f"{stem}.json.gz" if container != "json" else f"{stem}.json")
        path.parent.mkdir(parents=True, exist_ok=True)  # "c[/x]" is the folder "c[" and "x]"
        packed = raw
        if container != "json":
            packed = gzip.compress(raw, mtime=0)
            if container == "corrupt_gz":
                cut = data.draw(st.integers(0, len(packed) - 1))
                packed = packed[:cut] + bytes([packed[cut] ^ 0x5A]) + packed[cut + 1:]
        path.write_bytes(packed)
        extra = data.draw(st.sampled_from([[], [], ["--max-bytes", "200"],
                                           ["--max-digits", "3"], ["--json"],
                                           ["--max-bytes", str(2**63 - 1)],
                                           ["--max-digits", "300000"]]))
        code, out, err = run_cli(["check", str(path), "--both", *extra])
    if code == 3 and "integer string conversion" in err and short_bug_present():
        KNOWN_BUG_HITS["checker.short > 4300 digits (CLI)"] += 1
        return
    assert_clean_exit(code, err, (0, 1, 2), out)
    assert "DISAGREEMENT" not in out and '"agree": false' not in out
    if code in (0, 1) and not err:  # a verdict was printed (not a corrupt-gzip error line)
        if extra == ["--json"]:
            verdict = json.loads(out)
            assert verdict["details"]["ok"] == (code == 0)
            assert verdict["paths"]["certificate"] == str(path)
        else:
            assert str(path) in out  # printed as written, never as markup
    if code == 0:
        accepted = packed if container == "json" else gzip.decompress(packed)
        assert extra != ["--max-bytes", "200"] or len(accepted) <= 200
        assert_really_valid(strict_json_loads(accepted, max_digits=ORACLE_DIGITS))


@fuzz(0.5)
@given(data=st.data())
def test_cli_certify_fuzz(data):
    """``exactnorm certify --target`` on mutated target files: 0 with a valid certificate, or 2
    with no output file and no temporary file left behind."""
    GENERATED["cli_certify"] += 1
    if data.draw(st.booleans()):
        raw = data.draw(mutated_text(target_pool()))
    else:
        raw = to_text(data.draw(mutated_document(target_pool()))).encode()
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "t.json"
        target.write_bytes(raw)
        out = Path(tmp) / "out" / "c.json"
        code, _, err = run_cli(["certify", "--target", str(target), "--out", str(out),
                                "--max-width", "8", "--box", "-1:1"])
        leftovers = [p.name for p in Path(tmp).rglob("*") if p.name.endswith(".tmp")]
        assert not leftovers
        assert_clean_exit(code, err, (0, 2))
        assert out.is_file() == (code == 0)
        if code == 0:
            doc = json.loads(out.read_text())
            assert api.check(doc, pure=True).ok  # certify writes version 2
            g_in = load_target(target, box=(Fraction(-1), Fraction(1)), max_width=8)
            assert read_target(doc) == g_in


NPZ_ARRAYS = st.one_of(
    st.integers(-3, 3).map(lambda n: np.full((2, 2), n)),
    st.sampled_from([np.zeros((0, 2)), np.zeros((2, 0)), np.zeros(()), np.zeros((1, 2, 2)),
                     np.array([[np.nan, 1.0]]), np.array([[np.inf, 1.0]]),
                     np.array([[True, False]]), np.array([[1 + 2j, 0]]), np.array([["a", "b"]]),
                     np.array([[0.1, 2.5]], dtype=np.float32),
                     np.array([[1.5, -2]], dtype=np.float16),
                     np.array([[1.5, 2]], dtype=np.longdouble),
                     np.array([[2**62, -(2**62)]], dtype=np.int64),
                     np.array([[2**64 - 1, 0]], dtype=np.uint64),
                     np.array([[1, 2]], dtype=object), np.zeros((5000, 1)),
                     np.array(["relu", "identity"]), np.array(["bogus"]),
                     np.array([[0.5, -1.0], [3.0, 0.25]])]),
)


@fuzz(0.5)
@given(arrays=st.dictionaries(st.sampled_from(["W1", "b1", "W2", "b2", "lower", "upper",
                                               "activations", "x"]), NPZ_ARRAYS, max_size=7),
       corrupt=st.integers(-1, 400))
def test_cli_certify_npz_fuzz(arrays, corrupt):
    """``.npz`` targets with wrong dtypes, shapes, NaN, object arrays, corrupt bytes."""
    GENERATED["cli_certify_npz"] += 1
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "t.npz"
        np.savez(target, **arrays)
        if corrupt >= 0:
            raw = bytearray(target.read_bytes())
            if corrupt < len(raw):
                raw[corrupt] ^= 0xFF
            target.write_bytes(bytes(raw))
        out = Path(tmp) / "c.json"
        code, _, err = run_cli(["certify", "--target", str(target), "--out", str(out),
                                "--max-width", "64", "--box", "-1:1"])
        assert_clean_exit(code, err, (0, 2))
        assert out.is_file() == (code == 0)
        if code == 0:
            assert checker.check_certificate(json.loads(out.read_text())).ok


# ----------------------------------------------------------------------------- reproductions


@pytest.mark.parametrize("module", [checker, checker_flint], ids=["pure", "flint"])
def test_checker_short_message_with_huge_number(module):
    v = module.check_certificate_text(SHORT_BUG_INPUT)
    assert not v.ok and v.rule == "domain"


@pytest.mark.parametrize("module", [checker, checker_flint], ids=["pure", "flint"])
def test_checker_honours_max_digits(module):
    doc = json.loads(certificate_pool()[0])
    doc["domain"]["upper"] = ["1" + "0" * 50] * len(doc["domain"]["lower"])
    v = module.check_certificate_text(json.dumps(doc), max_digits=10)
    assert not v.ok and v.rule == "number"


def _corrupt_gzip_variants(tmp: Path) -> list[Path]:
    """Single-byte corruptions (every other byte) of a small gzip certificate's deflate body."""
    base = gzip.compress(certificate_pool()[0].encode(), mtime=0)
    paths = []
    for k in range(10, len(base) - 8, 2):
        raw = bytearray(base)
        raw[k] ^= 0xFF
        path = tmp / f"c{k}.json.gz"
        path.write_bytes(bytes(raw))
        paths.append(path)
    return paths


def test_cli_check_survives_every_corrupt_gzip(tmp_path):
    """Some corruptions surface as zlib.error (not OSError): the CLI answers 2 (a truncated or
    corrupt gzip file is unreadable input), or 1 or 0 for a stream that still inflates."""
    for path in _corrupt_gzip_variants(tmp_path):
        code, out, err = run_cli(["check", str(path), "--both"])
        assert_clean_exit(code, err, (0, 1, 2), out)
        if code == 2:
            assert "truncated or corrupt gzip" in err


@pytest.mark.parametrize("module", [checker, checker_flint], ids=["pure", "flint"])
def test_checker_check_file_survives_every_corrupt_gzip(tmp_path, module):
    for path in _corrupt_gzip_variants(tmp_path):
        assert isinstance(module.check_file(str(path)), checker.Verdict)
