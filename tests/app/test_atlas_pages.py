"""The atlas's new entries on the pages (Streamlit AppTest): the explorer offers the DERFs and the new couplings with
what is known about each curve, the coupling page's picker shows the labels, the GERF page draws SDERF."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from app_pages import BY_PATH
from rfviz.registries import COUPLING_NAMES, FASTFOOD, QMC_HALTON, QMC_SOBOL, SORF

TIMEOUT = 60


def _open(page: str, params: dict[str, str]) -> AppTest:
    at = AppTest.from_file(str(BY_PATH[page].file), default_timeout=TIMEOUT)
    at.query_params.update(params)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def _captions(at: AppTest) -> str:
    return "\n".join(c.value for c in at.caption)


@pytest.mark.slow
def test_explorer_shows_the_derfs_with_their_label():
    at = _open("mse_explorer", {"est": "sderf,aderf,saderf", "r_max": "1"})
    assert not at.error, [e.value for e in at.error]
    text = _captions(at)
    assert text.count("Known: closed form (verified) — [DERF]") == 3


@pytest.mark.slow
def test_explorer_offers_the_new_couplings_labelled_as_sampled():
    at = _open("mse_explorer", {"est": "trig", "trig.coupling": SORF, "r_max": "1"})
    options = at.selectbox(key="mse_explorer.trig.coupling").options
    assert {SORF, FASTFOOD, QMC_SOBOL, QMC_HALTON} <= set(options) and len(options) == len(COUPLING_NAMES)
    assert "Known: bound — [HRF] eq. 2" in _captions(at) and "[ORF]" in _captions(at)


@pytest.mark.slow
def test_coupling_picker_shows_what_is_known():
    at = _open("coupling", {"view": "density"})
    box = at.sidebar.multiselect(key="coupling.couplings")
    assert all("·" in o for o in box.options) and any("closed form (verified)" in o for o in box.options)


@pytest.mark.slow
def test_gerf_page_draws_sderf_beside_oprf():
    at = _open("gerf", {"view": "oprf", "d": "16"})
    assert "SDERF" in _captions(at)
