"""Mutants of real documents for the oracle campaigns (:mod:`tests.checker.oracle_campaign`):
single entries changed, and structures the writer never produces.

Operators (:data:`OPERATORS`; each takes a document and a ``random.Random`` and returns a changed
copy, or ``None`` where it does not apply): ``number`` — one numeric leaf of the box, the target's
weights and biases, γ, β, explicit frozen matrices, skip matrices, draw records (seed, key,
shape, mask), redraw kernels, witnesses, a transformer's architecture or a slot (a category is
drawn first, so that rare places are reached); node reads of frozen and target layers; target
skips added, removed or re-pointed, with and without the matching checkpoint residual; frozen
post-activation skips; residuals moved, re-pointed, removed, added or of another kind;
checkpoints moved, added or removed; column and Bernoulli masks on any drawn matrix (so on
either matrix of a pair) or removed; attempts; pinned coordinates (``lower = upper``, for an
impossibility document often at the witness's point); a weight on a pinned coordinate with and
without the compensating bias; layers turned into another kind or inserted into another kind's
segment; a dense target layer spelled as a 1×1 convolution; a record's shape in four parts; a
drawn weight written out (declared fixed, or explicit with its record); activations flipped;
versions and seed rules; witness kinds and keys; a transformer's node reads, attention masks
and heads, slots swapped, a slot's box widened or narrowed, a certificate operator inside a
slot.

Everything is seeded: :func:`mutants` draws from ``random.Random(crc32(kind|seed))``.
"""

from __future__ import annotations

import copy
import random
import zlib
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from tests.checker import oracle, oracle_documents

Doc = dict[str, Any]


# ----------------------------------------------------------------------------- JSON helpers


def _is_number(x: Any) -> bool:
    if isinstance(x, bool):
        return False
    if isinstance(x, int):
        return True
    try:
        oracle.number(x)
        return True
    except oracle.Unreadable:
        return False


