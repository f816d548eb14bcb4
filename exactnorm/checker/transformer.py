"""Checking a transformer document (``exactnorm.transformer``, docs/certificate-format.md §11):
the architecture read field by field, every slot's box derived by the rules, every slot's
certificate checked by the one walk on that box. Standard library only.

Claim checked: for every input sequence of length ≤ T over the vocabulary, the transformer whose
slots are replaced by their frozen networks equals the original, position by position.

Correctness argument (§11.2, §11.3). The architecture describes the original as a graph of
per-token nodes: the one-hot input, slots (linear maps or ReLU MLPs, each an ordinary target),
LayerNorms, attentions (heads of three slots, a scale, a mask) and residual adds; every
parameter-free operation (the normalisation of a LayerNorm, the scores, the mask, the softmax,
the weighted sum, an add) is the same operation in the rewrite. By induction over the nodes in
order: if every node a node reads is equal in both, the node is equal — for a parameter-free
operation because it is the same operation on equal values, for a slot because its certificate
proves ``f_S = S`` on a box ``B_j`` that holds every value the slot can read. ``B_j`` is derived
here, never read: the one-hot cube; ``b ± |g|·r`` after a LayerNorm (``Σ z = 0`` and ``Σ z² ≤ d``
give ``z_i² ≤ d − 1 ≤ r²``, whatever the token and whatever ``ε ≥ 0``; ``r² ≥ d − 1`` is an
integer comparison here); a slot's exact interval image; the concatenation of the value slots'
images after an attention (a head's output is a convex combination of its values, whatever the
scores, the mask or the length); interval sums after an add. The slot's declared ``domain`` must
equal ``B_j`` exactly (rule ``box``): the walk then checks the slot on the box derived here.

Every field of the document is interpreted or refused: the top level, the architecture, each
node's keys by its ``op``, each slot's certificate (by :func:`.walk.run_rules`), the seed rule
(rule ``provenance``: the seed of slot ``NAME`` is derived from the architecture's canonical text,
the name, the slot's box and target, §11.1, §11.4).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from .boxes import Box
from .budget import STEP, Budget, mul_cost
from .document import read_certificate, read_target
from .kinds import RULES
from .kinds.dense import NAME as DENSE
from .numbers import CertificateError, IntVector, Verdict, field, number, show, vector
from .protocol import AnyArithmetic
from .reading import rule_domain
from .records import TargetRecord
from .seed import canonical_lines
from .vocabulary import (
    DEFAULT_MAX_DIGITS,
    DEFAULT_MAX_WORK,
    FORMAT,
    MAX_MAP_ENTRIES,
    MIN_WORK,
    TRANSFORMER_FORMAT,
    TRANSFORMER_VERSIONS,
)

#: the layer kinds of a slot's target and frozen network: a chain of dense layers (§11)
SLOT_KINDS = frozenset({DENSE})

__all__ = ["check_transformer", "run_transformer", "slot_seed", "architecture_text",
           "TRANSFORMER_SEED_TEXT", "OPS", "MAX_NODES", "CLAIM"]

TRANSFORMER_SEED_TEXT = b"exactnorm.transformer.seed.v1"
#: the keys of each node, by its op (§11.1)
OPS = {"input": ("op",), "slot": ("op", "slot", "reads"),
       "layernorm": ("op", "reads", "gain", "bias", "epsilon", "r"),
       "attention": ("op", "reads", "heads", "scale", "mask"), "add": ("op", "reads")}
TOP_KEYS = ("format", "version", "architecture", "slots", "seed_rule", "provenance")
MAX_NODES = 1 << 16
_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,100}")
CLAIM = ("for every input sequence of length ≤ {T} over this vocabulary, the rewritten "
         "transformer equals the original; attention, softmax and LayerNorm normalisation are "
         "the original's operations on equal values")


def _int(value: object, where: str, low: int, high: int) -> int:
    if type(value) is not int or not low <= value < high:
        raise CertificateError("format", f"{where} must be a JSON integer in {low} … "
                               f"{high - 1}, got {show(value)}")
    return value


def _keys(obj: object, keys: tuple[str, ...], where: str, optional: tuple[str, ...] = ()) -> dict:
    if not isinstance(obj, dict):
        raise CertificateError("format", f"{where} must be an object")
    extra = sorted(set(map(str, obj)) - set(keys) - set(optional))
    missing = [k for k in keys if k not in obj]
    if extra or missing:
        what = f"unknown key {show(extra[0])}" if extra else f"missing key {show(missing[0])}"
        raise CertificateError("format", f"{where}: {what} (expected "
                                         f"{', '.join(keys + optional)})")
    return obj


def _name(value: object, where: str) -> str:
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise CertificateError("format", f"{where} must be a slot name (1 to 100 characters of "
                                         f"A–Z a–z 0–9 _ . -), got {show(value)}")
    return value


def _reads(value: object, k: int, where: str) -> int:
    if type(value) is not int or not 0 <= value < k:
        raise CertificateError("architecture", f"{where} reads {show(value)}: a node reads an "
                                               f"earlier node (0 … {k - 1})")
    return value


def _mask(value: object, where: str, max_digits: int) -> Any:
    if value in ("causal", "none"):
        return value
    if isinstance(value, dict):
        m = _keys(value, ("causal", "value"), where)
        if m["causal"] in ("add", "fill"):
            return (m["causal"], number(m["value"], f"{where}.value", max_digits))
    raise CertificateError("format", f"{where} must be \"causal\", \"none\" or "
                                     f"{{\"causal\": \"add\" | \"fill\", \"value\": c}}, got "
                                     f"{show(value)}")


def read_architecture(arch: object, max_digits: int) -> tuple[int, int, list[dict], int]:
    """Rules ``format``/``number``/``architecture`` of the architecture section: the nodes with
    their fields interpreted (vectors as :class:`IntVector`, numbers as ``Fraction``)."""
    a = _keys(arch, ("vocabulary", "positions", "nodes", "output"), "architecture")
    V = _int(a["vocabulary"], "architecture.vocabulary", 1, MAX_MAP_ENTRIES)
    T = _int(a["positions"], "architecture.positions", 0, MAX_MAP_ENTRIES)
    raw = a["nodes"]
    if not isinstance(raw, list) or not raw or len(raw) > MAX_NODES:
        raise CertificateError("format", f"architecture.nodes must be a list of 1 to "
                                         f"{MAX_NODES} nodes")
    nodes: list[dict] = []
    for k, node in enumerate(raw):
        where = f"node {k}"
        op = node.get("op") if isinstance(node, dict) else None
        if op not in OPS:
            raise CertificateError("format", f"{where}: op must be one of "
                                             f"{show(list(OPS))}, got {show(op)}")
        _keys(node, OPS[op], where)
        if (op == "input") != (k == 0):
            raise CertificateError("architecture", f"{where}: node 0, and no other, is the "
                                                   f"input")
        n: dict[str, Any] = {"op": op, "reads": []}
        if op == "slot":
            n["slot"] = _name(node["slot"], f"{where}.slot")
            n["reads"] = [_reads(node["reads"], k, where)]
        elif op == "layernorm":
            n["reads"] = [_reads(node["reads"], k, where)]
            n["gain"] = vector(node["gain"], f"{where}.gain", None, max_digits)
            n["bias"] = vector(node["bias"], f"{where}.bias", len(n["gain"]), max_digits)
            n["epsilon"] = number(node["epsilon"], f"{where}.epsilon", max_digits)
            n["r"] = number(node["r"], f"{where}.r", max_digits)
        elif op == "attention":
            n["reads"] = [_reads(node["reads"], k, where)]
            heads = node["heads"]
            if not isinstance(heads, list) or not heads or len(heads) > MAX_NODES:
                raise CertificateError("format", f"{where}.heads must be a non-empty list")
            n["heads"] = [[_name(_keys(h, ("q", "k", "v"), f"{where}.heads[{t}]")[r],
                                 f"{where}.heads[{t}].{r}") for r in "qkv"]
                          for t, h in enumerate(heads)]
            n["scale"] = number(node["scale"], f"{where}.scale", max_digits)
            n["mask"] = _mask(node["mask"], f"{where}.mask", max_digits)
        elif op == "add":
            pair = node["reads"]
            if not isinstance(pair, list) or len(pair) != 2:
                raise CertificateError("format", f"{where}.reads must be a list of two nodes")
            n["reads"] = [_reads(j, k, where) for j in pair]
        nodes.append(n)
    out = _int(a["output"], "architecture.output", 0, len(nodes))
    read = {j for n in nodes for j in n["reads"]}
    for k in range(len(nodes)):
        if k not in read and k != out:
            raise CertificateError("architecture", f"node {k} ({nodes[k]['op']}) is never read "
                                                   f"and is not the output")
    return V, T, nodes, out


def _uses(nodes: list[dict]) -> list[tuple[str, int, int]]:
    """``(slot, node, node it reads)`` in node order, each name once (rule ``architecture``)."""
    out: list[tuple[str, int, int]] = []
    seen: set[str] = set()
    for k, n in enumerate(nodes):
        names = [n["slot"]] if n["op"] == "slot" else \
            [x for h in n.get("heads", []) for x in h]
        for name in names:
            if name in seen:
                raise CertificateError("architecture", f"slot {name} is used twice (node {k})")
            seen.add(name)
            out.append((name, k, n["reads"][0]))
    return out


# ---------------------------------------------------------------- boxes (§11.2)


def _common(boxes: list[Box]) -> Box:
    Q = 1
    for b in boxes:
        Q = math.lcm(Q, b[2])
    lo: list[int] = []
    hi: list[int] = []
    for bl, bh, q in boxes:
        s = Q // q
        lo += [x * s for x in bl]
        hi += [x * s for x in bh]
    return lo, hi, Q


def _layernorm_box(n: dict, budget: Budget, k: int) -> Box:
    g, b, r = n["gain"], n["bias"], n["r"]
    gr = Fraction(1, g.den) * r
    Q = math.lcm(b.den, gr.denominator)
    sb, sg = Q // b.den, Q // gr.denominator
    bits = max(map(abs, b.nums), default=0).bit_length() + max(
        map(abs, g.nums), default=0).bit_length() + Q.bit_length() + abs(r.numerator).bit_length()
    budget.size(2, len(g), None, bits, where=f"node {k}", what="the LayerNorm's box")
    budget.work(2 * len(g) * (STEP + 2 * mul_cost(bits, bits)), None, f"node {k}")
    lo = [bn * sb - abs(gn) * gr.numerator * sg for gn, bn in zip(g.nums, b.nums)]
    hi = [bn * sb + abs(gn) * gr.numerator * sg for gn, bn in zip(g.nums, b.nums)]
    return lo, hi, Q


class _Graph:
    """The architecture with the slots' target records: widths, then boxes on demand."""

    def __init__(self, V: int, T: int, nodes: list[dict], targets: dict[str, list[TargetRecord]],
                 budget: Budget) -> None:
        self.V, self.T, self.nodes, self.targets, self.budget = V, T, nodes, targets, budget
        self.boxes: dict[int, Box] = {}
        self.widths: list[int] = []
        for k, n in enumerate(nodes):
            self.widths.append(self._width(k, n))

    def _in(self, name: str) -> int:
        W = self.targets[name][0].W
        return W.ncols if W is not None else 0

    def _width(self, k: int, n: dict) -> int:
        op = n["op"]
        if op == "input":
            return self.V + self.T
        w = [self.widths[j] for j in n["reads"]]
        if op in ("slot", "attention"):
            names = [n["slot"]] if op == "slot" else [x for h in n["heads"] for x in h]
            for name in names:
                if self._in(name) != w[0]:
                    raise CertificateError("shape", f"node {k}: slot {name} reads "
                                                    f"{self._in(name)} values, node "
                                                    f"{n['reads'][0]} has {w[0]}")
            if op == "slot":
                return self.targets[n["slot"]][-1].width
            for q, key, _ in n["heads"]:
                if self.targets[q][-1].width != self.targets[key][-1].width:
                    raise CertificateError("shape", f"node {k}: head slots {q} and {key} write "
                                                    f"{self.targets[q][-1].width} and "
                                                    f"{self.targets[key][-1].width} values")
            return sum(self.targets[v][-1].width for _, _, v in n["heads"])
        if op == "layernorm":
            if len(n["gain"]) != w[0]:
                raise CertificateError("shape", f"node {k}: a LayerNorm of {len(n['gain'])} "
                                                f"features reads {w[0]} values")
            return w[0]
        if w[0] != w[1]:
            raise CertificateError("shape", f"node {k} adds nodes of widths {w[0]} and {w[1]}")
        return w[0]

    def image(self, name: str, box: Box) -> Box:
        """The exact interval image of a slot's target over ``box``."""
        for i, tl in enumerate(self.targets[name], 1):
            box = RULES[tl.kind].next_box(tl, box, self.budget, i, None)
        return box

    def box(self, k: int) -> Box:
        if k in self.boxes:
            return self.boxes[k]
        n = self.nodes[k]
        op = n["op"]
        if op == "input":
            w = self.V + self.T
            self.budget.size(2, w, None, 1, where="node 0", what="the one-hot box")
            out: Box = ([0] * w, [1] * w, 1)
        elif op == "layernorm":
            out = _layernorm_box(n, self.budget, k)
        elif op == "slot":
            out = self.image(n["slot"], self.box(n["reads"][0]))
        elif op == "attention":
            out = _common([self.image(v, self.box(n["reads"][0])) for _, _, v in n["heads"]])
        else:
            a, c = self.box(n["reads"][0]), self.box(n["reads"][1])
            Q = math.lcm(a[2], c[2])
            sa, sc = Q // a[2], Q // c[2]
            out = ([x * sa + y * sc for x, y in zip(a[0], c[0])],
                   [x * sa + y * sc for x, y in zip(a[1], c[1])], Q)
        self.boxes[k] = out
        return out


