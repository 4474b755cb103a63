"""The nightly rotation inside a ReFrame session (clustergate.rotation).

ReFrame's tag filter judges each test alone, but a budget is shared by
all of a night's tests: which ones fit is known only once every test is
loaded. So the nightly mode filters with an expression ReFrame evaluates
after loading (``-E 'cg_tonight()'``, config/common.py):
:meth:`~clustergate.rfm.modes.ModeTags.set_mode_tags` registers each
acceptance test of a partition with a ``rotation`` extra here and puts a
``cg_tonight`` callable in the test; the first call plans the cycle from
every registered test, says the night in the session header and writes
one line per point to a file (``$CG_ROTATION_DETAILS``, default
``rotation-<system>.tsv`` next to the results database).

Estimates per test case (check, partition, environment): the last
measured duration in the results database (build, run including queue
wait, and ReFrame's own phases), else the cost model's default for the
family and node count (clustergate.costmodel.default_case_seconds).
Builds run once per environment per session and are not counted.
"""

import inspect
import os
import sys
import time
from typing import Dict, List, Optional, Tuple

from clustergate import costmodel, rotation, timing
from clustergate import extras as keys

#: system name -> {test name: test}; filled while ReFrame loads the checks
_registered: Dict[str, Dict[str, object]] = {}
#: system name -> names of tonight's tests, once planned
_tonight: Dict[str, set] = {}


def budgets(partitions) -> Dict[str, float]:
    """Seconds of budget of each partition (fullname) that declares one."""
    return {p.fullname: float(p.extras[keys.ROTATION][keys.ROTATION_BUDGET]) * 60
            for p in partitions if keys.ROTATION in p.extras}


def register(system: str, test) -> None:
    _registered.setdefault(system, {})[test.display_name] = test
    _tonight.pop(system, None)


def family(test) -> str:
    return timing.family_of({'filename': inspect.getfile(type(test))})


def measured(db: Optional[str]) -> Dict[Tuple[str, str, str],
                                        Tuple[float, Optional[float]]]:
    """(name, partition, environ) -> (seconds, completion unix time) of the
    newest record of each case in the results database (empty without
    one)."""
    from clustergate import resultsdb

    out = {}
    if not db or not os.path.exists(db):
        return out

    for report in resultsdb.stored_reports(db):
        for run in report.get('runs', []):
            for tc in run.get('testcases', []):
                done = tc.get('job_completion_time_unix')
                if done is None or tc.get('fixture'):
                    continue

                key = (tc.get('display_name') or tc.get('name'),
                       f'{tc.get("system")}:{tc.get("partition")}',
                       tc.get('environ'))
                if key not in out or out[key][1] <= done:
                    out[key] = (float(tc.get('time_total') or 0.0), done)

    return out


def points(tests, budgeted: Dict[str, float], db: Optional[str]
           ) -> List[rotation.Point]:
    """A rotation point per registered test that has test cases on a
    budgeted partition."""
    from reframe.core.runtime import valid_sysenv_comb

    records = measured(db)
    out = []
    for test in tests:
        cost, last, source = {}, None, 'measured'
        combos = valid_sysenv_comb(test.valid_systems,
                                   test.valid_prog_environs)
        for part, envs in combos.items():
            if part.fullname not in budgeted:
                continue

            for env in envs:
                rec = records.get((test.display_name, part.fullname,
                                   env.name))
                if rec is None:
                    source = 'default'
                    sec = costmodel.default_case_seconds(
                        family(test), getattr(test, 'num_nodes', 1) or 1)
                else:
                    sec = rec[0]
                    last = max(last or 0.0, rec[1])
                cost[part.fullname] = cost.get(part.fullname, 0.0) + sec

        if cost:
            out.append(rotation.Point(test.display_name, cost,
                                      getattr(test, 'cg_pinned', False),
                                      last, source))

    return out


def _details_path(db: Optional[str], system: str) -> str:
    path = os.environ.get('CG_ROTATION_DETAILS')
    if path:
        return path

    base = os.path.dirname(db) if db else os.getcwd()
    return os.path.join(base, f'rotation-{system}.tsv')


def _say(lines):
    from reframe.core.logging import getlogger
    for line in lines:
        getlogger().info(line)


def plan_tonight(system: str) -> set:
    """Plans the cycle of the registered tests of ``system`` (once), says
    the night and returns tonight's test names."""
    from reframe.core.runtime import runtime

    if system in _tonight:
        return _tonight[system]

    rt = runtime()
    budgeted = budgets(rt.system.partitions)
    db = rt.get_option('storage/0/sqlite_db_file')
    pts = points(_registered.get(system, {}).values(), budgeted, db)
    try:
        night = rotation.tonight(pts, budgeted)
    except rotation.RotationError as err:
        # inside ReFrame's filter an exception would only make every test
        # "not selected" with a warning each: stop the session, one line
        from reframe.core.logging import getlogger
        getlogger().error(f'nightly rotation: {err}')
        sys.exit(1)

    path = _details_path(db, system)
    lines = rotation.header(night, pts, time.time())
    try:
        with open(path, 'w') as fp:
            fp.write('\n'.join(rotation.details(night, pts)) + '\n')
        lines.append(f'  every point, its night, estimate and last run: '
                     f'{path}')
    except OSError as err:
        lines.append(f'  (per-point details not written: {err})')

    _say(lines)
    _tonight[system] = set(night.names)
    return _tonight[system]


class Tonight:
    """The ``cg_tonight`` of a test: True when the nightly rotation runs
    it tonight (always True for a test outside the rotation)."""

    def __init__(self, system: Optional[str] = None,
                 name: Optional[str] = None):
        self.system, self.name = system, name

    def __call__(self) -> bool:
        if self.system is None:
            return True

        return self.name in plan_tonight(self.system)

    def __deepcopy__(self, memo):
        return self
