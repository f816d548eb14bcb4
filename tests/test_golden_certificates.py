"""Golden certificate bytes: a guard for refactorings that must not change a single byte.

Each case builds a construction at a fixed seed, writes its certificate and compares the SHA-256
of the file with the digest recorded below. The digests were computed from the code at commit
``75a6a39``, before the layer kinds became plug-ins (issue 31); every later step of that migration
keeps them. A digest pins bytes, so each case also has the independent checker accept the same
file (both arithmetics): a digest of an invalid certificate is never kept.

The cases cover every writer path: Theorem 1 (versions 1 and 2, frozen weights by reference and
explicit), the width/depth trade-off chosen by the cost model on a wide input (selection routing)
and with masked routing, low rank, Bernoulli-masked draws with redraws, and convolutional targets
(convolution, average pooling and a dense head realized by Theorem 1 or by the trade-off).

If a change is *meant* to change bytes (a new format version), recompute the digests with
``python -m tests.test_golden_certificates`` and say why in the commit message.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from flint import fmpq, fmpq_mat

from exactnorm import api, checker, checker_flint
from exactnorm.model.kinds import ConvGeometry
from exactnorm.model.kinds import ConvTargetLayer as Conv
from exactnorm.model.kinds import PoolTargetLayer as Pool
from exactnorm.model.network import TargetLayer as Dense
from exactnorm.model.network import TargetNetwork
from exactnorm.model.network import TargetNetwork as Network
from exactnorm.model.targets import demo_target, random_target

# --------------------------------------------------------------------------- targets


def _rng_rationals(seed: int) -> tuple[Callable[[int, int], fmpq_mat], Callable[[int], tuple]]:
    rng = random.Random(seed)

    def mat(r: int, c: int) -> fmpq_mat:
        return fmpq_mat(r, c, [fmpq(rng.randint(-8, 8), 8) for _ in range(r * c)])

    def vec(n: int) -> tuple:
        return tuple(fmpq(rng.randint(-8, 8), 8) for _ in range(n))

    return mat, vec


def lenet_small() -> Any:
    """LeNet-shaped on 1×8×8: conv 3×3 p1 → 2, avgpool 2, conv 3×3 → 3, dense 12 → 2."""
    mat, vec = _rng_rationals(1)
    g1 = ConvGeometry((1, 8, 8), (3, 3), padding=(1, 1))
    g2 = ConvGeometry((2, 4, 4), (3, 3))
    return Network((Conv(g1, mat(2, 9), vec(2), "relu"),
                    Pool(ConvGeometry((2, 8, 8), (2, 2), stride=(2, 2))),
                    Conv(g2, mat(3, 18), vec(3), "relu"),
                    Dense(mat(2, 12), vec(2), "identity")),
                   (fmpq(0),) * 64, (fmpq(1),) * 64)


def cnn_wide_head() -> Any:
    """conv 3×3 s1 → 2 on 1×6×6, avgpool 2 s1, a dense head 18 → 6 → 2 beyond the budget."""
    mat, vec = _rng_rationals(5)
    g = ConvGeometry((1, 6, 6), (3, 3))
    return Network((Conv(g, mat(2, 9), vec(2), "relu"),
                    Pool(ConvGeometry((2, 4, 4), (2, 2), stride=(2, 2))),
                    Dense(mat(6, 8), vec(6), "relu"),
                    Dense(mat(2, 6), vec(2), "identity")),
                   (fmpq(-1),) * 36, (fmpq(1),) * 36)


def low_rank_target() -> TargetNetwork:
    """Two layers of rank 1 and 2 (the low-rank construction's factors are computed)."""
    u, v = [1, -2, 3], [2, 0, -1, 1]
    W1 = [[a * b for b in v] for a in u]
    W2 = [[1, 2, -1], [2, 4, -2]]
    half = Fraction(1, 2)
    return TargetNetwork.from_lists([W1, W2], [[1, 0, -1], [half, 0]], ["relu", "identity"],
                                    lower=[-1, 0, 0, -half], upper=[1, 1, 2, half])


# --------------------------------------------------------------------------- cases


def _dense(target: Any) -> bool:
    return all(isinstance(layer, Dense) for layer in target.layers)


def _certify(target: Any, **options: Any) -> Any:
    if _dense(target):
        return api.certify(target, **options)
    from exactnorm.constructions.plan import construct

    return construct(target, **options)


def _write(c: Any, path: Path, **options: Any) -> None:
    api.write_certificate(c, path, **options)


#: name → (target, certify options, write options, file name)
CASES: dict[str, tuple[Callable[[], Any], dict[str, Any], dict[str, Any], str]] = {
    "demo-theorem1": (demo_target, {"seed": 0}, {}, "c.json"),
    "demo-theorem1-v1": (demo_target, {"seed": 3}, {"version": 1}, "c.json"),
    "demo-explicit-gz": (demo_target, {"seed": 1}, {"frozen_weights": "explicit"}, "c.json.gz"),
    "wide-tradeoff-auto": (lambda: random_target((98, 6, 3), seed=7), {"seed": 2,
                                                                        "max_system": 100},
                           {}, "c.json.gz"),
    "tradeoff-mask": (lambda: random_target((10, 4, 2), seed=2),
                      {"construction": "tradeoff", "block": 3, "routing": "mask", "seed": 4},
                      {}, "c.json"),
    "lowrank": (low_rank_target, {"construction": "lowrank", "seed": 5}, {}, "c.json"),
    "sparse-redraws": (lambda: random_target((3, 3, 2), seed=5),
                       {"construction": "theorem1", "sparsity": "3/4", "distribution": "int:4",
                        "seed": 1}, {}, "c.json"),
    "cnn-lenet": (lenet_small, {"seed": 0}, {}, "c.json"),
    "cnn-lenet-explicit-gz": (lenet_small, {"seed": 2}, {"frozen_weights": "explicit"},
                              "c.json.gz"),
    "cnn-tradeoff-head": (cnn_wide_head, {"seed": 1, "max_system": 40, "jobs": 1}, {},
                          "c.json"),
}

#: SHA-256 of each case's certificate file, computed at 75a6a39
GOLDEN = {
    "cnn-lenet": "017ae5204d2cebcf477f5d376861a4c98d2182f897ffc181aaf7e99099135cbd",
    "cnn-lenet-explicit-gz": "99e966e4170bf51e0d4efef6feae4ac89fa6b716371013618ea8e4691b24b449",
    "cnn-tradeoff-head": "c75ffe89ed4eb72e1e3c1a68034b63676570190636e2049f4b5877bd959430fd",
    "demo-explicit-gz": "99058fbc14170581362f3f6550641806a36cf8c5bffba532cdd2386019003d77",
    "demo-theorem1": "8e1125f45946961bfc5cb52450767874b348bc3c4130fc900f292b270d6ed869",
    "demo-theorem1-v1": "c097ee1913fb6bfe310449579c217b4e596aa62840849328df5397a6fb5c6467",
    "lowrank": "dc359b4f4f6c5e7a7bd84a7d70407847149796d61adaa8a71a89e9a27ef036e7",
    "sparse-redraws": "8455b3b7f03153dc69903d1c4b0cbc63e145418c2de72605f10a3aeb028d15f7",
    "tradeoff-mask": "0b6399380db98fc7546ca1d6d75edaa5d153e1b27a86463b79e6ff7a5e18bab9",
    "wide-tradeoff-auto": "39ac851bc0b9872e1f47c5d110224977270c6e46c490a7537a9ff1e396ae7aae",
}


def build(name: str, folder: Path) -> Path:
    make, options, write, filename = CASES[name]
    path = folder / f"{name}-{filename}"
    _write(_certify(make(), **options), path, **write)
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("name", sorted(CASES))
def test_certificate_bytes_equal_the_golden_digest(name, tmp_path):
    path = build(name, tmp_path)
    assert digest(path) == GOLDEN[name], f"{name}: certificate bytes changed"
    doc = api.load_certificate(path)
    for module in (checker, checker_flint):
        verdict = module.check_certificate(doc)
        assert verdict.ok, (name, verdict)


def test_the_cases_cover_every_writer_path(tmp_path):
    """The golden set is only a guard if it exercises what a migration could break."""
    docs = {name: api.load_certificate(build(name, tmp_path)) for name in
            ("sparse-redraws", "cnn-tradeoff-head", "wide-tradeoff-auto", "demo-theorem1-v1")}
    assert docs["sparse-redraws"].get("redraws")
    head = docs["cnn-tradeoff-head"]
    assert {L.get("kind", "dense") for L in head["network"]["layers"]} == \
        {"conv", "avgpool", "dense"}
    assert [r["construction"] for r in head["provenance"]["dense_runs"]] == ["tradeoff"]
    assert docs["wide-tradeoff-auto"]["provenance"]["construction"] == "tradeoff"
    assert any("skip" in L for L in docs["wide-tradeoff-auto"]["network"]["layers"])
    assert docs["demo-theorem1-v1"]["version"] == 1


if __name__ == "__main__":  # python -m tests.test_golden_certificates: print the digests
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = {name: digest(build(name, Path(tmp))) for name in sorted(CASES)}
    json.dump(out, sys.stdout, indent=4)
    print()
