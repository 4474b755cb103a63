"""Where a session's time went: per family, check and sweep point.

A nightly that cannot say how long it takes, or what makes it long, grows
past its window unnoticed. This reads ReFrame's JSON run report (the file
of ``--report-file``, or a session of the results database) and splits each
test case's time into:

* **build**: the compile phase (our programs' build fixtures, one per
  environment; reported under family ``build``);
* **run**: from job submission to completion, *including the time the job
  waited in the queue* (ReFrame records no start time; on the embedded
  systems the queue is empty or the jobs run one after the other, so this
  is run time); for a fixture, its job's own wall time (ReFrame's times of
  a fixture span its dependents' lives);
* **other**: setup, sanity and performance phases (ReFrame's own work).

It also points at repeated work: cases that differ only in the
interconnect while using one rank, or one node with a node-local
interconnect, do identical work on every interconnect.
"""

import os
import statistics
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

#: parameters that make a sweep point (loggable in every family)
POINT_AXES = ('num_nodes', 'ppn', 'interconnect')


@dataclass
class CaseTime:
    """Timing of one test case (its last attempt)."""

    family: str
    check: str          # display name without parameters
    name: str           # display name
    point: str          # 'num_nodes=2,ppn=1,interconnect=fab0' ('' if none)
    environ: str
    result: str
    build: float
    run: float
    other: float
    nodes: int
    ranks: int
    interconnect: str

    @property
    def total(self) -> float:
        return self.build + self.run + self.other


def _t(tc, name) -> float:
    value = tc.get(name)
    return float(value) if isinstance(value, (int, float)) else 0.0


def job_wall(tc) -> Optional[float]:
    """Seconds from the job's submission to its completion, or None."""
    start, end = tc.get('job_submit_time'), tc.get('job_completion_time_unix')
    if isinstance(start, (int, float)) and isinstance(end, (int, float)):
        return max(0.0, float(end) - float(start))

    return None


def point_label(axes) -> str:
    """``2n x 1ppn fab0`` (short enough for a table column)."""
    if not axes:
        return ''

    return (f'{axes.get("num_nodes", "?")}n x {axes.get("ppn", "?")}ppn '
            f'{axes.get("interconnect", "?")}')


def family_of(tc) -> str:
    """``checks/<family>/...`` of the file that defines the test; ``build``
    for a fixture that only compiles; a run fixture (e.g. HPCC's one run
    per point) belongs to its library module's family (``rfm/families/hpcc.py``:
    ``hpcc``); else the file's name."""
    parts = os.path.normpath(tc.get('filename') or '?').split(os.sep)
    if tc.get('fixture'):
        if tc.get('job_completion_time_unix') is None or \
                parts[-1] == 'build.py':
            return 'build'

        return os.path.splitext(parts[-1])[0]

    if 'checks' in parts[:-1]:
        return parts[parts.index('checks') + 1]

    return os.path.splitext(parts[-1])[0]


def _last_attempts(report) -> List[Dict]:
    last = {}
    for run in report.get('runs', []):
        for tc in run.get('testcases', []):
            last[(tc.get('display_name') or tc.get('name'),
                  tc.get('system'), tc.get('partition'),
                  tc.get('environ'))] = tc

    return list(last.values())


def case_times(report) -> List[CaseTime]:
    out = []
    for tc in _last_attempts(report):
        name = tc.get('display_name') or tc.get('name', '?')
        axes = {a: tc.get(a) for a in POINT_AXES if tc.get(a) is not None}
        nodes = int(axes.get('num_nodes') or 1)
        ppn = int(axes.get('ppn') or 1)
        build = _t(tc, 'time_compile')
        wall = job_wall(tc)
        if tc.get('job_completion_time_unix') is None:
            # no job ran (a build fixture, a skip): ReFrame's run and total
            # times of such a case span its dependents' lives (a fixture is
            # cleaned up after them), not work of its own
            run, total = 0.0, build
        elif tc.get('fixture') and wall is not None:
            # a run fixture (HPCC's one run per point) too: ReFrame's run
            # time of the first of 4 nightly HPCC runs was 985 s, its job
            # 244 s; its own job and phases are its work
            run = wall
            total = build + run + sum(_t(tc, f'time_{p}') for p in
                                      ('setup', 'sanity', 'performance'))
        else:
            run, total = _t(tc, 'time_run'), _t(tc, 'time_total')
        out.append(CaseTime(
            family_of(tc), name.split()[0] if name.split() else name, name,
            point_label(axes),
            tc.get('environ') or '', tc.get('result') or '?', build, run,
            max(0.0, total - build - run), nodes, nodes * ppn,
            str(axes.get('interconnect') or '')))

    return out


def repeated_work(cases: Sequence[CaseTime]) -> List[List[CaseTime]]:
    """Groups of cases doing identical work: the same check, environment
    and parameters on several interconnects with a single rank, where the
    interconnect carries nothing."""
    groups = {}
    for c in cases:
        if not c.interconnect or c.ranks != 1:
            continue

        rest = c.name.replace(f'%interconnect={c.interconnect}', '')
        groups.setdefault((c.check, c.environ, rest), []).append(c)

    return [g for g in groups.values() if len(g) > 1]


