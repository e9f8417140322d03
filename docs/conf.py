"""Sphinx configuration of the pulsnar-dask documentation (``make docs``)."""

from pulsnar_dask.core.model import package_version

project = "pulsnar-dask"
author = "pulsnar-dask developers"
release = package_version()
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
# The decision record is history, read in the repository; the site is current behaviour.
exclude_patterns = ["_build", "decisions"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the numpy-style docstrings give the types
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False

html_theme = "alabaster"
html_title = f"pulsnar-dask {release}"
html_static_path: list[str] = []
