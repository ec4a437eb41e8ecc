"""Estimator lab: check a new (plugin) or built-in estimator for bias and map where its MSE wins or loses.

Plugins are the classes named on the machine running the app (RFVIZ_PLUGINS, entry points ``rfviz.estimators``);
nothing is uploaded from the browser. Plugin code never runs in the server's process: discovery and each check run in
a plugin process (rfviz.plugin_process: own session killed at its deadline, RLIMIT_AS/RLIMIT_CPU), which answers in
data only (JSON read capped: plain texts, rfviz's own Params, the lab report rebuilt field by field; never a pickle
or a plugin's class); built-ins run in-process. All statistics live in rfviz.lab; this page only collects settings
and shows the report.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import streamlit as st

from app_pages import _ui as ui
from rfviz.estimators import REGISTRY
from rfviz.figures import lab as figs
from rfviz.lab import DEFAULT_ALPHA, DEFAULT_COMPARE, DEFAULT_D, DEFAULT_TRIALS, check
from rfviz.params import D_PARAM, LAB_TRIALS_PARAM, SEED_PARAM, ParameterError
from rfviz.plugin_process import check_feature_map_isolated, check_isolated, discover_isolated
from rfviz.plugins import ENV_VAR, entry_point_specs, env_specs, plugin_timeout_scope
from rfviz.textio import jsonable
from rfviz.verdicts import closed_form_word

with ui.page(
    "estimator_lab",
    "Estimator lab",
    "Sanity-check an estimator before writing the paper. The bundled examples (`examples/*.py` on the server) are "
    "listed with the built-ins. Write a class following rfviz's estimator protocol in your "
    f"own file, name it in the `{ENV_VAR}` environment variable (`path/to/file.py:Class` or `module:Class`, "
    "comma-separated) or in an entry point of the group `rfviz.estimators`, and start the app. The lab samples K̂ "
    "over a grid of (θ, r) and reports: a **bias test** (z-score of the mean against the true kernel at each point, "
    "Holm's multiple-testing correction over the grid), agreement with the estimator's **own closed form** (on the "
    "grid and the extra pairs, with how many non-exact points were tested and the smallest error it would catch), its "
    "**MSE relative to built-ins** with the same m and kernel (its closed form only where tested and agreed, its "
    "sampled MSE elsewhere), and whether its **features** are positive and bounded. An estimator that declares "
    "itself biased (`unbiased = False`) gets \"biased, as declared\" (CLI exit 4), not a failure. The same check "
    "runs headless: `python -m rfviz check path/to/file.py:Class`.",
    [
        (r"z(r,\theta) = \frac{\overline{\hat K} - K}{s_{\hat K}/\sqrt{n}},\qquad "
         r"\text{Holm: reject } p_{(k)} \le \frac{\alpha}{M-k}\ \ (k = 0, 1, \dots)",
         "Two-sided normal p-values; Holm (1979) step-down controls the family-wise error at α under any "
         "dependence between grid points. Points with kurtosis > n/100 (heavy tails) are left out."),
        (r"\log_{10}\frac{\mathrm{MSE}_{\text{candidate}}}{\mathrm{MSE}_{\text{built-in}}}",
         "Closed forms where they exist (HRF Lemma 2.2 for trig and positive RFs), Monte Carlo otherwise."),
    ],
) as state:
    DISCOVERY_TIMEOUT_S = 30.0
    MODES = ("an estimator", "a feature map")
    # Set to 1 on the server to let the page check a function pasted in the browser (it then runs on the server, in
    # a plugin process with its deadline and limits); off by default: a browser never sends code to run. (A comment:
    # a bare string here is an expression Streamlit's magic writes on the page.)
    PASTE_ENV_VAR = "RFVIZ_LAB_PASTE"


    def _pasted_spec(code: str) -> tuple[str, list[str]]:
        """The pasted code written to a temporary .py file (never imported here) and the names of its top-level
        functions, read with ``ast`` (parsing runs no code)."""
        import ast
        import hashlib
        import tempfile

        try:
            tree = ast.parse(code)
        except SyntaxError as exc:
            raise ParameterError(f"the pasted code is not valid Python: line {exc.lineno}: {exc.msg}") from None
        names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
        folder = Path(tempfile.gettempdir()) / "rfviz-lab-pasted"
        folder.mkdir(exist_ok=True)
        path = folder / f"pasted_{hashlib.sha1(code.encode()).hexdigest()[:12]}.py"
        path.write_text(code, encoding="utf-8")
        return str(path), names


    def _feature_map_source(state, side) -> tuple[str, str | None]:
        """(features spec, mse spec or None) from a file on the server or, where allowed, pasted code."""
        sources = ["a file on the server"] + (["pasted code"] if os.environ.get(PASTE_ENV_VAR) == "1" else [])
        source = state.radio("Feature map from", "fm_source", sources, sources[0], container=side,
                             help=f"pasting code needs {PASTE_ENV_VAR}=1 on the server (the code runs there, in a "
                                  "plugin process)")
        if source == "pasted code":
            code = st.text_area("Your feature map (Python)", PASTE_EXAMPLE, height=220, key="estimator_lab.code")
            path, names = _pasted_spec(code)
            if not names:
                raise ParameterError("the pasted code defines no function")
            fn = st.selectbox("features(X, rng) function", names, key="estimator_lab.fn")
            mse = st.selectbox("closed-form mse(x, y) (optional)", ["(none)", *names], key="estimator_lab.mse_fn")
            return f"{path}:{fn}", None if mse == "(none)" else f"{path}:{mse}"
        spec = state.text("features: FILE.py:FUNCTION", "fm_spec", "", container=side)
        mse_spec = state.text("mse: FILE.py:FUNCTION (optional)", "fm_mse", "", container=side)
        return spec.strip(), mse_spec.strip() or None


    PASTE_EXAMPLE = """import numpy as np


