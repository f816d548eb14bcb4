"""A test oracle for exactnorm documents, written from docs/certificate-format.md and
docs/generator.md alone: exact evaluation of the target ``g`` and of the frozen network ``f``.

Contract. :func:`read_certificate` turns a certificate (any version, every layer kind, residual
wiring, explicit and by-reference weights) into two :class:`Graph` objects and the box; an
impossibility document (:func:`read_impossibility`) gives the target graph, the frozen chain's
matrices and activations (its γ, β are what the claim quantifies over). :func:`evaluate` computes
every node of a graph at a rational point with :class:`fractions.Fraction`; :func:`claim_fails`
evaluates both networks of a certificate at box vertices (all of them, or a seeded sample for a
wide box) and at seeded random rational points of the box and names the first point where
``f ≠ g``. Nothing here imports ``exactnorm``: the numbers, the draws of
``exactnorm.shake256.v1`` (``hashlib.shake_256``), the unfolding of convolutions and poolings and
the node reads are re-derived from the two documents, so an agreement with the checker is
evidence from an independent path. What the oracle cannot give a meaning to raises
:class:`Unreadable`.

Correctness argument. Every layer is turned into the one shape the format's semantics share:
``h = σ(γ ⊙ (M h_in) + β + Σ_pre S h_q) + Σ_post P h_s``, ``M`` a sparse matrix (a convolution
or pooling unfolded over its output positions, ``index = c·H·W + y·W + x``, padding pixels 0),
``γ, β`` expanded over positions (one per channel for a frozen convolution), ``pre`` the target's
skip or the frozen checkpoint's ``residual``, ``post`` the frozen layer's post-activation skips.
The evaluation is then plain rational arithmetic. Reference: docs/certificate-format.md §0, §1,
§2, §8, §9.1, §10; docs/generator.md §1–§3.
"""

from __future__ import annotations

import hashlib
import random
import re
import struct
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import product
from math import gcd
from typing import Any

GENERATOR = "exactnorm.shake256.v1"
_INT = re.compile(r"-?[0-9]+")
_RATIO = re.compile(r"-?[0-9]+/[0-9]+")
_DECIMAL = re.compile(r"-?[0-9]+\.[0-9]+")

Sparse = list[list[tuple[int, Fraction]]]


class Unreadable(ValueError):
    """The oracle gives this document (or this part of it) no meaning."""


# ------------------------------------------------------------------------------------ numbers


def number(x: Any) -> Fraction:
    """A number of §0: a JSON integer, or a string ``p``, ``-p``, ``p/q`` (q > 0), ``-d.ddd``."""
    if isinstance(x, bool):
        raise Unreadable(f"{x!r} is not a number")
    if isinstance(x, int):
        return Fraction(x)
    if isinstance(x, str) and (_INT.fullmatch(x) or _DECIMAL.fullmatch(x)):
        return Fraction(x)
    if isinstance(x, str) and _RATIO.fullmatch(x):
        p, q = x.split("/")
        if int(q) == 0:
            raise Unreadable(f"{x!r} has a zero denominator")
        return Fraction(int(p), int(q))
    raise Unreadable(f"{x!r} is not a number")


def _integer(x: Any) -> int:
    if isinstance(x, bool) or not (isinstance(x, int) or (isinstance(x, str)
                                                          and _INT.fullmatch(x))):
        raise Unreadable(f"{x!r} is not an integer")
    return int(x)


def _compact(obj: Any) -> tuple[int, Any] | None:
    if isinstance(obj, dict) and set(obj) == {"den", "num"}:
        den = _integer(obj["den"])
        if den <= 0:
            raise Unreadable(f"denominator {den}")
        return den, obj["num"]
    return None


def vector(v: Any) -> list[Fraction]:
    """A plain list of numbers or ``{"den": D, "num": [...]}`` (§1.1)."""
    packed = _compact(v)
    if packed is not None:
        den, num = packed
        if not isinstance(num, list):
            raise Unreadable("compact vector without a list")
        return [Fraction(_integer(n), den) for n in num]
    if not isinstance(v, list):
        raise Unreadable(f"not a vector: {type(v).__name__}")
    return [number(x) for x in v]


