"""The defaults and choices the parsers show, without importing the mathematics.

``exactnorm --help`` and an argument error must not import python-flint, NumPy or SciPy (they
take about half a second), but the parsers show the library's defaults. They are repeated here,
standard library only, and ``tests/commands/test_cli.py`` demands that each equals the constant it
mirrors (named next to it), so that they cannot drift apart.
"""

from __future__ import annotations

from exactnorm.checker.vocabulary import DEFAULT_MAX_BYTES as DEFAULT_MAX_CERTIFICATE_BYTES
from exactnorm.checker.vocabulary import (
    DEFAULT_MAX_DIGITS,
    DEFAULT_MAX_WORK,
    MIN_WORK,
    OUTPUT_SCALES,
    WORK_PER_BIT,
)
from exactnorm.checker.vocabulary import MAX_BYTES_CAP as MAX_CERTIFICATE_BYTES_CAP

# the format's limits come from its one vocabulary (standard library only, light to import);
# the other defaults below mirror the library and are compared with it by a test
__all__ = ["MIRRORS", "DEFAULT_MAX_CERTIFICATE_BYTES", "DEFAULT_MAX_DIGITS", "DEFAULT_MAX_WORK",
           "MAX_CERTIFICATE_BYTES_CAP", "MIN_WORK", "OUTPUT_SCALES", "WORK_PER_BIT"]

#: exactnorm.model.network.DEFAULT_MAX_WIDTH
DEFAULT_MAX_WIDTH = 4096
#: exactnorm.exact.sampling.DEFAULT_DISTRIBUTION
DEFAULT_DISTRIBUTION = "nonzero:8"
#: exactnorm.constructions.kinds.dense.WIDE_DISTRIBUTION
WIDE_DISTRIBUTION = "nonzero:8"
#: exactnorm.constructions.choice.THEOREM1_MAX_SYSTEM
THEOREM1_MAX_SYSTEM = 4096
#: exactnorm.constructions.common.DEFAULT_RETRY
DEFAULT_RETRY = 8
#: exactnorm.constructions.common.SHIFT_MODES
SHIFT_MODES = ("neuron", "layer", "integer")
#: exactnorm.api.CONSTRUCTIONS (its keys, sorted)
CONSTRUCTIONS = ("burkholz", "lowrank", "theorem1", "tradeoff")
#: exactnorm.certificate.DEFAULT_VERSION
DEFAULT_VERSION = 3
#: exactnorm.certificate.FROZEN_WEIGHTS
FROZEN_WEIGHTS = ("reference", "explicit")
#: exactnorm.certificate.DEFAULT_FROZEN_WEIGHTS
DEFAULT_FROZEN_WEIGHTS = "reference"
#: exactnorm.outputs.export.EXPORT_FORMATS
EXPORT_FORMATS = ("json", "npz", "onnx", "torch")
#: exactnorm.analysis.sweeps.MASK_SIDES
MASK_SIDES = ("input", "output", "both")
#: exactnorm.outputs.report.FLOAT_ERROR_POINTS
FLOAT_ERROR_POINTS = 64
#: exactnorm.api._capacity.EXIT_UNDECIDED
EXIT_UNDECIDED = 4

#: name here → (module, name there); the test compares every pair
MIRRORS = {
    "DEFAULT_MAX_DIGITS": ("exactnorm.exact.rationals", "DEFAULT_MAX_DIGITS"),
    "DEFAULT_MAX_WIDTH": ("exactnorm.model.network", "DEFAULT_MAX_WIDTH"),
    "DEFAULT_DISTRIBUTION": ("exactnorm.exact.sampling", "DEFAULT_DISTRIBUTION"),
    "WIDE_DISTRIBUTION": ("exactnorm.constructions.kinds.dense", "WIDE_DISTRIBUTION"),
    "THEOREM1_MAX_SYSTEM": ("exactnorm.constructions.choice", "THEOREM1_MAX_SYSTEM"),
    "DEFAULT_RETRY": ("exactnorm.constructions.common", "DEFAULT_RETRY"),
    "SHIFT_MODES": ("exactnorm.constructions.common", "SHIFT_MODES"),
    "DEFAULT_VERSION": ("exactnorm.certificate", "DEFAULT_VERSION"),
    "FROZEN_WEIGHTS": ("exactnorm.certificate", "FROZEN_WEIGHTS"),
    "DEFAULT_FROZEN_WEIGHTS": ("exactnorm.certificate", "DEFAULT_FROZEN_WEIGHTS"),
    "DEFAULT_MAX_CERTIFICATE_BYTES": ("exactnorm.certificate", "DEFAULT_MAX_CERTIFICATE_BYTES"),
    "MAX_CERTIFICATE_BYTES_CAP": ("exactnorm.certificate", "MAX_CERTIFICATE_BYTES_CAP"),
    "EXPORT_FORMATS": ("exactnorm.outputs.export", "EXPORT_FORMATS"),
    "MASK_SIDES": ("exactnorm.analysis.sweeps", "MASK_SIDES"),
    "FLOAT_ERROR_POINTS": ("exactnorm.outputs.report", "FLOAT_ERROR_POINTS"),
    "EXIT_UNDECIDED": ("exactnorm.api._capacity", "EXIT_UNDECIDED"),
}
