"""Real models in: ONNX graphs of every layer kind, PyTorch ``nn.Sequential`` state dicts,
scikit-learn MLPs/pipelines, and the one loader of target files.

Contract
--------
Every reader of a target returns a :class:`~exactnorm.model.network.TargetNetwork` ``g`` that is
the stored model's function **exactly** (a reader of a given network, a
:class:`~exactnorm.model.network.FrozenNetwork` with the stored matrices): every float
parameter (float16/32/64) converts to the dyadic rational it denotes (docs/model.md, "Exact
numbers"), and every structural fact (which layers exist, which
activation follows which layer) comes from the file or from an explicit declaration, never from
a guess. What cannot be represented exactly as a chain of registered layer kinds with
``σ ∈ {relu, identity}`` is refused with a one-line :class:`~exactnorm.errors.InputError`
naming the offending part.

Layout
------
* :mod:`~exactnorm.model.interop.onnx`: the one ONNX walker (MLPs and CNNs alike), with the
  kind-free operators; :mod:`~exactnorm.model.interop.torch`: the one state-dict reader
  (declared activations or an architecture of tokens); :mod:`~exactnorm.model.interop.sklearn`;
  :mod:`~exactnorm.model.interop.load`: the model files of a target (:func:`target_from_file`);
  :mod:`~exactnorm.model.interop.frozen`: given networks, whose normalization is re-tuned
  (:func:`frozen_from_file`). The one loader of every file is :func:`exactnorm.api.load_target`
  (and :func:`exactnorm.api.load_frozen`): JSON files are documents, read above this layer.
* :mod:`~exactnorm.model.interop.chain`: the kind-free chain of layers both readers build, its
  exact folds and the context of a handler.
* :mod:`exactnorm.model.interop.kinds`: one module per layer kind with its ONNX operator handlers
  and state-dict tokens, in the registry ``READERS``.

References
----------
A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the Normalization
Layers", COLT 2023, arXiv:2302.07937 (the target class: ReLU networks).

Examples
--------
>>> import numpy as np
>>> arrays = {"0.weight": np.array([[1.0, -0.5]]), "0.bias": np.array([0.25]),
...           "2.weight": np.array([[2.0]]), "2.bias": np.array([0.0])}
>>> g = target_from_state_dict(arrays, Box.of("0:1"), activations=["relu", "identity"])
>>> g.widths, [layer.activation for layer in g.layers]
((2, 1, 1), ['relu', 'identity'])
>>> g.evaluate([1, 1])
(3/2,)
>>> try:
...     target_from_state_dict(arrays, Box.of("0:1"), activations=["tanh", "identity"])
... except InputError as exc:
...     print(exc)
activation 'tanh' of Linear layer 1 is not piecewise linear; use relu or identity
"""

from __future__ import annotations

from exactnorm.errors import InputError
from exactnorm.model.box import Box
from exactnorm.model.interop.chain import exact_matrix, exact_vector
from exactnorm.model.interop.frozen import (
    frozen_from_file,
    frozen_from_onnx,
    frozen_from_sklearn,
    frozen_from_state_dict,
    frozen_from_target,
)
from exactnorm.model.interop.load import MODEL_SUFFIXES, STATE_DICT_SUFFIXES, target_from_file
from exactnorm.model.interop.onnx import HANDLERS, ONNX_OPS, read_onnx, target_from_onnx
from exactnorm.model.interop.sklearn import sklearn_mlp, target_from_sklearn
from exactnorm.model.interop.torch import (
    STATE_DICT_KEY,
    STATE_DICT_RESERVED,
    is_state_dict_keys,
    parse_activations,
    parse_architecture,
    target_from_state_dict,
)

__all__ = [
    "exact_matrix",
    "exact_vector",
    "sklearn_mlp",
    "STATE_DICT_KEY",
    "STATE_DICT_RESERVED",
    "STATE_DICT_SUFFIXES",
    "ONNX_OPS",
    "HANDLERS",
    "parse_activations",
    "parse_architecture",
    "read_onnx",
    "target_from_sklearn",
    "target_from_state_dict",
    "target_from_onnx",
    "is_state_dict_keys",
    "MODEL_SUFFIXES",
    "target_from_file",
    "frozen_from_file",
    "frozen_from_onnx",
    "frozen_from_sklearn",
    "frozen_from_state_dict",
    "frozen_from_target",
    "Box",
    "InputError",
]