def matrix(M: Any) -> list[list[Fraction]]:
    """A list of rows or ``{"den": D, "num": [[...], ...]}`` (§1.1); rows equally long."""
    packed = _compact(M)
    if packed is not None:
        den, num = packed
        if not isinstance(num, list) or not all(isinstance(r, list) for r in num):
            raise Unreadable("compact matrix without rows")
        rows = [[Fraction(_integer(n), den) for n in r] for r in num]
    elif isinstance(M, list) and all(isinstance(r, list) for r in M):
        rows = [[number(x) for x in r] for r in M]
    else:
        raise Unreadable(f"not a matrix: {str(M)[:60]}")
    if len({len(r) for r in rows}) > 1:
        raise Unreadable("rows of different lengths")
    return rows


# ---------------------------------------------------------------------- the generator (§2, §3)


def stream_words(seed: int, key: list[int], n: int) -> list[int]:
    """The first ``n`` 64-bit little-endian words of SHAKE-256 of the stream's text."""
    text = f"{GENERATOR}|{seed}|{','.join(str(k) for k in key)}".encode("ascii")
    return list(struct.unpack(f"<{n}Q", hashlib.shake_256(text).digest(8 * n)))


def _entry(dist: str, param: str) -> tuple[int, Any]:
    """(words per entry, the function of those words) of a distribution of docs/generator.md §2."""
    if dist == "set":
        values = [int(v) for v in param.split(",")]
        return 1, lambda u: Fraction(values[u[0] % len(values)])
    B = int(param)
    if dist == "int":
        return 1, lambda u: Fraction(-B + u[0] % (2 * B + 1))
    if dist == "bits":
        return 1, lambda u: Fraction(-(1 << B) + u[0] % ((2 << B) + 1))
    if dist == "nonzero":
        return 1, lambda u: Fraction(u[0] % (2 * B) - B + (u[0] % (2 * B) >= B))
    if dist == "rational":
        return 2, lambda u: Fraction(-B + u[0] % (2 * B + 1), 1 + u[1] % B)
    if dist == "gauss":
        return 12, lambda u: Fraction(sum(w % (1 << B) for w in u) - 6 * (1 << B), 1 << B)
    raise Unreadable(f"distribution {dist!r}")


def record_shape(record: dict) -> tuple[int, int]:
    """``[rows, cols]``, or ``[c1, C, kh, kw]`` read as ``[c1, C·kh·kw]``."""
    shape = record.get("shape")
    if not isinstance(shape, list) or len(shape) not in (2, 4) or any(
            isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in shape):
        raise Unreadable(f"record shape {shape!r}")
    return (shape[0], shape[1]) if len(shape) == 2 else (shape[0], shape[1] * shape[2] * shape[3])


def draw(record: dict, max_entries: int = 1 << 20) -> list[list[Fraction]]:
    """The matrix a draw record describes (docs/generator.md §1–§3), entry by entry."""
    if not isinstance(record, dict) or record.get("generator") != GENERATOR:
        raise Unreadable("not a draw record of exactnorm.shake256.v1")
    rows, cols = record_shape(record)
    if rows * cols > max_entries:
        raise Unreadable(f"a {rows} x {cols} draw is larger than the oracle evaluates")
    dist, _, param = str(record.get("distribution", "")).partition(":")
    per, value = _entry(dist, param)
    seed, key = record["seed"], record["key"]
    words = stream_words(seed, key, rows * cols * per)
    M = [[value(words[(r * cols + c) * per:(r * cols + c + 1) * per]) for c in range(cols)]
         for r in range(rows)]
    mask = record.get("mask")
    if mask is None:
        return M
    if "columns" in mask:
        keep = set(mask["columns"])
        return [[x if c in keep else Fraction(0) for c, x in enumerate(row)] for row in M]
    p = number(mask["p"])
    if p == 0:
        return [[Fraction(0)] * cols for _ in range(rows)]
    if p == 1:
        return M
    bits = stream_words(seed, mask["key"], rows * cols)
    return [[x if bits[r * cols + c] % p.denominator < p.numerator else Fraction(0)
             for c, x in enumerate(row)] for r, row in enumerate(M)]


# --------------------------------------------------------------------------- the layer graph


