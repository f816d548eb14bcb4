"""The two false impossibilities of issue 38, rebuilt from their description (standard library
only, so that the tests and ``benchmarks/bench_hostile.py`` share them).

Both are 2-input documents over ``[0, 1]²`` whose frozen network is ``V_1 = I`` (ReLU),
``V_2 = [1, 1]`` (identity), declared fixed, with a ``kink`` witness computed as if the target
were the plain chain of its layers:

* :func:`reads_input` — target layer 2 carries ``"input": 0``: it reads ``x``, so the target is
  the affine map ``2·x0 + 3·x1 + 1``, which ``γ_1 = (2, 3)``, ``β_1 = 0``, ``γ_2 = 1``,
  ``β_2 = 1`` reach exactly;
* :func:`cancelling_skip` — target layer 2 is ``−a_1`` plus an identity skip from ``a_1``: the
  target is 0 everywhere, which ``γ_2 = 0``, ``β_2 = 0`` reach.

``graph_values=True`` writes the witness's values and gradients as the target's graph gives
them (a writer that knows the graph but keeps the kink): still no impossibility.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

FIXED = {"kind": "fixed", "why": "the given network"}


def _frac(x: Fraction) -> str:
    return str(x)


def _doc(target: list[dict[str, Any]], values: list[list[Fraction]],
         plus: list[list[Fraction]], minus: list[list[Fraction]]) -> dict[str, Any]:
    return {"format": "exactnorm.impossibility", "version": 1,
            "domain": {"lower": [0, 0], "upper": [1, 1]},
            "target": {"layers": target},
            "network": {"layers": [
                {"weight": [[1, 0], [0, 1]], "source": FIXED, "activation": "relu"},
                {"weight": [[1, 1]], "source": FIXED, "activation": "identity"}]},
            "witness": {"kind": "kink", "neuron": 0, "point": ["1/2", "1/2"],
                        "values": [[_frac(v) for v in z] for z in values],
                        "gradients": {"plus": [[_frac(v) for v in r] for r in plus],
                                      "minus": [[_frac(v) for v in r] for r in minus]}}}


def reads_input(graph_values: bool = False) -> dict[str, Any]:
    """Target ``a_1 = relu(W_1 x + b_1)`` (unused), ``g = W_2 x + b_2`` (layer 2 reads node 0)."""
    target = [{"weight": [[1, 1], [1, -1]], "bias": [-1, "1/3"], "activation": "relu"},
              {"input": 0, "weight": [[2, 3]], "bias": [1], "activation": "identity"}]
    third = Fraction(1, 3)
    if graph_values:  # z_2 = 2·1/2 + 3·1/2 + 1; g's gradient is W_2 on both sides
        return _doc(target, [[Fraction(0), third], [Fraction(7, 2)]],
                    [[Fraction(2), Fraction(3)]], [[Fraction(2), Fraction(3)]])
    # the chain reading: z_2 = W_2·a_1 + b_2 with a_1 = (0, 1/3); G = W_2·D_1·W_1
    return _doc(target, [[Fraction(0), third], [Fraction(2)]],
                [[Fraction(5), Fraction(-1)]], [[Fraction(3), Fraction(-3)]])


def cancelling_skip(graph_values: bool = False) -> dict[str, Any]:
    """Target ``a_1 = relu(x0 + x1 − 1)``, ``g = −a_1 + a_1`` (an identity skip from node 1)."""
    target = [{"weight": [[1, 1]], "bias": [-1], "activation": "relu"},
              {"weight": [[-1]], "bias": [0], "activation": "identity",
               "skip": {"from": 1, "kind": "identity", "weight": {"identity": 1}}}]
    zero = Fraction(0)
    if graph_values:
        return _doc(target, [[zero], [zero]], [[zero, zero]], [[zero, zero]])
    return _doc(target, [[zero], [zero]], [[Fraction(-1), Fraction(-1)]], [[zero, zero]])


#: the tunings that reach each target exactly: (γ_1, β_1, γ_2, β_2)
TUNINGS: dict[str, tuple[list[int], list[int], list[int], list[int]]] = {
    "reads_input": ([2, 3], [0, 0], [1], [1]),
    "cancelling_skip": ([1, 1], [0, 0], [0], [0]),
}
