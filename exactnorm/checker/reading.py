"""The kind-free rules of reading a certificate (docs/certificate-format.md §0, §7): format,
domain, checkpoints, the nodes a frozen layer reads, and the bits a certificate writes. Standard
library only; it imports no kind (the reader that does is :mod:`.document`).

Contract. Each rule raises :class:`~.numbers.CertificateError` with its name (``format``,
``number``, ``domain``, ``checkpoints``) or returns plain data: the box's bounds as
:class:`~.numbers.IntVector`, the version. :func:`written_size` measures the numbers a read
certificate writes, from which the default work budget grows. 0/1 skips are
:class:`~.topology.Picks`, named here too for the arithmetics.
"""

from __future__ import annotations

from typing import Any

from .numbers import CertificateError, IntMatrix, IntVector, field, show, vector, written_bits
from .provenance import Provenance
from .records import FrozenRecord, TargetRecord
from .topology import Picks
from .vocabulary import FORMAT, IMPOSSIBILITY_FORMAT, SEED_RULES, TRANSFORMER_FORMAT, VERSIONS

__all__ = ["Picks", "rule_format", "rule_domain", "rule_checkpoints", "node_reads", "last_uses",
           "written_size"]


# ---------------------------------------------------------------- structural rules (format §0)


def rule_format(doc: dict) -> int:
    """The document's ``format`` word and ``version`` (rule ``format``); its keys are the
    closed schema's (:func:`.document.rule_schema`), applied next."""
    if doc.get("format") != FORMAT:
        raise CertificateError("format", f"\"format\" must be \"{FORMAT}\" (or "
                                         f"\"{IMPOSSIBILITY_FORMAT}\", "
                                         f"\"{TRANSFORMER_FORMAT}\"), got "
                                         f"{show(doc.get('format'))}")
    version = doc.get("version")
    if type(version) is not int or version not in VERSIONS:
        raise CertificateError("format", f"\"version\": unsupported version {show(version)} "
                                         f"(this checker reads versions "
                                         f"{', '.join(map(str, VERSIONS))})")
    rule = doc.get("seed_rule", "chosen")
    if rule not in SEED_RULES:
        raise CertificateError("format", f"\"seed_rule\" must be one of "
                                         f"{show(list(SEED_RULES))}, got {show(rule)}")
    return version


def rule_domain(doc: dict, max_digits: int) -> tuple[IntVector, IntVector]:
    lower = vector(field(doc["domain"], "lower", "domain"), "domain.lower", None, max_digits)
    upper = vector(field(doc["domain"], "upper", "domain"), "domain.upper", len(lower),
                   max_digits)
    for k in range(len(lower)):
        lo, hi = lower.nums[k] * upper.den, upper.nums[k] * lower.den
        if lo > hi:
            raise CertificateError("domain", f"domain: lower[{k}] = {show(lower[k])} > "
                                             f"upper[{k}] = {show(upper[k])}")
    return lower, upper


def rule_checkpoints(cps: list[int], n_target: int, n_layers: int) -> None:
    if len(cps) != n_target:
        raise CertificateError("checkpoints", f"{len(cps)} checkpoints for {n_target} target "
                                              f"layers")
    prev = 0
    for c in cps:
        if not prev < c <= n_layers:
            raise CertificateError("checkpoints", f"checkpoints must strictly increase within "
                                                  f"1..{n_layers}, got {show(cps)}")
        prev = c
    if cps[-1] != n_layers:
        raise CertificateError("checkpoints", f"last checkpoint {cps[-1]} is not the last layer "
                                              f"{n_layers}")


def node_reads(layer: FrozenRecord) -> list[int]:
    """The nodes a frozen layer reads: its input and its post-activation skips' sources."""
    return [layer.input] + [s for s, _ in layer.skips]


def last_uses(layers: list[FrozenRecord], start: int, end: int) -> dict[int, int]:
    """For every node read in segment (start, end], the last layer that reads it."""
    last: dict[int, int] = {}
    for j in range(start + 1, end + 1):
        for src in node_reads(layers[j - 1]):
            last[src] = j
    return last


def _route_bits(route: Any) -> int:
    """Bits a target skip or a residual writes: 64 for ``{"identity": n}`` (one number), 8 per
    row of a selection (its list)."""
    if route is None:
        return 0
    return 64 if route[1] == "identity" else 8 * len(route[2].rows)


def written_size(lo: IntVector, hi: IntVector, target: list[TargetRecord],
                 layers: list[FrozenRecord], prov: Provenance) -> int:
    """The bits of the numbers a certificate writes (docs/certificate-format.md §7): every
    number the checker reads (:func:`.numbers.written_bits`: bit lengths plus one, a shared
    denominator once), 64 per draw record, 8 per entry of a frozen dense layer's compact skip,
    a target skip's and a residual's :func:`_route_bits`; the default work budget grows with
    it."""
    total = lo.written + hi.written + 64 * len(prov.draws)
    total += sum(written_bits(v) for unit in prov.units for _, v in unit.kernels)
    for tl in target:
        W, b = tl.W, tl.b
        total += (W.written + b.written) if W is not None and b is not None else 64
        if tl.skip is not None:
            total += _route_bits(tl.skip)
    for layer in layers:
        V, gamma, beta = layer.V, layer.gamma, layer.beta
        if V is None or gamma is None or beta is None:
            total += 64
            continue
        total += gamma.written + beta.written
        if type(V) is IntMatrix:
            total += V.written
        if layer.residual is not None:
            total += _route_bits(layer.residual)
        if layer.skips and not layer.geom:
            for _, M in layer.skips:
                total += M.written if isinstance(M, IntMatrix) else \
                    8 * len(M.rows) if isinstance(M, Picks) else 0
    return total
