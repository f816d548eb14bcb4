"""Sphinx configuration: the user guide and format pages (Markdown, through MyST) and an API
reference generated from the docstrings. Built warning-free in CI: ``sphinx-build -W -b html docs
OUT`` (``pip install ".[docs]"``)."""

project = "exactnorm"
author = "exactnorm developers"
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
master_doc = "index"
exclude_patterns = ["_build"]
html_theme = "alabaster"
myst_heading_anchors = 3
autodoc_typehints = "none"
autodoc_default_options = {"members": False}
napoleon_numpy_docstring = True
napoleon_google_docstring = False
suppress_warnings = ["myst.xref_missing", "myst.header"]
nitpicky = False
