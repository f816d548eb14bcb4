"""The certificate format's vocabulary and the checker's limits, in one place (standard library
only).

Every name a certificate may use (format, versions, activations, layer and skip kinds, the
frozen-weight generator) and every limit with its default lives here once: the writers
(:mod:`exactnorm.certificate`), both arithmetics of the checker, the package's reader, the
reference regenerator and the command line import them from this module, and
``tests/checker/test_checker_hostile.py`` fails if one of them is defined again elsewhere.
docs/certificate-format.md states the same values.
"""

from __future__ import annotations

__all__ = ["FORMAT", "VERSIONS", "ACTIVATIONS", "SKIP_KINDS", "LAYER_KINDS", "GENERATOR",
           "DEFAULT_MAX_DIGITS", "MAX_DIGITS_CAP", "DEFAULT_MAX_BYTES", "MAX_BYTES_CAP",
           "MAX_MAP_ENTRIES", "MAX_MAP_BITS", "DEFAULT_MAX_WORK", "MIN_WORK", "WORK_PER_BIT",
           "MAX_WORK_CAP", "EXIT_BROKEN_PIPE",
           "IMPOSSIBILITY_FORMAT", "IMPOSSIBILITY_VERSIONS", "WITNESS_KINDS", "OUTPUT_SCALES",
           "WITNESS_PRIME_BITS", "SEED_RULE_TARGET", "SEED_RULE_TARGET_V1", "SEED_RULE_CHOSEN",
           "SEED_RULES", "TRANSFORMER_FORMAT", "TRANSFORMER_VERSIONS", "RULE_NAMES"]

#: the ``format`` field of every certificate
FORMAT = "exactnorm.certificate"
#: the versions this checker reads (docs/certificate-format.md §0, §1 and §4)
VERSIONS = (1, 2, 3)
ACTIVATIONS = ("relu", "identity")
#: ``kind`` of a skip connection: the 0/1 kinds are checked to be what they claim
SKIP_KINDS = ("identity", "selection", "random")
#: ``kind`` of a target or frozen layer (absent: dense)
LAYER_KINDS = ("dense", "conv", "avgpool", "globalavgpool")
#: the one frozen-weight generator (docs/generator.md)
GENERATOR = "exactnorm.shake256.v1"
#: the rule a refusal names (``Verdict.rule``), in the order the checker applies them
#: (docs/certificate-format.md §0, settled detail 21); ``witness`` is the impossibility
#: documents' (§9), ``architecture``, ``layernorm`` and ``box`` the transformer documents'
#: (§11); a valid verdict names ``valid``
RULE_NAMES = ("format", "number", "shape", "domain", "provenance", "redraw", "skip",
              "checkpoints", "segment", "limit", "stability", "activation", "width", "identity",
              "witness", "architecture", "layernorm", "box")
#: the seed rule ``certify`` declares: the seed derived from the canonical form of the target on
#: its box (docs/generator.md §8)
SEED_RULE_TARGET = "target.v2"
#: the first seed rule: the target as written, retired (a document with draws that declares it is
#: refused, rule provenance: edits that keep the target's function change its seed)
SEED_RULE_TARGET_V1 = "target"
#: the seed is the writer's (what no ``seed_rule`` means)
SEED_RULE_CHOSEN = "chosen"
#: the seed rules a version-3 certificate may declare (``seed_rule``)
SEED_RULES = (SEED_RULE_TARGET, SEED_RULE_TARGET_V1, SEED_RULE_CHOSEN)

#: digits of one number (each of p and q in "p/q") unless the caller raises the limit
DEFAULT_MAX_DIGITS = 200_000
#: the largest digit limit a caller may ask for (a number of 10^7 digits already takes minutes)
MAX_DIGITS_CAP = 10_000_000
#: uncompressed certificate bytes read unless the caller raises the limit
DEFAULT_MAX_BYTES = 2 * 1024**3
#: the largest byte limit a caller may ask for
MAX_BYTES_CAP = 1024**4
#: entries of one affine map, box, family of patch boxes or regenerated matrix
MAX_MAP_ENTRIES = 1 << 24
#: bits of one of those structures (entries times the bit length of its largest number, at
#: least 64 each): 512 MiB of numbers
MAX_MAP_BITS = 1 << 32
#: the work budget of one check, in units (64-bit word operations, docs/certificate-format.md
#: §7) counted before each computation: None (the default) means ``max(MIN_WORK, WORK_PER_BIT ×
#: the bits of the numbers the certificate writes)``, so that a small file cannot demand a long
#: check while a real-size certificate (whose γ and β are its bulk) gets a budget of its size
DEFAULT_MAX_WORK = None
#: the budget of a small certificate (a few seconds of work)
MIN_WORK = 5 * 10**9
#: units of work a certificate may demand per bit of the numbers it writes (a 784-128-10
#: trade-off certificate needs about 170, a LeNet-shaped CNN about 90)
WORK_PER_BIT = 1000
#: the largest work budget a caller may ask for
MAX_WORK_CAP = 10**15
#: exit status when stdout is closed before the verdict is printed
EXIT_BROKEN_PIPE = 141

# ---------------------------------------------------------------- impossibility documents (§9)

#: the ``format`` field of an impossibility document (docs/certificate-format.md §9): a proof that
#: no γ, β of a given frozen network reach a target, in a stated class of tunings
IMPOSSIBILITY_FORMAT = "exactnorm.impossibility"
#: the versions of that document this checker reads
IMPOSSIBILITY_VERSIONS = (1,)
#: ``witness.kind`` of an impossibility document, in the order §9 states them
WITNESS_KINDS = ("rank", "fredholm", "kink", "aligned")
#: ``witness.scale`` of a Fredholm witness (and ``exactnorm capacity --output-scale``): the output
#: layer's scale tuned like every other, or held at 1
OUTPUT_SCALES = ("tuned", "fixed")
#: the moduli of a rank witness are primes below 2 to this power (FLINT's word-size arithmetic)
WITNESS_PRIME_BITS = 62

# ---------------------------------------------------------------- transformer documents (§11)

#: the ``format`` field of a transformer document (docs/certificate-format.md §11): an
#: architecture whose slots each hold a certificate on a box the checker derives
TRANSFORMER_FORMAT = "exactnorm.transformer"
#: the versions of that document this checker reads
TRANSFORMER_VERSIONS = (1,)