def phi(X, rng):
    m = 16
    W = rng.standard_normal((X.shape[1], m))
    return np.exp(X @ W - 0.5 * (X * X).sum(1, keepdims=True)) / np.sqrt(m)
"""


    def show_report(report) -> None:
        """The lab report: verdict, warnings, metrics, the maps, the text and the JSON."""
        show = {0: st.success, 1: st.error, 3: st.warning, 4: st.info}.get(report.exit_code, st.error)
        show(f"{report.summary()} (CLI exit code {report.exit_code})", icon=":material/rule:")
        for w in report.warnings:
            st.warning(w, icon=":material/warning:")
        cols = st.columns(3)
        cf = report.closed_form_agrees
        cf_text = closed_form_word(cf, report.closed_form_z is not None)  # the verdict module's words
        cols[0].metric("Closed form vs Monte Carlo", cf_text,
                       help=f"{report.closed_form_text()}. Only non-exact points test a formula (at exact points "
                            "closed form and sample are both 0).")
        feats = report.features
        def yes_no(key: str) -> str:
            return "n/a" if key not in feats else ("yes" if feats[key] else "no")

        cols[1].metric("Features positive", yes_no("positive"))
        cols[2].metric("Features bounded (observed)", yes_no("bounded_observed"))
        if report.closed_form_z is not None:
            st.caption(f"Closed form: {report.closed_form_text()}.")
        ui.plot(figs.bias_z_map(report), key="lab-z")
        ratio = figs.ratio_map(report)
        if ratio is not None:
            ui.plot(ratio, key="lab-ratio")
        for other, why in report.skipped_comparisons.items():
            st.caption(f"Not compared with {other}: {why}")
        with st.expander("Full report (text)"):
            st.code(report.to_text(), language=None)
        st.download_button("Report (JSON)", json.dumps(jsonable(report.to_json()), indent=2),
                           file_name=f"lab_{report.estimator}.json", mime="application/json",
                           icon=":material/download:", on_click="ignore")


    def feature_map_page(state, side) -> None:
        """The lab on a plain feature map: its settings, the check in a plugin process, the report."""
        with ui.guard("feature map: "):
            spec, mse = _feature_map_source(state, side)
            kernel = state.selectbox("Kernel", "fm_kernel", ["softmax", "gaussian"], "softmax", container=side)
            biased = state.toggle("Biased by design (declared)", "fm_biased", False, container=side)
            d = ui.valid(D_PARAM, state.param(D_PARAM, DEFAULT_D, container=side))
            trials = ui.valid(LAB_TRIALS_PARAM, state.param(LAB_TRIALS_PARAM, DEFAULT_TRIALS, container=side))
            seed = ui.valid(SEED_PARAM, state.param(SEED_PARAM, container=side, label="Seed"))
            compare = state.multiselect("Compare the MSE with (same feature length)", "fm_compare", list(REGISTRY),
                                        list(DEFAULT_COMPARE), container=side)
            state.show_url_errors()
            if not spec:
                st.info("Name a function `features(X, rng) -> Φ` as `path/to/file.py:phi` (a file on this server) "
                        "and press **Run the check**.", icon=":material/play_arrow:")
            if spec and st.button("Run the check", type="primary", icon=":material/science:",
                                  key="estimator_lab.run_fm"):
                bar = st.progress(0.0, text="sampling…")
                report = ui.pooled(lambda f: check_feature_map_isolated(
                    spec, kernel, compare, mse=mse, biased=biased, progress=f, d=int(d), trials=int(trials),
                    seed=int(seed)), lambda f: bar.progress(min(max(f, 0.0), 1.0), text="sampling…"))
                bar.empty()
                st.session_state["estimator_lab.fm_report"] = report
        report = st.session_state.get("estimator_lab.fm_report")
        if report is not None:
            show_report(report)


    EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "examples"


    def bundled_examples() -> tuple[str, ...]:
        """The example estimator files shipped with rfviz (``examples/*.py``, files on the server; nothing from the
        browser), loaded like plugins without RFVIZ_PLUGINS or a restart."""
        return tuple(str(p) for p in sorted(EXAMPLES_DIR.glob("*.py")))


    @st.cache_resource(show_spinner=False)
    def _plugins(env_value: str, examples: tuple[str, ...]) -> tuple[dict, list[str], set[str]]:
        """Plugins named on this machine and the bundled examples (cached per value of the environment variable and
        list of example files), with the names that come from the examples. Each is loaded and smoke-tested in its
        own plugin process with a deadline (DISCOVERY_TIMEOUT_S): a plugin that hangs or ends its process is
        reported instead of blocking or ending the page."""
        with plugin_timeout_scope(DISCOVERY_TIMEOUT_S):
            shipped, shipped_errors = discover_isolated(list(examples))
            found, errors = discover_isolated([*env_specs({ENV_VAR: env_value}), *entry_point_specs()])
        return {**shipped, **found}, [*shipped_errors, *errors], set(shipped) - set(found)


    if st.sidebar.button("Reload plugin files", icon=":material/refresh:",
                         help="read edited plugin files again (modules named as module:Class need an app restart)"):
        _plugins.clear()
    plugins, plugin_errors, examples = _plugins(os.environ.get(ENV_VAR, ""), bundled_examples())
    for err in plugin_errors:
        st.error(f"Plugin not loaded: {err}", icon=":material/extension_off:")

    # ------------------------------------------------------------------ controls
    side = st.sidebar
    mode = state.radio("Check", "mode", MODES, MODES[0], container=side,
                       help="an estimator class (a built-in, an example or a plugin), or a plain feature map "
                            "features(X, rng) -> Φ")
    if mode == MODES[1]:
        feature_map_page(state, side)
        st.stop()  # the estimator widgets below are not drawn in this mode
    options = [*plugins, *REGISTRY]
    labels = {name: f"{name} ({'example' if name in examples else 'plugin'})" for name in plugins}
    default = next((n for n in plugins if n not in examples), "positive_antithetic")
    name = state.selectbox("Estimator to check", "est", options, default, container=side,
                           format_func=lambda n: labels.get(n, n),
                           help=f"examples: examples/*.py beside the app; plugins come from {ENV_VAR} and the "
                                "rfviz.estimators entry points")
    cls = plugins.get(name) or REGISTRY[name]
    has_kernel = any(p.name == "kernel" for p in cls.spec)
    kernel = None
    if has_kernel:
        kernel_param = next(p for p in cls.spec if p.name == "kernel")
        kernel = state.selectbox("Kernel", "kernel", kernel_param.choices, kernel_param.default, container=side)
    d = state.param(D_PARAM, DEFAULT_D, container=side)
    trials = state.param(LAB_TRIALS_PARAM, DEFAULT_TRIALS, container=side)
    r_text = state.text("r values (comma-separated)", "r", "0.5,1,1.5", container=side)
    n_theta = state.slider("θ points in [0, π]", "n_theta", 2, 13, 5, container=side)
    compare = state.multiselect("Compare the MSE with", "compare", [n for n in REGISTRY if n != name],
                                [n for n in DEFAULT_COMPARE if n != name], container=side)
    alpha = state.slider("α (family-wise error)", "alpha", 0.001, 0.1, DEFAULT_ALPHA, step=0.001, container=side)
    seed = state.param(SEED_PARAM, container=side, label="Seed")
    state.show_url_errors()

    st.caption(f"**{name}**: {cls.title}. {getattr(cls, 'description', '')} *{getattr(cls, 'reference', '')}*")
    with st.expander("Parameters", expanded=True):
        params = ui.estimator_params(state, cls.spec, prefix=f"{name}.", skip=("kernel",))
    if kernel is not None:
        params["kernel"] = kernel

    settings = json.dumps(jsonable({"est": name, "params": params, "d": d, "trials": trials, "r": r_text,
                                    "n_theta": n_theta, "compare": compare, "alpha": alpha, "seed": seed}),
                          sort_keys=True)
    if st.button("Run the check", type="primary", icon=":material/science:", key="estimator_lab.run"):
        with ui.guard(f"{name}: "):
            import numpy as np

            from rfviz.textio import parse_vector

            r_values = parse_vector("r", r_text).tolist()
            d, trials, seed = ui.valid(D_PARAM, d), ui.valid(LAB_TRIALS_PARAM, trials), ui.valid(SEED_PARAM, seed)
            bar = st.progress(0.0, text="sampling…")
            settings_kw = dict(r=r_values, theta=np.linspace(0.0, np.pi, int(n_theta)).tolist(), d=int(d),
                               trials=int(trials), seed=int(seed), alpha=float(alpha), device="auto")

            def run_check(fraction_done):  # in the server's bounded pool, off this page's thread
                if name in plugins:
                    return check_isolated(plugins[name].source, (), params, compare, progress=fraction_done,
                                          **settings_kw)
                return check(cls, params, compare=compare, progress=fraction_done, **settings_kw)

            report = ui.pooled(run_check, lambda f: bar.progress(min(max(f, 0.0), 1.0), text="sampling…"))
            bar.empty()
            st.session_state["estimator_lab.report"] = (settings, report)

    stored = st.session_state.get("estimator_lab.report")
    if stored is None:
        st.info("Choose an estimator and press **Run the check**.", icon=":material/play_arrow:")
    else:
        shown_settings, report = stored
        if shown_settings != settings:
            st.caption("The settings changed since this report was computed: press **Run the check** to update it.")
        show_report(report)
