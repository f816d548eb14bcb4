"""Transformer documents (``exactnorm.transformer``, docs/certificate-format.md §11): writing the
architecture section, deriving each slot's seed, building the slots in parallel, assembling the
document, and reading it back.

Contract.

* :func:`architecture_json` — the ``architecture`` section of a
  :class:`~exactnorm.model.transformer.Transformer` (exact numbers, vectors over one
  denominator);
* :func:`slot_seeds` — the seed of every slot under seed rule ``slot``, computed with the
  checker's own reader and canonical text (:func:`exactnorm.checker.transformer.slot_seed`), so
  the checker finds the same seeds;
* :func:`build_slots` — every slot's plan realized (worker processes with ``jobs > 1``, Dask
  with a scheduler), each slot's certificate a version-3 document; yielded in node order;
* :func:`transformer_document` — the whole document; :func:`read_transformer` — the
  :class:`Transformer` and each slot's ``(target, frozen network)`` of a document, read through
  the checker's readers (whether the proof holds is the checker's verdict);
  :func:`transformer_of` — the :class:`Transformer` alone, its slots from their targets (no
  frozen matrix regenerated).

Determinism: the document depends on the transformer and the options only (seeds are derived,
slots are assembled in node order), never on ``jobs``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from flint import fmpq

from exactnorm.certificate.read_kinds import read_networks, read_target
from exactnorm.certificate.write import certificate_document, target_sections
from exactnorm.checker.document import read_target as checker_target
from exactnorm.checker.numbers import CertificateError
from exactnorm.checker.reading import rule_domain
from exactnorm.checker.transformer import architecture_text, read_architecture, slot_seed
from exactnorm.checker.vocabulary import DEFAULT_MAX_DIGITS, TRANSFORMER_FORMAT
from exactnorm.constructions.transformer import SlotPlan, realize_slot
from exactnorm.errors import InputError
from exactnorm.exact.linalg import compact_when_shorter, to_fmpq_mat
from exactnorm.exact.parallel import map_tasks
from exactnorm.exact.rationals import format_number, unlimited_int_digits
from exactnorm.model.network import FrozenNetwork, TargetNetwork
from exactnorm.model.operators.dense import dense_layers
from exactnorm.model.transformer import Head, LayerNorm, Node, Slot, Transformer

__all__ = ["architecture_json", "slot_seeds", "build_slots", "transformer_document",
           "read_transformer", "transformer_of", "TRANSFORMER_VERSION"]

TRANSFORMER_VERSION = 1


def _vector(values: Any) -> Any:
    return compact_when_shorter(to_fmpq_mat([list(values)]), vector=True)


def _mask_json(mask: Any) -> Any:
    if isinstance(mask, tuple):
        return {"causal": mask[0], "value": format_number(mask[1])}
    return mask


def architecture_json(tr: Transformer) -> dict[str, Any]:
    """The ``architecture`` section (§11.1)."""
    nodes: list[dict[str, Any]] = []
    for node in tr.nodes:
        if node.op == "input":
            nodes.append({"op": "input"})
        elif node.op == "slot":
            nodes.append({"op": "slot", "slot": node.slot, "reads": node.reads[0]})
        elif node.op == "layernorm":
            ln = node.layernorm
            assert ln is not None
            nodes.append({"op": "layernorm", "reads": node.reads[0], "gain": _vector(ln.gain),
                          "bias": _vector(ln.bias), "epsilon": format_number(ln.epsilon),
                          "r": format_number(ln.r)})
        elif node.op == "attention":
            nodes.append({"op": "attention", "reads": node.reads[0],
                          "heads": [{"q": h.q, "k": h.k, "v": h.v} for h in node.heads],
                          "scale": format_number(node.scale), "mask": _mask_json(node.mask)})
        else:
            nodes.append({"op": "add", "reads": list(node.reads)})
    return {"vocabulary": tr.vocabulary, "positions": tr.positions, "nodes": nodes,
            "output": tr.output}


def slot_seeds(tr: Transformer) -> dict[str, int]:
    """The seed of every slot under seed rule ``slot`` (§11.1), from the documents the writer
    will write, read by the checker's reader."""
    arch = architecture_json(tr)
    try:
        V, T, nodes, out = read_architecture(arch, DEFAULT_MAX_DIGITS)
    except CertificateError as exc:  # pragma: no cover - the writer's own section
        raise InputError(f"the architecture is not readable: {exc}") from None
    text = architecture_text(V, T, nodes, out)
    seeds = {}
    for name, target in tr.slot_targets().items():
        sections = target_sections(target, compact=True)
        lo, hi = rule_domain(sections, DEFAULT_MAX_DIGITS)
        records = checker_target(sections, len(lo), DEFAULT_MAX_DIGITS, 3)
        seeds[name] = slot_seed(text, name, lo, hi, records)
    return seeds


