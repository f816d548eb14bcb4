"""The constructions: each turns a :class:`~exactnorm.model.network.TargetNetwork` into a
:class:`~exactnorm.model.network.FrozenNetwork` whose only tuned parameters are γ and β."""

from exactnorm.constructions.common import Construction, LayerReport
from exactnorm.constructions.theorem1 import certify_theorem1, realize_layer_theorem1

__all__ = ["Construction", "LayerReport", "certify_theorem1", "realize_layer_theorem1"]
