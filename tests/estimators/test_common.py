"""The estimator protocol's contracts, checked for every registered estimator, every kernel and every coupling it
accepts (read from the registry, so a new estimator or coupling is covered without editing this file):

* its feature maps' inner product is its estimate, ⟨φ_query(x), φ_key(y)⟩ = K̂(x, y), sample by sample;
* every parameter refuses a value outside its declared range with a ``ParameterError`` naming it and that range,
  and the estimator-specific rules (cross-parameter, parsing) refuse with their own named messages;
* every parameter's default survives the URL's and the CLI's text form (``to_text`` → ``Param.parse``), and the
  estimator's ``describe()`` is JSON that lists its spec.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import rfviz
from app_pages._ui import to_text
from rfviz import ParameterError
from rfviz.maths import dp

CPU = torch.device("cpu")
D, M, TRIALS = 4, 8, 3
# Parameters an estimator needs to have a feature map on generic pairs: hybrid_gaussian's r_norm = 0 needs |x| = |y|
# exactly; OPRF's per-pair A (A_from=pair) has no feature map shared by queries and keys.
FEATURE_SETTINGS = {"hybrid_gaussian": {"r_norm": 0.3}, "oprf": {"A_from": "fixed", "Z": 3.0}}
NO_FEATURE_MAP = {name: "per-pair parameters (they depend on both inputs; tests/estimators/test_derf.py builds "
                  "the feature maps of fitted batch parameters)" for name in ("sderf", "aderf", "saderf")}


def _choices(cls: type, name: str) -> tuple:
    spec = {p.name: p for p in cls.spec}
    return spec[name].choices if name in spec else (None,)


def _feature_cases() -> list[tuple[str, str | None, str | None, dict]]:
    return [(name, kernel, coupling, {}) for name, cls in rfviz.REGISTRY.items()
            for kernel in _choices(cls, "kernel") for coupling in _choices(cls, "coupling")]


# Settings beyond the defaults that change the feature map (complex A, s = −1, antithetic, several λ-features, the
# dot-product sketches' bases and variances), each also run with every kernel the estimator accepts.
FEATURE_VARIANTS = [
    ("complex_exponential", dict(A=0.7 - 0.9j)),
    ("complex_exponential", dict(A=1.4 + 0.2j, antithetic=True, variance="complex")),
    ("complex_exponential_diag", dict(A_diag=(1 + 0.5j, 0.8))),
    ("complex_exponential_diag", dict(A_diag=(0.5j, 2, -1 + 1j), antithetic=True)),
    ("hybrid_angular", dict(n=3)), ("hybrid_angular", dict(n=2, shared=False)),
    ("hybrid_gaussian", dict(n=3, sigma=0.7)), ("hybrid_gaussian", dict(n=2, r_norm=1.5, shared=False)),
    ("gerf", dict(A=-0.2, s=1)), ("gerf", dict(A=-0.1 + 0.2j, s=1)), ("gerf", dict(A=0.05, s=-1)),
    ("gerf", dict(A=0.02 - 0.3j, s=-1)), ("poisson", dict(lam=0.7, shift=-0.5)), ("geometric", dict(prob=0.4)),
    ("poly_sketch", {"q": 0.3, "variance": "complex"}), ("poly_sketch", {"q": 0.5, "variance": "real_part"}),
    ("poly_sketch", {"q": 1.0, "basis": "gaussian"}), ("tensor_srht", {"q": 0.5, "m": 7}),
    ("tensor_srht", {"q": 0.5, "variance": "real_part", "m": 5}),
    ("maclaurin", {"m": 9}), ("maclaurin", {"sketch": "tensor_srht", "variance": "real_part"}),
    ("maclaurin", {"method": "random", "q": 0.7}),
]
FEATURE_CASES = _feature_cases() + [(name, kernel, None, params) for name, params in FEATURE_VARIANTS
                                    for kernel in _choices(rfviz.REGISTRY[name], "kernel")]


def _pairs() -> tuple[torch.Tensor, torch.Tensor]:
    rng = np.random.default_rng(4)
    x, y = 0.5 * rng.standard_normal((2, 5, D))
    x[0] = 0.3 * y[0]  # a pair at angle 0 and one at angle π: the ends where hybrids switch
    x[1] = -0.8 * y[1]
    x[2, :2] = y[3, 1] = 0.0  # zero coordinates (0^0 = 1 in the discrete features)
    return torch.as_tensor(x), torch.as_tensor(y)


def test_the_cases_cover_every_estimator_kernel_and_coupling():
    names = {n for n, _, _, _ in FEATURE_CASES}
    assert names == set(rfviz.REGISTRY) and len(names) >= 18
    assert {c for _, _, c, _ in FEATURE_CASES} >= {"iid", "orthogonal", "simplex", "sorf", "fastfood", "qmc_sobol"}
    assert {k for _, k, _, _ in FEATURE_CASES} >= {"softmax", "gaussian", "exponential", "polynomial"}


@pytest.mark.parametrize(("name", "kernel", "coupling", "variant"), FEATURE_CASES,
                         ids=[f"{n}-{k}-{c or ''}{v or ''}" for n, k, c, v in FEATURE_CASES])
def test_features_inner_product_equals_estimate(name, kernel, coupling, variant):
    params = {"m": M, **FEATURE_SETTINGS.get(name, {}), **variant}
    params |= {key: value for key, value in (("kernel", kernel), ("coupling", coupling)) if value is not None}
    est = rfviz.create(name, **params)
    x, y = _pairs()
    s = est.sample(TRIALS, D, generator=torch.Generator().manual_seed(3), device=CPU)
    if name in NO_FEATURE_MAP:  # says so, rather than returning something that is not a feature map
        with pytest.raises(NotImplementedError, match="no feature"):
            est.features(s, x, "query")
        return
    phi_x, phi_y = est.features(s, x, "query"), est.features(s, y, "key")
    assert phi_x.shape[0] == TRIALS and phi_x.shape[:-1] == phi_y.shape[:-1]
    estimate = est.estimate(s, x, y)
    assert estimate.shape == (TRIALS, len(x)) and torch.all(torch.isfinite(torch.as_tensor(estimate).abs()))
    torch.testing.assert_close(estimate, (phi_x * phi_y).sum(-1), rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------------------------------ refused parameters
def _out_of_range(p: rfviz.Param) -> list:
    """Values just outside ``p``'s declared range (its bounds, or a name that is not a choice)."""
    if p.kind == "choice":
        return [f"not_{p.name}"]
    if p.kind not in ("int", "float", "complex"):
        return []
    bad = []
    if p.low is not None:
        bad.append(p.low if p.low_open else p.low - 1)
    if p.high is not None:
        bad.append(p.high if p.high_open else p.high + 1)
    if p.kind == "int":
        bad = [int(v) for v in bad]
    return [complex(v, 0) for v in bad] if p.kind == "complex" else bad


