"""Subcommands of the ``exactnorm`` CLI, one module each, thin over :mod:`exactnorm.api`."""
