"""exactnorm: exact certificates that tuning only the normalization parameters (γ, β) of a frozen
random ReLU network reproduces a target network."""

__version__ = "0.1.0"
