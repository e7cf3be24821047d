# ruff: noqa
"""Control (must pass): writing and reading a file in the scratch (working) dir and /tmp."""

import os
import tempfile


def f(text):
    with open("notes.txt", "w") as fh:
        fh.write(text)
    with tempfile.NamedTemporaryFile("w+", delete=False) as fh:
        fh.write(text)
        name = fh.name
    with open(name) as fh:
        again = fh.read()
    os.unlink(name)
    with open("notes.txt") as fh:
        return fh.read() + again
