"""The typed core of the commands: one module per command (``mse``, ``density``, ``psi``, ``gram``, ``check``),
each taking Python values (float, complex, int, bool, arrays), validating every one with the same ``Param``s the
CLI uses, and returning the command's JSON object as typed values.

``rfviz.api`` wraps these functions in frozen result objects; ``rfviz.cli`` parses text (``rfviz.textio``, driven
by the Params) into the same values and calls the same functions. Nothing here reads or writes text.
"""
