"""Certificates: writing (:mod:`~exactnorm.certificate.write`, a kind-free frame with one codec per
layer kind in :mod:`~exactnorm.certificate.kinds`), compact numbers
(:mod:`~exactnorm.certificate.compact`) and reading (:mod:`~exactnorm.certificate.read`,
:mod:`~exactnorm.certificate.read_kinds`). Validity is *not* decided here: that is the
independent checker's job (:mod:`exactnorm.checker`).

>>> from exactnorm.constructions.plan import construct
>>> from exactnorm.model.targets import demo_target
>>> doc = certificate_document(construct(demo_target(), seed=0))
>>> doc["format"], doc["version"], doc["network"]["checkpoints"]
('exactnorm.certificate', 3, [2, 4, 6])
"""

from __future__ import annotations

from exactnorm.certificate.compact import (
    DEFAULT_MAX_ENTRIES,
    compact_integer,
    compact_numbers,
    compact_skip,
    decode_compact,
    expand_skip,
)
from exactnorm.certificate.float_read import float_network
from exactnorm.certificate.read import (
    expand_document,
    load_certificate,
    read_certificate_bytes,
    regenerate_record,
)
from exactnorm.certificate.read_kinds import (
    exact_agreement,
    read_frozen,
    read_networks,
    read_target,
)
from exactnorm.certificate.target_file import (
    read_document,
    read_target_file,
    save_target,
    target_document,
)
from exactnorm.certificate.write import (
    COMPACT_VERSION,
    DEFAULT_FROZEN_WEIGHTS,
    DEFAULT_MAX_CERTIFICATE_BYTES,
    DEFAULT_VERSION,
    FORMAT,
    FROZEN_WEIGHTS,
    MAX_CERTIFICATE_BYTES_CAP,
    VERSION,
    VERSIONS,
    certificate_bytes,
    certificate_document,
    network_to_dict,
    positional,
    require_version,
    save_certificate,
    seed_of_target,
    singular_draws,
    target_sections,
    write_certificate,
)

__all__ = [
    "FORMAT", "VERSION", "VERSIONS", "DEFAULT_VERSION", "COMPACT_VERSION", "FROZEN_WEIGHTS",
    "DEFAULT_FROZEN_WEIGHTS", "DEFAULT_MAX_CERTIFICATE_BYTES", "DEFAULT_MAX_ENTRIES",
    "MAX_CERTIFICATE_BYTES_CAP",
    "certificate_document", "write_certificate", "save_certificate", "certificate_bytes",
    "network_to_dict", "target_sections", "singular_draws", "positional", "seed_of_target",
    "require_version",
    "compact_numbers", "decode_compact", "compact_skip", "expand_skip", "compact_integer",
    "read_certificate_bytes", "load_certificate", "expand_document", "regenerate_record",
    "read_networks", "read_frozen", "read_target", "exact_agreement", "float_network",
    "read_document", "read_target_file", "save_target", "target_document",
]
