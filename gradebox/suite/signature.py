"""A task's signature, parsed (never run): parameter names, annotations, return type.

The signature comes from ``public.jsonl`` (``def is_even(n: int) -> bool``);
without one, from the reference's ``def``; without either, it is unknown and
every question about it answers "don't know".
"""

from __future__ import annotations

import ast
import copy
import warnings
from dataclasses import dataclass

__all__ = ["Signature", "parse_signature"]


@dataclass(frozen=True, slots=True)
class Signature:
    """The parts of a function signature the suite checks use."""

    params: tuple[str, ...]
    """Names of the parameters that can be passed by position, in order."""
    annotations: dict[str, str]
    """Parameter annotation source by name (only annotated ones)."""
    returns: str | None
    """The return annotation's source, if any."""
    header: str
    """``def fn(...):`` without annotations or decorators, ready for a body."""


def parse_signature(fn: str, signature: str | None, reference: str | None) -> Signature:
    """Find ``fn``'s signature in the public signature, else the reference.

    Args:
        fn: The function name.
        signature: A ``def ...`` line (with or without a trailing colon), or None.
        reference: The reference's source, or None.

    Returns:
        The signature; ``def fn(*args, **kwargs):`` when neither source has one.
    """
    for found in (_from_signature(fn, signature), _from_reference(fn, reference)):
        if found is not None:
            return _describe(found)
    return Signature((), {}, None, f"def {fn}(*args, **kwargs):")


def _from_signature(fn: str, signature: str | None) -> ast.FunctionDef | None:
    if not signature or not signature.strip():
        return None
    text = signature.strip().removesuffix(":")
    return _find(fn, text + ":\n    pass\n")


def _from_reference(fn: str, reference: str | None) -> ast.FunctionDef | None:
    return _find(fn, reference) if reference else None


def _find(fn: str, code: str) -> ast.FunctionDef | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == fn:
            return node
    return None


def _describe(node: ast.FunctionDef) -> Signature:
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    annotations = {
        a.arg: ast.unparse(a.annotation)
        for a in [*positional, *args.kwonlyargs]
        if a.annotation is not None
    }
    returns = ast.unparse(node.returns) if node.returns is not None else None
    return Signature(
        params=tuple(a.arg for a in positional),
        annotations=annotations,
        returns=returns,
        header=_bare_header(node),
    )


def _bare_header(node: ast.FunctionDef) -> str:
    """The ``def`` line without annotations (they are evaluated at definition time)."""
    bare = copy.deepcopy(node)
    bare.decorator_list = []
    bare.returns = None
    every = [*bare.args.posonlyargs, *bare.args.args, *bare.args.kwonlyargs]
    for extra in (bare.args.vararg, bare.args.kwarg):
        if extra is not None:
            every.append(extra)
    for arg in every:
        arg.annotation = None
    bare.body = [ast.Pass()]
    text = ast.unparse(bare)
    return text.rsplit("\n", 1)[0]