def _rule_layernorm(k: int, n: dict) -> None:
    d = len(n["gain"])
    eps, r = n["epsilon"], n["r"]
    if eps < 0:
        raise CertificateError("layernorm", f"node {k}: epsilon {show(eps)} is negative")
    if r < 0 or r.numerator * r.numerator < (d - 1) * r.denominator * r.denominator:
        raise CertificateError("layernorm", f"node {k}: r = {show(r)} does not satisfy r ≥ 0 "
                                            f"and r² ≥ d − 1 = {d - 1} (d = {d} features)")


def _rule_box(name: str, lower: IntVector, upper: IntVector, box: Box, j: int) -> None:
    lo, hi, Q = box
    if len(lower) != len(lo):
        raise CertificateError("box", f"slot {name}: its domain has {len(lower)} coordinates, "
                                      f"node {j} has {len(lo)}")
    for t in range(len(lo)):
        for what, mine, v in (("lower", lo[t], lower), ("upper", hi[t], upper)):
            if v.nums[t] * Q != mine * v.den:
                raise CertificateError("box", f"slot {name}: domain {what}[{t}] is "
                                              f"{show(Fraction(v.nums[t], v.den))}, the box the "
                                              f"architecture gives node {j} has "
                                              f"{show(Fraction(mine, Q))}")


