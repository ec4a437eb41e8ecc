"""The documentation site's generated pages and its self-containment (the full build, with warnings as errors, is
``./run docs``, run by ``./run test`` and CI)."""

from __future__ import annotations

import pathlib
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

import rfviz_docs  # noqa: E402


def test_cli_reference_lists_every_command_and_option():
    from rfviz.cli import COMMANDS, build_parser

    page = rfviz_docs.cli_reference()
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for module in COMMANDS:
        assert f"## `rfviz {module.NAME}`" in page
        for action in sub.choices[module.NAME]._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}" in page or f", {option}" in page, f"{module.NAME}: {option} missing"


def test_estimator_catalog_has_every_registered_estimator_and_coupling_with_its_label():
    import rfviz
    from rfviz.registries import COUPLINGS, known_title

    page = rfviz_docs.estimator_catalog()
    for name, cls in rfviz.REGISTRY.items():
        assert f"## `{name}`: {cls.title}" in page
        for p in cls.spec:
            assert f"| `{p.name}` |" in page, f"{name}: parameter {p.name} missing"
        assert f"**Known.** {known_title(cls.known)} ({cls.citation})." in page, name
    for coupling in COUPLINGS.values():
        assert f"| `{coupling.name}` | {coupling.title} | {known_title(coupling.known)} |" in page, coupling.name


def test_bibliography_has_every_paper():
    from rfviz.references import REFERENCES

    page = rfviz_docs.bibliography()
    assert all(f"**[{key}]**" in page for key in REFERENCES)


def test_markdown_escaping_keeps_plain_text_plain():
    assert rfviz_docs._md("|x| ≤ $5 and *a*_b") == r"\|x\| ≤ \$5 and \*a\*\_b"


def test_docs_need_nothing_outside_the_repository():
    """No intersphinx, no remote theme assets: MathJax comes from sphinx-mathjax-offline, plotly.js from plotly."""
    conf = (DOCS / "conf.py").read_text()
    assert "intersphinx" not in conf
    assert "sphinx-mathjax-offline" in conf
    assert not re.search(r"https?://", conf)
    for page in DOCS.rglob("*.md"):
        if "_build" in page.parts or "_generated" in page.parts:
            continue
        text = page.read_text()
        assert "shared/reference" not in text and "../shared" not in text, page


@pytest.mark.parametrize("page", sorted(p.name for p in (DOCS / "derivations").glob("*.md")))
def test_every_derivation_page_is_in_the_toctree(page):
    index = (DOCS / "derivations" / "index.md").read_text()
    assert page == "index.md" or page.removesuffix(".md") in index


def test_every_app_page_has_a_user_guide_page():
    """One guide page per app page (docs/guide/<url_path>.md), in the guide's toctree, showing its screenshot."""
    sys.path.insert(0, str(ROOT))
    from app_pages import PAGES

    index = (DOCS / "guide" / "index.md").read_text()
    shots = rfviz_docs.page_screenshots()
    for page in PAGES:
        guide = DOCS / "guide" / f"{page.url_path}.md"
        assert guide.exists(), f"no user-guide page for /{page.url_path}: add {guide.relative_to(ROOT)}"
        assert f"\n{page.url_path}\n" in index, f"{guide.name} is not in docs/guide/index.md's toctree"
        assert f"_generated/shots/{page.url_path}.md" in guide.read_text(), f"{guide.name} lacks its screenshot"
        assert page.url_path in shots


def test_examples_readme_points_into_the_site():
    """The estimator how-to lives in the site; examples/README.md only points there."""
    pointer = (ROOT / "examples" / "README.md").read_text()
    assert "docs/howto/own-estimator.md" in pointer
    assert (DOCS / "howto" / "own-estimator.md").exists()
