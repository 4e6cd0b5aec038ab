"""Exceptions raised by accelsim, each naming what was wrong and what would be right."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class AccelsimError(Exception):
    """Base class of every error accelsim raises on purpose."""


def close_matches(word: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Return up to ``n`` candidates that look like ``word`` (for "did you mean" hints).

    Ids that extend what was typed come first ("h100" -> "h100-sxm", "h100-pcie"), then
    the closest spellings by difflib's ratio.
    """
    pool = sorted(set(candidates))
    typed = word.lower()
    found = [c for c in pool if c.startswith(typed)]
    found += [c for c in difflib.get_close_matches(typed, pool, n=n, cutoff=0.5) if c not in found]
    return found[:n]


class UnknownChipError(AccelsimError, KeyError):
    """A chip id that is not in the catalog; the message lists the closest ids."""

    def __init__(self, chip_id: str, known: Iterable[str]) -> None:
        known = list(known)
        hint = close_matches(chip_id, known)
        msg = f"unknown chip id {chip_id!r}"
        msg += f"; did you mean {', '.join(map(repr, hint))}?" if hint else ""
        msg += f" (known ids: {', '.join(sorted(known))})"
        super().__init__(msg)
        self.chip_id = chip_id
        self.suggestions = hint

    def __str__(self) -> str:  # KeyError would otherwise print the message quoted
        return str(self.args[0])


class UnknownModelError(AccelsimError, KeyError):
    """A model preset id that is not in the catalog; the message lists the closest ids."""

    def __init__(self, model_id: str, known: Iterable[str]) -> None:
        known = list(known)
        hint = close_matches(model_id, known)
        msg = f"unknown model preset {model_id!r}"
        msg += f"; did you mean {', '.join(map(repr, hint))}?" if hint else ""
        msg += f" (known ids: {', '.join(sorted(known))})"
        super().__init__(msg)
        self.model_id = model_id
        self.suggestions = hint

    def __str__(self) -> str:  # KeyError would otherwise print the message quoted
        return str(self.args[0])


class OfferNotFoundError(AccelsimError, LookupError):
    """No price-sheet offer for a (chip, provider, pricing) triple; says who does offer it."""


class ScenarioFileError(AccelsimError, ValueError):
    """A scenario file that cannot be read or validated; the message names file and field."""


class IgnoredFieldWarning(UserWarning):
    """A scenario field the chosen scheduler does not read (a stream's priorities under
    ``fifo``, a trace's runtime estimates off ``backfill``): accepted with this warning, not
    refused, so that one workload can be compared across schedulers."""


__all__ = [
    "AccelsimError",
    "IgnoredFieldWarning",
    "OfferNotFoundError",
    "ScenarioFileError",
    "UnknownChipError",
    "UnknownModelError",
    "close_matches",
]