RANGE_CASES = [(name, p.name, value) for name, cls in rfviz.REGISTRY.items() for p in cls.spec
               for value in _out_of_range(p)]


def test_range_cases_reach_every_estimator():
    assert {n for n, _, _ in RANGE_CASES} == set(rfviz.REGISTRY)
    assert len(RANGE_CASES) >= 3 * len(rfviz.REGISTRY)


@pytest.mark.parametrize(("name", "param", "value"), RANGE_CASES,
                         ids=[f"{n}-{p}={v}" for n, p, v in RANGE_CASES])
def test_out_of_range_parameters_raise_named_errors(name, param, value):
    spec = {p.name: p for p in rfviz.REGISTRY[name].spec}[param]
    with pytest.raises(ParameterError) as err:
        rfviz.create(name, **{param: value})
    assert f"{param} must be {spec.range_text()}" in str(err.value)


# Messages typed here (not read from the code): the ranges as documented, and the rules a spec cannot declare
# (cross-parameter, parsing), for every paper's estimators.
NAMED_REFUSALS = [
    ("trig", dict(coupling="nope"), "coupling must be one of iid, orthogonal, simplex"),
    ("trig_phase", dict(m=0), r"m must be an integer in \[1, "),
    ("complex_exponential", dict(A=0), r"A must be a complex number with modulus in \[0.001, 1000\]"),
    ("complex_exponential", dict(A=2000j), "A must be a complex number with modulus"),
    ("complex_exponential", dict(variance="pseudo"), "variance must be one of real_part, complex"),
    ("complex_exponential_diag", dict(A_diag=(1, 0, 1j)), "A_diag must be a complex number with modulus"),
    ("complex_exponential_diag", dict(A_diag="1, x"), "A_diag must be a comma-separated list"),
    ("complex_exponential_diag", dict(A_diag=""), "A_diag must be a comma-separated list"),
    ("hybrid_angular", dict(n=0), r"n must be an integer in \[1, inf\)"),
    ("hybrid_angular", dict(shared="maybe"), "shared must be true or false"),
    ("hybrid_gaussian", dict(sigma=0.0), r"sigma must be a number in \(0, inf\)"),
    ("hybrid_gaussian", dict(sigma=-1.0), r"sigma must be a number in \(0, inf\)"),
    ("hybrid_gaussian", dict(r_norm=-0.5), r"r_norm must be a number in \[0, inf\)"),
    ("gerf", dict(s=0), "s must be"), ("gerf", dict(s=2), "s must be"), ("gerf", dict(s="x"), "s must be"),
    ("poisson", dict(lam=0.0), r"lam must be a number in \(0, inf\)"), ("poisson", dict(lam=-1), "lam must be"),
    ("geometric", dict(prob=0.0), r"prob must be a number in \(0, 1\)"), ("geometric", dict(prob=1.0), "prob must"),
    ("gerf", dict(m=0), r"m must be an integer in \[1, "), ("oprf", dict(m=-2), "m must be"),
    ("oprf", dict(Z=-1.0), "Z must be"), ("oprf", dict(A_from="batch"), "A_from must be one of pair, fixed"),
    ("tensor_srht", dict(basis="gaussian"), "basis must be one of rademacher, plus_minus_i, unit_circle"),
    ("maclaurin", dict(method="random", sketch="tensor_srht"), "sketch must be poly for method=random"),
    ("poly_sketch", dict(q=1.5), r"q must be a number in \[0, 1\]"),
]