@dataclass
class Node:
    """One layer: ``h = σ(scale ⊙ (rows · h_reads) + shift + Σ pre) + Σ post``."""

    reads: int
    rows: Sparse
    shift: list[Fraction]
    activation: str
    scale: list[Fraction] | None = None
    pre: list[tuple[int, Sparse]] = field(default_factory=list)
    post: list[tuple[int, Sparse]] = field(default_factory=list)
    _integers: dict[int, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def width(self) -> int:
        return len(self.rows)

    def integers(self, rows: Any) -> Any:
        """``rows`` (this node's matrix, a skip's, or a parameter vector) over one integer
        denominator, computed once."""
        key = id(rows)
        if key not in self._integers:
            self._integers[key] = (_integer_rows(rows) if not rows or isinstance(rows[0], list)
                                   else _over(rows))
        return self._integers[key]


@dataclass
class Graph:
    """Node 0 is the input (``width0`` wide), node ``j`` the output of ``nodes[j − 1]``; the
    network's value is its last node."""

    width0: int
    nodes: list[Node]

    def widths(self) -> list[int]:
        return [self.width0] + [n.width for n in self.nodes]


def _sparse(M: list[list[Fraction]]) -> Sparse:
    return [[(t, w) for t, w in enumerate(row) if w] for row in M]


def _geometry(layer: dict) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
    def ints(key: str, default: list[int] | None = None) -> list[int]:
        v = layer.get(key, default)
        if not isinstance(v, list) or any(isinstance(x, bool) or not isinstance(x, int)
                                          for x in v):
            raise Unreadable(f"{key} {v!r}")
        return v

    shape = _input_shape(layer)
    kernel, stride = ints("kernel_shape"), ints("stride")
    padding, dilation = ints("padding"), ints("dilation", [1, 1])
    if any(len(v) != 2 for v in (kernel, stride, padding, dilation)) or min(
            kernel + stride + dilation) < 1 or min(padding) < 0:
        raise Unreadable("window")
    return shape, kernel, stride, padding, dilation


def unfold(layer: dict, K: list[list[Fraction]]) -> tuple[Sparse, int]:
    """The convolution with kernel matrix ``K`` (``c_out × C·kh·kw``) on the layer's window as
    a sparse matrix over the input vector, and the number of output positions ``Ho·Wo``."""
    (C, H, W), (kh, kw), (sh, sw), (ph, pw), (dh, dw) = _geometry(layer)
    Ho = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    Wo = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    if Ho < 1 or Wo < 1 or any(len(row) != C * kh * kw for row in K):
        raise Unreadable("kernel and window do not fit")
    rows: Sparse = []
    for o in range(len(K)):
        for y, x in product(range(Ho), range(Wo)):
            row = []
            for c, u, v in product(range(C), range(kh), range(kw)):
                w = K[o][(c * kh + u) * kw + v]
                iy, ix = y * sh - ph + u * dh, x * sw - pw + v * dw
                if w and 0 <= iy < H and 0 <= ix < W:
                    row.append(((c * H + iy) * W + ix, w))
            rows.append(row)
    return rows, Ho * Wo


def _pool_kernel(layer: dict) -> list[list[Fraction]]:
    (C, _, _), (kh, kw), _, padding, dilation = _geometry(layer)
    if padding != [0, 0] or dilation != [1, 1]:
        raise Unreadable("an average pooling with padding or dilation")
    share = Fraction(1, kh * kw)
    return [[share if c == o else Fraction(0) for c in range(C) for _ in range(kh * kw)]
            for o in range(C)]


def _input_shape(layer: dict) -> list[int]:
    shape = layer.get("input_shape")
    if not isinstance(shape, list) or len(shape) != 3 or any(
            isinstance(x, bool) or not isinstance(x, int) or x < 1 for x in shape):
        raise Unreadable(f"input_shape {shape!r}")
    return shape


def _global_pool(layer: dict) -> Sparse:
    C, H, W = _input_shape(layer)
    share = Fraction(1, H * W)
    return [[(c * H * W + p, share) for p in range(H * W)] for c in range(C)]


def skip_matrix(weight: Any) -> tuple[Sparse, int]:
    """A skip's matrix and its number of columns: ``{"identity": n}``, ``{"selection": [...],
    "columns": d}``, an explicit or compact matrix, or ``{"random": R}``."""
    if isinstance(weight, dict) and set(weight) == {"identity"}:
        n = _integer(weight["identity"])
        return [[(r, Fraction(1))] for r in range(n)], n
    if isinstance(weight, dict) and set(weight) == {"selection", "columns"}:
        d = _integer(weight["columns"])
        picks = weight["selection"]
        if any(c is not None and not 0 <= _integer(c) < d for c in picks):
            raise Unreadable("selection outside its columns")
        return [[] if c is None else [(int(c), Fraction(1))] for c in picks], d
    M = frozen_weight(weight)
    return _sparse(M), _columns(M)


def _columns(M: list[list[Fraction]]) -> int:
    if not M:
        raise Unreadable("a matrix without rows")
    return len(M[0])


def frozen_weight(weight: Any) -> list[list[Fraction]]:
    """An explicit (plain or compact) matrix or ``{"random": R}`` regenerated."""
    if isinstance(weight, dict) and set(weight) == {"random"}:
        return draw(weight["random"])
    return matrix(weight)


def _layer_matrix(layer: dict, frozen: bool) -> tuple[Sparse, int, int]:
    """The layer's sparse matrix, the positions its per-row parameters repeat over (0 for a
    pooling, which has none), and the width of the vector it reads."""
    kind = layer.get("kind", "dense")
    if kind == "dense":
        W = frozen_weight(layer["weight"]) if frozen else matrix(layer["weight"])
        return _sparse(W), 1, _columns(W)
    C, H, W_ = _input_shape(layer)
    if kind == "conv":
        K = frozen_weight(layer["weight"]) if frozen else matrix(layer["weight"])
        return (*unfold(layer, K), C * H * W_)
    if kind == "avgpool":
        return unfold(layer, _pool_kernel(layer))[0], 0, C * H * W_
    if kind == "globalavgpool":
        return _global_pool(layer), 0, C * H * W_
    raise Unreadable(f"layer kind {kind!r}")


def _per_row(values: list[Fraction], positions: int, width: int) -> list[Fraction]:
    out = [v for v in values for _ in range(positions)]
    if len(out) != width:
        raise Unreadable(f"{len(values)} parameters for {width} rows")
    return out


def _node_width_check(graph_widths: list[int], reads: Any, columns: int, what: str) -> None:
    """The node read exists and is as wide as the matrix has columns."""
    if not isinstance(reads, int) or isinstance(reads, bool) or not 0 <= reads < len(graph_widths):
        raise Unreadable(f"{what} reads node {reads!r}")
    if columns != graph_widths[reads]:
        raise Unreadable(f"{what} reads {columns} values, node {reads} has {graph_widths[reads]}")


def _skip(skip: Any, widths: list[int], rows: int, what: str) -> tuple[int, Sparse]:
    if not isinstance(skip, dict):
        raise Unreadable(f"{what} skip {skip!r}")
    S, columns = skip_matrix(skip["weight"])
    _node_width_check(widths, skip["from"], columns, what)
    if len(S) != rows:
        raise Unreadable(f"{what}: a skip of {len(S)} rows on {rows}")
    return skip["from"], S


def target_graph(layers: list[dict], width0: int) -> Graph:
    """The target: layer ``i`` reads ``input`` (default ``i − 1``) and adds its ``skip``."""
    graph = Graph(width0, [])
    for i, layer in enumerate(layers, 1):
        rows, positions, columns = _layer_matrix(layer, frozen=False)
        reads = layer.get("input", i - 1)
        _node_width_check(graph.widths(), reads, columns, f"target layer {i}")
        if positions:
            shift = _per_row(vector(layer["bias"]), positions, len(rows))
        else:
            shift = [Fraction(0)] * len(rows)
        node = Node(reads, rows, shift, _activation(layer))
        if "skip" in layer:
            node.pre.append(_skip(layer["skip"], graph.widths(), len(rows), f"target layer {i}"))
        graph.nodes.append(node)
    return graph


def frozen_graph(layers: list[dict], width0: int, chain: bool = False) -> Graph:
    """The frozen network of a certificate: layer ``j`` reads ``input``, is scaled by γ and
    shifted by β (per channel for a convolution), adds its ``residual`` before and its ``skip``
    list after the activation; poolings have neither γ nor β. ``chain``: an impossibility
    document's network, every layer reading the one before, γ = 1 and β = 0 (to be tuned)."""
    graph = Graph(width0, [])
    for j, layer in enumerate(layers, 1):
        rows, positions, columns = _layer_matrix(layer, frozen=True)
        reads = j - 1 if chain else layer.get("input")
        _node_width_check(graph.widths(), reads, columns, f"network layer {j}")
        if chain or not positions:
            scale, shift = None, [Fraction(0)] * len(rows)
        else:
            scale = _per_row(vector(layer["gamma"]), positions, len(rows))
            shift = _per_row(vector(layer["beta"]), positions, len(rows))
        node = Node(reads, rows, shift, _activation(layer), scale)
        if "residual" in layer:
            node.pre.append(_skip(layer["residual"], graph.widths(), len(rows),
                                  f"network layer {j} residual"))
        for s in layer.get("skip", []) or []:
            node.post.append(_skip(s, graph.widths(), len(rows), f"network layer {j}"))
        graph.nodes.append(node)
    return graph


def _activation(layer: dict) -> str:
    act = layer.get("activation")
    if act not in ("relu", "identity"):
        raise Unreadable(f"activation {act!r}")
    return str(act)


# ------------------------------------------------------------------------------- evaluation


Scaled = tuple[list[list[tuple[int, int]]], int]


def _integer_rows(rows: Sparse) -> Scaled:
    """``rows`` as integer rows over one denominator (the lcm of every entry's)."""
    den = 1
    for row in rows:
        for _, w in row:
            den = den * w.denominator // gcd(den, w.denominator)
    return [[(t, w.numerator * (den // w.denominator)) for t, w in row] for row in rows], den


def _over(values: list[Fraction]) -> tuple[list[int], int]:
    den = 1
    for v in values:
        den = den * v.denominator // gcd(den, v.denominator)
    return [v.numerator * (den // v.denominator) for v in values], den


def _product(rows: Scaled, a: tuple[list[int], int]) -> tuple[list[int], int]:
    (M, m_den), (nums, den) = rows, a
    return [sum(w * nums[t] for t, w in row) for row in M], m_den * den


def _sum(u: tuple[list[int], int], v: tuple[list[int], int]) -> tuple[list[int], int]:
    (a, p), (b, q) = u, v
    return [x * q + y * p for x, y in zip(a, b)], p * q


def _reduced(u: tuple[list[int], int]) -> tuple[list[int], int]:
    nums, den = u
    g = gcd(den, *nums)
    return ([x // g for x in nums], den // g) if g > 1 else (nums, den)


def evaluate(graph: Graph, x: list[Fraction]) -> list[tuple[list[int], int]]:
    """Every node's value at the input ``x`` (node 0 is ``x``). Each node is held as integer
    numerators over one denominator, so that a product costs integer multiply-adds."""
    if len(x) != graph.width0:
        raise Unreadable(f"a point of {len(x)} coordinates for an input of {graph.width0}")
    nodes = [_over(list(x))]
    for node in graph.nodes:
        z = _product(node.integers(node.rows), nodes[node.reads])
        if node.scale is not None:
            g_nums, g_den = node.integers(node.scale)
            z = [g * v for g, v in zip(g_nums, z[0])], g_den * z[1]
        z = _reduced(_sum(z, node.integers(node.shift)))
        for q, S in node.pre:
            z = _reduced(_sum(z, _product(node.integers(S), nodes[q])))
        if node.activation == "relu":
            z = [max(v, 0) for v in z[0]], z[1]
        for q, S in node.post:
            z = _reduced(_sum(z, _product(node.integers(S), nodes[q])))
        nodes.append(z)
    return nodes


def values(graph: Graph, x: list[Fraction]) -> list[list[Fraction]]:
    """Every node's value at ``x`` as Fractions."""
    return [[Fraction(v, den) for v in nums] for nums, den in evaluate(graph, x)]


def output(graph: Graph, x: list[Fraction]) -> list[Fraction]:
    """The network's value (its last node) at ``x``."""
    nums, den = evaluate(graph, x)[-1]
    return [Fraction(v, den) for v in nums]


# -------------------------------------------------------------------------- the documents


@dataclass
class Box:
    lower: list[Fraction]
    upper: list[Fraction]

    @property
    def free(self) -> list[int]:
        return [t for t, (a, b) in enumerate(zip(self.lower, self.upper)) if a < b]


def read_box(doc: dict) -> Box:
    lower, upper = vector(doc["domain"]["lower"]), vector(doc["domain"]["upper"])
    if not lower or len(lower) != len(upper) or any(a > b for a, b in zip(lower, upper)):
        raise Unreadable("domain")
    return Box(lower, upper)


@dataclass
class Certificate:
    box: Box
    target: Graph
    network: Graph


def read_certificate(doc: dict) -> Certificate:
    """The box, the target and the frozen network of a certificate (§0, §1, §8, §10)."""
    try:
        box = read_box(doc)
        d = len(box.lower)
        return Certificate(box, target_graph(doc["target"]["layers"], d),
                           frozen_graph(doc["network"]["layers"], d))
    except (KeyError, TypeError, IndexError, AttributeError) as e:
        raise Unreadable(f"{type(e).__name__}: {e}") from e


@dataclass
class Impossibility:
    """A target graph and a frozen chain with γ, β free (§9.1)."""

    box: Box
    target: Graph
    weights: list[list[list[Fraction]]]
    activations: list[str]
    cls: str  # "every", "fixed-output-scale" (γ_L held at 1) or "aligned"


def claimed_class(witness: Any) -> str:
    """The class of tunings a witness speaks of (§9.2): ``aligned`` for an aligned witness,
    ``fixed-output-scale`` for a Fredholm witness of scale ``fixed``, else ``every``."""
    if not isinstance(witness, dict):
        raise Unreadable("no witness")
    if witness.get("kind") == "aligned":
        return "aligned"
    if witness.get("kind") == "fredholm" and witness.get("scale") == "fixed":
        return "fixed-output-scale"
    return "every"


def read_impossibility(doc: dict) -> Impossibility:
    """The box, the target (its ``input`` and ``skip`` read as in §10) and the frozen chain."""
    try:
        box = read_box(doc)
        d = len(box.lower)
        target = target_graph(doc["target"]["layers"], d)
        layers = doc["network"]["layers"]
        for layer in layers:
            extra = set(layer) - {"weight", "activation", "source"}
            if extra:
                raise Unreadable(f"an impossibility document's frozen layer with {sorted(extra)}")
        chain = frozen_graph(layers, d, chain=True)
        weights = [frozen_weight(layer["weight"]) for layer in layers]
        if chain.nodes[-1].width != target.nodes[-1].width:
            raise Unreadable("output widths differ")
        return Impossibility(box, target, weights, [n.activation for n in chain.nodes],
                             claimed_class(doc.get("witness")))
    except (KeyError, TypeError, IndexError, AttributeError) as e:
        raise Unreadable(f"{type(e).__name__}: {e}") from e


# ------------------------------------------------------------------------------ the points


def points(box: Box, randoms: int = 8, seed: int = 0,
           max_vertices: int = 64) -> list[list[Fraction]]:
    """Box vertices (every one when there are at most ``max_vertices``, else the two extreme
    corners and a seeded sample) and ``randoms`` seeded random rational points of the box."""
    rng = random.Random(seed)
    free = box.free
    out: list[list[Fraction]] = []
    if 2 ** len(free) <= max_vertices:
        choices = list(product((0, 1), repeat=len(free)))
    else:
        choices = [(0,) * len(free), (1,) * len(free)] + [
            tuple(rng.randint(0, 1) for _ in free) for _ in range(max_vertices - 2)]
    for bits in choices:
        x = list(box.lower)
        for t, b in zip(free, bits):
            x[t] = box.upper[t] if b else box.lower[t]
        out.append(x)
    for _ in range(randoms):
        den = rng.choice([2, 7, 64, 1000, 2**31 - 1])
        out.append([lo + (hi - lo) * Fraction(rng.randint(0, den), den)
                    for lo, hi in zip(box.lower, box.upper)])
    return out


def claim_fails(doc: dict, randoms: int = 8, seed: int = 0,
                max_vertices: int = 64) -> str | None:
    """``None`` when ``f = g`` at every tested point of the box, else the first point where they
    differ, with both values (raises :class:`Unreadable`)."""
    cert = read_certificate(doc)
    for x in points(cert.box, randoms, seed, max_vertices):
        f, g = output(cert.network, x), output(cert.target, x)
        if f != g:
            return f"f != g at {[str(v) for v in x]}: f = {[str(v) for v in f]}, g = " \
                   f"{[str(v) for v in g]}"
    return None
