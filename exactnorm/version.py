"""The version of exactnorm: a leaf module, so that any layer may name it without importing
upward (certificates record it in their provenance, ``exactnorm --version`` prints it)."""

__version__ = "0.1.0"
