"""Baselines: N healthy runs -> a reference file.

Samples (:mod:`clustergate.results.samples`: perflogs, the results
database or JSON run reports), grouped per system, partition, check, point
of the sweep (the test's parameters) and performance variable by
:func:`clustergate.results.samples.group`, are handed to :func:`make`; this
module reads no results itself. Per group:

* reference = median of the runs (robust centre);
* tolerance = max(floor, k * 1.4826 * MAD / median): the MAD scaled to a
  standard deviation of normal noise, ``k`` of them (default 3), never
  below the floor (default 5%);
* direction: declared per check and metric (:mod:`clustergate.refs.directions`:
  lower is better for times and latencies, higher for bandwidths and
  rates, ``both`` for what nobody declared). The worse side gets the
  tolerance; the better side gets ``better_factor`` times it (a result
  far *better* than usual is suspicious as well: a network test that went
  through shared memory), or no bound with factor 0. Whether crossing the
  better bound fails a run is the site's choice (partition extra
  ``improvements``, :mod:`clustergate.refs.references`).

A group with fewer runs than ``min_runs`` is refused (or skipped on
request): a reference from two runs is a guess.
"""

import difflib
import math
import os
import statistics
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from clustergate.refs import directions
from clustergate.refs import refwriter

#: MAD -> standard deviation for normally distributed noise
MAD_TO_SIGMA = 1.4826


def direction(check: str, metric: str) -> str:
    """'lower', 'higher' or 'both': declared per check and metric
    (:mod:`clustergate.refs.directions`), never guessed from the name."""
    return directions.of(check, metric)


def mad(values: Sequence[float]) -> float:
    med = statistics.median(values)
    return statistics.median(abs(v - med) for v in values)


@dataclass
class Stats:
    runs: int
    median: float
    mad: float
    min: float
    max: float
    spread: float       # 1.4826 * MAD / |median| (relative sigma)
    tolerance: float    # worse-side relative tolerance
    direction: str
    lower: Optional[float]
    upper: Optional[float]


def _ceil(x, digits=3):
    f = 10 ** digits
    return math.ceil(x * f - 1e-9) / f


def _sig(x, digits=4):
    if x == 0 or not math.isfinite(x):
        return x

    return round(x, digits - 1 - int(math.floor(math.log10(abs(x)))))


def compute(values: Sequence[float], metric='', unit=None, k=3.0,
            floor=0.05, better_factor=3.0, direction_=None,
            check='') -> Stats:
    """Reference statistics of one group of runs (see module doc)."""
    if not values:
        raise ValueError('no values')

    med = statistics.median(values)
    m = mad(values)
    spread = MAD_TO_SIGMA * m / abs(med) if med else 0.0
    tol = _ceil(max(floor, k * spread))
    d = direction_ or direction(check, metric)
    better = None if not better_factor else _ceil(tol * better_factor)
    if d == 'lower':
        lower = None if better is None else -min(1.0, better)
        upper = tol
    elif d == 'higher':
        lower = -min(1.0, tol)
        upper = better
    else:
        lower, upper = -min(1.0, tol), tol

    return Stats(len(values), med, m, min(values), max(values), spread, tol,
                 d, lower, upper)


@dataclass
class Baseline:
    """The statistics of a baseline, per sample key
    (:class:`clustergate.results.samples.Key`)."""
    stats: Dict[object, Stats] = field(default_factory=dict)
    units: Dict[object, Optional[str]] = field(default_factory=dict)
    short: Dict[object, int] = field(default_factory=dict)
    runs: List[str] = field(default_factory=list)
    span: Tuple[float, float] = (0.0, 0.0)


class TooFewRuns(ValueError):
    pass