# ---------------------------------------------------------------- seeds (§11.1, §11.4)


def _hex(x: Fraction) -> str:
    p, q = x.numerator, x.denominator
    text = ("-" if p < 0 else "") + format(abs(p), "x")
    return text if q == 1 else f"{text}/{q:x}"


def _vec(v: IntVector) -> str:
    return ",".join(_hex(Fraction(n, v.den)) for n in v.nums)


def architecture_text(V: int, T: int, nodes: list[dict], out: int) -> bytes:
    """The canonical text of an architecture (§11.4)."""
    lines = [f"vocabulary {V}", f"positions {T}", f"output {out}"]
    for k, n in enumerate(nodes):
        op, reads = n["op"], n["reads"]
        if op == "input":
            lines.append(f"node {k} input")
        elif op == "slot":
            lines.append(f"node {k} slot {n['slot']} reads {reads[0]}")
        elif op == "layernorm":
            lines += [f"node {k} layernorm reads {reads[0]}", f"gain {_vec(n['gain'])}",
                      f"bias {_vec(n['bias'])}", f"epsilon {_hex(n['epsilon'])}",
                      f"r {_hex(n['r'])}"]
        elif op == "attention":
            m = n["mask"]
            mask = m if isinstance(m, str) else f"causal {m[0]} {_hex(m[1])}"
            lines.append(f"node {k} attention reads {reads[0]} scale {_hex(n['scale'])} "
                         f"mask {mask}")
            lines += [f"head {h} q {q} k {key} v {v}" for h, (q, key, v) in enumerate(n["heads"])]
        else:
            lines.append(f"node {k} add reads {reads[0]} {reads[1]}")
    return "".join(line + "\n" for line in lines).encode("ascii")


