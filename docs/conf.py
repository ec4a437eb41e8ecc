"""Sphinx configuration of the rfviz documentation site.

Build (warnings are errors; nothing is fetched from the network, MathJax and plotly.js are served from the
build itself): ``python -m sphinx -W --keep-going -b html docs docs/_build/html`` (``./run docs``).
Generated pages (the estimator catalog from the registry, the app tour's screenshots) are written into
``docs/_generated/`` by ``_ext/rfviz_docs.py``; the tutorial is executed by sphinx-gallery into ``docs/tutorial/``.
"""

from __future__ import annotations

import os
import pathlib
import sys

DOCS = pathlib.Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS / "_ext"))
os.environ.setdefault("OMP_NUM_THREADS", "1")

import plotly.graph_objects as go  # noqa: E402

import rfviz  # noqa: E402


def _figure_html(fig: go.Figure) -> str:
    """The tutorial's figures as divs drawn by the build's own plotly.js (html_js_files, which the theme loads at the
    end of the page, hence the drawing on "load"), not a CDN's."""
    html = fig.to_html(full_html=False, include_plotlyjs=False, include_mathjax=False)
    head, script = html.split("<script", 1)
    opening, rest = script.split(">", 1)
    body, tail = rest.rsplit("</script>", 1)
    return f'{head}<script{opening}>window.addEventListener("load", function () {{{body}}});</script>{tail}'


go.Figure._repr_html_ = _figure_html  # sphinx-gallery captures _repr_html_; plotly's renderers load from CDNs

project = "rfviz"
author = "the rfviz authors"
copyright = "the rfviz authors"
version = release = rfviz.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax 3 copied into the build: no CDN
    "sphinx_gallery.gen_gallery",
    "rfviz_docs",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_generated", "_screenshots", "sg_execution_times.rst", "tutorial/sg_execution_times.rst",
                    "tutorial_src/README.rst", "tutorial/*.ipynb", "tutorial/*.py", "tutorial/*.zip", "tutorial/*.json"]
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
suppress_warnings = ["config.cache"]  # sphinx-gallery's config holds functions; the build is not incremental

autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_typehints = "description"
autodoc_member_order = "bysource"
napoleon_numpy_docstring = True
napoleon_google_docstring = False
napoleon_use_rtype = False

html_theme = "furo"
html_title = f"rfviz {release}"
html_logo = str(ROOT / "assets" / "logo.svg")
html_static_path = ["_generated/static"]
html_js_files = ["plotly.min.js"]  # written by rfviz_docs from the installed plotly package

sphinx_gallery_conf = {
    "examples_dirs": "tutorial_src",
    "gallery_dirs": "tutorial",
    "filename_pattern": r"/tutorial_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "image_scrapers": (),
    "capture_repr": ("_repr_html_", "__repr__"),
    "first_notebook_cell": None,
    "plot_gallery": "True",
    "show_signature": False,
    "show_memory": False,
    "min_reported_time": 1000,
    "write_computation_times": False,  # its page loads DataTables from a CDN
}
