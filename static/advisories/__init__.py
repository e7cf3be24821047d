"""Known vulnerabilities of Python distributions, from an OSV advisory database read offline.

- :mod:`static.advisories.records`: OSV records read defensively into typed records;
- :mod:`static.advisories.matching`: OSV's version-range rules with PEP 440 versions;
- :mod:`static.advisories.store`: a directory or zip of records indexed once into SQLite.

This package imports no other layer.
"""

from static.advisories.records import Advisory, BadRecord, Rating
from static.advisories.store import AdvisoryError, AdvisoryStore, Snapshot, Vulnerability

__all__ = [
    "Advisory",
    "AdvisoryError",
    "AdvisoryStore",
    "BadRecord",
    "Rating",
    "Snapshot",
    "Vulnerability",
]
