"""The night's budget at run time (see clustergate.rfm.point.nightly):
a rotating point, or the run fixture that only rotating points read,
does not start once its partition's budget is spent or would be before
tonight's estimate of it is; sentinels always start."""

import re
import time

from reframe.core.exceptions import SanityError
from typing import Dict, Optional, Set

from clustergate import adapter
from clustergate.rfm.point import nightly
from clustergate.site import extras as keys
from clustergate.site.partition import partition_model


#: a point starts only while it would end within the budget at this many
#: times tonight's estimate of it: an estimate is a median or a default,
#: and on the 12-node emulated site a case planned at 27 s, the last to
#: start at minute 15.3 of 16, ran 42 s and ended the night 1 s past it
SAFETY = 1.25


#: system -> (point, partition, environment) of the sentinel cases that
#: started tonight: the others' estimates are kept for them
_started: Dict[str, Set[tuple]] = {}


def _tonight_system(test) -> Optional[str]:
    """The system whose night ``test`` belongs to: its own rotation's, or
    for a run fixture (HPCC's run) the current system's when a night was
    planned there; None otherwise."""
    system = getattr(getattr(test, 'cg_tonight', None), 'system', None)
    if system is None and _is_fixture(test):
        system = getattr(adapter.current_system(), 'name', None)
    return system if system in nightly._night_began else None


def _is_fixture(test) -> bool:
    is_fixture = getattr(test, 'is_fixture', None)
    return bool(is_fixture and is_fixture())


def run_params(display_name: str) -> str:
    """The parameters of a run fixture's name (``HpccRun %num_nodes=1
    %ppn=1 %interconnect=fab1 ~...``) as its readers' names carry them
    (:func:`clustergate.planning.estimates.shared_run`, without the
    fixture's attribute name)."""
    params = re.findall(r'%(\w+)=(\S+)', display_name.split(' ~')[0])
    return ' '.join(sorted(f'{p}={v}' for p, v in params))


def _reader_params(group: str) -> str:
    return ' '.join(sorted(p.split('.', 1)[-1] for p in group.split()))


def estimate(test, system: str) -> Optional[float]:
    """Tonight's estimate (seconds) of ``test``'s case on its partition
    and environment; for a run fixture, what tonight's readers of it were
    planned at together. None where the plan has none, or a sentinel
    reads the run (a sentinel always runs)."""
    key = _case_key(test)
    if not _is_fixture(test):
        pt = nightly._points.get(system, {}).get(test.display_name)
        return pt.per_case.get(key) if pt else None

    readers = _readers(test, system)
    if not readers or any(pt.sentinel for pt in readers):
        return None
    return sum(pt.per_case.get(key, 0.0) for pt in readers)


def _case_key(test) -> tuple:
    return (test.current_partition.fullname,
            getattr(getattr(test, 'current_environ', None), 'name', None))


def _readers(test, system: str):
    """Tonight's points that read the run fixture ``test``."""
    mine = run_params(test.display_name)
    return [pt for pt in nightly._points.get(system, {}).values()
            if pt.group and _reader_params(pt.group) == mine]


def note_start(test, system: str) -> None:
    """Records the sentinel cases that ``test`` starts (itself, or the
    sentinels that read the run fixture ``test``)."""
    if system not in nightly._points:
        return
    key = _case_key(test)
    pts = (_readers(test, system) if _is_fixture(test) else
           [nightly._points[system].get(test.display_name)])
    _started.setdefault(system, set()).update(
        (pt.name,) + key for pt in pts if pt is not None and pt.sentinel)


def reserved(system: str, partition: str) -> float:
    """Seconds tonight's estimates give the sentinel cases of
    ``partition`` that have not started: ReFrame orders the cases, not
    the plan, and on the emulated site the HPCC canary and the link
    matrices ran last, after the rotating points had taken the budget."""
    started = _started.get(system, set())
    return sum(sec for pt in nightly._points.get(system, {}).values()
               if pt.sentinel for (part, env), sec in pt.per_case.items()
               if part == partition and (pt.name, part, env) not in started)


def budget_spent(test, now: Optional[float] = None) -> Optional[str]:
    """Why ``test``, about to start its job, must not start tonight: its
    partition's night budget is spent, or would be before tonight's
    estimate of its case is, with a margin (:data:`SAFETY`) and the
    estimates of the sentinels still to run kept (:func:`reserved`; one
    line naming the partition and the key);
    None for a sentinel, a test outside the rotation, a session that
    planned no night, a test that only reads what its run fixture
    measured, or while budget is left. A run fixture whose readers all
    rotate is judged as they are: HPCC's run, one job read by several
    checks, ran 12 of a 16-min night's 19 on the emulated site, started
    whatever the clock."""
    system = _tonight_system(test)
    if system is not None:
        note_start(test, system)
    if system is None or 'sentinel' in (test.tags or ()):
        return None

    if getattr(test, 'local', False):
        # a local job reads its run fixture's output (HPCC's kernels):
        # that run's time is spent, the reading takes seconds and no node;
        # skipping it threw away a 14-min HPCC run on the emulated site
        return None

    part = test.current_partition
    model = partition_model(part)
    if model.rotation is None:
        return None

    est = estimate(test, system)
    if est is None and _is_fixture(test):
        return None

    began = nightly._night_began[system]
    used = (time.time() if now is None else now) - began
    budget = model.rotation.budget_s
    where = (f'extras.{keys.ROTATION}.{keys.ROTATION_BUDGET}); the next '
             f'nights are planned from the times measured tonight')
    if used >= budget:
        return (f'not started: the night budget of {part.fullname} is '
                f'spent ({used / 60:.0f} min of {budget / 60:g}, {where}')

    kept = reserved(system, part.fullname)
    if est is None or used + SAFETY * est + kept <= budget:
        return None

    sentinels = (f', {kept / 60:.1f} min kept for the sentinels still to '
                 f'run' if kept else '')
    return (f'not started: it would end past the night budget of '
            f'{part.fullname} (est. {est / 60:.1f} min, {used / 60:.0f} of '
            f'{budget / 60:g} min used{sentinels}, {where}')


def guard(test) -> None:
    """The run hook of a point: skips it, saying why, when the budget
    keeps it back; a retry kept back fails instead (skipped, it left a
    failed case green: a 24-rank ping-pong cut at its time limit)."""
    why = budget_spent(test)
    if why and adapter.current_run() > 0:
        raise SanityError(f'failed its first try, and its retry did '
                          f'not start: {why}')
    if why:
        test.night_not_started = why
        test.skip(why)
