# ruff: noqa
"""Control (must pass): raising genuine exceptions of standard-library modules
the sandbox had not imported before the candidate ran: by calling into the
module, by raising its class, a subclass of it, a class of a C module, one
loaded by another module, and a module imported inside a thread."""

import sys


def f(mode):
    if mode == "call":
        import statistics

        return statistics.mean([])
    if mode == "raise":
        from statistics import StatisticsError

        raise StatisticsError("raised by the candidate")
    if mode == "subclass":
        import statistics

        class Empty(statistics.StatisticsError):
            pass

        raise Empty("a genuine subclass")
    if mode == "c_module":
        import zlib

        return zlib.decompress(b"not zlib data")
    if mode == "loaded_by_another":
        import csv  # loads _csv, whose Error is the class csv.Error names

        return list(csv.reader(['"unterminated'], strict=True))
    if mode == "thread":
        import threading

        caught = []

        def run():
            try:
                import tomllib

                tomllib.loads("= no key")
            except BaseException as exc:
                caught.append(exc)

        t = threading.Thread(target=run)
        t.start()
        t.join()
        raise caught[0]
    raise ValueError(mode)
