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
   ``\u2028``, ``\u2029``) are shown as escapes (below).
6. **Nothing invisible, nothing that looks like a boundary.** Right after line ends,
   above, these are shown as Python escapes (``\u200b``, ``\uff1c``,
   ``\U000e0041``), which mean the same character inside a string literal and
   show the judge what is there anywhere else:

   - every *invisible* character: control characters other than tab and newline
     (``Cc``), format characters (``Cf``: zero-width spaces and joiners, the soft
     hyphen, ``U+2060``-``U+2064``, ``U+FEFF``, bidirectional controls of Trojan
     Source, tag characters), line and paragraph separators, lone surrogates, and
     every other default-ignorable code point (variation selectors, the combining
     grapheme joiner, Hangul fillers, the whole ``U+E0000`` block);
   - every *look-alike of* ``<`` *or* ``>`` (:data:`ANGLE_LOOKALIKES`): what NFKC
     turns into one (full-width ``U+FF1C``, small ``U+FE64``), what Unicode's
     confusables (UTS #39) map to ``<``, ``>`` or runs of them (``U+2039``,
     ``U+02C2``, ``U+1438``, ``U+276E``, ``≪``, ``⋘``...), and the angle brackets
     (``〈``, ``〈``, ``⟨``, ``❬``, ``⧼``, ``⫷``...);
   - a combining mark placed on ``<``, ``>`` or on an escape (``<`` with an
     accent still reads as ``<``).

   So no invisible character can split a ``<<<`` that a reader (or NFKC) would
   join again, and no look-alike can draw one. Honest code reads the same:
   accented and non-Latin letters, CJK text (``く`` looks like ``〈``, not like
   ``<``; ``《》`` and ``«»`` are quotation marks), emoji, and ``<``, ``<<`` and
   a doctest's ``>>>`` themselves are left as they are. An emoji sequence joined
   by ``U+200D`` or carrying ``U+FE0F`` shows those two as escapes.

The system prompt then says that what lies between the boundaries is data,
and the user prompt repeats it after the block (see ``rubrics/prompts/``).
Neutralisation is idempotent and never changes the number of lines.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass

__all__ = [
    "ANGLE_LOOKALIKES",
    "BOUNDARY_PREFIX",
    "Boundaries",
    "boundaries",
    "neutralize",
    "number_lines",
]

BOUNDARY_PREFIX = "<<<"
"""Every boundary line starts with this; neutralised text never contains it."""

_TRIPLE = re.compile(r"<<(?=<)")
_CHAT_OPEN = re.compile(r"<(?=\|)")
_CHAT_CLOSE = re.compile(r"\|(?=>)")
_ROLE_TAG = re.compile(
    r"<(?=/?(?:system|user|assistant|developer|tool|human|im_start|im_end)\b)", re.IGNORECASE
)
ANGLE_LOOKALIKES = frozenset(
    "\u02c2\u02c3"  # modifier letter left / right arrowhead (confusable)
    "\u1433\u1438"  # Canadian syllabics po, pa (confusable)
    "\u16b2"  # runic letter kauna (confusable)
    "\u2039\u203a"  # single angle quotation marks (confusable)
    "\u226a\u226b\u22d8\u22d9\u2a20"  # much / very much less and greater (<<, <<<)
    "\u2aa1\u2aa2\u2af7\u2af8"  # double and triple nested less- and greater-than
    "\u2329\u232a\u3008\u3009\u27e8\u27e9"  # angle brackets
    "\u276c\u276d\u276e\u276f\u29fc\u29fd"  # angle bracket ornaments, curved brackets
    "\u31db"  # CJK stroke pd (confusable with the angle brackets)
    "\ufe64\ufe65\uff1c\uff1e"  # small and full-width (NFKC: < and >)
    "\U0001d236\U0001d237"  # Greek instrumental notation symbols 40 and 42 (confusable)
    "\U00016f3f"  # Miao letter archaic zza (confusable)
)
"""Characters that render like ``<`` or ``>`` (or runs of them): shown as escapes."""
_DEFAULT_IGNORABLE = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2065\u3164\ufe00-\ufe0f\uffa0"
    "\ufff0-\ufff8\U000e0000-\U000e0fff]"
)
"""Default-ignorable code points that are not format characters (Unicode's
DerivedCoreProperties; the format characters are found by category)."""
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_NOT_PLAIN = re.compile("[^\t\n\x20-\x7e]")
"""Anything but printable ASCII, tab and newline: the characters looked at one by one."""


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
        ends, and invisible characters and look-alikes of ``<`` and ``>`` shown
        as escapes. Same number of lines; idempotent.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _show_hidden(text)
    text = _CHAT_OPEN.sub("< ", text)
    text = _CHAT_CLOSE.sub("| ", text)
    text = _ROLE_TAG.sub("< ", text)
    return _TRIPLE.sub("<< ", text)


def _show_hidden(text: str) -> str:
    """Escape every invisible character, look-alike of ``<``/``>``, and mark placed on one."""
    pieces: list[str] = []
    done = 0
    for match in _NOT_PLAIN.finditer(text):
        char, at = match.group(), match.start()
        on_angle = at > 0 and (text[at - 1] in "<>" or (done == at and bool(pieces)))
        if _hidden(char) or (on_angle and unicodedata.category(char).startswith("M")):
            pieces += [text[done:at], _escape(char)]
            done = at + 1
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


def _hidden(char: str) -> bool:
    return (
        unicodedata.category(char) in _HIDDEN_CATEGORIES
        or char in ANGLE_LOOKALIKES
        or _DEFAULT_IGNORABLE.match(char) is not None
    )


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


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
