"""How big the ci and nightly modes of a partition are, and the ppn values
they take, so that their size does not grow with the cores of a node.

A partition's acceptance sweep may take every ppn from 1 to the cores
(a 16-core node: 16 values on each interconnect, 2,097 test cases in a
ci that was meant to take minutes). Its ci and nightly subsets take a
handful of them, in the order they are worth measuring (:func:`handful`):
1 (one rank: the node's single-core figures), 2 (the smallest pair, which
the pair-only checks need), all cores (the node saturated), half the
cores (between the two). The ci takes the smallest two (the mode's
"smallest sizes and scales": the same test cases on 2 cores and on 128),
the nightly the four (:func:`mode_ppn`).

:func:`listed_size` is a mode's size as ReFrame lists it (``-lC``): its
test cases and their minutes by the cost model's default figures
(:func:`clustergate.planning.costmodel.default_case_seconds`), against the
mode's budget (:data:`BUDGETS`).
"""

import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence

from clustergate.planning import costmodel
from clustergate.planning.estimates import shared_run


@dataclass(frozen=True)
class Budget:
    """What one mode of one partition may cost."""

    cases: Optional[int]
    minutes: float


#: the budget of each mode on one partition (the nightly's: its rotation
#: budget where it declares one, see :func:`budget`)
BUDGETS = {'ci': Budget(cases=30, minutes=15.0),
           'nightly': Budget(cases=None, minutes=240.0)}


def session_mode(argv: Sequence[str]) -> Optional[str]:
    """The mode (``--mode NAME``) of a ``reframe`` command line, or
    None."""
    argv = list(argv)
    for i, a in enumerate(argv):
        if a == '--mode' and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith('--mode='):
            return a.split('=', 1)[1]
    return None


def handful(ppn: Sequence[int]) -> List[int]:
    """The ppn values of ``ppn`` (a partition's offered values) worth
    measuring, best first: 1, 2, all cores, half the cores (the offered
    value nearest to half the largest)."""
    offered = sorted(set(ppn))
    if not offered:
        return []

    top = offered[-1]
    half = min(offered, key=lambda p: (abs(2 * p - top), p))
    out = []
    for p in (1, 2, top, half):
        if p in offered and p not in out:
            out.append(p)

    return out or offered[:1]


def budget(mode: str, rotation_min: Optional[float] = None) -> Budget:
    """The budget of ``mode`` (a rotation's budget replaces the nightly's
    minutes)."""
    base = BUDGETS[mode]
    if mode == 'nightly' and rotation_min:
        return Budget(base.cases, float(rotation_min))
    return base


