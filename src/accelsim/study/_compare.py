"""``compare``: several options simulated with common random numbers (one root seed)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from accelsim.catalog import active
from accelsim.engines import check_runnable
from accelsim.results import Comparison
from accelsim.scenario import MAX_NAME_CHARS, Goals, Scenario
from accelsim.seeding import SeedLike, as_seed_sequence
from accelsim.study._budget import check_studies_memory
from accelsim.study._chunks import DEFAULT_RUNS
from accelsim.study._simulate import simulate, study_probe


def _option_stores(
    options: Sequence[str],
    store: str | os.PathLike[str] | Mapping[str, str | os.PathLike[str]] | None,
) -> dict[str, str | os.PathLike[str] | None]:
    """Each option's own store: from a mapping, or ``<directory>/<option>``."""
    if store is None:
        return dict.fromkeys(options)
    if isinstance(store, Mapping):
        missing = [k for k in options if k not in store]
        extra = [k for k in store if k not in options]
        if missing or extra:
            raise ValueError(
                f"store= as a mapping names one store per option: missing {missing}, "
                f"unknown {extra} (options: {list(options)})"
            )
        paths = [os.path.abspath(store[k]) for k in options]
        if len(set(paths)) < len(paths):
            raise ValueError("store= gives two options the same store; each needs its own")
        return {k: store[k] for k in options}
    root = Path(store)
    if root.suffix.lower() in (".sqlite", ".sqlite3", ".db"):
        raise ValueError(
            f"compare(store={str(store)!r}): one store holds one study; pass a directory "
            f"(each option gets its own Parquet store <directory>/<option>) or a mapping "
            f"{{option: path}}"
        )
    for k in options:
        if not k or k in (".", "..") or any(c in k for c in "/\\:"):
            raise ValueError(
                f"option {k!r} cannot name a store in {str(store)!r}; pass store= as a "
                f"mapping {{option: path}}"
            )
    return {k: root / k for k in options}


def _check_option_name(key: object) -> None:
    """Refuse an option name that is not text of 1 to ``MAX_NAME_CHARS`` characters (its
    label in every table), quoting at most its first 40 characters."""
    if isinstance(key, str) and 1 <= len(key) <= MAX_NAME_CHARS:
        return
    shown = repr(key)
    if isinstance(key, str) and len(key) > 40:
        shown = f"{key[:40]!r}... ({len(key):,} characters)"
    raise ValueError(f"option names are text of 1 to {MAX_NAME_CHARS} characters, got {shown}")


def compare(
    scenarios: Mapping[str, Scenario] | Sequence[Scenario],
    *,
    runs: int | Literal["auto"] = DEFAULT_RUNS,
    seed: SeedLike = None,
    store: str | os.PathLike[str] | Mapping[str, str | os.PathLike[str]] | None = None,
    goals: Goals | None = None,
    **kwargs: Any,
) -> Comparison:
    """Simulate several options with common random numbers (one root seed for all).

    Run ``i`` of every option draws the same values of every input the options share, so
    :meth:`Comparison.prob_less` compares paired runs.

    Parameters
    ----------
    scenarios : mapping of option name to Scenario, or a sequence of Scenario
        The options. In a sequence each option is named by ``Scenario.name``, and two
        scenarios of the same name are an error (naming it), never one silently dropped.
    runs, seed
        As in :func:`simulate`, for every option. With ``runs="auto"`` (and a ``target``)
        each option runs until its own target holds; then every option that stopped
        earlier is extended to the largest number of runs any option took (its runs are
        those of a fixed study of that length with the same seed: the first ones are the
        ones it stopped at), so all options have the same number of paired runs. Each
        option's ``extras["precision"]`` records where its own target was met.
    store : path, or mapping of option name to path, optional
        Each option gets its own store: a mapping gives each option's path (all different);
        a path is a directory in which option ``k`` gets the Parquet store ``<path>/<k>``.
        ``resume=True`` resumes every option from its store. Not with ``runs="auto"``
        (extending an option would change the study its store holds).
    goals : Goals, optional
        Targets (deadline, budget, SLO attainment, queue wait) and a confidence, attached
        to the comparison: ``cmp.prob_meets(option)``, ``cmp.goals_table()``, and a
        recommendation among the options meeting them. Each goal's metric must be reported
        by every option (checked once the options have run).
    **kwargs
        Passed to :func:`simulate` for every option (``engine``, ``executor``,
        ``resume``, ``target``, ``design``, ...).

    Raises
    ------
    ValueError
        No scenario, two scenarios of the same name in a sequence, ``store`` with
        ``runs="auto"``, a store mapping that does not name each option once, or any error
        of :func:`simulate`.
    AccelsimError
        Before any option runs, what :func:`accelsim.engines.check_runnable` refuses in any
        option (a missing trace, a job larger than the fleet, the job caps).

    Examples
    --------
    >>> import accelsim as acs
    >>> w = acs.TrainingRun(params=7e9, tokens=1e11)
    >>> gpu = acs.Scenario(name="gpu", workload=w,
    ...                    fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")])
    >>> tpu = acs.Scenario(name="tpu", workload=w,
    ...                    fleet=[acs.Pool(chip="tpu-v5p", count=128, provider="gcp")])
    >>> cmp = acs.compare([gpu, tpu], runs=200, seed=1)
    >>> cmp.options, cmp["gpu"].runs == cmp["tpu"].runs == 200
    (('gpu', 'tpu'), True)
    """
    if isinstance(scenarios, Mapping):
        named = dict(scenarios)
        for key in named:
            _check_option_name(key)
    else:
        named = {}
        for s in scenarios:
            if s.name in named:
                raise ValueError(
                    f"two scenarios are named {s.name!r}: options are named by Scenario.name, "
                    f"so rename one or pass a mapping {{option: scenario}}"
                )
            named[s.name] = s
    if not named:
        raise ValueError("compare needs at least one scenario")
    if runs == "auto" and store is not None:
        raise ValueError(
            'compare(runs="auto") takes no store=: options that stop early are extended to '
            "the longest option's runs, which would change the study their store holds; "
            "pass a fixed number of runs with a store"
        )
    stores = _option_stores(list(named), store)
    root = as_seed_sequence(seed)
    kwargs["catalog"] = kwargs.get("catalog") or active()  # one snapshot for every option
    for s in named.values():  # every option runnable before any runs (each warns itself)
        check_runnable(s, kwargs["catalog"], warn=False)
    # Every option's arrays are held at once: together, before any option runs.
    check_studies_memory(
        [(k, *study_probe(s, runs=runs, seed=root, **kwargs)) for k, s in named.items()],
        "options of the comparison",
    )
    results = {
        k: simulate(s, runs=runs, seed=root, store=stores[k], **kwargs) for k, s in named.items()
    }
    if runs == "auto":
        longest = max(r.runs for r in results.values())
        fixed = {k: v for k, v in kwargs.items() if k not in ("target", "max_runs")}
        for k, res in results.items():
            if res.runs < longest:
                more = simulate(named[k], runs=longest, seed=root, **fixed)
                extras = {**more.extras, "precision": res.extras["precision"]}
                results[k] = replace(more, extras=extras)
    cmp = Comparison(results, goals)
    if goals is not None:
        for k in results:
            cmp.prob_meets(k)  # a goal whose metric an option lacks fails here, naming both
    return cmp


__all__ = ["compare"]
