"""Rotation of the acceptance space through nights of a fixed budget.

A partition that declares ``extras['rotation'] = {'budget_min': 30}``
does not run a fixed nightly subset: every night, ``--mode nightly`` runs
the part of the whole acceptance space that the night's plan holds, and
over a cycle of nights every acceptance test (a *point*: one check at one
sweep point, with all its environments) runs at least once.

The plan, a pure function of the points, their estimated costs and the
budgets:

* the *sentinels*, points that run every night whatever the night (the
  partition's ``sentinels``: by default the link matrix of every fabric
  and one small canary point per check family, clustergate.rfm.point.nightly),
  take their cost out of every night's budget first; sentinels that do
  not fit the budget are an error;
* the other points are taken in an order fixed by a hash of their name
  (families mixed within a night; a new point does not reshuffle the
  others' order) and put, first fit, in the first night where they fit
  the remaining budget of *every* budgeted partition that runs them;
  the points that read one shared run (HPCC's kernels, one job whose
  output each judges) are one unit: they rotate together and pay the run
  once, on one night;
* a point (or unit) that alone exceeds a budget is in no night: it
  cannot run within one, and a night of its own ran 27 min of 16 on the
  12-node emulated site (an HPCC run at N = 19,968); the header names
  such points, the details file marks them ``acceptance`` (``--mode
  acceptance`` runs them);
* tonight is night ``days since 1970-01-01 (UTC) mod cycle``: the same
  date gives the same night; ``CG_ROTATION_DATE=YYYY-MM-DD`` sets the date
  (tests, a night replayed).

The plan changes when the estimates change (a point measured slower than
its default); the header's "last ran" summary shows a point that has not
run for longer than a cycle.
"""

import datetime
import hashlib
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence
from clustergate.site import environment as cgenv

#: environment variable that sets the date of the night (YYYY-MM-DD)
DATE_VAR = cgenv.ROTATION_DATE


class RotationError(ValueError):
    """A rotation cannot be planned (one line naming the cause)."""


class SentinelsOverBudget(RotationError):
    """The points that run every night do not fit a partition's budget."""

    def __init__(self, partition: str, used: float, budget: float):
        self.partition, self.used, self.budget = partition, used, budget
        super().__init__(f'partition {partition}: the sentinels (run every '
                         f'night) take {used / 60:.1f} min of the '
                         f'{budget / 60:g} min budget: nothing left to '
                         f'rotate')


@dataclass
class Point:
    """One acceptance test of the rotation."""

    name: str
    #: estimated seconds per budgeted partition that runs it
    cost: Dict[str, float]
    #: why it runs every night ('' : it rotates), e.g. 'check LinkMatrix'
    #: or 'canary of osu' (see clustergate.rfm.point.nightly)
    sentinel: str = ''
    #: unix time of its last completed job (None: never recorded)
    last_ran: Optional[float] = None
    #: where the estimate came from: 'measured', 'skipped' (its last run
    #: was skipped: 0 s until its cause is mended), 'like' (the median of
    #: measured cases of its check and node count) or 'default'
    source: str = 'default'
    #: test cases of the point (partitions x environments)
    cases: int = 1
    #: the shared run it reads ('' : none): points of one group rotate
    #: together (:func:`plan`)
    group: str = ''
    #: estimated seconds of each case, (partition, environment) -> s
    per_case: Dict[tuple, float] = field(default_factory=dict)


@dataclass
class Plan:
    """Nights of a cycle: names of the rotating points of each night."""

    nights: List[List[str]]
    #: names of the points that run every night
    sentinels: List[str]
    budgets: Dict[str, float]
    #: per night, estimated seconds per partition (sentinels included)
    load: List[Dict[str, float]] = field(default_factory=list)
    #: points that alone (with their group) exceed a budget: in no night
    oversized: List[str] = field(default_factory=list)

    @property
    def cycle(self) -> int:
        return max(1, len(self.nights))


