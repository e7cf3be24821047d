r"""Delimit untrusted text for the judge prompt so that it cannot pose as instructions.

The design, in layers (each one sufficient for the boundary guarantee alone
would be fragile; together they leave the code nothing to forge):

1. **Boundaries no input can contain.** Every boundary line starts with
   ``<<<`` (``<<<BEGIN CANDIDATE CODE 3f9a…>>>``). :func:`neutralize` breaks
   every run of three ``<`` in untrusted text (``<<<`` becomes ``<< <``), so
   no neutralised text contains ``<<<`` and therefore no boundary, whatever
   the nonce. This is inspect_ai's ``neutralize_structural_delimiters`` idea
   (``[END DATA]`` becomes ``[END-DATA]``), applied to a marker prefix rather
   than to one fixed marker, with a visible change rather than an invisible one.
   ``<<<`` is never valid Python outside strings and comments, so working code
   reads the same.
2. **A nonce per request.** The boundaries carry a nonce derived from the
   neutralised contents (SHA-256), so they are specific to this request and
   unguessable before the code is fixed, yet identical for identical requests
   (the cache needs that; a random nonce would make every request new).
3. **Line numbers.** Every code line is shown as ``  12 | <line>``, so no line
   of the block can begin like a boundary, a role marker or a heading.
4. **Chat-template and role markers defanged.** ``<|im_start|>``-style tokens
   (``<|`` becomes ``< |`` and ``|>`` becomes ``| >``) and role tags
   (``</system>`` becomes ``< /system>``) cannot read as structure.
5. **Line structure kept honest.** ``\r\n`` and lone ``\r`` become ``\n`` (as
   Python's tokenizer counts lines, so issue line numbers stay right); other
   vertical separators (``\v``, ``\f``, ``\x1c``-``\x1e``, ``\x85``,
   ``\u2028``, ``\u2029``) and bidirectional controls (Trojan Source) are
   shown as visible ``\uXXXX`` escapes, so the judge sees what is there.

The system prompt then says that what lies between the boundaries is data,
and the user prompt repeats it after the block (see ``rubrics/prompts/``).
Neutralisation is idempotent and never changes the number of lines.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

__all__ = ["BOUNDARY_PREFIX", "Boundaries", "boundaries", "neutralize", "number_lines"]

BOUNDARY_PREFIX = "<<<"
"""Every boundary line starts with this; neutralised text never contains it."""

_TRIPLE = re.compile(r"<<(?=<)")
_CHAT_OPEN = re.compile(r"<(?=\|)")
_CHAT_CLOSE = re.compile(r"\|(?=>)")
_ROLE_TAG = re.compile(
    r"<(?=/?(?:system|user|assistant|developer|tool|human|im_start|im_end)\b)", re.IGNORECASE
)
_INVISIBLE = re.compile(
    "[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]"
)


@dataclass(frozen=True, slots=True)
class Boundaries:
    """The boundary lines of one request."""

    nonce: str
    """16 hex digits, derived from the request's neutralised contents."""
    begin_task: str
    """Opens the task block."""
    end_task: str
    """Closes the task block."""
    begin_code: str
    """Opens the code block."""
    end_code: str
    """Closes the code block."""


def neutralize(text: str) -> str:
    r"""Make untrusted text safe to place between boundaries.

    Args:
        text: Candidate code, or any other text that goes into the prompt.

    Returns:
        The text with no ``<<<``, no chat-template or role markers, ``\n`` line
        ends, and invisible separators and bidi controls shown as escapes.
        Same number of lines; idempotent.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    text = _CHAT_OPEN.sub("< ", text)
    text = _CHAT_CLOSE.sub("| ", text)
    text = _ROLE_TAG.sub("< ", text)
    return _TRIPLE.sub("<< ", text)


def number_lines(code: str) -> str:
    r"""Prefix each line of (neutralised) code with its 1-based number and ``" | "``.

    Args:
        code: Code whose lines are separated by ``\n``.

    Returns:
        The numbered lines, joined by ``\n``.
    """
    lines = code.split("\n")
    width = len(str(len(lines)))
    return "\n".join(f"{n:>{width}} | {line}" for n, line in enumerate(lines, start=1))


def boundaries(*contents: str) -> Boundaries:
    """Boundary lines for a request whose neutralised contents are ``contents``.

    Args:
        *contents: Every neutralised text that goes into the prompt, in order.

    Returns:
        Boundaries carrying a nonce derived from the contents.
    """
    digest = hashlib.sha256()
    for part in contents:
        data = part.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "big") + data)  # length-prefixed: unambiguous
    nonce = digest.hexdigest()[:16]
    return Boundaries(
        nonce=nonce,
        begin_task=f"{BOUNDARY_PREFIX}BEGIN TASK {nonce}>>>",
        end_task=f"{BOUNDARY_PREFIX}END TASK {nonce}>>>",
        begin_code=f"{BOUNDARY_PREFIX}BEGIN CANDIDATE CODE {nonce}>>>",
        end_code=f"{BOUNDARY_PREFIX}END CANDIDATE CODE {nonce}>>>",
    )