def make(groups: Mapping[object, Sequence], min_runs=3, k=3.0, floor=0.05,
         better_factor=3.0, skip_short=False,
         directions: Optional[Dict[str, str]] = None) -> Baseline:
    """Statistics of every group (``{key: [sample, ...]}``, one sample a
    run: :func:`clustergate.results.samples.group`); raises
    :class:`TooFewRuns` (listing the groups) if one has fewer than
    ``min_runs`` runs, unless ``skip_short``."""
    if min_runs < 1:
        raise ValueError('min_runs must be at least 1')

    if not groups:
        raise TooFewRuns('no performance samples selected: nothing to '
                         'baseline (wrong --system, --check or --since? '
                         'perf failures need --include-perf-failures)')

    made = Baseline()
    for key, ss in sorted(groups.items(), key=lambda kv: kv[0].label()):
        if len(ss) < min_runs:
            made.short[key] = len(ss)
            continue

        unit = ss[-1].unit
        d = (directions or {}).get(key.metric)
        made.stats[key] = compute([s.value for s in ss], key.metric, unit, k,
                                  floor, better_factor, d, key.check)
        made.units[key] = unit

    if made.short and not skip_short:
        lines = [f'  {k.label()}: {n} run(s)'
                 for k, n in sorted(made.short.items(),
                                    key=lambda kv: kv[0].label())]
        raise TooFewRuns(
            f'refusing to baseline: {len(made.short)} metric(s) have fewer '
            f'than {min_runs} healthy runs (run more, or --skip-short):\n'
            + '\n'.join(lines)
        )

    if not made.stats:
        raise TooFewRuns(f'no metric has {min_runs} healthy runs')

    used = [s for key in made.stats for s in groups[key]]
    made.runs = sorted({s.run for s in used})
    made.span = (min(s.time for s in used), max(s.time for s in used))
    return made


# -- reference file --------------------------------------------------------

def entries(baseline: Baseline) -> Dict[Tuple[str, str, str], Dict[str, Dict]]:
    """``{(check, partition, point): {metric: entry}}`` of a baseline."""
    out = {}
    for key, stats in baseline.stats.items():
        out.setdefault((key.check, key.partition, key.point), {})[
            key.metric] = {
            'value': _sig(stats.median), 'lower': stats.lower,
            'upper': stats.upper,
            'unit': baseline.units.get(key), 'direction': stats.direction,
            'runs': stats.runs, 'mad': _sig(stats.mad, 3),
            'min': _sig(stats.min), 'max': _sig(stats.max),
        }

    return out


def render(system: str, table: Dict[Tuple[str, str, str], Dict[str, Dict]],
           comment: Sequence[str] = ()) -> str:
    """The YAML text of a new reference file, one metric per line, sorted,
    so that a re-baseline is a readable diff (see
    :func:`clustergate.refs.refwriter.update`, which also writes into an
    existing file)."""
    return refwriter.update('', system, table, comment)


def diff(old_text: str, new_text: str, path: str) -> str:
    return ''.join(difflib.unified_diff(
        old_text.splitlines(True), new_text.splitlines(True),
        fromfile=path if os.path.isabs(path) else f'a/{path}',
        tofile=path if os.path.isabs(path) else f'b/{path}'
    ))


def spread_table(baseline: Baseline) -> str:
    """What the runs showed, per metric: the spread behind each
    tolerance."""
    head = (f'{"check metric [point]":<72} {"runs":>4} {"median":>11} '
            f'{"MAD":>9} {"spread":>7} {"min":>11} {"max":>11} {"tol":>6} '
            f'dir')
    rows = [head, '-' * len(head)]
    for key in sorted(baseline.stats, key=lambda k: k.label()):
        stats = baseline.stats[key]
        label = f'{key.check} {key.metric} [{key.point}]'
        if len(label) > 72:
            label = label[:69] + '...'

        rows.append(f'{label:<72} {stats.runs:>4} {stats.median:>11.4g} '
                    f'{stats.mad:>9.3g} {100 * stats.spread:>6.1f}% '
                    f'{stats.min:>11.4g} {stats.max:>11.4g} '
                    f'{100 * stats.tolerance:>5.1f}% {stats.direction}')

    return '\n'.join(rows)
