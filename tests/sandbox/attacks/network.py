# ruff: noqa
"""Promise: a candidate cannot reach any network address.

Attack: connect to every TCP server the test started (loopback and the host's
other addresses, IPv4 and IPv6), send UDP datagrams to its UDP servers,
connect to its abstract and filesystem Unix sockets, resolve names, and send
a raw DNS query to every resolver in the host's and the sandbox's
``/etc/resolv.conf``.

Expected: every attempt fails; the test's servers receive nothing; no
resolver answers.
"""

import os
import socket

_PAYLOAD = b"GBX-EXFILTRATE\n"
_DNS_QUERY = bytes.fromhex("abcd01000001000000000000076578616d706c6503636f6d0000010001")


def _try(fn):
    try:
        return "ok: " + repr(fn())[:200]
    except BaseException as exc:
        return f"failed: {type(exc).__name__}: {exc}"[:200]


def _tcp(family, addr):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(0.5)
    try:
        s.connect(addr)
        s.sendall(_PAYLOAD)
        return "connected"
    finally:
        s.close()


def _udp(family, addr, payload=_PAYLOAD, want_reply=False):
    s = socket.socket(family, socket.SOCK_DGRAM)
    s.settimeout(0.5)
    try:
        s.sendto(payload, addr)
        if want_reply:
            return s.recvfrom(4096)[0][:40]
        return "sent"
    finally:
        s.close()


def _unix(addr):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(0.5)
    try:
        s.connect(addr)
        s.sendall(_PAYLOAD)
        return "connected"
    finally:
        s.close()


def _resolvers(extra):
    found = list(extra)
    try:
        for line in open("/etc/resolv.conf"):
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "nameserver":
                found.append(parts[1])
    except OSError:
        pass
    return sorted(set(found))


def f(targets):
    out = {}
    for host, port in targets["tcp4"]:
        out[f"tcp {host}:{port}"] = _try(lambda: _tcp(socket.AF_INET, (host, port)))
    for host, port in targets["tcp6"]:
        out[f"tcp [{host}]:{port}"] = _try(lambda: _tcp(socket.AF_INET6, (host, port)))
    for host, port in targets["udp4"]:
        out[f"udp {host}:{port}"] = _try(lambda: _udp(socket.AF_INET, (host, port)))
    for host, port in targets["udp6"]:
        out[f"udp [{host}]:{port}"] = _try(lambda: _udp(socket.AF_INET6, (host, port)))
    out["unix abstract"] = _try(lambda: _unix("\0" + targets["abstract"]))
    for path in targets["unix_paths"]:
        out[f"unix {path}"] = _try(lambda: _unix(path))
    for name in ("example.com", "pypi.org"):
        out[f"resolve {name}"] = _try(lambda: socket.getaddrinfo(name, 80))
    for ns in _resolvers(targets["resolvers"]):
        fam = socket.AF_INET6 if ":" in ns else socket.AF_INET
        out[f"dns query {ns}"] = _try(lambda: _udp(fam, (ns, 53), _DNS_QUERY, want_reply=True))
    return out