def sentinel_load(points: Sequence[Point],
                  budgets: Mapping[str, float]) -> Dict[str, float]:
    """Seconds the sentinels take of each budgeted partition's night."""
    base = {p: 0.0 for p in budgets}
    for pt in points:
        if pt.sentinel:
            for part, sec in pt.cost.items():
                if part in base:
                    base[part] += sec

    return base


def order_key(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


def units(points) -> List[List[Point]]:
    """The rotating units of ``points`` in the plan's order: the points
    of one group together, each other point alone."""
    groups: Dict[str, List[Point]] = {}
    for pt in points:
        groups.setdefault(pt.group or '\0' + pt.name, []).append(pt)
    return sorted((sorted(g, key=lambda p: p.name) for g in groups.values()),
                  key=lambda g: order_key(g[0].name))


def plan(points: Sequence[Point], budgets: Mapping[str, float]) -> Plan:
    """The cycle's nights for ``points`` under ``budgets`` (seconds per
    partition); see the module."""
    base = sentinel_load(points, budgets)
    sentinels = sorted(p.name for p in points if p.sentinel)
    for part, used in base.items():
        if used > budgets[part]:
            raise SentinelsOverBudget(part, used, budgets[part])

    nights, load, oversized = [], [], []
    for unit in units(p for p in points if not p.sentinel):
        cost: Dict[str, float] = {}
        for pt in unit:
            for k, v in pt.cost.items():
                if k in budgets:
                    cost[k] = cost.get(k, 0.0) + v
        if any(base[k] + v > budgets[k] for k, v in cost.items()):
            oversized += [pt.name for pt in unit]
            continue

        for night, used in zip(nights, load):
            if all(used[k] + v <= budgets[k] for k, v in cost.items()):
                break
        else:
            night, used = [], dict(base)
            nights.append(night)
            load.append(used)
        night += [pt.name for pt in unit]
        for k, v in cost.items():
            used[k] += v

    if not nights:
        nights, load = [[]], [dict(base)]

    return Plan(nights, sentinels, dict(budgets), load, oversized)


def night_date(today: Optional[datetime.date] = None) -> datetime.date:
    """The date of tonight: ``today``, else $CG_ROTATION_DATE, else the
    UTC date now. RotationError on a malformed variable."""
    if today is not None:
        return today

    text = cgenv.get(DATE_VAR)
    if text:
        try:
            return datetime.date.fromisoformat(text)
        except ValueError:
            raise RotationError(f'{DATE_VAR}={text!r}: not a date '
                                f'(YYYY-MM-DD)') from None

    return datetime.datetime.now(datetime.timezone.utc).date()


def night_index(date: datetime.date, cycle: int) -> int:
    """0-based night of the cycle for ``date``."""
    return (date - datetime.date(1970, 1, 1)).days % max(1, cycle)


@dataclass
class Tonight:
    """What one night runs."""

    plan: Plan
    index: int
    date: datetime.date

    @property
    def names(self) -> List[str]:
        return self.plan.sentinels + self.plan.nights[self.index]

    @property
    def load(self) -> Dict[str, float]:
        return self.plan.load[self.index]


def tonight(points: Sequence[Point], budgets: Mapping[str, float],
            date: Optional[datetime.date] = None) -> Tonight:
    p = plan(points, budgets)
    d = night_date(date)
    return Tonight(p, night_index(d, p.cycle), d)


def _age(seconds: float) -> str:
    days = seconds / 86400
    return f'{days:.0f} d' if days >= 1 else f'{seconds / 3600:.0f} h'


def last_ran_summary(points: Sequence[Point], cycle: int,
                     now: float) -> str:
    """One line: how long ago the points last ran."""
    ran = [p for p in points if p.last_ran is not None]
    never = len(points) - len(ran)
    within = sum(1 for p in ran if now - p.last_ran <= cycle * 86400)
    parts = [f'{within} within the cycle ({cycle} d)']
    if len(ran) - within:
        parts.append(f'{len(ran) - within} longer ago')
    parts.append(f'{never} never recorded')
    line = 'last ran: ' + ', '.join(parts)
    if ran:
        old = min(ran, key=lambda p: p.last_ran)
        line += f'; oldest {old.name} ({_age(now - old.last_ran)} ago)'

    return line


def header(t: Tonight, points: Sequence[Point], now: float) -> List[str]:
    """The lines said at the start of a nightly session."""
    budget = ', '.join(f'{t.load.get(k, 0) / 60:.0f} min of {v / 60:g}'
                       + (f' on {k}' if len(t.plan.budgets) > 1 else '')
                       for k, v in t.plan.budgets.items())
    by_name = {p.name: p for p in points}
    tonight_pts = [by_name[n] for n in t.names if n in by_name]
    measured = sum(1 for p in tonight_pts if p.source == 'measured')
    skipped = sum(1 for p in tonight_pts if p.source == 'skipped')
    like = sum(1 for p in tonight_pts if p.source == 'like')
    lines = [
        f'nightly rotation: night {t.index + 1} of {t.plan.cycle} '
        f'({t.date.isoformat()}), {len(t.names)} of {len(points)} points, '
        f'est. {budget}; cycle covers all acceptance points'
        + (f' but {len(t.plan.oversized)}' if t.plan.oversized else ''),
        f'  estimates: {measured} of {len(tonight_pts)} measured '
        f'(results DB)'
        + (f', {skipped} skipped last time (0 s)' if skipped else '')
        + (f', {like} from measured cases of their kind' if like else '')
        + ', the rest the cost model\'s defaults',
    ] + sentinel_lines(t.plan, points) + [
        '  tonight ' + last_ran_summary(tonight_pts, t.plan.cycle, now),
        '  all points ' + last_ran_summary(points, t.plan.cycle, now),
    ]
    if t.plan.oversized:
        lines.append(f'  {len(t.plan.oversized)} point(s) alone exceed the '
                     f'night budget: in no night, run them with --mode '
                     f'acceptance (night "acceptance" in the details), '
                     f'e.g. {t.plan.oversized[0]}')

    return lines


def sentinel_lines(p: Plan, points: Sequence[Point]) -> List[str]:
    """``sentinels: N cases, est. M min`` and one line per sentinel
    point saying why it runs every night."""
    sent = sorted((pt for pt in points if pt.sentinel),
                  key=lambda pt: (pt.sentinel.startswith('canary'),
                                  pt.sentinel, pt.name))
    if not sent:
        return ['  sentinels: none (every point rotates)']

    load = sentinel_load(points, p.budgets)
    est = ', '.join(f'{v / 60:.0f} min of {p.budgets[k] / 60:g}'
                    + (f' on {k}' if len(load) > 1 else '')
                    for k, v in load.items())
    return [f'  sentinels: {sum(pt.cases for pt in sent)} cases '
            f'({len(sent)} points), est. {est}, run every night:'] + [
        f'    sentinel {pt.name} ({pt.sentinel})' for pt in sent]


def details(t: Tonight, points: Sequence[Point]) -> List[str]:
    """One line per point: night(s) (``every``: a sentinel), estimate,
    source, last ran."""
    night_of = {n: i + 1 for i, names in enumerate(t.plan.nights)
                for n in names}
    oversized = set(t.plan.oversized)
    lines = ['# night\test_s\tsource\tlast_ran_utc\tpoint']
    for p in sorted(points, key=lambda p: (night_of.get(p.name, 0), p.name)):
        when = ('never' if p.last_ran is None else
                datetime.datetime.fromtimestamp(
                    p.last_ran, datetime.timezone.utc).strftime(
                        '%Y-%m-%dT%H:%MZ'))
        night = ('every' if p.sentinel else 'acceptance'
                 if p.name in oversized else str(night_of.get(p.name, '?')))
        lines.append(f'{night}\t{sum(p.cost.values()):.0f}\t{p.source}\t'
                     f'{when}\t{p.name}')

    return lines
