# ruff: noqa
"""Promise: a candidate cannot read the hidden cases or the expected values.

Attack: the short version of ``hidden_scan``, safe to run without isolation:
open the host paths of the hidden files directly (a hostile candidate that
read the grader's source guesses them; here the test hands them over) and
return their contents.

Expected: nothing read (the paths do not exist inside the sandbox).
"""


def f(paths, canary):
    out = []
    for path in paths:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                out.append(fh.read(1 << 16))
        except OSError as exc:
            out.append(f"{path}: {type(exc).__name__}")
    return [canary] + out
