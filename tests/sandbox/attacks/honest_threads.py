# ruff: noqa
"""Control (must pass): threads that are started and joined."""

import threading


def f(n):
    out = [0] * n

    def work(i):
        out[i] = sum(range(i * 1000))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(out)