@pytest.mark.parametrize(("name", "params", "match"), NAMED_REFUSALS,
                         ids=[f"{n}-{p}" for n, p, _ in NAMED_REFUSALS])
def test_invalid_parameters_raise_named_errors(name, params, match):
    with pytest.raises(ParameterError, match=match):
        rfviz.create(name, **params)


def test_invalid_sizes_of_helpers_raise_named_errors():
    with pytest.raises(ParameterError, match="m must be an integer in"):
        dp.greedy_allocation(np.ones((4, 3)), 3)


# ------------------------------------------------------------------------------------------ text and JSON forms
SPEC_CASES = [(name, p.name) for name, cls in rfviz.REGISTRY.items() for p in cls.spec]


@pytest.mark.parametrize(("name", "param"), SPEC_CASES, ids=[f"{n}-{p}" for n, p in SPEC_CASES])
def test_defaults_round_trip_through_the_url_text(name, param):
    """The value a page writes into the URL (``to_text``) is parsed back (``Param.parse``, the CLI's and the URL's
    reader) to the default itself, and an estimator made from it has that value."""
    spec = {p.name: p for p in rfviz.REGISTRY[name].spec}[param]
    parsed = spec.parse(to_text(spec.default))
    if isinstance(spec.default, float) and not isinstance(spec.default, bool):
        assert parsed == pytest.approx(spec.default, rel=1e-9)  # the URL keeps 10 significant digits
    else:
        assert parsed == spec.default and type(parsed) is type(spec.default)
    assert rfviz.create(name, **{param: parsed}).params[param] == parsed


@pytest.mark.parametrize("name", list(rfviz.REGISTRY))
def test_describe_is_json_listing_the_spec(name):
    cls = rfviz.REGISTRY[name]
    described = json.loads(json.dumps(cls.describe()))
    assert described["name"] == name == cls.name and cls.title and cls.reference
    assert [p["name"] for p in described["params"]] == [p.name for p in cls.spec]
    est = cls()  # the defaults are valid
    assert set(est.params) == {p.name for p in cls.spec}
    assert isinstance(est.closed_form_available(), bool)


@pytest.mark.parametrize("name", list(rfviz.REGISTRY))
def test_shown_texts_hold_no_raw_latex(name):
    """Titles, references, descriptions and every parameter's label and help are shown as plain text (tables,
    tooltips, the CLI): no TeX braces such as e^{…} (the Home table showed "SM²(e^{|x+y|²} − 1)/m" raw)."""
    cls = rfviz.REGISTRY[name]
    texts = [getattr(cls, a, "") or "" for a in ("title", "short_title", "reference", "description")]
    texts += [str(getattr(p, a, "") or "") for p in cls.spec for a in ("help", "label")]
    raw = [t for t in texts if "^{" in t or "_{" in t or "\\frac" in t]
    assert not raw, raw
