"""What the results database says a night paid: per test case (its time
plus its share of the run fixtures it reads, :func:`case_costs`) and per
run fixture (the whole run, :func:`run_costs`), from the sessions that ran
the night's sizes (:func:`sizes_as_nightly`). The nightly rotation plans
from these (clustergate.rfm.point.nightly)."""

import os
import shlex
from typing import Dict, Optional, Tuple

from clustergate.planning import modesize
from clustergate.planning.estimates import shared_run

#: the loggable variable of a point that its night's budget kept from
#: starting (clustergate.rfm.point.base): the reason, '' when it started
NOT_STARTED = 'night_not_started'


def case_costs(reports) -> Dict[Tuple[str, str, str],
                                 Tuple[float, Optional[float], str]]:
    """(name, partition, environ) -> (seconds, last ran unix time or None,
    source) of each test case, from its newest record in ``reports`` (run
    reports as the results database stores them, oldest first).

    What a night pays for a case: its own time plus its share of the *run*
    fixtures it reads (HPCC's run: one job whose figures several checks
    read, 32-88 s a run, while each reader's own time is under a second;
    counting the readers alone planned 3 HPCC points at 0 s). A run
    fixture is a fixture that ran a job (it has a completion time); build
    fixtures are left out: they run once per environment per session,
    whatever tonight's share is. A case whose newest record is a skip
    (its binary is not installed, spack is not on PATH) costs a night
    nothing until its cause is mended (source ``skipped``): counted at the
    cost model's default, NPB and OSU took 6 of the 25 minutes of a night
    on the emulated cluster and ran not a case.
    """
    out = {}
    for report in reports:
        if not sizes_as_nightly(report):
            continue

        when = float(report.get('session_info', {}).get('time_end_unix')
                     or 0.0)
        for run in report.get('runs', []):
            for key, rec in _run_costs(run.get('testcases', [])):
                # the newest session decides the cost; when it last ran is
                # the newest run of any session (a skip does not run)
                old = out.get(key)
                last = max(filter(None, (rec[1], old and old[1])),
                           default=None)
                if old is None or old[3] <= when:
                    out[key] = (rec[0], last, rec[2], when)
                else:
                    out[key] = old[:1] + (last,) + old[2:]

    return {k: v[:3] for k, v in out.items()}


#: the modes whose sessions run a point at the size a night runs it: the
#: nightly and a session without a mode (config/common.py: the nightly
#: mode sets no variable); ci caps HPCC's N (a 2-node run of 28 s, 510 s
#: at night) and acceptance runs the link matrix over all pairs
NIGHTLY_SIZED_MODES = (None, 'nightly')


def sizes_as_nightly(report) -> bool:
    """Whether the session of ``report`` ran its points at the sizes a
    night runs them, so that its times plan a night (a report without a
    command line counts)."""
    cmdline = (report.get('session_info') or {}).get('cmdline') or ''
    try:
        argv = shlex.split(cmdline)
    except ValueError:
        argv = cmdline.split()
    return modesize.session_mode(argv) in NIGHTLY_SIZED_MODES


def _run_costs(cases):
    """(key, (seconds, completion or None, source)) per test case of one
    run of a report (see :func:`case_costs`)."""
    fixtures = {tc.get('unique_name'): tc for tc in cases
                if tc.get('fixture')}
    readers: Dict[str, int] = {}
    for tc in cases:
        for dep in tc.get('dependencies_actual') or []:
            readers[dep[0]] = readers.get(dep[0], 0) + 1

    for tc in cases:
        if tc.get('fixture'):
            continue

        key = (tc.get('display_name') or tc.get('name'),
               f'{tc.get("system")}:{tc.get("partition")}', tc.get('environ'))
        done = tc.get('job_completion_time_unix')
        if tc.get(NOT_STARTED):
            # its night's budget was spent: no measurement, and not a
            # skip that costs nothing until mended
            continue

        if tc.get('result') == 'skip' and any(
                (fixtures.get(dep[0]) or {}).get(NOT_STARTED)
                for dep in tc.get('dependencies_actual') or []):
            # its run fixture was kept from starting tonight: neither a
            # measurement nor a skip
            continue

        if tc.get('result') == 'skip':
            yield key, (0.0, None, 'skipped')
            continue

        if done is None:
            continue

        sec = float(tc.get('time_total') or 0.0)
        for dep in tc.get('dependencies_actual') or []:
            fix = fixtures.get(dep[0])
            # its job's time: a fixture's total spans its readers (ReFrame
            # cleans it up after them)
            if fix and fix.get('job_completion_time_unix'):
                sec += float(fix.get('time_run') or 0.0) / readers[dep[0]]
        yield key, (sec, float(done), 'measured')


def run_costs(reports) -> Dict[Tuple[str, str, str], float]:
    """(shared run, partition, environ) -> seconds of each run fixture's
    whole cost, its job plus its readers' own time, from the newest
    nightly-sized session that ran it (``reports`` oldest first): what a
    night pays for the run, however many readers shared it
    (clustergate.planning.estimates.whole_runs)."""
    out: Dict[Tuple[str, str, str], float] = {}
    for report in filter(sizes_as_nightly, reports):
        for run in report.get('runs', []):
            cases = run.get('testcases', [])
            ran = {tc.get('unique_name'): tc for tc in cases
                   if tc.get('fixture') and tc.get('job_completion_time_unix')}
            paid: Dict[Tuple[str, str, str], Dict[str, float]] = {}
            for tc in cases:
                name = tc.get('display_name') or tc.get('name') or ''
                deps = [d[0] for d in tc.get('dependencies_actual') or []
                        if d[0] in ran]
                if tc.get('fixture') or not shared_run(name) or not deps or \
                        tc.get('job_completion_time_unix') is None:
                    continue
                key = (shared_run(name),
                       f'{tc.get("system")}:{tc.get("partition")}',
                       tc.get('environ'))
                one = paid.setdefault(key, {})
                one[name] = float(tc.get('time_total') or 0.0)
                for dep in deps:
                    one[dep] = float(ran[dep].get('time_run') or 0.0)
            out.update({k: sum(v.values()) for k, v in paid.items()})
    return out


def _stored(db: Optional[str]) -> list:
    from clustergate.results import resultsdb

    return resultsdb.stored_reports(db) if db and os.path.exists(db) else []


def measured(db: Optional[str]) -> Dict[Tuple[str, str, str],
                                        Tuple[float, Optional[float], str]]:
    """:func:`case_costs` of the results database (empty without one)."""
    return case_costs(_stored(db))


def measured_runs(db: Optional[str]) -> Dict[Tuple[str, str, str], float]:
    """:func:`run_costs` of the results database (empty without one)."""
    return run_costs(_stored(db))
