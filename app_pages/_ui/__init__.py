"""Streamlit helpers shared by the app's pages (``from app_pages import _ui as ui``), one module per job:

* ``_frame``: ``page``, the frame of every page (``with ui.page(url_path, title, intro, formulas) as state:``):
  header, sidebar info, URL errors and the end-of-run URL clean-up; ``sidebar_info`` (also on Home).
* ``_url``: ``PageState``, widgets whose state lives in the URL's query parameters (a view can be shared), the
  page's view selector (slugs in the URL, labels on screen), ``to_text`` and ``valid``.
* ``_widgets``: widgets generated from ``rfviz.params.Param`` specs (``estimator_params``) and
  the shared composite controls (``kernel_and_estimators``, ``colour_range``, ``unused``).
* ``_run``: ``guard`` (ParameterError → ``st.error``, the page carries on), ``cached``, ``memo``/``cached_mc``
  (Monte Carlo shared by all sessions, single-flight, run in the bounded pool off the page's thread; ``pooled``
  for one page's own job; ``wait_for`` shows a job's queue place and progress; ``stages``, a progress bar naming
  the stage a run is in), ``shared_figure`` (a
  closed-form figure built once for every session), ``freeze``.
* ``_output``: ``plot``, ``announce_coinciding``, ``downloads`` (CSV + HTML, generated on click).
* ``_text``: ``plain`` and ``short`` (user-supplied text made inert and cut for messages).

Only what the pages use is re-exported here; the rest stays in its module. It lives beside the pages, outside the
computation package: ``rfviz`` never imports streamlit.
"""

from __future__ import annotations

from ._frame import freeze_startup_objects, logo_url, page, sidebar_info
from ._output import announce_coinciding, downloads, plot
from ._run import cached, cached_mc, freeze, guard, memo, pooled, shared_figure, stages, wait_for
from ._text import plain, short
from ._url import PageState, to_text, valid
from ._widgets import colour_range, estimator_params, kernel_and_estimators, unused

__all__ = [
    "PageState", "announce_coinciding", "cached", "cached_mc", "colour_range", "downloads", "estimator_params",
    "freeze", "freeze_startup_objects", "guard", "kernel_and_estimators", "logo_url", "memo", "page", "plain", "plot",
    "pooled", "shared_figure", "short", "sidebar_info", "stages", "to_text", "unused", "valid", "wait_for",
]
