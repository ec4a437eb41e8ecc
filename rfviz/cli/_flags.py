"""The one mapping from the Python API's keyword names to this CLI's flags, applied where the CLI prints an error:
the API words its messages with keyword names (``max_seconds``), the command line shows its flags
(``--max-seconds``)."""

from __future__ import annotations

import re

KEYWORD_FLAGS: dict[str, str] = {"max_seconds": "--max-seconds", "memory_budget": "--memory-budget"}
"""Keyword names whose flag is spelled differently, as they appear in API messages."""

_WORD = re.compile(r"(?<![\w.-])(" + "|".join(map(re.escape, KEYWORD_FLAGS)) + r")(?![\w(])")


def cli_words(message: str) -> str:
    """An API message with its keyword names written as this CLI's flags.

    Parameters
    ----------
    message : str
        An error message of the Python API.

    Returns
    -------
    str

    Examples
    --------
    >>> cli_words("the Monte-Carlo run passed max_seconds=5; use a larger max_seconds")
    'the Monte-Carlo run passed --max-seconds=5; use a larger --max-seconds'
    >>> cli_words("memory_budget_scope('1') and rfviz.params.memory_budget")
    "memory_budget_scope('1') and rfviz.params.memory_budget"
    """
    return _WORD.sub(lambda m: KEYWORD_FLAGS[m.group(1)], message)
