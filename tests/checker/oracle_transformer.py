"""The oracle of a transformer document (docs/certificate-format.md §11), written from the format:
what a VALID verdict claims, tested without the checker.

Contract. :func:`transformer_claim_fails` returns ``None`` when, for every slot, (1) the slot's
frozen network equals its target at the vertices and random rational points of the slot's
declared box (:func:`tests.checker.oracle.claim_fails`, exact), and (2) at every position of
seeded random token sequences, the value the *original* transformer feeds the slot is not
outside that box; else it names the slot, the sequence, the position and the coordinate.

Correctness argument. The claim "the rewritten transformer equals the original on every
sequence" holds when every slot's frozen network equals its target on every value the slot
reads (§11.2's induction); (1) tests the equality on the box, (2) that the box holds the values.
The original's values involve square roots (LayerNorm) and exponentials (softmax), so they are
enclosed by rigorous interval arithmetic (``mpmath.iv``, outward rounding, 200 bits) from the
exact parameters of the document; a coordinate is reported only when its whole enclosure lies
outside the declared interval (then the true value does too), never on an enclosure that merely
overlaps a bound. Nothing here imports ``exactnorm``.
"""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

from mpmath import iv
from mpmath.libmp import finf, fnan, fninf

from tests.checker import oracle

PRECISION = 200


def _iv(q: Fraction) -> Any:
    return iv.mpf(q.numerator) / q.denominator


def _endpoint(t: tuple) -> Fraction | None:
    if t in (finf, fninf, fnan):
        return None
    sign, man, exp, _ = t
    v = Fraction(man) * Fraction(2) ** exp
    return -v if sign else v


def _outside(x: Any, lo: Fraction, hi: Fraction) -> bool:
    """The whole enclosure ``x`` lies outside ``[lo, hi]`` (so the true value does)."""
    a, b = (_endpoint(t) for t in x._mpi_)
    return (b is not None and b < lo) or (a is not None and a > hi)


def _graph_value(graph: oracle.Graph, x: list[Any]) -> list[Any]:
    nodes = [x]
    zero = iv.mpf(0)
    for node in graph.nodes:
        a = nodes[node.reads]
        z = [sum((_iv(w) * a[t] for t, w in row), zero) for row in node.rows]
        if node.scale is not None:
            z = [_iv(g) * v for g, v in zip(node.scale, z)]
        z = [v + _iv(b) for v, b in zip(z, node.shift)]
        for q, S in node.pre + node.post:  # a slot's target has no frozen post-skips
            z = [v + sum((_iv(w) * nodes[q][t] for t, w in row), zero) for v, row in zip(z, S)]
        if node.activation == "relu":
            z = [_relu(v) for v in z]
        nodes.append(z)
    return nodes[-1]


def _relu(v: Any) -> Any:
    """``max(v, 0)`` of an enclosure: its endpoints clamped at 0 (exactly)."""
    a, b = v._mpi_
    lo, hi = _endpoint(a), _endpoint(b)
    if hi is not None and hi <= 0:
        return iv.mpf(0)
    if lo is not None and lo >= 0:
        return v
    return iv.mpf([0, v.b])


def _layernorm(x: list[Any], node: dict) -> list[Any]:
    d = len(x)
    gain, bias = oracle.vector(node["gain"]), oracle.vector(node["bias"])
    eps = oracle.number(node["epsilon"])
    mean = sum(x, iv.mpf(0)) / d
    var = sum(((v - mean) ** 2 for v in x), iv.mpf(0)) / d
    root = iv.sqrt(var + _iv(eps))
    return [_iv(g) * (v - mean) / root + _iv(b) for v, g, b in zip(x, gain, bias)]