def _slot_task(task: tuple[str, dict[str, Any], Any, str]) -> tuple[str, dict[str, Any]]:
    """One slot in a worker: its target from its JSON sections, its plan, its certificate."""
    name, sections, plan, frozen_weights = task
    target = read_target(dict(sections, format="exactnorm.certificate", version=3,
                              network={"layers": [], "checkpoints": []}))
    c = realize_slot(target, plan)
    with unlimited_int_digits():  # γ, β beyond 4,300 digits are written as decimal strings
        doc = certificate_document(c, version=3, frozen_weights=frozen_weights)
    doc.pop("witnesses", None)
    return name, doc


def build_slots(plans: list[SlotPlan], *, jobs: int = 1, scheduler: Any = None,
                frozen_weights: str = "reference",
                progress: Callable[[int, int], None] | None = None
                ) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every slot's certificate, in node order (``progress(done, total)`` in slots)."""
    tasks = [(p.name, target_sections(p.target, compact=True), p.plan, frozen_weights)
             for p in plans]
    if progress is not None:
        progress(0, len(tasks))
    for done, result in enumerate(map_tasks(_slot_task, tasks, jobs=jobs, scheduler=scheduler),
                                  1):
        if progress is not None:
            progress(done, len(tasks))
        yield result


def transformer_document(tr: Transformer, slots: dict[str, dict[str, Any]], *,
                         seed_rule: str = "slot",
                         provenance: dict[str, Any] | None = None) -> dict[str, Any]:
    """The whole document (§11.1)."""
    doc: dict[str, Any] = {"format": TRANSFORMER_FORMAT, "version": TRANSFORMER_VERSION,
                           "architecture": architecture_json(tr), "slots": slots,
                           "seed_rule": seed_rule}
    prov = dict(provenance or {})
    if tr.source is not None:
        prov["source"] = tr.source
    prov["slots"] = {name: {"role": s.role, **({"onnx": s.source} if s.source else {})}
                     for name, s in tr.slots.items()}
    doc["provenance"] = prov
    return doc


def read_transformer(doc: dict[str, Any], *, max_digits: int = DEFAULT_MAX_DIGITS
                     ) -> tuple[Transformer, dict[str, tuple[TargetNetwork, FrozenNetwork]]]:
    """The transformer a document describes and each slot's target and frozen network, read by
    the checker's readers (an :class:`InputError` naming the rule when they refuse)."""
    tr = transformer_of(doc, max_digits=max_digits)
    networks = {name: read_networks(d, max_digits=max_digits)
                for name, d in doc["slots"].items()}
    return tr, networks


def transformer_of(doc: dict[str, Any], *, max_digits: int = DEFAULT_MAX_DIGITS) -> Transformer:
    """The transformer a document describes, its slots from their targets only (no frozen
    matrix regenerated: what an export, a report or a float reference needs), read by the
    checker's readers (an :class:`InputError` naming the rule when they refuse)."""
    if not isinstance(doc, dict) or doc.get("format") != TRANSFORMER_FORMAT:
        raise InputError(f"not a {TRANSFORMER_FORMAT} document")
    try:
        V, T, nodes, out = read_architecture(doc.get("architecture"), max_digits)
    except CertificateError as exc:
        raise InputError(f"{exc} (rule {exc.rule})") from None
    slots_doc = doc.get("slots")
    if not isinstance(slots_doc, dict):
        raise InputError("the document's slots must be an object")
    roles = (doc.get("provenance") or {}).get("slots", {})
    slots = {name: Slot(name, dense_layers(read_target(d, max_digits=max_digits).layers,
                                           "a transformer slot"),
                        roles.get(name, {}).get("role", "linear"))
             for name, d in slots_doc.items()}
    built: list[Node] = []
    for n in nodes:
        if n["op"] == "input":
            built.append(Node("input"))
        elif n["op"] == "slot":
            built.append(Node("slot", tuple(n["reads"]), slot=n["slot"]))
        elif n["op"] == "layernorm":
            gain = tuple(_q(x) for x in n["gain"].fractions())
            bias = tuple(_q(x) for x in n["bias"].fractions())
            built.append(Node("layernorm", tuple(n["reads"]), layernorm=LayerNorm(
                gain, bias, _q(n["epsilon"]), _q(n["r"]))))
        elif n["op"] == "attention":
            mask = n["mask"] if isinstance(n["mask"], str) else (n["mask"][0], _q(n["mask"][1]))
            built.append(Node("attention", tuple(n["reads"]),
                              heads=tuple(Head(*h) for h in n["heads"]), scale=_q(n["scale"]),
                              mask=mask))
        else:
            built.append(Node("add", tuple(n["reads"])))
    source = (doc.get("provenance") or {}).get("source")
    return Transformer(V, T, built, out, slots, source)


def _q(x: Any) -> fmpq:
    return fmpq(x.numerator, x.denominator)
