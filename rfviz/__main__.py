"""``python -m rfviz``: see rfviz.cli (entered through rfviz._console, which a Ctrl-C during the imports ends in
one line)."""

from ._console import console_main

if __name__ == "__main__":
    console_main()