def _fmt(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f'{seconds // 3600}h{seconds % 3600 // 60:02d}m'

    if seconds >= 60:
        return f'{seconds // 60}m{seconds % 60:02d}s'

    return f'{seconds}s'


def _table(rows, key, label, top=None) -> List[str]:
    by = {}
    for c in rows:
        by.setdefault(key(c), []).append(c)

    total = sum(c.total for c in rows) or 1.0
    items = sorted(by.items(), key=lambda kv: -sum(c.total for c in kv[1]))
    lines = [f'  {label:<28} {"cases":>5} {"build":>7} {"run":>7} '
             f'{"other":>7} {"total":>7} {"share":>6} {"median":>7}']
    for name, cases in items[:top]:
        t = sum(c.total for c in cases)
        lines.append(
            f'  {name[:28]:<28} {len(cases):>5} '
            f'{_fmt(sum(c.build for c in cases)):>7} '
            f'{_fmt(sum(c.run for c in cases)):>7} '
            f'{_fmt(sum(c.other for c in cases)):>7} {_fmt(t):>7} '
            f'{t / total:>6.0%} '
            f'{_fmt(statistics.median(c.total for c in cases)):>7}')

    if top and len(items) > top:
        lines.append(f'  ... {len(items) - top} more')

    return lines


def breakdown(report, top=8) -> List[str]:
    """The lines printed at the end of a session."""
    from clustergate.results import counts as session_counts

    cases = case_times(report)
    # ran to the end, as ReFrame counts them (an aborted case did not)
    ran = [c for c in cases if c.result in session_counts.COMPLETED]
    info = report.get('session_info', {})
    wall = info.get('time_elapsed')
    counts = session_counts.session_counts(report)
    head = (f'TIME BREAKDOWN: {len(ran)} case(s) ran'
            + (f' in {_fmt(wall)} wall' if wall else '')
            + f', {_fmt(sum(c.total for c in ran))} in test cases '
              f'(run includes queue wait); {counts.split()}, '
              f'{counts.reframe()}')
    lines = [head]
    if not ran:
        return lines + ['  (no test case ran)']

    lines += _table(ran, lambda c: c.family, 'family')
    lines += _table(ran, lambda c: c.check, 'slowest checks', top)
    lines += _table([c for c in ran if c.point], lambda c: c.point,
                    'slowest sweep points', top)
    rep = repeated_work(ran)
    if rep:
        extra = sum(sum(c.total for c in g[1:]) for g in rep)
        lines.append(f'  repeated work: {sum(len(g) - 1 for g in rep)} '
                     f'one-rank case(s) repeat the same work on another '
                     f'interconnect ({_fmt(extra)})')

    return lines


def load_report(path: str) -> Dict:
    """A JSON run report; ValueError naming ``path`` when it is not one."""
    import json
    try:
        with open(path) as fp:
            return json.load(fp)
    except ValueError as e:     # not JSON, or not text (a database)
        raise ValueError(f'{path}: not a JSON run report ({e})') from None


def latest_report(db: str) -> Optional[Dict]:
    from clustergate.results import samples
    reports = samples.results_db_reports(db)
    return max(reports, key=_end) if reports else None


def _end(report) -> float:
    return report.get('session_info', {}).get('time_end_unix') or 0


def describe_session(report) -> str:
    """``session 1b2c... (2026-11-24T00:14:35+0000 .. 00:30:02, reframe
    --mode nightly -r)``: which run a command read."""
    info = report.get('session_info', {})
    cmd = ' '.join(str(info.get('cmdline') or '').split())
    cmd = cmd if len(cmd) <= 80 else cmd[:77] + '...'
    return (f'session {info.get("uuid", "?")} ({info.get("time_start", "?")}'
            f' .. {info.get("time_end", "?")}' +
            (f', {cmd}' if cmd else '') + ')')


def pick_session(reports, session: str, where: str) -> Dict:
    """The report among ``reports`` whose session uuid starts with
    ``session``; ValueError naming the sessions there when none or several
    do."""
    found = [r for r in reports if str(r.get('session_info', {})
                                       .get('uuid', '')).startswith(session)]
    if len(found) == 1:
        return found[0]

    latest = sorted(reports, key=_end)[-5:]
    names = ', '.join(f'{r["session_info"].get("uuid", "?")} '
                      f'({r["session_info"].get("time_start", "?")})'
                      for r in reversed(latest)) or 'none'
    what = 'several sessions' if found else 'no session'
    raise ValueError(f'--session {session}: {what} in {where} start(s) with '
                     f'it ({len(reports)} session(s); the latest: {names})')


def session_report(json_path: Optional[str], db: str,
                   session: Optional[str] = None) -> Dict:
    """A JSON run report, or a session of the results database ``db``:
    the one whose uuid starts with ``session``, else the latest;
    ValueError naming the database when it holds no such session."""
    if json_path:
        report = load_report(json_path)
        if session:
            pick_session([report], session, json_path)
        return report

    from clustergate.results import samples
    reports = samples.results_db_reports(db)
    if session:
        return pick_session(reports, session, db)

    if not reports:
        raise ValueError(f'no session in {db}')

    return max(reports, key=_end)
