"""Where the frozen matrices come from (docs/certificate-format.md §1–§6): draw records, the
stream keys their positions fix, redraws after singular draws, min-entropy and the seed rule.
Standard library only.

Contract. While the network is read, :func:`rule_provenance` turns a layer weight or a skip into
an explicit :class:`~.numbers.IntMatrix` or a lazy :class:`Draw` (validated now, regenerated when
the walk reaches its layer) and registers every frozen matrix in a :class:`Provenance` (drawn,
declared fixed, or given explicitly), the one such record of every document kind. After the
structural rules, :func:`rule_stream_keys` demands (version 3) that each record's stream key be
the key of its position — segment, layer of the segment, role, attempt — and
:func:`redraw_units` decides from the document's structure alone which draws form a redrawn unit
(a Khatri–Rao pair or a square matrix), refuses (rule ``redraw``) a unit that may not be redrawn,
and pairs each earlier attempt with the ``redraws`` entry that proves it singular;
:func:`verify_redraws` checks those proofs on the regenerated matrices inside the work budget.

Correctness argument. In version 3 a record's key is a function of its position and of the
attempt only, so the one choice left to a writer with a fixed seed is the attempt; an attempt
``a > 0`` counts only when attempts ``0 … a−1`` of the same unit are shown singular by a nonzero
kernel vector. That makes the accepted draw no later than the first nonsingular one of the seed
only if a nonsingular attempt can exist: a unit whose system is singular by construction (its
*structural rank*, :func:`structural_rank`, a maximum matching over the entries its draws may
make nonzero, is below its size; or a draw of min-entropy 0) would be singular at every attempt,
so any attempt could be "proven" and chosen: it is never redrawn. Full structural rank is enough:
the system's determinant is linear in each column and each column is a product of draws on a
fixed support, so it is a nonzero polynomial exactly when the matching is perfect, and then some
draw (each entry taking at least two values) makes it nonzero. Which layers form a pair follows
from the structure (the next layer of the segment reads the first and is drawn at the same
attempt, with ``m = c·d``), never from a key the writer picks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from dataclasses import field as dc_field
from fractions import Fraction
from typing import Any

from .budget import STEP, Budget
from .numbers import CertificateError, IntMatrix, integer, matrix, over_one_denominator, show
from .records import FrozenRecord
from .regenerate import (
    DrawRecord,
    RecordError,
    min_entropy_bits,
    regenerate,
    regenerate_integers,
    validate_record,
    words_per_entry,
)
from .vocabulary import MAX_MAP_ENTRIES

__all__ = ["Draw", "DrawEntry", "RedrawUnit", "Provenance", "ROLE_WEIGHT", "skip_role",
           "role_name", "rule_draw_record", "rule_provenance", "rule_stream_keys",
           "redraw_units", "verify_redraws", "structural_rank", "TOP_LEVEL_KEYS"]

#: the role of a layer's weight in its stream key; ``role + 1`` is its Bernoulli mask
ROLE_WEIGHT = 0
#: the keys a version-3 certificate may have (docs/certificate-format.md §0)
TOP_LEVEL_KEYS = ("format", "version", "domain", "target", "network", "provenance",
                  "witnesses", "redraws", "seed_rule")


def skip_role(t: int) -> int:
    """The role of skip ``t`` (0-based) of a layer; ``role + 1`` is its mask."""
    return 2 + 2 * t


def role_name(role: int) -> str:
    """``weight`` or ``skip t`` (masks: ``… mask``)."""
    base = "weight" if role < 2 else f"skip {(role - 2) // 2}"
    return base if role % 2 == 0 else f"{base} mask"


@dataclass(frozen=True)
class Draw:
    """A frozen matrix given by reference: a validated draw record and its (2-d) shape."""

    record: dict
    rows: int
    cols: int
    integral: bool
    #: bound of the bit length of an entry, stream words per entry, whether a mask reads words
    bits: int = 64
    words: int = 1
    masked: bool = False

    @property
    def nrows(self) -> int:
        return self.rows

    @property
    def ncols(self) -> int:
        return self.cols

    def flat_record(self) -> dict:
        """The record with a 4-d kernel shape written as its 2-d matrix shape (same words)."""
        return self.record if len(self.record["shape"]) == 2 else \
            dict(self.record, shape=[self.rows, self.cols])

    def integers(self) -> list[list[int]]:
        """The regenerated matrix, integer distributions only."""
        return regenerate_integers(self.record, max_entries=MAX_MAP_ENTRIES)

    def fractions(self) -> list[list[Fraction]]:
        return regenerate(self.record, max_entries=MAX_MAP_ENTRIES)

    def at_attempt(self, attempt: int) -> Draw:
        """The same matrix drawn at another attempt: the last part of its key and of its mask's
        key replaced (docs/certificate-format.md §6, "Redraws")."""
        rec = dict(self.record, key=list(self.record["key"][:-1]) + [attempt])
        mask = rec.get("mask")
        if isinstance(mask, dict) and "key" in mask:
            rec["mask"] = dict(mask, key=list(mask["key"][:-1]) + [attempt])
        return Draw(rec, self.rows, self.cols, self.integral, self.bits, self.words, self.masked)


@dataclass
class DrawEntry:
    """One draw of the certificate: network layer, role, the validated record, its min-entropy
    lower bound in bits, and the lazy matrix."""

    layer: int
    role: int
    where: str
    rec: DrawRecord
    bits: int
    draw: Draw

    @property
    def attempt(self) -> int:
        return self.rec.key[-1] if self.rec.key else 0


@dataclass
class RedrawUnit:
    """Draws redrawn together after singular attempts: a Khatri–Rao pair (``second`` set) or a
    square matrix, with the kernel vector proving each earlier attempt singular."""

    first: DrawEntry
    second: DrawEntry | None
    attempt: int
    kernels: list[tuple[int, list[int]]]


@dataclass
class Provenance:
    """What the frozen matrices were proven to be: draws (seed, key) or given explicitly.

    One class for every document kind. The certificate reader registers each frozen matrix
    through :func:`rule_provenance` (lazy draws, regenerated by the walk); a reader that needs
    every matrix at once (an impossibility document) registers them the same way and calls
    :meth:`materialize` on each draw. ``version`` is the certificate version whose rules apply:
    3 binds keys to positions (:func:`rule_stream_keys`), 1 and 2 demand distinct keys, and from
    2 on every layer weight needs a record or a ``fixed`` declaration; an impossibility document
    reads its frozen layers as version 2. :func:`~.verdict.provenance_facts` and
    :func:`~.verdict.provenance_text` say what it proves, for any document kind."""

    version: int = 2
    seeds: set[int] = dc_field(default_factory=set)
    keys: dict[tuple[int, ...], str] = dc_field(default_factory=dict)
    draws: list[DrawEntry] = dc_field(default_factory=list)
    explicit: int = 0
    fixed: list[str] = dc_field(default_factory=list)
    distributions: set[str] = dc_field(default_factory=set)
    pools: int = 0
    units: list[RedrawUnit] = dc_field(default_factory=list)
    seed_rule: str = "chosen"
    #: bits of the numbers the certificate writes (:func:`.reading.written_size`)
    written: int = 0
    #: the check's :class:`~.budget.Budget`: the reader regenerates a few draws (an explicit
    #: matrix next to its record, a 0/1 skip given by a record) and counts them there
    budget: Any = None

    def charge_regeneration(self, d: Draw, j: int) -> None:
        if self.budget is not None:
            self.budget.regenerate(d.rows * d.cols, d.words, d.masked, j)

    #: entries of the draws :meth:`materialize` has regenerated so far (all together bounded)
    materialized: int = 0

    def materialize(self, d: Draw, j: int | None = None, where: str = "") -> IntMatrix:
        """Draw ``d`` regenerated now, as integers over one denominator, for a reader that needs
        every frozen matrix at once: the entries of all the draws it materializes are bounded
        together by :data:`~.vocabulary.MAX_MAP_ENTRIES` (rule ``limit``, before anything is
        regenerated) and charged to the budget."""
        self.materialized += d.rows * d.cols
        if self.materialized > MAX_MAP_ENTRIES:
            raise CertificateError("limit", f"{where or f'network layer {j}'}: the frozen "
                                            f"matrices regenerated for this document would have "
                                            f"more than {MAX_MAP_ENTRIES} entries in all",
                                   layer=j)
        if self.budget is not None:
            self.budget.regenerate(d.rows * d.cols, d.words, d.masked, j)
        if d.integral:
            return IntMatrix(d.integers(), 1)
        rows = d.fractions()
        flat, den = over_one_denominator([(x.numerator, x.denominator) for r in rows for x in r],
                                         where or "a frozen draw")
        return IntMatrix([flat[r * d.cols:(r + 1) * d.cols] for r in range(d.rows)], den)

    @property
    def frozen_matrices(self) -> int:
        """Every frozen matrix registered: drawn (random or constant), fixed or explicit."""
        return len(self.draws) + self.explicit

    @property
    def regenerated(self) -> int:
        return sum(1 for d in self.draws if d.bits > 0)

    @property
    def constant(self) -> int:
        return sum(1 for d in self.draws if d.bits == 0)

    @property
    def redraws(self) -> int:
        return sum(u.attempt for u in self.units)


# ---------------------------------------------------------------- records, while reading


def rule_draw_record(record: object, where: str, j: int, role: int, prov: Provenance,
                     geom: Any) -> Draw:
    """Validate a draw record (rules ``provenance`` and ``shape``), register it, and return its
    lazy matrix. A 4-d shape ``[c1, C, kh, kw]`` belongs to a convolution's weight and equals its
    ``C``, ``kh``, ``kw`` (rule ``shape``)."""
    try:
        rec = validate_record(record, max_entries=MAX_MAP_ENTRIES)
    except RecordError as exc:
        raise CertificateError("provenance", f"{where}: {exc}", layer=j) from None
    assert isinstance(record, dict)
    if rec.rows == 0 or rec.cols == 0:
        raise CertificateError("shape", f"{where}: the draw record has an empty shape", layer=j)
    shape = record["shape"]
    if len(shape) == 4 and (geom is None or role != ROLE_WEIGHT
                            or shape[1:] != [geom.C, geom.kh, geom.kw]):
        want = "a 2-d shape [rows, cols]" if geom is None or role != ROLE_WEIGHT else \
            f"[channels, {geom.C}, {geom.kh}, {geom.kw}]"
        raise CertificateError("shape", f"{where}: draw record shape {show(shape)}; this matrix "
                                        f"has {want}", layer=j)
    if prov.seeds and rec.seed not in prov.seeds:
        raise CertificateError("provenance", f"{where}: draw record seed {rec.seed}, other "
                                             f"matrices of this certificate were drawn with seed "
                                             f"{min(prov.seeds)}", layer=j)
    if prov.version < 3:  # version 3: the positions make the keys distinct (rule_stream_keys)
        keys = [(rec.key, where)]
        if rec.mask is not None and rec.mask.key is not None:
            keys.append((rec.mask.key, f"the mask of {where}"))
        for key, owner in keys:
            if key in prov.keys:
                raise CertificateError("provenance", f"{owner}: stream key {show(list(key))} "
                                                     f"is also the key of {prov.keys[key]}",
                                       layer=j)
            prov.keys[key] = owner
    prov.seeds.add(rec.seed)
    prov.distributions.add(rec.distribution)
    draw = Draw(record, rec.rows, rec.cols, rec.law not in ("rational", "gauss"),
                Budget.draw_bits(rec), words_per_entry(rec),
                rec.mask is not None and rec.mask.key is not None)
    prov.draws.append(DrawEntry(j, role, where, rec, min_entropy_bits(rec), draw))
    return draw


def _same_as_draw(M: IntMatrix, draw: Draw, where: str, j: int, prov: Provenance) -> None:
    """An explicit matrix with a draw record equals the regenerated matrix entry by entry; the
    shapes are compared first, so what is regenerated is no larger than what is written."""
    if (M.nrows, M.ncols) != (draw.rows, draw.cols):
        raise CertificateError("provenance", f"{where}: weight is {M.nrows} x {M.ncols}, its "
                                             f"draw record has shape {draw.rows} x "
                                             f"{draw.cols}", layer=j)
    prov.charge_regeneration(draw, j)
    drawn: list[list[Any]] = draw.integers() if draw.integral else draw.fractions()
    for r, (row, drow) in enumerate(zip(M.rows, drawn)):
        for t, (x, y) in enumerate(zip(row, drow)):
            if x * Fraction(y).denominator != Fraction(y).numerator * M.den:
                raise CertificateError("provenance", f"{where}: weight[{r}][{t}] is "
                                                     f"{show(M.entry(r, t))}, the draw record "
                                                     f"gives {show(Fraction(y))}",
                                       layer=j, neuron=r)


def rule_provenance(obj: dict, value: object, route: str | None, where: str, j: int, role: int,
                    rows: int | None, cols: int, prov: Provenance, max_digits: int,
                    geom: Any = None) -> IntMatrix | Draw:
    """The matrix of a layer weight or skip (``route`` its kind, None for a layer), with its
    provenance.

    ``{"random": R}`` is regenerated from R (lazily, see :class:`Draw`); an explicit matrix with
    ``"source": R`` must equal the regenerated one entry by entry; ``"source": {"kind": "fixed",
    "why": text}`` declares a matrix that is not a draw. From version 2 on a layer weight or a
    random skip needs one of these.
    """
    source = obj.get("source")
    record = value["random"] if isinstance(value, dict) and set(value) == {"random"} else None
    if record is not None and source is not None:
        raise CertificateError("provenance", f"{where}: a weight given by reference carries no "
                                             f"separate source", layer=j)
    fixed = isinstance(source, dict) and source.get("kind") == "fixed"
    if fixed:
        assert isinstance(source, dict)
        if set(source) != {"kind", "why"} or not isinstance(source["why"], str):
            raise CertificateError("provenance", f"{where} source: a fixed declaration is "
                                                 f"{{\"kind\": \"fixed\", \"why\": text}}", layer=j)
        if route == "random":
            raise CertificateError("provenance", f"{where}: a random skip cannot be declared "
                                                 f"fixed", layer=j)
        prov.fixed.append(f"{where}: {source['why'][:120]}")
        source = None
    if record is None and source is None:
        if prov.version >= 2 and not fixed and route in (None, "random"):
            raise CertificateError("provenance", f"{where} has neither a draw record nor a "
                                                 f"fixed declaration", layer=j)
        prov.explicit += 1
        return matrix(value, f"{where} weight", rows, cols, max_digits)
    draw = rule_draw_record(record if record is not None else source, where, j, role, prov,
                            geom)
    if record is not None:
        # the shape is compared before anything is regenerated
        if (rows is not None and draw.rows != rows) or draw.cols != cols:
            raise CertificateError("shape", f"{where}: the draw record has shape {draw.rows} x "
                                            f"{draw.cols}, expected {rows or draw.rows} x {cols}",
                                   layer=j)
        return draw
    M = matrix(value, f"{where} weight", rows, cols, max_digits)
    _same_as_draw(M, draw, where, j, prov)
    return M


# ---------------------------------------------------------------- keys of positions


def _segments(cps: list[int]) -> Callable[[int], tuple[int, int]]:
    """``position(j) = (i, k)``: layer j is layer k (from 1) of segment i."""
    starts = [0] + cps
    seg: list[int] = []
    for i, (a, b) in enumerate(zip(starts, cps), 1):
        seg.extend([i] * (b - a))

    def position(j: int) -> tuple[int, int]:
        i = seg[j - 1]
        return i, j - starts[i - 1]

    return position


def rule_stream_keys(prov: Provenance, cps: list[int]) -> None:
    """Rule ``provenance``, keys of positions (version 3): the record of the matrix with role
    ``r`` of layer k of segment i has the key ``[i, k, r, a]`` and its Bernoulli mask the key
    ``[i, k, r + 1, a]``, the same attempt ``a``; any other key is refused."""
    if prov.version < 3:
        return
    position = _segments(cps)
    for d in prov.draws:
        i, k = position(d.layer)
        key = d.rec.key
        if len(key) != 4 or key[:3] != (i, k, d.role):
            raise CertificateError("provenance", f"{d.where}: stream key {show(list(key))} is "
                                                 f"not the key of its position: version 3 draws "
                                                 f"the {role_name(d.role)} of layer {k} of "
                                                 f"segment {i} from [{i}, {k}, {d.role}, "
                                                 f"attempt]", layer=d.layer)
        mask = d.rec.mask
        if mask is not None and mask.key is not None and mask.key != (i, k, d.role + 1, key[3]):
            raise CertificateError("provenance", f"the mask of {d.where}: stream key "
                                                 f"{show(list(mask.key))} is not [{i}, {k}, "
                                                 f"{d.role + 1}, {key[3]}], the key of its "
                                                 f"position and attempt", layer=d.layer)


# ---------------------------------------------------------------- redraws (version 3)


def _redraw_entries(doc: dict, max_digits: int) -> dict[tuple[int, ...], tuple[str, list[int]]]:
    raw = doc.get("redraws", [])
    if not isinstance(raw, list):
        raise CertificateError("format", "redraws must be a list")
    entries: dict[tuple[int, ...], tuple[str, list[int]]] = {}
    for t, entry in enumerate(raw):
        where = f"redraws[{t}]"
        if not isinstance(entry, dict) or set(entry) != {"key", "kernel"}:
            raise CertificateError("format", f"{where} is {{\"key\": [...], \"kernel\": "
                                             f"[...]}} and nothing else")
        key, kernel = entry["key"], entry["kernel"]
        if not isinstance(key, list) or len(key) != 4 or \
                any(type(x) is not int or not 0 <= x < 1 << 64 for x in key):
            raise CertificateError("format", f"{where}: key must be four integers [segment, "
                                             f"layer, 0, attempt], got {show(key)}")
        if not isinstance(kernel, list) or not kernel:
            raise CertificateError("format", f"{where}: kernel must be a non-empty list of "
                                             f"integers")
        if tuple(key) in entries:
            raise CertificateError("provenance", f"{where}: key {show(key)} is also the key of "
                                                 f"{entries[tuple(key)][0]}")
        v = [integer(x, f"{where} kernel[{k}]", max_digits) for k, x in enumerate(kernel)]
        entries[tuple(key)] = (where, v)
    return entries


def _nonzero_columns(rec: DrawRecord) -> tuple[int, ...]:
    """The columns whose entries may be nonzero, the same for every row (the *structural
    support* of a draw): none when no value of the distribution is nonzero or the Bernoulli mask
    keeps nothing, the listed ones under a column mask, else all."""
    if (rec.law == "set" and not any(rec.values)) or (rec.mask is not None and rec.mask.columns
                                                      is None and rec.mask.num == 0):
        return ()
    if rec.mask is not None and rec.mask.columns is not None:
        return rec.mask.columns
    return tuple(range(rec.cols))


def structural_rank(left: list[tuple[Any, Any]], width: int,
                    charge: Callable[[int], None] | None = None) -> int:
    """The size of a maximum matching of a bipartite graph: left vertex ``k`` is adjacent to the
    right vertices ``r·width + t`` for ``r`` in ``left[k][0]`` and ``t`` in ``left[k][1]`` (a
    product of two index sequences). For the support pattern of a matrix this is its structural
    rank: the largest rank any values on that pattern give (König; Edmonds 1967).

    A greedy pass first matches each left vertex to a free neighbour, with one shared position
    per neighbourhood (vertices with the same pair of sequences, compared by identity), so a
    full pattern costs its size, not its square; then Hopcroft–Karp phases (Hopcroft and Karp,
    SIAM J. Comput. 2 (1973) 225–231): a breadth-first search from the free left vertices along
    alternating paths, a depth-first search of vertex-disjoint augmenting paths along it. Every
    scan of a neighbourhood is charged its size before it starts (``charge``)."""
    match_right: dict[int, int] = {}
    match_left = [-1] * len(left)

    def neighbours(k: int) -> Iterator[int]:
        rows, cols = left[k]
        if charge is not None:
            charge(1 + len(rows) * len(cols))
        return (r * width + t for r in rows for t in cols)

    shared: dict[tuple[int, int], Iterator[int]] = {}
    for k, (rows, cols) in enumerate(left):
        key = (id(rows), id(cols))
        if key not in shared:
            shared[key] = neighbours(k)
        for v in shared[key]:
            if v not in match_right:
                match_right[v], match_left[k] = k, v
                break
    while True:
        free = [k for k in range(len(left)) if match_left[k] < 0 and left[k][0] and left[k][1]]
        if not free:
            break
        depth = dict.fromkeys(free, 0)
        queue, found = list(free), False
        for k in queue:  # breadth first, along alternating paths
            for v in neighbours(k):
                w = match_right.get(v)
                if w is None:
                    found = True
                elif w not in depth:
                    depth[w] = depth[k] + 1
                    queue.append(w)
        if not found:
            break
        dead: set[int] = set()
        for root in free:  # depth first, one augmenting path per root at most
            path, stack = [root], [neighbours(root)]
            while stack:
                k = path[-1]
                for v in stack[-1]:
                    w = match_right.get(v)
                    if w is None:  # augment along the path
                        for u in reversed(path):
                            match_right[v], v, match_left[u] = u, match_left[u], v
                        stack = []
                        break
                    if w not in dead and depth.get(w) == depth[k] + 1:
                        path.append(w)
                        stack.append(neighbours(w))
                        break
                else:
                    dead.add(path.pop())
                    stack.pop()
    return sum(1 for v in match_left if v >= 0)


def _unit_system(d: DrawEntry, second: DrawEntry | None) -> tuple[list[tuple[Any, Any]], int]:
    """The support pattern of a unit's system, as the left vertices (unknowns) of
    :func:`structural_rank` and the width of its right vertices (equations).

    A square matrix ``V``: unknown ``t`` (a column) meets equation ``r`` (a row) where ``V[r][t]``
    may be nonzero. A pair: unknown ``k`` is the column ``vec(V_out[:, k] V_in[k, :])`` of
    ``K``, whose equation ``(r, t)`` (``t`` among the columns of ``V_in`` the system uses) may be
    nonzero where both ``V_out[r][k]`` and ``V_in[k][t]`` may be."""
    rec = d.rec
    cols = set(_nonzero_columns(rec))
    none: tuple[int, ...] = ()
    if second is None:
        rows, one = tuple(range(rec.rows)), (0,)
        return [(rows if t in cols else none, one) for t in range(rec.cols)], 1
    used = rec.mask.columns if rec.mask is not None and rec.mask.columns is not None \
        else tuple(range(rec.cols))
    inner = tuple(u for u, t in enumerate(used) if t in cols)
    out_rows = tuple(range(second.rec.rows))
    out_cols = set(_nonzero_columns(second.rec))
    return [(out_rows if k in out_cols else none, inner) for k in range(rec.rows)], len(used)


def _unit(d: DrawEntry, nxt: DrawEntry | None, layers: list[FrozenRecord],
          entries: dict[tuple[int, ...], tuple[str, list[int]]], i: int, k: int,
          budget: Any) -> RedrawUnit:
    """The unit redrawn with weight draw ``d`` at attempt ``a > 0`` and its kernel vectors; rule
    ``redraw`` when the unit may not be redrawn: it is neither a pair nor square, a draw of it
    carries no randomness, or its system is singular by construction (structural rank below its
    size: every attempt is singular, so the attempt would be the writer's choice)."""
    a, rec = d.attempt, d.rec
    cols = len(rec.mask.columns) if rec.mask is not None and rec.mask.columns is not None \
        else rec.cols
    second = None
    if nxt is not None and layers[nxt.layer - 1].input == d.layer and nxt.attempt == a \
            and nxt.rec.cols == rec.rows and rec.rows == nxt.rec.rows * cols:
        second, size = nxt, rec.rows
    elif rec.rows == rec.cols:
        size = rec.rows
    else:
        raise CertificateError("redraw", f"{d.where}: attempt {a} of a matrix that is "
                                         f"neither the first of a Khatri-Rao pair (the next "
                                         f"layer reads it, drawn at the same attempt, with "
                                         f"m = c*d) nor square", layer=d.layer)
    for e in (d, second):
        if e is not None and e.bits == 0:
            raise CertificateError("redraw", f"{e.where}: a draw of min-entropy 0 (constant "
                                             f"or masked with p = 0) is never redrawn: it "
                                             f"may be singular at every attempt",
                                   layer=e.layer)
    left, width = _unit_system(d, second)

    def charge(units: int) -> None:
        if budget is not None:
            budget.work(units * STEP, d.layer)

    rank = structural_rank(left, width, charge)
    if rank < size:
        what = "Khatri-Rao system of the pair" if second is not None else "matrix"
        raise CertificateError("redraw", f"{d.where}: attempt {a} of a unit singular by "
                                         f"construction: the structural rank of its masked "
                                         f"{what} is {rank} < {size}, so every attempt is "
                                         f"singular and none may be redrawn", layer=d.layer)
    kernels = []
    for earlier in range(a):
        found = entries.pop((i, k, 0, earlier), None)
        if found is None:
            raise CertificateError("provenance", f"{d.where}: attempt {a} is used, but attempt "
                                                 f"{earlier} of the same draw is not shown "
                                                 f"singular (no redraws entry with key "
                                                 f"[{i}, {k}, 0, {earlier}])", layer=d.layer)
        where, v = found
        if len(v) != size or not any(v):
            raise CertificateError("provenance", f"{where}: the kernel vector of attempt "
                                                 f"{earlier} must be nonzero with {size} entries, "
                                                 f"got {len(v)}", layer=d.layer)
        kernels.append((earlier, v))
    return RedrawUnit(d, second, a, kernels)


def redraw_units(doc: dict, layers: list[FrozenRecord], cps: list[int], prov: Provenance,
                 max_digits: int) -> None:
    """Rule ``provenance``, redraws (version 3; docs/certificate-format.md §6): every draw at an
    attempt above 0 belongs to a unit fixed by the structure, and every ``redraws`` entry proves
    one earlier attempt of one unit singular. Versions 1 and 2 bind no key to a position: their
    attempts mean nothing and their ``redraws`` section is not read."""
    if prov.version < 3:
        return
    entries = _redraw_entries(doc, max_digits)
    position = _segments(cps)
    weights = {d.layer: d for d in prov.draws if d.role == ROLE_WEIGHT}
    for d in prov.draws:
        if d.role != ROLE_WEIGHT and d.attempt:
            raise CertificateError("redraw", f"{d.where}: attempt {d.attempt} of a skip "
                                             f"matrix: only layer weights are redrawn",
                                   layer=d.layer)
    consumed: set[int] = set()
    for j in sorted(weights):
        d = weights[j]
        if j in consumed or d.attempt == 0:
            continue
        i, k = position(j)
        nxt = weights.get(j + 1) if j + 1 <= cps[i - 1] else None
        unit = _unit(d, nxt, layers, entries, i, k, prov.budget)
        if unit.second is not None:
            consumed.add(j + 1)
        prov.units.append(unit)
    if entries:
        where, _ = next(iter(entries.values()))
        key = next(iter(entries))
        raise CertificateError("provenance", f"{where}: key {show(list(key))} proves no attempt "
                                             f"this certificate uses (an unused redraws entry)")


def verify_redraws(ar: Any, prov: Provenance, budget: Any) -> None:
    """Each kernel vector on the regenerated matrices of its attempt: ``V·v = 0`` for a square
    matrix, ``V_out·diag(v)·V_in = 0`` for a pair (``K v = vec(V_out diag(v) V_in)``), counted in
    the work budget before it is done."""
    for unit in prov.units:
        first, second = unit.first, unit.second
        for earlier, v in unit.kernels:
            vbits = max(abs(x).bit_length() for x in v)
            A = first.draw.at_attempt(earlier)
            B = second.draw.at_attempt(earlier) if second is not None else None
            for e in (A, B):
                if e is not None:
                    budget.regenerate(e.rows * e.cols, e.words, e.masked, first.layer)
            if B is None:
                budget.product(A.rows, A.cols, 1, A.bits, vbits, first.layer)
            else:
                budget.product(B.rows, B.cols, 1, B.bits, vbits, first.layer)
                budget.product(B.rows, B.cols, A.cols, B.bits + vbits, A.bits, first.layer)
            if not ar.vanishes(A, B, v):
                raise CertificateError("provenance", f"{first.where}: the vector given for "
                                                     f"attempt {earlier} is not in the kernel of "
                                                     f"its system: that draw is not shown "
                                                     f"singular", layer=first.layer)