def slot_seed(arch_text: bytes, name: str, lower: IntVector, upper: IntVector,
              target: list[TargetRecord]) -> int:
    """The seed of slot ``name`` under seed rule ``slot`` (§11.1)."""
    h = hashlib.shake_256()
    h.update(TRANSFORMER_SEED_TEXT + b"\n")
    h.update(arch_text)
    h.update(f"slot {name}\n".encode("ascii"))
    for line in canonical_lines(lower, upper, target):
        h.update(line)
    return int.from_bytes(h.digest(8), "little")


# ---------------------------------------------------------------- the check


def _rule_slot_seed(doc: dict, name: str, derived: int, max_digits: int, budget: Budget) -> None:
    """Rule ``provenance`` of seed rule ``slot``: every draw record of the slot names the seed
    derived for it (the records read by the reader of §6, nothing regenerated)."""
    try:
        prov = read_certificate(doc, max_digits, budget)[5]
    except CertificateError as exc:
        raise CertificateError(exc.rule, f"slot {name}: {exc}", exc.layer, exc.neuron) from None
    for seed in sorted(prov.seeds):
        if seed != derived:
            raise CertificateError("provenance", f"slot {name}: seed_rule slot: its frozen "
                                                 f"matrices are drawn from seed {seed}, the "
                                                 f"seed derived from the architecture, the "
                                                 f"slot's name, box and target is {derived}")