def leaves(obj: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    out: list[tuple[tuple, Any]] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += leaves(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += leaves(v, path + (i,))
    else:
        out.append((path, obj))
    return out


def _category(path: tuple) -> str:
    if path[:1] == ("slots",):
        return "slot " + _category(path[2:])
    if path[:1] == ("architecture",):
        return "architecture"
    keys = [k for k in path if isinstance(k, str)]
    top = keys[0] if keys else ""
    if top == "domain":
        return "box"
    if top == "witness":
        return "witness"
    if top == "redraws":
        return "redraw"
    if top == "target":
        if "skip" in keys:
            return "target skip"
        return "target weight" if "weight" in keys else "target bias" if "bias" in keys \
            else "target structure"
    if top == "network":
        if "random" in keys or "source" in keys:
            return "record"
        for k in ("gamma", "beta", "residual", "skip"):
            if k in keys:
                return k
        return "frozen weight" if "weight" in keys else "network structure"
    return top or "top"


def _integer_slot(path: tuple) -> bool:
    keys = [k for k in path[2:] if isinstance(k, str)] if path[:1] == ("slots",) \
        else [k for k in path if isinstance(k, str)]
    return bool({"num", "den", "random", "source", "skip", "residual", "redraws", "checkpoints",
                 "input", "input_shape", "kernel_shape", "stride", "padding", "dilation",
                 "outputs", "rows", "prime", "determinant", "layer", "neuron", "columns",
                 "output", "version", "reads", "vocabulary", "positions"} & set(keys))


def _put(doc: Doc, path: tuple, value: Any) -> None:
    node: Any = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value


def _new_number(old: Any, integer: bool, rng: random.Random) -> Any:
    x = Fraction(old) if isinstance(old, int) else oracle.number(old)
    steps = [x + 1, x - 1, -x, Fraction(0), 2 * x, x + 7]
    if not integer:
        steps += [x + Fraction(1, 2), x * Fraction(3, 2), x - Fraction(1, 3)]
    new = rng.choice([s for s in steps if s != x] or [x + 1])
    if new.denominator == 1 and (isinstance(old, int) or integer):
        return int(new) if isinstance(old, int) else str(int(new))
    return str(new)


def number_mutant(doc: Doc, rng: random.Random) -> tuple[str, Doc] | None:
    """One numeric leaf (a category chosen first, so that rare places are reached) changed."""
    ignored = {"provenance", "witnesses"}  # descriptive: the checker reads neither
    slots: dict[str, list[tuple]] = {}
    for path, value in leaves(doc):
        own = path[2:] if path[:1] == ("slots",) else path
        if own and own[0] not in ignored and _is_number(value) and path[0] != "version":
            slots.setdefault(_category(path), []).append(path)
    if not slots:
        return None
    cat = rng.choice(sorted(slots))
    path = rng.choice(slots[cat])
    out = copy.deepcopy(doc)
    node: Any = out
    for k in path:
        node = node[k]
    _put(out, path, _new_number(node, _integer_slot(path), rng))
    return f"number: {cat}", out


# ------------------------------------------------------------------------ network structure


def _widths(doc: Doc) -> tuple[list[int], list[int]]:
    """Node widths of the target and (for a certificate) of the frozen network."""
    d = len(oracle.vector(doc["domain"]["lower"]))
    tw = [d]
    for layer in doc["target"]["layers"]:
        tw.append(len(oracle._layer_matrix(layer, frozen=False)[0]))
    fw = [d]
    if "checkpoints" in doc["network"]:
        fw = oracle.frozen_graph(doc["network"]["layers"], d).widths()
    return tw, fw


def _pick_node(rng: random.Random, widths: list[int], below: int, width: int,
               avoid: int | None) -> int | None:
    same = [s for s in range(below) if widths[s] == width and s != avoid]
    other = [s for s in range(below) if s != avoid]
    pool = same if same and rng.random() < 0.8 else other
    return rng.choice(pool) if pool else None


def _selection(rng: random.Random, rows: int, cols: int) -> dict[str, Any]:
    picks = [rng.randrange(cols) if rng.random() < 0.8 else None for _ in range(rows)]
    return {"selection": picks, "columns": cols}


def _skip(rng: random.Random, widths: list[int], below: int, rows: int) -> dict | None:
    q = _pick_node(rng, widths, below, rows, None)
    if q is None:
        return None
    if widths[q] == rows and rng.random() < 0.6:
        return {"from": q, "kind": "identity", "weight": {"identity": rows}}
    return {"from": q, "kind": "selection", "weight": _selection(rng, rows, widths[q])}


def frozen_input(doc: Doc, rng: random.Random) -> Doc | None:
    layers = doc["network"]["layers"]
    j = rng.randrange(len(layers)) + 1
    layer = layers[j - 1]
    if "checkpoints" not in doc["network"]:  # an impossibility document: a key §9 excludes
        layer["input"] = rng.randrange(j)
        return doc
    _, fw = _widths(doc)
    s = _pick_node(rng, fw, j, fw[layer["input"]], layer["input"])
    if s is None:
        return None
    layer["input"] = s
    return doc


def _retarget(doc: Doc, rng: random.Random) -> int | None:
    """Target layer ``i ≥ 2`` made to read another node (of its input's width, mostly);
    returns ``i``."""
    tl = doc["target"]["layers"]
    if len(tl) < 2:
        return None
    i = rng.randrange(2, len(tl) + 1)
    layer = tl[i - 1]
    if layer.get("kind", "dense") not in ("dense", "conv"):
        return None
    tw, _ = _widths(doc)
    p = _pick_node(rng, tw, i, tw[layer.get("input", i - 1)], layer.get("input", i - 1))
    if p is None:
        return None
    layer["input"] = p
    return i


def target_input(doc: Doc, rng: random.Random) -> Doc | None:
    return doc if _retarget(doc, rng) is not None else None


def target_and_segment_input(doc: Doc, rng: random.Random) -> Doc | None:
    """Target layer ``i`` reads another node ``p``, and the first frozen layer of segment ``i``
    reads ``p``'s checkpoint (§10: the segment's input follows the target's)."""
    i = _retarget(doc, rng)
    if i is None:
        return None
    p = doc["target"]["layers"][i - 1]["input"]
    cps = doc["network"]["checkpoints"]
    doc["network"]["layers"][cps[i - 2]]["input"] = 0 if p == 0 else cps[p - 1]
    return doc


def target_skip(doc: Doc, rng: random.Random, with_residual: bool = False) -> Doc | None:
    """A target skip added, removed or re-pointed; ``with_residual``: the checkpoint gets the
    matching residual too (then ``f = g`` stays true wherever the walk can still prove it)."""
    tl = doc["target"]["layers"]
    i = rng.randrange(len(tl)) + 1
    layer = tl[i - 1]
    if layer.get("kind", "dense") not in ("dense", "conv"):
        return None
    tw, _ = _widths(doc)
    if "skip" in layer and not with_residual and rng.random() < 0.4:
        del layer["skip"]
        return doc
    skip = _skip(rng, tw, i, tw[i])
    if skip is None:
        return None
    layer["skip"] = skip
    if with_residual:
        cps = doc["network"]["checkpoints"]
        ci = cps[i - 1]
        cq = 0 if skip["from"] == 0 else cps[skip["from"] - 1]
        doc["network"]["layers"][ci - 1]["residual"] = {**copy.deepcopy(skip), "from": cq}
    return doc


def frozen_skip(doc: Doc, rng: random.Random) -> Doc | None:
    layers = doc["network"]["layers"]
    j = rng.randrange(len(layers)) + 1
    layer = layers[j - 1]
    _, fw = _widths(doc)
    if layer.get("skip") and rng.random() < 0.4:
        if rng.random() < 0.5:
            del layer["skip"]
        else:
            layer["skip"][0]["from"] = rng.randrange(j)
        return doc
    skip = _skip(rng, fw, j, fw[j])
    if skip is None:
        return None
    layer["skip"] = list(layer.get("skip") or []) + [skip]
    return doc


def residual(doc: Doc, rng: random.Random) -> Doc | None:
    layers = doc["network"]["layers"]
    cps = doc["network"]["checkpoints"]
    holders = [j for j, L in enumerate(layers, 1) if "residual" in L]
    _, fw = _widths(doc)
    how = rng.choice(["move", "from", "remove", "add", "kind"])
    if how == "add" or not holders:
        j = rng.choice(cps)
        skip = _skip(rng, fw, j, fw[j])
        if skip is None:
            return None
        layers[j - 1]["residual"] = skip
        return doc
    j = rng.choice(holders)
    res = layers[j - 1]["residual"]
    if how == "remove":
        del layers[j - 1]["residual"]
    elif how == "move":
        k = rng.randrange(len(layers)) + 1
        layers[k - 1]["residual"] = layers[j - 1].pop("residual")
    elif how == "from":
        res["from"] = rng.randrange(j)
    else:
        n = fw[res["from"]]
        res["kind"] = "selection" if res["kind"] == "identity" else "identity"
        if res["kind"] == "selection" and fw[j] == n:
            res["weight"] = {"selection": list(range(n)), "columns": n}
    return doc


def checkpoint(doc: Doc, rng: random.Random) -> Doc | None:
    cps = doc["network"]["checkpoints"]
    k = rng.randrange(len(cps))
    how = rng.choice(["move", "move", "remove", "add"])
    if how == "move":
        cps[k] += rng.choice([-2, -1, 1, 2])
    elif how == "remove":
        del cps[k]
    else:
        cps.insert(k, max(1, cps[k] - 1))
    return doc


def _records(doc: Doc) -> list[dict]:
    out = []
    for layer in doc["network"]["layers"]:
        for holder in [layer] + list(layer.get("skip") or []):
            w = holder.get("weight")
            if isinstance(w, dict) and "random" in w:
                out.append(w["random"])
            elif isinstance(holder.get("source"), dict) and "generator" in holder["source"]:
                out.append(holder["source"])
    return out


def mask(doc: Doc, rng: random.Random) -> Doc | None:
    recs = _records(doc)
    if not recs:
        return None
    rec = rng.choice(recs)
    rows, cols = oracle.record_shape(rec)
    if "mask" in rec and rng.random() < 0.3:
        del rec["mask"]
    elif rng.random() < 0.6 and len(rec["shape"]) == 2:
        keep = sorted(rng.sample(range(cols), rng.randint(1, max(1, cols - 1))))
        rec["mask"] = {"columns": keep}
    else:
        key = list(rec["key"])
        if len(key) == 4:
            key[2] += 1
        rec["mask"] = {"p": rng.choice(["1/2", "1/3", 0, 1]), "key": key}
    return doc


def record_shape(doc: Doc, rng: random.Random) -> Doc | None:
    """A 2-d record's shape ``[r, c]`` written as four parts with the same product."""
    recs = [r for r in _records(doc) if len(r["shape"]) == 2 and "mask" not in r]
    if not recs:
        return None
    rec = rng.choice(recs)
    r, c = rec["shape"]
    rec["shape"] = rng.choice([[r, c, 1, 1], [r, 1, 1, c], [r, 1, c, 1]])
    return doc


def declare_fixed(doc: Doc, rng: random.Random) -> Doc | None:
    """A by-reference weight written out: declared fixed, or explicit with its record."""
    holders = [h for layer in doc["network"]["layers"]
               for h in [layer] + list(layer.get("skip") or [])
               if isinstance(h.get("weight"), dict) and "random" in h["weight"]]
    if not holders:
        return None
    h = rng.choice(holders)
    rec = h["weight"]["random"]
    h["weight"] = [[str(x) for x in row] for row in oracle.draw(rec)]
    h["source"] = {"kind": "fixed", "why": "mutant"} if rng.random() < 0.5 else rec
    return doc


def attempt(doc: Doc, rng: random.Random) -> Doc | None:
    recs = [r for r in _records(doc) if len(r["key"]) == 4]
    if not recs:
        return None
    rec = rng.choice(recs)
    rec["key"][3] += rng.choice([1, -1] if rec["key"][3] else [1])
    return doc


def pin(doc: Doc, rng: random.Random) -> Doc | None:
    lower = [str(v) for v in oracle.vector(doc["domain"]["lower"])]
    upper = [str(v) for v in oracle.vector(doc["domain"]["upper"])]
    k = rng.randrange(len(lower))
    if "witness" in doc and rng.random() < 0.6:
        value = str(oracle.vector(doc["witness"]["point"])[k])
    else:
        lo, hi = Fraction(lower[k]), Fraction(upper[k])
        value = str(rng.choice([lo, hi, (lo + hi) / 2]))
    lower[k] = upper[k] = value
    doc["domain"] = {"lower": lower, "upper": upper}
    return doc


def pinned_weight(doc: Doc, rng: random.Random) -> Doc | None:
    """A weight of the first target layer (or an explicit first frozen matrix) on a pinned
    coordinate changed; half the time the bias is changed to compensate (the function on the
    box is the same, which the identity rule's folding must see), half the time not."""
    lower, upper = oracle.vector(doc["domain"]["lower"]), oracle.vector(doc["domain"]["upper"])
    pinned = [t for t, (a, b) in enumerate(zip(lower, upper)) if a == b]
    layer = doc["target"]["layers"][0]
    if not pinned or layer.get("kind", "dense") != "dense" or layer.get("input", 0) != 0:
        return None
    t = rng.choice(pinned)
    W = [[str(x) for x in row] for row in oracle.matrix(layer["weight"])]
    bias = [str(x) for x in oracle.vector(layer["bias"])]
    r = rng.randrange(len(W))
    delta = Fraction(rng.choice([-2, -1, 1, 3]), rng.choice([1, 2]))
    W[r][t] = str(Fraction(W[r][t]) + delta)
    if rng.random() < 0.5:
        bias[r] = str(Fraction(bias[r]) - delta * lower[t])
    layer["weight"], layer["bias"] = W, bias
    return doc


def target_kind(doc: Doc, rng: random.Random) -> Doc | None:
    """A dense target layer written as the same map in another kind: a 1×1 convolution over a
    ``[width, 1, 1]`` tensor, or ``"kind": "dense"`` spelled out."""
    tl = doc["target"]["layers"]
    i = rng.randrange(len(tl))
    layer = tl[i]
    if layer.get("kind", "dense") != "dense":
        return None
    if rng.random() < 0.3:
        layer["kind"] = "dense"
        return doc
    cols = len(oracle.matrix(layer["weight"])[0])
    layer.update({"kind": "conv", "input_shape": [cols, 1, 1], "kernel_shape": [1, 1],
                  "stride": [1, 1], "padding": [0, 0], "dilation": [1, 1]})
    return doc


def activation(doc: Doc, rng: random.Random) -> Doc | None:
    section = rng.choice(["target", "network"])
    layers = [L for L in doc[section]["layers"] if L.get("activation") in ("relu", "identity")
              and L.get("kind", "dense") in ("dense", "conv")]
    if not layers:
        return None
    L = rng.choice(layers)
    L["activation"] = "identity" if L["activation"] == "relu" else "relu"
    return doc


def _renumber(doc: Doc, at: int) -> None:
    """Node indices ``≥ at`` of the frozen network moved one up (a layer inserted at ``at``)."""
    for layer in doc["network"]["layers"]:
        if layer.get("input", -1) >= at:
            layer["input"] += 1
        for s in list(layer.get("skip") or []) + ([layer["residual"]] if "residual" in layer
                                                   else []):
            if s["from"] >= at:
                s["from"] += 1
    doc["network"]["checkpoints"] = [c + 1 if c >= at else c
                                     for c in doc["network"]["checkpoints"]]


def layer_kind(doc: Doc, rng: random.Random) -> Doc | None:
    """A layer turned into another kind, or a layer of one kind inserted into another's
    segment (at a checkpoint: the segment then ends with it)."""
    layers = doc["network"]["layers"]
    _, fw = _widths(doc)
    j = rng.randrange(len(layers)) + 1
    layer = layers[j - 1]
    kind = layer.get("kind", "dense")
    how = rng.choice(["as-conv", "insert-dense", "insert-pool", "as-dense"])
    if how == "as-conv" and kind == "dense":
        layer.update({"kind": "conv", "input_shape": [fw[layer["input"]], 1, 1],
                      "kernel_shape": [1, 1], "stride": [1, 1], "padding": [0, 0],
                      "dilation": [1, 1]})
        layer.pop("skip", None)
        return doc
    if how == "as-dense" and kind != "dense":
        for key in ("kind", "input_shape", "kernel_shape", "stride", "padding", "dilation",
                    "stability"):
            layer.pop(key, None)
        if kind in ("avgpool", "globalavgpool"):
            n = fw[j]
            layer.update({"weight": [[1 if r == c else 0 for c in range(fw[layer["input"]])]
                                     for r in range(n)], "gamma": [1] * n, "beta": [0] * n,
                          "source": {"kind": "fixed", "why": "mutant"}})
        return doc
    w = fw[j]
    if how == "insert-pool":
        shapes = [[c, h, w // (c * h)] for c in range(1, w + 1) if w % c == 0
                  for h in range(1, w // c + 1) if (w // c) % h == 0]
        new: dict[str, Any] = {"kind": "globalavgpool", "input": j,
                               "input_shape": rng.choice(shapes), "activation": "identity"}
    else:
        new = {"input": j, "weight": [[1 if r == c else 0 for c in range(w)] for r in range(w)],
               "source": {"kind": "fixed", "why": "mutant"}, "gamma": [1] * w,
               "beta": [0] * w, "activation": "identity"}
    _renumber(doc, j + 1)
    # the new layer j + 1 reads node j; the readers of node j now read the new node
    for layer2 in layers[j:]:
        if layer2.get("input") == j:
            layer2["input"] = j + 1
    if j in doc["network"]["checkpoints"]:
        doc["network"]["checkpoints"] = [c + 1 if c == j else c
                                         for c in doc["network"]["checkpoints"]]
    layers.insert(j, new)
    return doc


def version(doc: Doc, rng: random.Random) -> Doc | None:
    how = rng.choice(["down", "seed_rule"])
    if how == "down" and doc.get("version") in (2, 3):
        doc["version"] -= 1
        return doc
    choice = rng.choice([None, "target", "target.v2", "chosen"])
    if choice is None:
        doc.pop("seed_rule", None)
    else:
        doc["seed_rule"] = choice
    return doc


def witness(doc: Doc, rng: random.Random) -> Doc | None:
    w = doc["witness"]
    how = rng.choice(["kind", "drop", "outputs"])
    if how == "kind":
        w["kind"] = rng.choice([k for k in ("rank", "fredholm", "kink", "aligned")
                                if k != w["kind"]])
    elif how == "drop":
        w.pop(rng.choice(sorted(k for k in w if k != "kind")))
    elif "outputs" in w:
        w["outputs"] = w["outputs"][:-1] or [0, 1]
    return doc


def _slot_names(doc: Doc) -> list[str]:
    return sorted(doc["slots"])


def node_reads(doc: Doc, rng: random.Random) -> Doc | None:
    nodes = doc["architecture"]["nodes"]
    k = rng.randrange(1, len(nodes))
    node = nodes[k]
    if node["op"] == "add":
        node["reads"][rng.randrange(2)] = rng.randrange(k)
    elif "reads" in node:
        node["reads"] = rng.randrange(k)
    else:
        return None
    return doc


def attention(doc: Doc, rng: random.Random) -> Doc | None:
    nodes = [n for n in doc["architecture"]["nodes"] if n["op"] == "attention"]
    if not nodes:
        return None
    node = rng.choice(nodes)
    how = rng.choice(["mask", "swap q k", "swap heads' v", "drop head"])
    heads = node["heads"]
    if how == "mask":
        node["mask"] = "none" if node["mask"] == "causal" else "causal"
    elif how == "swap q k":
        h = rng.choice(heads)
        h["q"], h["k"] = h["k"], h["q"]
    elif how == "swap heads' v" and len(heads) > 1:
        heads[0]["v"], heads[1]["v"] = heads[1]["v"], heads[0]["v"]
    elif how == "drop head" and len(heads) > 1:
        gone = heads.pop(rng.randrange(len(heads)))
        for role in gone.values():
            doc["slots"].pop(role, None)
    else:
        return None
    return doc


def swap_slots(doc: Doc, rng: random.Random) -> Doc | None:
    """Two slot certificates exchanged under their names."""
    a, b = rng.sample(_slot_names(doc), 2)
    doc["slots"][a], doc["slots"][b] = doc["slots"][b], doc["slots"][a]
    return doc


def slot_box(doc: Doc, rng: random.Random) -> Doc | None:
    """One coordinate of a slot's declared box widened or narrowed."""
    cert = doc["slots"][rng.choice(_slot_names(doc))]
    lower = [str(v) for v in oracle.vector(cert["domain"]["lower"])]
    upper = [str(v) for v in oracle.vector(cert["domain"]["upper"])]
    k = rng.randrange(len(lower))
    delta = Fraction(rng.choice([1, -1]), rng.choice([2, 1000]))
    if rng.random() < 0.5:
        lower[k] = str(Fraction(lower[k]) - delta)
    else:
        upper[k] = str(Fraction(upper[k]) + delta)
    cert["domain"] = {"lower": lower, "upper": upper}
    return doc


def slot_structure(doc: Doc, rng: random.Random) -> Doc | None:
    """A certificate operator applied to one slot's certificate."""
    name = rng.choice(_slot_names(doc))
    op = rng.choice(sorted(CERTIFICATE_OPERATORS))
    changed = CERTIFICATE_OPERATORS[op](doc["slots"][name], rng)
    if changed is None:
        return None
    doc["slots"][name] = changed
    return doc


def transformer_seed_rule(doc: Doc, rng: random.Random) -> Doc | None:
    choice = rng.choice([None, "slot", "chosen", "target.v2"])
    if choice is None:
        doc.pop("seed_rule", None)
    else:
        doc["seed_rule"] = choice
    return doc


def _structural(fn: Callable[..., Doc | None]) -> Callable[[Doc, random.Random], Doc | None]:
    def run(doc: Doc, rng: random.Random) -> Doc | None:
        return fn(copy.deepcopy(doc), rng)
    return run


def _seed_freed(fn: Callable[..., Doc | None]) -> Callable[[Doc, random.Random], Doc | None]:
    """A change of the target that, half the time, also drops a derived seed rule (the seed is
    then the writer's), so that the mutant reaches the rules after the seed's."""
    def run(doc: Doc, rng: random.Random) -> Doc | None:
        out = fn(copy.deepcopy(doc), rng)
        if out is not None and out.get("seed_rule", "chosen") != "chosen" and rng.random() < 0.5:
            out.pop("seed_rule")
        return out
    return run


CERTIFICATE_OPERATORS: dict[str, Callable[[Doc, random.Random], Doc | None]] = {
    "frozen input": _structural(frozen_input), "target input": _seed_freed(target_input),
    "target skip": _seed_freed(target_skip),
    "target and segment input": _seed_freed(target_and_segment_input),
    "target skip + residual": _seed_freed(lambda d, r: target_skip(d, r, with_residual=True)),
    "frozen skip": _structural(frozen_skip), "residual": _structural(residual),
    "checkpoint": _structural(checkpoint), "mask": _structural(mask),
    "attempt": _structural(attempt), "pin": _structural(pin),
    "activation": _structural(activation), "layer kind": _structural(layer_kind),
    "version": _structural(version), "pinned weight": _structural(pinned_weight),
    "target kind": _seed_freed(target_kind), "record shape": _structural(record_shape),
    "declare fixed": _structural(declare_fixed),
}
IMPOSSIBILITY_OPERATORS: dict[str, Callable[[Doc, random.Random], Doc | None]] = {
    "target input": _structural(target_input), "target skip": _structural(target_skip),
    "frozen input": _structural(frozen_input), "pin": _structural(pin),
    "activation": _structural(activation), "witness": _structural(witness),
    "pinned weight": _structural(pinned_weight), "target kind": _structural(target_kind),
}
TRANSFORMER_OPERATORS: dict[str, Callable[[Doc, random.Random], Doc | None]] = {
    "node reads": _structural(node_reads), "attention": _structural(attention),
    "swap slots": _structural(swap_slots), "slot box": _structural(slot_box),
    "slot structure": _structural(slot_structure),
    "seed rule": _structural(transformer_seed_rule),
}
OPERATORS = sorted(set(CERTIFICATE_OPERATORS) | set(IMPOSSIBILITY_OPERATORS)
                   | set(TRANSFORMER_OPERATORS) | {"number"})
#: the share of numeric (single-entry) mutants
NUMBER_SHARE = 0.5


def mutants(kind: str, count: int, seed: int = 0) -> list[tuple[str, Doc]]:
    """``count`` seeded mutants of the documents of ``kind``, (operator, document) pairs."""
    docs = oracle_documents.documents(kind)
    rng = random.Random(zlib.crc32(f"{kind}|{seed}".encode()))
    ops = {"impossibility": IMPOSSIBILITY_OPERATORS, "certificate": CERTIFICATE_OPERATORS,
           "transformer": TRANSFORMER_OPERATORS}[family(kind)]
    out: list[tuple[str, Doc]] = []
    tries = 0
    while len(out) < count and tries < 20 * count:
        tries += 1
        doc = docs[tries % len(docs)]
        if rng.random() < NUMBER_SHARE:
            made = number_mutant(doc, rng)
            if made:
                out.append(made)
            continue
        name = rng.choice(sorted(ops))
        try:
            m = ops[name](doc, rng)
        except (oracle.Unreadable, KeyError, IndexError, TypeError, ValueError):
            m = None
        if m is not None and m != doc:
            out.append((name, m))
    return out


def family(kind: str) -> str:
    if kind in oracle_documents.IMPOSSIBILITY_KINDS:
        return "impossibility"
    return "transformer" if kind in oracle_documents.TRANSFORMER_KINDS else "certificate"