class Transformer:
    """The architecture and the slots (their targets as oracle graphs, their boxes)."""

    def __init__(self, doc: dict) -> None:
        arch = doc["architecture"]
        self.vocabulary, self.positions = arch["vocabulary"], arch["positions"]
        self.nodes, self.output = arch["nodes"], arch["output"]
        self.slots = {name: oracle.read_certificate(cert) for name, cert in doc["slots"].items()}
        self.documents = doc["slots"]

    def reader_of(self, name: str) -> int:
        """The node whose value slot ``name`` reads."""
        for node in self.nodes:
            if node["op"] == "slot" and node["slot"] == name:
                return int(node["reads"])
            if node["op"] == "attention" and any(name in h.values() for h in node["heads"]):
                return int(node["reads"])
        raise oracle.Unreadable(f"slot {name} is read by no node")

    def values(self, tokens: list[int]) -> list[list[list[Any]]]:
        """Every node's enclosure at every position of the sequence."""
        n = len(tokens)
        out: list[list[list[Any]]] = []
        for node in self.nodes:
            op = node["op"]
            if op == "input":
                out.append([[iv.mpf(int(v == t)) for v in range(self.vocabulary)]
                            + [iv.mpf(int(q == p)) for q in range(self.positions)]
                            for p, t in enumerate(tokens)])
            elif op == "slot":
                g = self.slots[node["slot"]].target
                out.append([_graph_value(g, x) for x in out[node["reads"]]])
            elif op == "layernorm":
                out.append([_layernorm(x, node) for x in out[node["reads"]]])
            elif op == "add":
                a, c = node["reads"]
                out.append([[u + v for u, v in zip(x, y)] for x, y in zip(out[a], out[c])])
            elif op == "attention":
                out.append(self._attention(node, out[node["reads"]], n))
            else:
                raise oracle.Unreadable(f"node op {op!r}")
        return out

    def _attention(self, node: dict, xs: list[list[Any]], n: int) -> list[list[Any]]:
        scale = _iv(oracle.number(node["scale"]))
        rows: list[list[Any]] = [[] for _ in range(n)]
        for head in node["heads"]:
            q = [_graph_value(self.slots[head["q"]].target, x) for x in xs]
            k = [_graph_value(self.slots[head["k"]].target, x) for x in xs]
            v = [_graph_value(self.slots[head["v"]].target, x) for x in xs]
            for p in range(n):
                seen = range(p + 1) if node["mask"] == "causal" else range(n)
                e = [iv.exp(scale * sum((a * b for a, b in zip(q[p], k[u])), iv.mpf(0)))
                     for u in seen]
                total = sum(e, iv.mpf(0))
                rows[p] += [sum((w / total * v[u][c] for w, u in zip(e, seen)), iv.mpf(0))
                            for c in range(len(v[0]))]
        return rows


def transformer_claim_fails(doc: dict, sequences: int = 4, seed: int = 0, randoms: int = 3,
                            max_vertices: int = 8) -> str | None:
    """``None`` when every slot equals its target on its box at the tested points and no value
    of the original transformer on the sampled sequences lies outside the box of the slot that
    reads it; else what failed (raises :class:`oracle.Unreadable`)."""
    t = Transformer(doc)
    for name, cert in t.documents.items():
        failed = oracle.claim_fails(cert, randoms=randoms, seed=seed, max_vertices=max_vertices)
        if failed:
            return f"slot {name}: {failed}"
    rng = random.Random(seed)
    old = iv.prec
    iv.prec = PRECISION
    try:
        for _ in range(sequences):
            n = rng.randint(1, t.positions or 4)
            tokens = [rng.randrange(t.vocabulary) for _ in range(n)]
            values = t.values(tokens)
            for name, cert in t.slots.items():
                node = t.reader_of(name)
                for p, x in enumerate(values[node]):
                    for c, (v, lo, hi) in enumerate(zip(x, cert.box.lower, cert.box.upper)):
                        if _outside(v, lo, hi):
                            return (f"slot {name} reads node {node}: on the tokens {tokens}, "
                                    f"position {p}, coordinate {c} is {v}, outside its box "
                                    f"[{lo}, {hi}]")
    finally:
        iv.prec = old
    return None
