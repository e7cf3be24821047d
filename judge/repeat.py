"""Combine the N answers of a repeated judgement (``--judge-repeat N``) into one.

The result is the majority: the verdict most scored repeats gave (a tie is
``mismatch``, and flipped), each criterion's score the lower median of the
scored repeats (for odd N a score some repeat gave), ``weighted`` from those. It
carries :class:`~judge.types.Repeat`: every repeat's verdict, the share agreeing
with the majority, whether the verdict flipped (then
:attr:`~judge.types.JudgeResult.unscored` is true and a passing sample is
``needs_review``), and which criteria's scores differed.

When no repeat was scored the result is the first ``needs_review`` one (a reply
came but broke protocol), else the first (``unavailable``), with the same record.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from judge.types import IntentVerdict, JudgeResult, PanelVote, Repeat, Tokens
from rubrics import Rubric

__all__ = ["combine", "combine_panel"]


def combine(results: Sequence[JudgeResult], rubric: Rubric) -> JudgeResult:
    """The majority of ``results``, the answers to one item asked ``len(results)`` times.

    Args:
        results: One result per repeat, in the order asked (at least one).
        rubric: The rubric they were scored by (for ``weighted``).

    Returns:
        One result with :attr:`~judge.types.JudgeResult.repeat` set; its
        ``attempts``, ``latency_ms`` and ``tokens`` are summed over the repeats.
    """
    scored = [r for r in results if r.status == "scored"]
    verdicts = tuple(r.verdict if r.status == "scored" else None for r in results)
    attempts = sum(r.attempts for r in results)
    latency_ms = sum(r.latency_ms for r in results)
    tokens = _tokens(results)
    if not scored:
        base = next((r for r in results if r.status == "needs_review"), results[0])
        return replace(
            base,
            repeat=Repeat(verdicts, 0, None, False),
            attempts=attempts,
            latency_ms=latency_ms,
            tokens=tokens,
            cache_hit=False,
        )
    votes = Counter(r.verdict for r in scored if r.verdict is not None)
    majority, agreement, flipped = _majority(votes)
    chosen = next((r for r in scored if r.verdict == majority), scored[0])
    ids = list(chosen.scores)
    scores = {cid: _low_median([r.scores[cid] for r in scored]) for cid in ids}
    criteria = tuple(cid for cid in ids if len({r.scores[cid] for r in scored}) > 1)
    repeat = Repeat(verdicts, len(scored), agreement, flipped, criteria)
    return replace(
        chosen,
        verdict=majority,
        scores=scores,
        weighted=rubric.weighted(scores),
        repeat=repeat,
        attempts=attempts,
        latency_ms=latency_ms,
        tokens=tokens,
        cache_hit=False,
    )


def _majority(
    votes: Counter[IntentVerdict],
) -> tuple[IntentVerdict | None, float | None, bool]:
    if not votes:
        return None, None, False
    ranked = votes.most_common()
    tie = len(ranked) > 1 and ranked[0][1] == ranked[1][1]
    majority: IntentVerdict = "mismatch" if tie else ranked[0][0]
    return majority, votes[majority] / sum(votes.values()), len(votes) > 1


def _low_median(values: list[int]) -> int:
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2]


def _tokens(results: Sequence[JudgeResult]) -> Tokens | None:
    used = [r.tokens for r in results if r.tokens is not None]
    if not used:
        return None
    return Tokens(sum(t.prompt for t in used), sum(t.completion for t in used))


def combine_panel(votes: Sequence[tuple[str, JudgeResult]], rubric: Rubric) -> JudgeResult:
    """The majority of a panel: one result per model (each possibly a repeat's majority).

    The verdict and scores are chosen as :func:`combine` chooses them; the result
    carries :attr:`~judge.types.JudgeResult.panel` (each model's vote) instead of a
    repeat record, and a split (:attr:`~judge.types.JudgeResult.split`) is unscored.

    Args:
        votes: ``(model, result)`` per panel member, in panel order.
        rubric: The rubric they were scored by.

    Returns:
        One result; its ``model`` lists the members (``a,b,c``).
    """
    merged = combine([r for _, r in votes], rubric)
    panel = tuple(
        PanelVote(model, r.status, r.verdict if r.status == "scored" else None, _flipped(r))
        for model, r in votes
    )
    return replace(merged, repeat=None, panel=panel, model=",".join(m for m, _ in votes))


def _flipped(result: JudgeResult) -> bool:
    return result.repeat is not None and result.repeat.flipped
