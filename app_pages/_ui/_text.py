"""Text shown back to the user: user-supplied values made inert for Markdown and cut to a readable length."""

from __future__ import annotations

from typing import Any

SHOWN_CHARS = 80
"""Values shown back in messages are cut to this many characters."""
_MARKDOWN_SPECIAL = frozenset("\\`*_{}[]()#+-.!|<>~:$&\"'=")


def plain(text: Any, limit: int = 400) -> str:
    """``text`` made inert for Streamlit's Markdown (st.error/st.warning render Markdown): every Markdown/HTML
    special character backslash-escaped, newlines flattened, cut to ``limit`` characters. Images, links, HTML and
    colour directives from a URL are shown as the characters they are."""
    t = " ".join(str(text).split())
    if len(t) > limit:
        t = t[: limit - 1] + "…"
    return "".join("\\" + c if c in _MARKDOWN_SPECIAL else c for c in t)


def short(text: str, limit: int = SHOWN_CHARS) -> str:
    """A user-supplied value cut to ``limit`` characters for messages (its length said when cut)."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"