def _slot_document(doc: object, name: str, max_digits: int) -> tuple[dict, IntVector, IntVector,
                                                                     list[TargetRecord]]:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != 3:
        raise CertificateError("architecture", f"slot {name} must hold an {FORMAT} document of "
                                               f"version 3")
    try:
        lower, upper = rule_domain(_keys_present(doc, name), max_digits)
        target = read_target(doc, len(lower), max_digits, 3)
    except CertificateError as exc:
        raise CertificateError(exc.rule, f"slot {name}: {exc}", exc.layer, exc.neuron) from None
    for i, tl in enumerate(target, 1):
        if tl.kind not in SLOT_KINDS or tl.input != i - 1 or tl.skip is not None:
            raise CertificateError("architecture", f"slot {name}: target layer {i} is not a "
                                                   f"dense layer of a chain")
    return doc, lower, upper, target


def _keys_present(doc: dict, name: str) -> dict:
    for key in ("domain", "target", "network"):
        if key not in doc:
            raise CertificateError("format", f"slot {name}: missing {key}")
    return doc


def run_transformer(ar: AnyArithmetic, doc: dict, run_rules: Callable[..., dict[str, Any]],
                    max_digits: int = DEFAULT_MAX_DIGITS,
                    progress: Callable[[int, int], None] | None = None,
                    max_work: int | None = DEFAULT_MAX_WORK) -> dict[str, Any]:
    """Every rule of §11.3 in order; returns the facts proven. ``run_rules`` is the walk's
    (:func:`.walk.run_rules`), passed in by the walk so that this module does not import it."""
    _keys(doc, ("format", "version", "architecture", "slots"), "document",
          ("seed_rule", "provenance"))
    if doc["version"] not in TRANSFORMER_VERSIONS or type(doc["version"]) is not int:
        raise CertificateError("format", f"unsupported version {show(doc['version'])} of "
                                         f"{TRANSFORMER_FORMAT}")
    seed_rule = doc.get("seed_rule", "chosen")
    if seed_rule not in ("slot", "chosen"):
        raise CertificateError("format", f"seed_rule must be \"slot\" or \"chosen\", got "
                                         f"{show(seed_rule)}")
    V, T, nodes, out = read_architecture(doc["architecture"], max_digits)
    uses = _uses(nodes)
    slots = field(doc, "slots", "document")
    if not isinstance(slots, dict):
        raise CertificateError("format", "slots must be an object")
    for name in slots:
        if name not in {u[0] for u in uses}:
            raise CertificateError("architecture", f"slot {show(name)} is not used by the "
                                                   f"architecture")
    read: dict[str, tuple[dict, IntVector, IntVector, list[TargetRecord]]] = {}
    for name, _, _ in uses:
        if name not in slots:
            raise CertificateError("architecture", f"slot {name} has no certificate")
        read[name] = _slot_document(slots[name], name, max_digits)
    budget = Budget(MIN_WORK if max_work is None else max_work)
    graph = _Graph(V, T, nodes, {n: r[3] for n, r in read.items()}, budget)
    for k, n in enumerate(nodes):
        if n["op"] == "layernorm":
            _rule_layernorm(k, n)
    for name, _, j in uses:  # rule box: every slot's domain is the box of the node it reads
        _, lower, upper, _ = read[name]
        _rule_box(name, lower, upper, graph.box(j), j)
    if seed_rule == "slot":  # rule provenance: each slot's draws name the seed of its place
        text = architecture_text(V, T, nodes, out)
        for name, _, _ in uses:
            slot_doc, lower, upper, target = read[name]
            _rule_slot_seed(slot_doc, name, slot_seed(text, name, lower, upper, target),
                            max_digits, budget)
    facts_slots = []
    work = 0
    for done, (name, k, j) in enumerate(uses):
        if progress is not None:
            progress(done, len(uses))
        left = None if max_work is None else max(1, max_work - budget.spent - work)
        try:
            facts = run_rules(ar, read[name][0], max_digits, None, left)
        except CertificateError as exc:
            raise CertificateError(exc.rule, f"slot {name}: {exc}", exc.layer,
                                   exc.neuron) from None
        work += facts["work"]
        facts_slots.append({"name": name, "node": k, "reads": j,
                            "widths": facts["target_widths"],
                            "frozen_layers": facts["frozen_layers"], "seed": facts["seed"],
                            "box": facts["box"], "work": facts["work"]})
    if progress is not None:
        progress(len(uses), len(uses))
    heads = [len(n["heads"]) for n in nodes if n["op"] == "attention"]
    return {"claim": "TRANSFORMER", "vocabulary": V, "positions": T, "blocks": len(heads),
            "heads": heads, "layernorms": sum(n["op"] == "layernorm" for n in nodes),
            "nodes": len(nodes), "slots": facts_slots, "seed_rule": seed_rule,
            "frozen_layers": sum(s["frozen_layers"] for s in facts_slots),
            "work": work + budget.spent, "work_budget": max_work}


