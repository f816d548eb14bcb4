"""The cost model: what a construction will build, what the checker will say of it, and what it
costs — predicted from shapes and the target's exact entries, before anything is drawn or solved.

What a construction builds is its :class:`Footprint`: the Khatri–Rao pairs it solves (system
size, predicted bit length of the solution, output positions), the other frozen layers and
entries it places and the bits of the numbers its certificate writes. From the footprint:

* :meth:`Footprint.checker` — the structures and the work the checker will need, against the
  checker's own limits (rule ``limit``, docs/certificate-format.md §7), imported from
  :mod:`exactnorm.checker.vocabulary` and never restated here;
* :meth:`Footprint.estimate` — time (construction, writing, check), peak memory and certificate
  bytes, from constants fitted to measurements (:data:`FITTED`; refitted by
  ``benchmarks/bench_estimates.py --fit`` on a benchmark machine, the only place they live).

**Bit sizes of Γ (the prediction).** A pair solves ``K γ = w``, ``K = V_inᵀ ⊙ V_out`` with
``V_in`` m × k, ``V_out`` d_out × m, ``m = k·d_out``, and ``w = N/D`` the target's entries over
their common denominator. By Cramer's rule every ``γ_i = det K_i / (D·det K)``: the common
denominator of γ divides ``D·det K`` and its numerators are minors bordered by ``N``. Hadamard's
inequality bounds ``|det K| ≤ Π_j ‖K e_j‖`` with ``‖K e_j‖ = ‖V_in[j,:]‖·‖V_out[:,j]‖``, so with
entries of second moment ``s2 = E v²`` the bound is about ``m·½·log2(k·s2) + m·½·log2(d_out·s2)``
bits (:func:`hadamard_bits`). A random determinant stays below the bound by about ``½·log2(e)``
bits per row; on the Khatri–Rao structure we measured ``0.7·m + 2·√m`` bits (nonzero:8 draws,
m = 16 … 1024, within 1 %: docs/performance.md), which :func:`gamma_bits` subtracts for the
expected size; :func:`gamma_bits` with ``bound=True`` keeps the Hadamard bound, an upper bound of
the solution's size, and that bound is what the checker forecast uses. With ``k = 1`` the
system is ``V_out·diag(v_in)``: ``γ = diag(v_in)⁻¹ V_out⁻¹ w`` has ``det V_out`` times the lcm of
a few entry values as denominator, not ``det K``. The width/depth trade-off and the channel
blocks solve for ``V_F⁻¹ W`` (``V_F`` a d_out × d_out draw), which adds ``det V_F``'s bits.

The target's side, ``bits(w)``, is read exactly from its entries (:class:`LayerBits`): the bit
length of the common denominator of a block of columns and of the largest numerator over it.
Float32 weights have power-of-two denominators (a few dozen bits); a scaler that *divides* by
float32 standard deviations gives a different odd denominator per input column, whose lcm over
all columns can have thousands of bits, while a column block of the trade-off sees only its own.

Reference for the determinant of random matrices: Tao & Vu, "On random ±1 matrices:
singularity and determinant" (2006), log|det| = ½·log n! + O(√(n log n)) for n × n sign matrices.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property, lru_cache
from typing import Any

from exactnorm.checker.vocabulary import MAX_MAP_BITS, MAX_MAP_ENTRIES, MIN_WORK, WORK_PER_BIT
from exactnorm.exact.padic import AUTO_MIN_SIZE
from exactnorm.exact.sampling import Distribution, parse_distribution

__all__ = ["FITTED", "Estimate", "CheckerForecast", "Pair", "Footprint", "LayerBits",
           "EntryLaw", "entry_law", "hadamard_bits", "WORK_MARGIN", "determinant_bits",
           "gamma_bits", "human_seconds", "short_seconds", "human_bytes", "NO_FOOTPRINT",
           "footprint_dict", "footprint_of"]

#: the forecast work times this must stay within the checker's default budget (measured
#: forecasts are within 0.7–1.3 of the checker's count on the benchmark corpus)
WORK_MARGIN = 1.25
#: a 64-bit word and the checker's cost of one Python-level step on a number (its ``STEP``,
#: docs/certificate-format.md §7: the forecast counts the checker's units the same way)
_WORD = 64
_STEP = 64


# ------------------------------------------------------------------ fitted constants

@dataclass(frozen=True)
class Fitted:
    """Coefficients of the cost model, fitted by ``benchmarks/bench_estimates.py --fit`` (CPU
    seconds of one process, bytes). Each phase is a sum of coefficient × feature; the features
    are defined in :meth:`Footprint.features`."""

    build: dict[str, float]
    write: dict[str, float]
    check: dict[str, float]
    peak: dict[str, float]
    gz: dict[str, float]
    json: dict[str, float]
    #: when and where they were measured (printed by the benchmark)
    measured: str


#: the fitted constants (the one place they live; ``bench_estimates.py --fit`` prints them)
FITTED = Fitted(
    build={"const": 0.00675, "systems": 0.00127, "cube": 0.0, "lift": 1.35e-10,
           "small_cube": 0.0, "small_lift": 0.0, "linear": 1.49e-07, "entries": 1e-06,
           "window": 3.18e-08, "spread": 7.48e-07, "masked": 1.2e-06},
    write={"const": 0.00179, "bits": 3.42e-08, "layers": 0.000197, "entries": 1.02e-07},
    check={"const": 0.00141, "units": 1.55e-10, "entries": 1.56e-07, "layers": 0.000443,
           "bits": 3.53e-08, "positions": 7.65e-06},
    peak={"const": 6.66e+07, "square": 14.3, "bits": 5.72, "structure": 1.8, "entries": 17.0,
          "positions": 98.9},
    gz={"const": 804.0, "bits": 1.09, "layers": 11.3, "numbers": 0.0},
    json={"const": 797.0, "bits": 2.35, "layers": 308.0, "numbers": 0.0},
    measured="2026-11-28, 32 cases (bench_estimates.py --fit --corpus), CPU time, load 6.4",
)


# ------------------------------------------------------------------ entry laws and bit sizes

@dataclass(frozen=True)
class EntryLaw:
    """What the bit-size prediction needs of a frozen entry distribution: its second moment,
    ``E log2|v|`` of a nonzero entry, the bits of its largest value and of the lcm of its values'
    absolute values (the denominators γ takes with block size 1), and the bits of an entry's
    own denominator (0 for integer laws)."""

    s2: float
    log_abs: float
    value_bits: int
    lcm_bits: float
    den_bits: int = 0
    #: ``Var(v²)/E(v²)²`` (the correction of ``E log`` of a sum of squares)
    kurtosis: float = 0.8
    #: the values of a finite uniform law (empty otherwise)
    values: tuple[int, ...] = ()

    def row_log(self, n: int) -> float:
        """``E log2 ‖row‖`` of a row of ``n`` entries: exact for a finite law and ``n ≤ 3``
        (enumerated), else ``½·log2(n·s2)`` less the second-order term of ``E log``,
        ``κ/(4·n·ln 2)``."""
        if n <= 1:
            return self.log_abs
        if self.values and n <= 3:
            return _exact_row_log(self.values, n)
        return 0.5 * math.log2(n * self.s2) - self.kurtosis / (4 * n * math.log(2))


@lru_cache(maxsize=64)
def _exact_row_log(values: tuple[int, ...], n: int) -> float:
    squares: dict[int, float] = {}
    for v in values:
        squares[v * v] = squares.get(v * v, 0.0) + 1 / len(values)
    total = {0: 1.0}
    for _ in range(n):
        nxt: dict[int, float] = {}
        for a, pa in total.items():
            for b, pb in squares.items():
                nxt[a + b] = nxt.get(a + b, 0.0) + pa * pb
        total = nxt
    return sum(p * 0.5 * math.log2(x) for x, p in total.items() if x)


def entry_law(distribution: str | Distribution) -> EntryLaw:
    """The :class:`EntryLaw` of a distribution (exact for finite integer supports).

    >>> law = entry_law("nonzero:8")
    >>> round(law.s2, 2), law.value_bits, round(law.lcm_bits, 1)
    (25.5, 4, 9.7)
    """
    d = parse_distribution(distribution)
    if d.law in ("int", "nonzero", "set"):
        values = (list(d.values) if d.law == "set"
                  else [v for v in range(-d.param, d.param + 1) if v or d.law == "int"])
        nonzero = [abs(v) for v in values if v] or [1]
        lcm = 1
        for v in set(nonzero):
            lcm = math.lcm(lcm, v)
        s2 = sum(v * v for v in values) / len(values)
        s4 = sum(v ** 4 for v in values) / len(values)
        return EntryLaw(s2, sum(math.log2(v) for v in nonzero) / len(nonzero),
                        max(nonzero).bit_length(), math.log2(lcm),
                        kurtosis=(s4 - s2 * s2) / (s2 * s2), values=tuple(values))
    if d.law == "bits":
        b = d.param
        return EntryLaw(4.0 ** b / 3, b - math.log2(math.e), b + 1, float(b))
    if d.law == "rational":
        B = d.param
        return EntryLaw(B * B / 3, math.log2(B) - 1, B.bit_length(), float(B.bit_length()),
                        B.bit_length())
    # gauss:b — an Irwin–Hall sum of twelve b-bit uniforms over 2^b (docs/generator.md)
    b = d.param
    return EntryLaw(4.0 ** b, b - 1.0, b + 4, float(b + 4), b)


def hadamard_bits(k: int, d_out: int, law: EntryLaw) -> float:
    """``log2`` of the Hadamard bound of ``det K`` for ``K = V_inᵀ ⊙ V_out`` (m = k·d_out
    columns, each of norm ``‖V_in[j,:]‖·‖V_out[:,j]‖``), in expectation over the draws."""
    return k * d_out * (law.row_log(k) + law.row_log(d_out))


def determinant_bits(n: int, law: EntryLaw) -> float:
    """Expected bits of ``det`` of an n × n draw: the Hadamard bound less ``½·log2(n^n/n!)``
    (the expected log-determinant of a random matrix, Tao–Vu)."""
    if n <= 1:
        return max(law.log_abs, 0.0) * n
    hadamard = 0.5 * n * math.log2(n * law.s2)
    return hadamard - 0.5 * (n * math.log2(n) - math.lgamma(n + 1) / math.log(2))


def gamma_bits(k: int, d_out: int, rhs_bits: float, law: EntryLaw, *,
               bound: bool = False) -> float:
    """Predicted bit length of γ's numerators and common denominator for one Khatri–Rao system
    (module doc): expected, or with ``bound=True`` an upper bound (no determinant slack).

    >>> law = entry_law("nonzero:8")  # measured: 9,142 and 308 bits (rhs of 6 bits)
    >>> 9000 < gamma_bits(32, 32, 6, law) < 9300, 300 < gamma_bits(1, 64, 6, law) < 320
    (True, True)
    """
    m = k * d_out
    den = m * law.den_bits  # rational entries: a denominator per entry, cleared by the solve
    if k == 1:
        body = determinant_bits(d_out, law) + law.lcm_bits
        if bound:
            body = 0.5 * d_out * math.log2(d_out * law.s2) + law.lcm_bits + 8
        return rhs_bits + body + den
    body = hadamard_bits(k, d_out, law)
    if not bound:
        body -= 0.7 * m + 2.0 * math.sqrt(m)
    else:
        body += 0.5 * math.log2(m) + 8
    return rhs_bits + max(body, 1.0) + den


class LayerBits:
    """The bit sizes of a target layer's weight matrix as a right-hand side: of its whole
    matrix, and of any block of columns (the common denominator of the block's entries and the
    largest numerator over it). Exact; per-column denominators are read only when the whole
    matrix's common denominator is long (a scaler dividing by non-dyadic numbers), where a block
    of columns can have a far shorter one."""

    #: from this many bits of the whole common denominator on, blocks are measured per column
    PER_COLUMN_FROM = 256

    def __init__(self, weight: Any) -> None:
        from exactnorm.exact.linalg import clear_denominators

        self.rows, self.cols = weight.nrows(), weight.ncols()
        self._columns: list[tuple[int, int]] | None = None
        if self.rows * self.cols == 0:
            self.whole = 1
            return
        N, D = clear_denominators(weight)
        entries = N.entries()
        # the largest |numerator| from the two ends (FLINT comparisons, no int per entry)
        top = max(int(max(entries)), -int(min(entries)))
        self.whole = max(int(D).bit_length(), top.bit_length(), 1)
        if int(D).bit_length() >= self.PER_COLUMN_FROM:
            self._columns = []
            for col in zip(*weight.tolist()):
                den = 1
                for e in col:
                    den = math.lcm(den, int(e.q))
                self._columns.append((den, max(abs(int(e.p)) * (den // int(e.q)) for e in col)))

    def block(self, columns: Iterable[int]) -> int:
        """Bits of the block of ``columns`` over its own common denominator."""
        if self._columns is None:
            return self.whole
        picked = [self._columns[c] for c in columns]
        den = 1
        for d, _ in picked:
            den = math.lcm(den, d)
        top = max((n * (den // d) for d, n in picked), default=0)
        return max(den.bit_length(), top.bit_length(), 1)

    def blocks(self, size: int) -> list[int]:
        """Bits of the consecutive column blocks of ``size`` (the trade-off's input blocks)."""
        return [self.block(range(s, min(s + size, self.cols))) for s in range(0, self.cols, size)]

    def channel_blocks(self, channels: int, taps: int, size: int) -> list[int]:
        """Bits of the kernel columns of consecutive blocks of ``size`` input channels."""
        return [self.block(range(c * taps, min(c + size, channels) * taps))
                for c in range(0, channels, size)]


# ------------------------------------------------------------------ footprints

@dataclass(frozen=True)
class Pair:
    """``count`` Khatri–Rao pairs of one shape: ``V_in`` m × k, ``V_out`` d_out × m
    (m = k·d_out), γ of ``gamma`` bits (expected) and ``gamma_bound`` (upper bound), a shift of
    ``beta`` bits per hidden neuron; a convolution's pair acts at ``positions`` output positions.
    ``tasks`` is how many processes can share the ``count`` systems (layers or blocks)."""

    k: int
    d_out: int
    count: int
    gamma: float
    gamma_bound: float
    beta: float
    positions: int = 1
    value_bits: int = 4
    #: exact multiply-adds of the activating shifts (FLINT products: the frozen rows over the
    #: box, or over every position's patch box)
    window: float = 0.0
    #: numbers the shifts handle one by one in Python (a channel's range at every position,
    #: the patch boxes of every position)
    spread: float = 0.0
    #: Python-level work per system besides (a masked kernel's structural zeros checked)
    masked: float = 0.0
    #: output channels whose ReLU the checker tests too (a block's, before the final matrix)
    out_stable: int = 0

    @property
    def m(self) -> int:
        return self.k * self.d_out


@dataclass(frozen=True)
class Footprint:
    """What a construction builds (module doc); footprints of runs add up (:meth:`plus`)."""

    pairs: tuple[Pair, ...] = ()
    #: frozen layers besides the pairs' two each (routing, final matrices, pooling copies)
    extra_layers: int = 0
    #: entries of every frozen matrix (drawn by the writer, regenerated by the checker)
    entries: int = 0
    #: bits of every number the certificate writes besides γ and β of the pairs (the target, the
    #: box, the final layers' shifts)
    other_bits: float = 0.0
    #: numbers the certificate writes besides γ and β of the pairs
    other_numbers: int = 0
    #: checker units besides the pairs' products (accumulating skips, pooling maps)
    other_units: float = 0.0
    #: the largest structure besides the pairs': (rows, columns, bits, where)
    other_structure: tuple[int, int, float, str] = (0, 0, 0.0, "")
    #: independent tasks the build can spread over processes, and the largest one's share
    tasks: int = 1
    largest_task: float = 1.0
    #: Python-level work of hulls of patch boxes (once per convolution in blocks)
    hull: float = 0.0

    def plus(self, other: Footprint) -> Footprint:
        """Both footprints, built one after the other."""
        mine = self.largest_task * self.build_cpu
        theirs = other.largest_task * other.build_cpu
        both = self.build_cpu + other.build_cpu
        largest = max(mine, theirs) / both if both else 1.0
        structure = max(self.other_structure, other.other_structure,
                        key=lambda s: s[0] * s[1] * max(s[2], 64))
        return Footprint(self.pairs + other.pairs, self.extra_layers + other.extra_layers,
                         self.entries + other.entries, self.other_bits + other.other_bits,
                         self.other_numbers + other.other_numbers,
                         self.other_units + other.other_units, structure,
                         self.tasks + other.tasks, largest, self.hull + other.hull)

    # ---------------------------------------------------------------- sizes

    @property
    def systems(self) -> int:
        return sum(p.count for p in self.pairs)

    @property
    def system_size(self) -> int:
        return max((p.m for p in self.pairs), default=0)

    @property
    def depth(self) -> int:
        return 2 * self.systems + self.extra_layers

    @property
    def gamma_bits(self) -> float:
        """The largest predicted γ (bits)."""
        return max((p.gamma for p in self.pairs), default=0.0)

    @property
    def written_bits(self) -> float:
        """Bits of the numbers the certificate writes (the checker's default work budget is
        :data:`~exactnorm.checker.vocabulary.WORK_PER_BIT` times these)."""
        return self.other_bits + sum(
            p.count * (p.m * (p.gamma + p.beta + 2) + p.d_out * (p.beta + 1) + 64 * 2)
            for p in self.pairs)

    @property
    def numbers(self) -> int:
        return self.other_numbers + sum(p.count * (2 * p.m + p.d_out) for p in self.pairs)

    # ---------------------------------------------------------------- the checker

    def checker(self) -> CheckerForecast:
        """The checker's largest structure and its work (module doc), against its limits."""
        best = (self.other_structure[0], self.other_structure[1], self.other_structure[2],
                self.other_structure[3])
        units = self.other_units
        for p in self.pairs:
            # V_out·diag(γ): d_out × m numbers of γ's bits plus an entry's (the checker scales
            # the columns of the next frozen matrix by γ, or the rows of the map, whichever is
            # smaller: both have d_out·m or m·k entries of that size)
            rows, cols = min(p.d_out, p.k), p.m
            cand = (rows, cols, p.gamma_bound + p.value_bits, "γ scaled into the next matrix")
            if _bits_of(cand) > _bits_of(best):
                best = cand
            words = math.ceil((p.gamma_bound + p.value_bits) / _WORD)
            # the product (V_out·diag γ)·B over the k + 1 columns of the segment map, the
            # stability ranges over the positions, the scaling itself and the checkpoint
            units += p.count * (p.d_out * p.m * (p.k + 1) * (_STEP + words)
                                + 2 * (p.m + p.out_stable) * p.k * p.positions * (_STEP + 1)
                                + p.m * (4 * _STEP + 6 * words * words))
        units += self.entries * (_STEP + 2)
        budget = max(MIN_WORK, int(WORK_PER_BIT * self.written_bits))
        return CheckerForecast(best[0], best[1], int(best[2]), best[3], int(units), budget)

    # ---------------------------------------------------------------- the estimate

    @cached_property
    def features(self) -> dict[str, dict[str, float]]:
        """The quantities each phase's time, the peak memory and the bytes are linear in."""
        pairs = self.pairs
        written = self.written_bits
        layers = self.depth
        forecast = self.checker()
        return {
            "build": {"const": 1.0, "systems": float(self.systems),
                      "cube": sum(p.count * float(p.m) ** 3 for p in pairs
                                  if p.m >= AUTO_MIN_SIZE),
                      "lift": sum(p.count * float(p.m) ** 2 * p.gamma for p in pairs
                                  if p.m >= AUTO_MIN_SIZE),
                      "small_cube": sum(p.count * float(p.m) ** 3 for p in pairs
                                        if p.m < AUTO_MIN_SIZE),
                      "small_lift": sum(p.count * float(p.m) ** 2 * p.gamma for p in pairs
                                        if p.m < AUTO_MIN_SIZE),
                      "linear": sum(p.count * p.m * p.gamma for p in pairs),
                      "entries": float(self.entries),
                      "window": sum(p.count * p.window for p in pairs),
                      "spread": sum(p.count * p.spread for p in pairs) + self.hull,
                      "masked": sum(p.count * p.masked for p in pairs)},
            "write": {"const": 1.0, "bits": written, "layers": float(layers),
                      "entries": float(self.entries)},
            "check": {"const": 1.0, "units": float(forecast.units),
                      "entries": float(self.entries), "layers": float(layers), "bits": written,
                      "positions": sum(p.count * (p.m + p.d_out) * p.positions for p in pairs)},
            "peak": {"const": 1.0, "square": float(max((p.m for p in pairs), default=0)) ** 2,
                     "bits": written / 8, "structure": forecast.structure_bits / 8,
                     "entries": float(self.entries),
                     "positions": float(max((p.m * p.positions for p in pairs), default=0))},
            "gz": {"const": 1.0, "bits": written / 8, "layers": float(layers),
                   "numbers": float(self.numbers)},
            "json": {"const": 1.0, "bits": written / 8, "layers": float(layers),
                     "numbers": float(self.numbers)},
        }

    @property
    def build_cpu(self) -> float:
        return _apply(FITTED.build, self.features["build"])

    def estimate(self) -> Estimate:
        """Time, memory and bytes of building, writing and checking this footprint."""
        f = self.features
        return Estimate(
            seconds=self.build_cpu + _apply(FITTED.write, f["write"])
            + _apply(FITTED.check, f["check"]),
            peak_bytes=int(_apply(FITTED.peak, f["peak"])),
            certificate_bytes=int(_apply(FITTED.gz, f["gz"])),
            depth=self.depth, systems=self.systems, system_size=self.system_size,
            build_seconds=self.build_cpu, write_seconds=_apply(FITTED.write, f["write"]),
            check_seconds=_apply(FITTED.check, f["check"]),
            json_bytes=int(_apply(FITTED.json, f["json"])),
            gamma_bits=int(self.gamma_bits), checker=self.checker(),
            tasks=self.tasks, largest_task=self.largest_task, footprint=self)


NO_FOOTPRINT = Footprint(tasks=0, largest_task=0.0)


def footprint_dict(fp: Footprint) -> dict[str, Any]:
    """A footprint as plain JSON (the benchmark stores it with each measurement, so that the
    constants can be refitted from stored measurements when a feature changes)."""
    out = {f.name: getattr(fp, f.name) for f in fields(fp) if f.name != "pairs"}
    out["pairs"] = [{f.name: getattr(p, f.name) for f in fields(p)} for p in fp.pairs]
    return out


def footprint_of(data: dict[str, Any]) -> Footprint:
    """The footprint of :func:`footprint_dict`."""
    values = dict(data)
    values["pairs"] = tuple(Pair(**p) for p in data["pairs"])
    values["other_structure"] = tuple(data["other_structure"])
    return Footprint(**values)


def _apply(coefficients: dict[str, float], features: dict[str, float]) -> float:
    return sum(coefficients.get(name, 0.0) * value for name, value in features.items())


def _bits_of(structure: Sequence[Any]) -> float:
    rows, cols, bits = structure[0], structure[1], structure[2]
    return float(rows) * float(cols) * max(float(bits), 64.0)


# ------------------------------------------------------------------ the checker's answer

@dataclass(frozen=True)
class CheckerForecast:
    """The largest structure the checker will build (``rows × cols`` numbers of up to ``bits``
    bits, ``where``) and the work it will need, in its units, against its default budget."""

    rows: int
    cols: int
    bits: int
    where: str
    units: int
    budget: int

    @property
    def structure_bits(self) -> int:
        return self.rows * self.cols * max(self.bits, 64)

    @property
    def fits_structures(self) -> bool:
        """Whether every structure stays within the checker's limits on entries and bits (a
        property of each part of a network alone)."""
        return self.rows * self.cols <= MAX_MAP_ENTRIES and self.structure_bits <= MAX_MAP_BITS

    @property
    def within_budget(self) -> bool:
        """Whether the work stays within the default budget, with :data:`WORK_MARGIN` to spare
        (a property of the whole certificate: the budget grows with every number it writes)."""
        return WORK_MARGIN * self.units <= self.budget

    @property
    def fits(self) -> bool:
        """Whether the checker's limits (entries, bits, work budget) will hold."""
        return self.fits_structures and self.within_budget

    def refusal(self) -> str:
        """Why the checker would refuse (rule ``limit``), or ``""``."""
        if self.rows * self.cols > MAX_MAP_ENTRIES:
            return (f"{self.where} would have {self.rows} x {self.cols} entries, above the "
                    f"checker's limit {MAX_MAP_ENTRIES:,}")
        if self.structure_bits > MAX_MAP_BITS:
            return (f"{self.where} would hold {self.rows} x {self.cols} numbers of about "
                    f"{self.bits:,} bits, above the checker's limit of {MAX_MAP_BITS:,} bits")
        if WORK_MARGIN * self.units > self.budget:
            return (f"checking would need about {self.units:.2g} units of work, near or above "
                    f"its default budget of {self.budget:.2g}")
        return ""


# ------------------------------------------------------------------ the estimate

@dataclass(frozen=True)
class Estimate:
    """Estimated cost of one construction on one target (not certified; a planning aid).

    ``seconds`` is the CPU time of one process for building, writing and checking the
    certificate (``build_seconds + write_seconds + check_seconds``); :meth:`wall` the time with
    ``jobs`` processes. ``peak_bytes`` is the peak resident memory, ``certificate_bytes`` the
    size of the ``.json.gz`` file (``json_bytes`` uncompressed). ``checker`` is the forecast of
    the checker's limits (:class:`CheckerForecast`), ``gamma_bits`` the largest predicted γ.
    """

    seconds: float
    peak_bytes: int
    certificate_bytes: int
    depth: int
    systems: int
    system_size: int
    build_seconds: float = 0.0
    write_seconds: float = 0.0
    check_seconds: float = 0.0
    json_bytes: int = 0
    gamma_bits: int = 0
    checker: CheckerForecast | None = None
    tasks: int = 1
    largest_task: float = 1.0
    footprint: Footprint | None = field(default=None, compare=False, repr=False)

    def wall(self, jobs: int = 1) -> float:
        """Seconds with ``jobs`` processes: the build's independent tasks spread over them (at
        best the largest task alone), writing and checking in one."""
        build = self.build_seconds
        if jobs > 1 and self.tasks > 1:
            build = max(build / min(jobs, self.tasks), build * self.largest_task)
        return build + self.write_seconds + self.check_seconds

    def as_dict(self, jobs: int = 1) -> dict[str, Any]:
        """Plain numbers for a machine-readable report (stable keys)."""
        forecast = self.checker
        return {
            "seconds": self.wall(jobs), "jobs": jobs, "cpu_seconds": self.seconds,
            "build_seconds": self.build_seconds, "write_seconds": self.write_seconds,
            "check_seconds": self.check_seconds, "peak_bytes": self.peak_bytes,
            "certificate_bytes_gz": self.certificate_bytes,
            "certificate_bytes_json": self.json_bytes, "systems": self.systems,
            "system_size": self.system_size, "frozen_depth": self.depth,
            "gamma_bits": self.gamma_bits,
            "checker": None if forecast is None else {
                "fits": forecast.fits, "largest": forecast.where, "rows": forecast.rows,
                "cols": forecast.cols, "bits": forecast.bits,
                "structure_bits": forecast.structure_bits, "work": forecast.units,
                "work_budget": forecast.budget, "refusal": forecast.refusal() or None},
        }

    def describe(self, jobs: int = 1) -> str:
        return (f"{self.systems} system(s) of size ≤ {self.system_size}, "
                f"≈ {short_seconds(self.wall(jobs))} "
                f"(build {short_seconds(self.build_seconds)}, check "
                f"{short_seconds(self.check_seconds)}), "
                f"peak ≈ {human_bytes(self.peak_bytes)}, "
                f"certificate ≈ {human_bytes(self.certificate_bytes)} gz, "
                f"frozen depth {self.depth}")


def human_seconds(s: float) -> str:
    """A duration in whole units, as certificates' recorded reasons state it.

    >>> human_seconds(42.4), human_seconds(3000), human_seconds(4 * 86400)
    ('42 s', '50 min', '4 days')
    """
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    if s < 2 * 86400:
        return f"{s / 3600:.0f} h"
    return f"{s / 86400:.0f} days"


def short_seconds(s: float) -> str:
    """A duration for an estimate printed before the work (two significant digits below 10 s).

    >>> short_seconds(0.04), short_seconds(4.24), short_seconds(42.4), short_seconds(3000)
    ('0.04 s', '4.2 s', '42 s', '50 min')
    """
    if s < 0.1:
        return f"{s:.2f} s"
    if s < 10:
        return f"{s:.1f} s"
    return human_seconds(s)


def human_bytes(n: float) -> str:
    """A size for a summary line (binary units).

    >>> human_bytes(900), human_bytes(3.5 * 2**20), human_bytes(3 * 2**30)
    ('900 B', '3.5 MiB', '3.0 GiB')
    """
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"
