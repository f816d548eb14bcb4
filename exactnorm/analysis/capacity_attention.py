"""Capacity of a transformer under LayerNorm tuning: can re-tuning only the ``γ, β`` of a
LayerNorm make what reads it equal to a target transformer's, on every normalized token?
Decided exactly where linear algebra decides it, with witnesses checked by substitution;
``UNDECIDED`` otherwise (docs/capacity.md, "Attention").

Contract
--------
``given`` and ``target`` are two :class:`~exactnorm.model.transformer.Transformer` of one
architecture (the same nodes, reads, heads, widths, masks and LayerNorm ``ε``). A LayerNorm node
``k`` with ``d`` features computes ``γ ⊙ z + β`` of the normalized token ``z`` (``Σ z_i = 0``);
re-tuning means replacing the given ``γ, β`` (its gain and bias) by any real vectors. The
questions are *local*: every token reaching node ``k`` is normalized to some ``z`` in the set
``Z`` of normalized vectors, which spans the hyperplane ``1⊥`` (and, with ``ε > 0``, holds vectors
of every norm below ``√d``); a question asks for equality **as functions of z ∈ Z**, the same
``z`` fed to both transformers.

* **Linear slots** (an identity layer ``a ↦ W a + c`` reading node ``k``: queries, keys, values,
  the unembedding): ``W(γ ⊙ z + β) + c = W'(g' ⊙ z + b') + c'`` on ``Z`` holds iff
  ``W diag(γ) − W' diag(g')`` has rows proportional to ``1ᵀ`` (it vanishes on ``1⊥``) and
  ``W β + c = W' b' + c'``. Unknowns ``γ``, ``β`` and one ``t_r`` per row: the linear equations
  ``W[r,i] γ_i − t_r = W'[r,i] g'_i`` and ``Σ_i W[r,i] β_i = Σ_i W'[r,i] b'_i + c'_r − c_r``.
  Per slot and jointly for all slots reading node ``k`` (one ``γ, β``): exact.
* **MLP slots** (ReLU then identity): reachable when their later layers equal the target's and
  the first layer's system above is solvable; otherwise ``UNDECIDED`` (two ReLU networks with
  different first layers can be equal).
* **Attention scores** of an attention node reading node ``k``: the bilinear part of head
  ``h``'s score, ``s·(W_Q a_p)ᵀ(W_K a_u)`` in ``z_p, z_u``, is ``z_pᵀ (A_h ∘ γγᵀ) z_u`` with
  ``A_h = s·W_Qᵀ W_K`` (``∘`` entrywise): linear in ``N = γγᵀ``. Equal softmax weights for every
  query and every pair of keys force ``z_pᵀ (A_h ∘ N − M'_h) z_u = 0`` on ``1⊥ × 1⊥``
  (``M'_h = s'·diag(g') W_Q'ᵀ W_K' diag(g')``), i.e. ``A_h ∘ N − M'_h = u_h 1ᵀ + 1 v_hᵀ``: the
  *linear relaxation* in the symmetric ``N`` and vectors ``u_h, v_h``, every head of the node
  sharing ``N``. Decided as:

  1. ``REACHABLE`` when a candidate ``γ`` (the given gain, the target's, or the solution of the
     queries' and keys' linear systems) satisfies it exactly (witness ``γ``);
  2. ``UNREACHABLE`` when the relaxation restricted to a principal block ``I × I`` of indices
     (searched from size 2 up), or whole, is inconsistent: the witness is a list of equations
     and rational multipliers whose combination reads ``0 = c ≠ 0`` (Farkas' lemma for linear
     equations): no ``N``, a fortiori no ``γγᵀ``;
  3. ``UNDECIDED`` otherwise, with the dimension of the family of ``N`` the relaxation leaves:
     whether that affine family meets the rank-one matrices ``γγᵀ`` is a system of quadratic
     equations, not attempted.

  The score question concerns the bilinear part only (the key-linear terms that ``β`` and the
  biases add are the linear slots' business).

Every witness is checked before it is returned by :func:`check_witness`: the equations are
rebuilt from their labels and the two transformers in :class:`fractions.Fraction` arithmetic and
the combination (``UNREACHABLE``) or the substitution (``REACHABLE``) is evaluated exactly —
independent of the FLINT elimination that found it.

Reference: the normalized-token bound and the slot graph are docs/certificate-format.md §11;
Farkas' lemma for linear equations: a system ``C x = r`` has no solution iff some ``y`` has
``yᵀ C = 0`` and ``yᵀ r ≠ 0`` (the Fredholm alternative).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from flint import fmpq, fmpz_mat

from exactnorm.errors import InputError
from exactnorm.model.transformer import Transformer

__all__ = ["Question", "TransformerCapacity", "transformer_capacity", "check_witness",
           "profile", "Equation", "MAX_UNKNOWNS"]

#: the largest relaxation solved whole (unknowns); larger ones rely on the block search
MAX_UNKNOWNS = 2000
#: principal blocks tried per size in the witness search
BLOCKS_PER_SIZE = 6
#: largest block size searched
MAX_BLOCK = 8

Var = Any  # a tuple naming an unknown, or an equation's index
#: coefficients by unknown, right-hand side, label
Equation = tuple[dict[Var, Fraction], Fraction, tuple[Any, ...]]


def _q(x: Any) -> Fraction:
    if isinstance(x, fmpq):
        return Fraction(int(x.p), int(x.q))
    return Fraction(x)


def _matrix(M: Any) -> list[list[Fraction]]:
    return [[_q(x) for x in row] for row in M.tolist()]


def _text(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


@dataclass
class Question:
    """One local question and its answer: ``kind`` (``slot``, ``layernorm`` — every slot reading
    it at once — or ``scores``), ``name``, the LayerNorm ``node`` it tunes (``None``: no
    LayerNorm before it), ``word`` (``REACHABLE``, ``UNREACHABLE``, ``UNDECIDED`` or
    ``NOT TUNABLE``), the ``reason`` and the exact ``witness`` (JSON-ready)."""

    kind: str
    name: str
    node: int | None
    word: str
    reason: str
    witness: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "node": self.node, "word": self.word,
                "reason": self.reason, "witness": self.witness}


@dataclass
class TransformerCapacity:
    """Every local question of a transformer pair (module doc); ``word`` summarises them:
    ``UNREACHABLE`` when one is, ``REACHABLE`` when every tunable one is, else
    ``UNDECIDED``."""

    questions: list[Question] = field(default_factory=list)

    @property
    def word(self) -> str:
        words = {q.word for q in self.questions if q.word != "NOT TUNABLE"}
        if "UNREACHABLE" in words:
            return "UNREACHABLE"
        return "REACHABLE" if words <= {"REACHABLE"} else "UNDECIDED"

    def lines(self) -> list[str]:
        out = [f"{self.word}: re-tuning only the LayerNorms' γ, β (each question local: the "
               f"same normalized token fed to both transformers)"]
        for q in self.questions:
            out.append(f"  {q.kind} {q.name}: {q.word} — {q.reason}")
        return out


# ------------------------------------------------------------------ exact linear systems


def _integer_rows(eqs: Sequence[Equation], order: list[Var]) -> fmpz_mat:
    """``[C | r]`` with every row scaled to integers by the lcm of its denominators (the same
    solutions)."""
    col = {v: j for j, v in enumerate(order)}
    n = len(order)
    rows = []
    for coef, rhs, _ in eqs:
        den = math.lcm(rhs.denominator, *(c.denominator for c in coef.values()))
        row = [0] * (n + 1)
        for v, c in coef.items():
            row[col[v]] = c.numerator * (den // c.denominator)
        row[n] = rhs.numerator * (den // rhs.denominator)
        rows.append(row)
    return fmpz_mat(rows) if rows else fmpz_mat(0, n + 1)


def _solve(M: fmpz_mat, basis: bool = False
           ) -> tuple[list[Fraction] | None, list[list[Fraction]]]:
    """A particular solution of ``C x = r`` (``M = [C | r]``; ``None`` when inconsistent) and,
    with ``basis``, a basis of the null space of ``C``."""
    n = M.ncols() - 1
    R, _, rank = M.rref()  # R/denominator is the reduced row echelon form
    rows = R.tolist()
    pivots: list[tuple[int, int]] = []
    for i in range(int(rank)):
        row = rows[i]
        j = next(j for j in range(n + 1) if row[j] != 0)
        if j == n:
            return None, []
        pivots.append((i, j))
    x = [Fraction(0)] * n
    for i, j in pivots:
        x[j] = Fraction(int(rows[i][n]), int(rows[i][j]))
    out = []
    if basis:
        pivot_cols = {j for _, j in pivots}
        for f in range(n):
            if f in pivot_cols:
                continue
            v = [Fraction(0)] * n
            v[f] = Fraction(1)
            for i, j in pivots:
                if rows[i][f] != 0:
                    v[j] = -Fraction(int(rows[i][f]), int(rows[i][j]))
            out.append(v)
    return x, out


def _farkas(eqs: Sequence[Equation], order: list[Var]) -> list[Fraction]:
    """``y`` with ``Σ_e y_e C_e = 0`` and ``Σ_e y_e r_e = 1`` for an inconsistent system."""
    m = len(eqs)
    col = {v: j for j, v in enumerate(order)}
    cols: list[dict[int, Fraction]] = [{} for _ in range(len(order) + 1)]
    for e, (coef, rhs, _) in enumerate(eqs):
        for v, c in coef.items():
            cols[col[v]][e] = c
        if rhs:
            cols[-1][e] = rhs
    # the transposed system: one equation per unknown (= 0) and the rhs row (= 1)
    transposed: list[Equation] = [(row, Fraction(0), ()) for row in cols[:-1]]
    transposed.append((cols[-1], Fraction(1), ()))
    y, _ = _solve(_integer_rows(transposed, list(range(m))))
    if y is None:  # pragma: no cover - the system was inconsistent, so y exists
        raise AssertionError("no Farkas multipliers for an inconsistent system")
    return y


def _unknowns(eqs: Sequence[Equation]) -> list[Var]:
    seen: dict[Var, None] = {}
    for coef, _, _ in eqs:
        for v in coef:
            seen.setdefault(v, None)
    return list(seen)


def _decide(eqs: list[Equation], *, basis: bool = False, groups: int = 8
            ) -> tuple[dict[Var, Fraction] | None, list[Fraction] | None,
                       list[Var], list[list[Fraction]]]:
    """``(solution, None, order, null basis)`` or ``(None, multipliers, order, [])``. An
    inconsistent system is first cut to its shortest inconsistent prefix among ``groups``
    growing ones (doubling), so that the multipliers are found on few equations."""
    order = _unknowns(eqs)
    x, null = _solve(_integer_rows(eqs, order), basis)
    if x is not None:
        return dict(zip(order, x)), None, order, null
    size = max(1, len(eqs) >> groups)
    while size < len(eqs):
        part = eqs[:size]
        if _solve(_integer_rows(part, _unknowns(part)))[0] is None:
            break
        size *= 2
    part = eqs[:size]
    return None, _farkas(part, _unknowns(part)), order, []


# ------------------------------------------------------------------ the equations


class _Pair:
    """The two transformers' numbers as Fractions, computed once (the statement's data)."""

    def __init__(self, given: Transformer, target: Transformer) -> None:
        self.given, self.target = given, target
        self._layers: dict[tuple[str, str], list[tuple[list[list[Fraction]], list[Fraction]]]] = {}
        self._forms: dict[tuple[str, int, int], list[list[Fraction]]] = {}
        self.reads = given.slot_reads()
        self._norms: dict[tuple[str, int], tuple[list[Fraction], list[Fraction]]] = {}

    def layers(self, which: str, slot: str) -> list[tuple[list[list[Fraction]], list[Fraction]]]:
        key = (which, slot)
        if key not in self._layers:
            tr = self.given if which == "given" else self.target
            self._layers[key] = [(_matrix(L.weight), [_q(b) for b in L.bias])
                                 for L in tr.slots[slot].layers]
        return self._layers[key]

    def layernorm(self, which: str, k: int) -> tuple[list[Fraction], list[Fraction]]:
        if (which, k) not in self._norms:
            ln = (self.given if which == "given" else self.target).nodes[k].layernorm
            assert ln is not None
            self._norms[which, k] = ([_q(x) for x in ln.gain], [_q(x) for x in ln.bias])
        return self._norms[which, k]

    def scale(self, which: str, k: int) -> Fraction:
        return _q((self.given if which == "given" else self.target).nodes[k].scale or 0)

    def form(self, which: str, k: int, h: int) -> list[list[Fraction]]:
        """``s·W_Qᵀ W_K`` of head ``h`` of attention node ``k``, times ``diag(g)`` on both
        sides for the target (module doc)."""
        if (which, k, h) not in self._forms:
            self._forms[which, k, h] = self._form(which, k, h)
        return self._forms[which, k, h]

    def _form(self, which: str, k: int, h: int) -> list[list[Fraction]]:
        tr = self.given if which == "given" else self.target
        head = tr.nodes[k].heads[h]
        Q, K = tr.slots[head.q].layers[0].weight, tr.slots[head.k].layers[0].weight
        s = self.scale(which, k)
        A = [[s * x for x in row] for row in _matrix(Q.transpose() * K)]
        d = len(A)
        if which == "target":
            g, _ = self.layernorm("target", tr.nodes[k].reads[0])
            A = [[g[i] * A[i][j] * g[j] for j in range(d)] for i in range(d)]
        return A


def equation(pair: _Pair, label: Sequence[Any]) -> Equation:
    """The equation a label names (module doc), rebuilt from the two transformers:

    * ``("linear", slot, r, i)``: ``W[r,i] γ_i − t_{slot,r} = W'[r,i] g'_i``;
    * ``("shift", slot, r)``: ``Σ_i W[r,i] β_i = Σ_i W'[r,i] b'_i + c'_r − c_r``;
    * ``("score", k, h, i, j)``: ``A_h[i,j] N_{ij} − u_{h,i} − v_{h,j} = M'_h[i,j]``.
    """
    equation_type = label[0]  # the label names its equation, not a layer kind
    if equation_type == "linear":
        _, slot, r, i = label
        (W, _), *_ = pair.layers("given", slot)
        (Wt, _), *_ = pair.layers("target", slot)
        k = pair.reads[slot]
        g, _ = pair.layernorm("target", k)
        coef = {("gamma", i): W[r][i], ("t", slot, r): Fraction(-1)}
        return {v: c for v, c in coef.items() if c}, Wt[r][i] * g[i], tuple(label)
    if equation_type == "shift":
        _, slot, r = label
        (W, c), *_ = pair.layers("given", slot)
        (Wt, ct), *_ = pair.layers("target", slot)
        k = pair.reads[slot]
        _, b = pair.layernorm("target", k)
        coef = {("beta", i): W[r][i] for i in range(len(W[r])) if W[r][i]}
        rhs = sum((Wt[r][i] * b[i] for i in range(len(b))), Fraction(0)) + ct[r] - c[r]
        return coef, rhs, tuple(label)
    if equation_type == "score":
        _, k, h, i, j = label
        A, M = pair.form("given", k, h), pair.form("target", k, h)
        coef = {("N", min(i, j), max(i, j)): A[i][j], ("u", h, i): Fraction(-1),
                ("v", h, j): Fraction(-1)}
        return {v: c for v, c in coef.items() if c}, M[i][j], tuple(label)
    raise InputError(f"unknown equation label {label!r}")


def check_witness(given: Transformer, target: Transformer, witness: dict[str, Any], *,
                  pair: _Pair | None = None) -> bool:
    """Whether a witness holds, by exact substitution (module doc): ``farkas`` — the labelled
    equations combined with the multipliers give ``0 = c`` with ``c ≠ 0``; ``solution`` — every
    labelled equation holds at the stated values of the unknowns. (``pair``: the transformers'
    numbers already computed.)"""
    pair = pair if pair is not None else _Pair(given, target)
    eqs = [equation(pair, tuple(label)) for label in witness["equations"]]
    if witness["kind"] == "farkas":
        ys = [Fraction(y) for y in witness["multipliers"]]
        total: dict[Var, Fraction] = {}
        rhs = Fraction(0)
        for y, (coef, r, _) in zip(ys, eqs, strict=True):
            for v, c in coef.items():
                total[v] = total.get(v, Fraction(0)) + y * c
            rhs += y * r
        return all(c == 0 for c in total.values()) and rhs != 0
    if witness["kind"] == "solution":
        values = {_var(v): Fraction(x) for v, x in witness["values"]}
        return all(sum((c * values.get(v, Fraction(0)) for v, c in coef.items()), Fraction(0))
                   == r for coef, r, _ in eqs)
    raise InputError(f"unknown witness kind {witness.get('kind')!r}")


def _var(v: Any) -> Var:
    return tuple(v) if isinstance(v, list) else v


def _farkas_witness(eqs: list[Equation], ys: list[Fraction]) -> dict[str, Any]:
    keep = [(e, y) for e, y in zip(eqs, ys) if y]
    return {"kind": "farkas", "equations": [list(e[2]) for e, _ in keep],
            "multipliers": [_text(y) for _, y in keep]}


def _solution_witness(eqs: list[Equation], x: dict[Var, Fraction]) -> dict[str, Any]:
    return {"kind": "solution", "equations": [list(e[2]) for e in eqs],
            "values": [[list(v) if isinstance(v, tuple) else v, _text(c)]
                       for v, c in x.items()]}


# ------------------------------------------------------------------ the questions


def _same_architecture(given: Transformer, target: Transformer) -> None:
    if (given.vocabulary, given.positions, given.output) != \
            (target.vocabulary, target.positions, target.output) or \
            len(given.nodes) != len(target.nodes):
        raise InputError("the target transformer has another architecture (vocabulary, "
                         "positions, nodes or output)", parameter="target")
    for k, (a, b) in enumerate(zip(given.nodes, target.nodes)):
        if (a.op, a.reads, a.slot, a.heads, a.mask) != (b.op, b.reads, b.slot, b.heads, b.mask):
            raise InputError(f"node {k} differs between the given and the target transformer "
                             f"({a.op} and {b.op})", parameter="target")
    if given.widths() != target.widths():
        raise InputError("the target transformer's widths differ", parameter="target")
    for name, s in given.slots.items():
        t = target.slots[name]
        if [(L.width, L.activation) for L in s.layers] != \
                [(L.width, L.activation) for L in t.layers]:
            raise InputError(f"slot {name} has other layers in the target", parameter="target")


def _linear_equations(pair: _Pair, slot: str) -> list[Equation]:
    (W, _), *_ = pair.layers("given", slot)
    labels: list[tuple[Any, ...]] = [("linear", slot, r, i) for r in range(len(W))
                                     for i in range(len(W[0]))]
    labels += [("shift", slot, r) for r in range(len(W))]
    return [equation(pair, label) for label in labels]


def _answer(kind: str, name: str, k: int, eqs: list[Equation], what: str,
            pair: _Pair) -> Question:
    x, ys, _, _ = _decide(eqs)
    if x is not None:
        w = _solution_witness(eqs, x)
        assert check_witness(pair.given, pair.target, w, pair=pair)
        return Question(kind, name, k, "REACHABLE", f"{what}: γ, β solve the linear equations "
                                                    f"exactly (witness: the solution)", w)
    assert ys is not None
    w = _farkas_witness(eqs, ys)
    assert check_witness(pair.given, pair.target, w, pair=pair)
    return Question(kind, name, k, "UNREACHABLE",
                    f"{what}: {len(w['equations'])} of its linear equations combine to "
                    f"0 = nonzero (witness: the multipliers)", w)


def _slot_question(pair: _Pair, name: str) -> tuple[Question, list[Equation]]:
    given, target = pair.given, pair.target
    k = given.slot_reads()[name]
    node = given.nodes[k]
    s, t = given.slots[name], target.slots[name]
    if node.op != "layernorm":
        same = [(L.weight, L.bias) for L in s.layers] == [(L.weight, L.bias) for L in t.layers]
        return Question("slot", name, None, "NOT TUNABLE",
                        f"reads node {k} ({node.op}), not a LayerNorm: nothing to re-tune; "
                        f"{'equal to' if same else 'differs from'} the target's slot"), []
    ln, ln_t = node.layernorm, target.nodes[k].layernorm
    assert ln is not None and ln_t is not None
    if ln.epsilon != ln_t.epsilon:
        return Question("slot", name, k, "UNDECIDED",
                        f"the LayerNorm of node {k} has another ε in the target: the normalized "
                        f"tokens differ, the question is not linear"), []
    if len(s.layers) > 1 and [(L.weight, L.bias) for L in s.layers[1:]] != \
            [(L.weight, L.bias) for L in t.layers[1:]]:
        return Question("slot", name, k, "UNDECIDED",
                        "an MLP whose later layers differ from the target's: two ReLU networks "
                        "with different layers can still be equal; not decided"), []
    eqs = _linear_equations(pair, name)
    q = _answer("slot", name, k, eqs, f"re-tuning LayerNorm node {k} for this slot alone", pair)
    if len(s.layers) > 1 and q.word == "UNREACHABLE":
        q.word = "UNDECIDED"
        q.reason = ("the MLP's first layer cannot be matched, but two ReLU networks with "
                    "different first layers can still be equal; not decided")
        q.witness = None
    return q, eqs if len(s.layers) == 1 or q.word == "REACHABLE" else []


def _gamma_candidates(pair: _Pair, node: int, solved: dict[Var, Fraction] | None
                      ) -> list[tuple[str, list[Fraction]]]:
    g, _ = pair.layernorm("given", node)
    gt, _ = pair.layernorm("target", node)
    out = [("the given gain", g), ("the target's gain", gt)]
    if solved is not None:
        out.insert(0, ("the LayerNorm's solution", [solved.get(("gamma", i), Fraction(0))
                                                    for i in range(len(g))]))
    return out


def _score_question(pair: _Pair, k: int, solved: dict[Var, Fraction] | None) -> Question:
    given = pair.given
    node = given.nodes[k]
    ln = node.reads[0]
    name = f"node{k}"
    if given.nodes[ln].op != "layernorm":
        return Question("scores", name, None, "NOT TUNABLE",
                        f"the attention reads node {ln} ({given.nodes[ln].op}), not a "
                        f"LayerNorm: nothing to re-tune")
    d = len(pair.layernorm("given", ln)[0])
    H = len(node.heads)

    def labels(index: Sequence[int]) -> list[tuple[Any, ...]]:
        return [("score", k, h, i, j) for h in range(H) for i in index for j in index]

    def fixed(eqs: list[Equation], gamma: list[Fraction]) -> list[Equation]:
        out = []
        for coef, rhs, label in eqs:
            c = dict(coef)
            n = next((v for v in coef if v[0] == "N"), None)
            if n is not None:
                rhs = rhs - c.pop(n) * gamma[n[1]] * gamma[n[2]]
            out.append((c, rhs, label))
        return out

    # 1. a candidate γ: N = γγᵀ fixed, the rest linear in u, v (first on a block of features,
    # whose equations are some of the whole system's: an inconsistent block rules γ out)
    first = [equation(pair, label) for label in labels(range(min(d, 4)))]
    everything: list[Equation] = []
    for what, gamma in _gamma_candidates(pair, ln, solved):
        if _decide(fixed(first, gamma))[0] is None:
            continue
        everything = everything or [equation(pair, label) for label in labels(range(d))]
        x, _, _, _ = _decide(fixed(everything, gamma))
        if x is not None:
            values = dict(x)
            values.update({("N", i, j): gamma[i] * gamma[j] for i in range(d)
                           for j in range(i, d)})
            w = _solution_witness(everything, values)
            w["gamma"] = [_text(v) for v in gamma]
            assert check_witness(pair.given, pair.target, w, pair=pair)
            return Question("scores", name, ln, "REACHABLE",
                            f"γ = {what} gives every head's score form on normalized tokens "
                            f"(witness: N = γγᵀ and u, v)", w)
    # 2. principal blocks of the relaxation
    for size in range(2, min(d, MAX_BLOCK) + 1):
        starts = sorted({min(s, d - size) for s in range(0, d, size)})[:BLOCKS_PER_SIZE]
        for start in starts:
            eqs = [equation(pair, label) for label in labels(range(start, start + size))]
            x, ys, _, _ = _decide(eqs)
            if ys is not None:
                w = _farkas_witness(eqs, ys)
                assert check_witness(pair.given, pair.target, w, pair=pair)
                return Question("scores", name, ln, "UNREACHABLE",
                                f"the score forms of {H} head(s) restricted to features "
                                f"{start}…{start + size - 1}: {len(w['equations'])} equations "
                                f"of the linear relaxation in N = γγᵀ combine to 0 = nonzero",
                                w)
    # 3. the whole relaxation
    everything = everything or [equation(pair, label) for label in labels(range(d))]
    unknowns = len(_unknowns(everything))
    if unknowns > MAX_UNKNOWNS:
        return Question("scores", name, ln, "UNDECIDED",
                        f"no small block of the linear relaxation is inconsistent and the whole "
                        f"one has {unknowns} unknowns (more than {MAX_UNKNOWNS}): not solved")
    x, ys, order, basis = _decide(everything, basis=True)
    if ys is not None:
        w = _farkas_witness(everything, ys)
        assert check_witness(pair.given, pair.target, w, pair=pair)
        return Question("scores", name, ln, "UNREACHABLE",
                        f"the linear relaxation in N = γγᵀ is inconsistent: "
                        f"{len(w['equations'])} equations combine to 0 = nonzero", w)
    ncols = [j for j, v in enumerate(order) if v[0] == "N"]
    free = _rank([[b[j] for j in ncols] for b in basis])
    return Question("scores", name, ln, "UNDECIDED",
                    f"the linear relaxation leaves a {free}-dimensional family of N; whether it "
                    f"holds a rank-one γγᵀ (quadratic equations) is not decided")


def _rank(rows: list[list[Fraction]]) -> int:
    if not rows or not rows[0]:
        return 0
    eqs: list[Equation] = [({j: c for j, c in enumerate(r) if c}, Fraction(0), ()) for r in rows]
    M = _integer_rows(eqs, list(range(len(rows[0]))))
    return int(M.rank())


def transformer_capacity(given: Transformer, target: Transformer, *,
                         progress: Callable[[int, int], None] | None = None
                         ) -> TransformerCapacity:
    """Every local question of the pair (module doc), in node order: each slot, each LayerNorm
    jointly over the slots reading it, each attention's scores."""
    _same_architecture(given, target)
    pair = _Pair(given, target)
    result = TransformerCapacity()
    per_ln: dict[int, list[Equation]] = {}
    total = len(given.slots) + given.blocks
    done = 0
    for name in given.slot_order():
        q, eqs = _slot_question(pair, name)
        result.questions.append(q)
        if q.node is not None and q.word != "UNDECIDED":
            per_ln.setdefault(q.node, []).extend(eqs)
        done += 1
        if progress is not None:
            progress(done, total)
    solved: dict[int, dict[Var, Fraction] | None] = {}
    for k, eqs in sorted(per_ln.items()):
        readers = sorted({e[2][1] for e in eqs})
        if len(readers) > 1:
            q = _answer("layernorm", f"node{k}", k, eqs,
                        f"re-tuning LayerNorm node {k} for its {len(readers)} readers at once",
                        pair)
            result.questions.append(q)
        x, _, _, _ = _decide(eqs)
        solved[k] = x
    for k, node in enumerate(given.nodes):
        if node.op == "attention":
            result.questions.append(_score_question(pair, k, solved.get(node.reads[0])))
            done += 1
            if progress is not None:
                progress(done, total)
    return result


def profile(given: Transformer) -> list[str]:
    """Without a target: per LayerNorm, what it can reach at most (exact counts)."""
    out = []
    reads = given.slot_reads()
    for k, node in enumerate(given.nodes):
        if node.op != "layernorm":
            continue
        d = len(node.layernorm.gain) if node.layernorm else 0
        readers = [n for n, j in reads.items() if j == k]
        coefficients = sum(given.slots[n].layers[0].width * d for n in readers)
        out.append(f"LayerNorm node {k} (d = {d}): 2d = {2 * d} tunable numbers; its readers "
                   f"{', '.join(readers)} have {coefficients} coefficients on normalized tokens "
                   f"(rows × (d − 1) linear, rows constant): re-tuning reaches a family of "
                   f"dimension ≤ {2 * d}")
    for k, node in enumerate(given.nodes):
        if node.op == "attention" and given.nodes[node.reads[0]].op == "layernorm":
            d = len(given.nodes[node.reads[0]].layernorm.gain)  # type: ignore[union-attr]
            out.append(f"attention node {k}: each head's score form on normalized tokens is "
                       f"A ∘ γγᵀ: a family of dimension ≤ {d} among the {(d - 1) ** 2} forms "
                       f"on 1⊥ × 1⊥")
    return out