def check_transformer(ar: AnyArithmetic, doc: dict, run_rules: Callable[..., dict[str, Any]], *,
                      max_digits: int = DEFAULT_MAX_DIGITS,
                      progress: Callable[[int, int], None] | None = None,
                      max_work: int | None = DEFAULT_MAX_WORK) -> Verdict:
    """The verdict on a transformer document (each slot checked by ``run_rules``, the walk's);
    never raises for bad content."""
    try:
        f = run_transformer(ar, doc, run_rules, max_digits, progress, max_work)
    except CertificateError as exc:
        return Verdict(False, exc.rule, str(exc), exc.layer, exc.neuron)
    except RecursionError:
        return Verdict(False, "format", "document is nested too deeply")
    T = f["positions"]
    claim = CLAIM.format(T=T) if T else CLAIM.replace("of length ≤ {T} ", "of any length ")
    seeds = ("each slot's seed derived from the architecture, its name, box and target, verified"
             if f["seed_rule"] == "slot" else "seeds chosen by the writer")
    return Verdict(True, "valid", f"{claim}. Vocabulary {f['vocabulary']}, positions {T}, "
                                  f"{f['blocks']} block(s) with heads {f['heads']}, "
                                  f"{f['layernorms']} LayerNorm(s), {len(f['slots'])} slots "
                                  f"({f['frozen_layers']} frozen layers), every slot's box "
                                  f"derived from the architecture; {seeds}", facts=f)