def ppn_axis(cores: int) -> List[int]:
    """The ppn a node of ``cores`` cores offers a sweep: the powers of two
    below the cores, half the cores and all of them (1, 2, 4, 8, 16 on 16
    cores; 1, 2, 3, 4, 6 on 6). Every value of 1..cores would make the
    acceptance space, and the time ReFrame takes to load it in every
    mode, grow with the cores: 16 cores took 40 s to list the ci."""
    vals, n = {cores, max(1, cores // 2)}, 1
    while n < cores:
        vals.add(n)
        n *= 2
    return sorted(vals)


def mode_ppn(ppn: Sequence[int], mode: str) -> List[int]:
    """The ppn values of ``mode`` among ``ppn`` (a partition's offered
    values): ci the smallest two of :func:`handful`, nightly all of it,
    acceptance every value; sorted."""
    best = handful(ppn)
    if mode == 'ci':
        best = sorted(best)[:2]
    elif mode != 'nightly':
        best = list(ppn)
    return sorted(set(best))


@dataclass(frozen=True)
class Size:
    """The size of one mode as listed: test cases and estimated minutes
    (one job after the other)."""

    cases: int
    minutes: float

    def within(self, limit: Budget) -> bool:
        return ((limit.cases is None or self.cases <= limit.cases) and
                self.minutes <= limit.minutes)


#: a test case of ReFrame's concretized listing (``-lC``): ``- Name
#: %num_nodes=2 %ppn=1 ... /hash @system:partition+environ`` (the
#: fixtures it needs are indented below it)
_CASE = re.compile(r'^- (\w+)(.*?) /[0-9a-f]+(?: @(\S+))?$')
_NODES = re.compile(r'%(?:\w+\.)?num_nodes=(\d+)')

#: check-name prefix -> family of the cost model (the rest: contention)
_FAMILY = (('Memory', 'node'), ('OsNoise', 'node'), ('Hpcc', 'hpcc'),
           ('Imb', 'imb'), ('Osu', 'osu'), ('Npb', 'npb'),
           ('Stream', 'stream'), ('Netpipe', 'nic'), ('Nic', 'nic'),
           ('PingPongFidelity', 'fidelity'))


def family_of(check: str) -> str:
    if check.endswith('LinkMatrix'):
        return 'linkmatrix'
    return next((f for prefix, f in _FAMILY if check.startswith(prefix)),
                'contention')


def listed_size(lines: Iterable[str], mode: Optional[str] = None) -> Size:
    """The size of a concretized listing (ReFrame's ``-lC`` output) of
    ``mode``: its test cases (fixtures apart) and the cost model's minutes
    for them."""
    return sum_sizes(listed_sizes(lines, mode).values())


def listed_sizes(lines: Iterable[str], mode: Optional[str] = None
                 ) -> Dict[str, Size]:
    """:func:`listed_size` per partition (``system:partition`` of each
    case; ``''`` for a listing of checks, which names none). The readers
    of one shared run (HPCC's kernels) pay for it once: one job."""
    cases: Dict[str, int] = {}
    seconds: Dict[str, float] = {}
    runs = set()
    for line in lines:
        m = _CASE.match(line.rstrip())
        if not m:
            continue

        nodes = _NODES.search(m.group(2))
        part = (m.group(3) or '').split('+', 1)[0]
        cases[part] = cases.get(part, 0) + 1
        run = shared_run(m.group(1) + m.group(2))
        if run and (m.group(3), run) in runs:
            continue

        runs.add((m.group(3), run))
        seconds[part] = seconds.get(part, 0.0) + \
            costmodel.default_case_seconds(
                family_of(m.group(1)), int(nodes.group(1)) if nodes else 1,
                mode, check=m.group(1))

    return {p: Size(cases[p], seconds[p] / 60) for p in cases}


def sum_sizes(sizes: Iterable[Size]) -> Size:
    sizes = list(sizes)
    return Size(sum(s.cases for s in sizes), sum(s.minutes for s in sizes))


def size_text(size: Size, what: str, mode: Optional[str],
              limit: Optional[Budget]) -> str:
    """``N <what>, about M min by the cost model (one after the other)``
    and, with a budget, ``; mode X's budget: ...`` (``: OVER`` beyond
    it): the size line of a listing and of ``clustergate cost``."""
    line = (f'{size.cases} {what}, about {size.minutes:.0f} min by the '
            f'cost model (one after the other)')
    if limit is not None:
        cap = f'{limit.cases} cases, ' if limit.cases else ''
        over = not size.within(limit)
        line += (f'; mode {mode}\'s budget: {cap}{limit.minutes:.0f} min'
                 + (': OVER' if over else ''))
    return line


#: a listing's line in the session log (config/common.py's format)
_LOGGED = re.compile(r'^\[[^]]+\] info: reframe: (- .*)$')


def listing_line(log_path: str, mode: Optional[str]) -> Optional[str]:
    """One line on the size of the listing in the session log
    ``log_path`` (``-l``: checks; ``-lC``: test cases), against the
    mode's budget; None when the log lists nothing."""
    try:
        with open(log_path, errors='replace') as fp:
            lines = [m.group(1) for m in map(_LOGGED.match, fp) if m]
    except OSError:
        return None

    if not lines:
        return None

    size = listed_size(lines, mode)
    what = ('test case(s)' if any(' @' in line for line in lines)
            else 'check(s), each in every environment')
    return 'clustergate: ' + size_text(size, what, mode,
                                       BUDGETS.get(mode or ''))
