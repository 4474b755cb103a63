"""The last thing a session prints: a verdict block that fits one screen.

ReFrame's ``--performance-report`` prints one row per metric (hundreds
of lines, over 300 columns wide, its comparison column ``<no data>`` on a
first run) and buries the verdict above it. The modes no longer ask for it;
instead the end of every run session (``clustergate.rfm.session``) writes the
full table to a file (:func:`write_table`; ``output/performance.txt`` next
to the session log, ``CG_PERF_TABLE`` moves it) and ends the terminal
with :func:`block`::

    =================================== VERDICT ====================================
    FAILED: 2 of 52 case(s) failed
    failures (1):
      OsuLatency %num_nodes=2 ... @emucluster:emu+openmpi: sanity: ...
    regressions (1 metric outside its reference):
      Barrier %num_nodes=1 ... @localhost:local+openmpi: t_us = 12.1 us, reference 10 (-5 % .. +10 %)
    metrics: 511 measured: 120 judged against a reference, 391 with no reference (not judged)
    not run: 75 case(s) (NOT RUN above)
    time: 15m56s wall
    performance table: output/performance.txt (--performance-report prints it here)
    ================================================================================

ReFrame's own table is one option away: ``--performance-report`` on the
command line prints it as before.

A metric is *judged* when its reference says something: a reference value
or a bound (ReFrame records a metric without reference as ``(0, None,
None)``).
"""

import os
from typing import Dict, List, Optional, Sequence

from clustergate.results import counts

#: lines of failures and of regressions shown; the rest are counted
MAX_LINES = 8
_WIDTH = 80
_REASON_CHARS = 150


def final_cases(report) -> List[Dict]:
    """Each test case's last attempt (a retry replaces the first)."""
    return counts.final_cases(report)


def case_key(tc):
    return (tc.get('hashcode'), tc.get('system'), tc.get('partition'),
            tc.get('environ'))


def failure_stage(tc, attempts=()) -> str:
    """The stage a failed case failed in, named by what failed: ReFrame's
    ``fail_phase`` is the stage that raised, and a performance verdict
    raised before the job (a retry that keeps the verdict an earlier run
    decided, clustergate.rfm.families.linkmatrix.DecidedVerdict) reads
    ``setup: performance error``. ``attempts``: the case's earlier
    attempts in the session, oldest first."""
    phase = tc.get('fail_phase') or '?'
    reason = str(tc.get('fail_reason') or '').lstrip()
    if phase == 'performance' or not reason.startswith('performance error'):
        return phase

    first = next((i for i, a in enumerate(attempts)
                  if a.get('fail_phase') == 'performance'), None)
    if first is not None:
        return (f'performance (of run {first}; run {len(attempts)} kept '
                f'its verdict, stopped in {phase})')

    return f'performance (raised in {phase})'


def attempts_of(report) -> Dict:
    """Every attempt of each case, oldest first."""
    out = {}
    for run in report.get('runs', []):
        for tc in run.get('testcases', []):
            out.setdefault(case_key(tc), []).append(tc)

    return out


def measured_cases(report) -> List[Dict]:
    """Each test case's last attempt that measured something: a retry
    that stopped before its job (a verdict already decided in the
    session) measured nothing, and its first run's figures stand."""
    cases = {}
    for run in report.get('runs', []):
        for tc in run.get('testcases', []):
            key = (tc.get('hashcode'), tc.get('system'), tc.get('partition'),
                   tc.get('environ'))
            if tc.get('perfvalues') or key not in cases:
                cases[key] = tc

    return list(cases.values())


def case_label(tc) -> str:
    return (f'{tc.get("display_name", tc.get("name", "?"))} '
            f'@{tc.get("system")}:{tc.get("partition")}+{tc.get("environ")}')


def judged(ref, lower, upper) -> bool:
    """True when a metric's reference tuple says something to judge by."""
    return not (ref in (None, 0, 0.0) and lower is None and upper is None)


def metrics(report) -> List[Dict]:
    """One dict per measured metric of the session's cases (each case's
    last attempt that measured, :func:`measured_cases`):
    case, name, value, unit, ref, lower, upper, result ('pass', 'fail',
    ...; None when not judged), judged (bool)."""
    out = []
    for tc in measured_cases(report):
        for key, tup in (tc.get('perfvalues') or {}).items():
            value, ref, lower, upper, unit, *rest = list(tup) + [None]
            if value is None:
                continue

            out.append({'case': tc, 'name': key.split(':')[-1],
                        'value': value, 'unit': unit, 'ref': ref,
                        'lower': lower, 'upper': upper,
                        'result': rest[0] if rest else None,
                        'judged': judged(ref, lower, upper)})

    return out


def _bound(x):
    return '' if x is None else f'{x * 100:+g} %'


def _table_rows(mets):
    rows = [['test', 'system:partition+environ', 'nodes', 'jobid', 'metric',
             'value', 'unit', 'reference', 'lower', 'upper', 'result']]
    for m in mets:
        tc = m['case']
        nodes = tc.get('job_nodelist') or []
        rows.append([
            tc.get('display_name', tc.get('name', '?')),
            f'{tc.get("system")}:{tc.get("partition")}+{tc.get("environ")}',
            ','.join(nodes) if isinstance(nodes, list) else str(nodes),
            tc.get('jobid') or '', m['name'], m['value'], m['unit'] or '',
            m['ref'] if m['judged'] else 'none', _bound(m['lower']),
            _bound(m['upper']),
            (m['result'] or '') if m['judged'] else 'not judged'])

    return rows


def write_table(report, path: str) -> Optional[str]:
    """Write every metric of the session (value, reference, bounds,
    result, nodes, job id) to ``path`` as a plain-text table; return the
    path, or None when there is no metric or the file cannot be written."""
    mets = metrics(report)
    if not mets:
        return None

    from tabulate import tabulate

    info = report.get('session_info', {})
    head = (f'# performance of session {info.get("uuid", "?")} '
            f'({info.get("time_start", "?")}): {info.get("cmdline", "")}\n')
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, 'w') as fp:
            fp.write(head)
            fp.write(tabulate(_table_rows(mets), headers='firstrow',
                              tablefmt='simple', numalign='right'))
            fp.write('\n')
    except OSError:
        return None

    return path


def _short(text, limit=_REASON_CHARS):
    text = ' '.join(str(text or '').split())
    return text if len(text) <= limit else text[:limit - 3] + '...'


def _capped(items, more_where):
    lines = [f'  {x}' for x in items[:MAX_LINES]]
    if len(items) > MAX_LINES:
        lines.append(f'  ... and {len(items) - MAX_LINES} more '
                     f'({more_where})')

    return lines


def _failed_metric(tc) -> bool:
    return any((list(t) + [None] * 6)[5] == 'fail'
               for t in (tc.get('perfvalues') or {}).values())


def _failure_lines(report):
    """Cases that failed other than by a metric outside its reference
    (those are the regressions), each with the stage it failed in
    (failure_stage())."""
    attempts = attempts_of(report)
    measured = {case_key(tc): tc for tc in measured_cases(report)}
    out = []
    for tc in final_cases(report):
        if tc.get('result') not in ('fail', 'abort'):
            continue

        stage = failure_stage(tc, attempts.get(case_key(tc), [])[:-1])
        if stage.startswith('performance') and _failed_metric(
                measured.get(case_key(tc), tc)):
            continue    # a regression line names its metric

        first = str(tc.get('fail_reason') or '').strip().splitlines()
        out.append(f'{case_label(tc)}: {stage}: '
                   f'{_short(first[0] if first else "no reason given")}')

    return out


def _regression_lines(mets):
    out = []
    for m in mets:
        if m['result'] != 'fail':
            continue

        band = (f' ({_bound(m["lower"]) or "-inf"} .. '
                f'{_bound(m["upper"]) or "+inf"})')
        out.append(f'{case_label(m["case"])}: {m["name"]} = {m["value"]:g} '
                   f'{m["unit"] or ""}, reference {m["ref"]:g}{band}')

    return out


def _metric_line(mets):
    n_judged = sum(m['judged'] for m in mets)
    n_out = sum(m['result'] == 'fail' for m in mets)
    line = (f'metrics: {len(mets)} measured: {n_judged} judged against a '
            f'reference ({n_out} outside it), {len(mets) - n_judged} with '
            f'no reference (not judged)')
    if mets and not n_judged:
        line += ': nothing was checked against a reference'

    return line


def _headline(cases, red_reasons, mets):
    """The first line; ``cases``: the tests (fixtures apart), each by its
    last attempt. An aborted case failed (ReFrame's summary counts it
    apart, as aborted; its session is not a pass) but did not run to its
    end: it is counted among the failed, not among those that ran."""
    ran = [tc for tc in cases if counts.ran(tc)]
    failed = [tc for tc in cases if tc.get('result') in ('fail', 'abort')]
    aborted = sum(tc.get('result') == 'abort' for tc in failed)
    if failed or red_reasons:
        why = [f'{len(failed)} of {len(ran) + aborted} test case(s) failed'
               + (f' ({aborted} aborted)' if aborted else '')] \
            if failed else []
        return f'FAILED: {"; ".join(why + list(red_reasons))}'

    if not ran:
        # a session that ran nothing checked nothing: never a plain PASSED
        return ('PASSED, UNCHECKED: no test case ran, none failed; '
                'nothing was checked (NOT RUN says why)')

    if mets and not any(m['judged'] for m in mets):
        # passed, but nothing was compared with a reference
        return (f'PASSED, UNCHECKED: {len(ran)} test case(s) ran, none '
                f'failed, but none of their {len(mets)} metric(s) has a '
                f'reference')

    return f'PASSED: {len(ran)} test case(s) ran, none failed'


def _fixture_reasons(report, cases) -> List[str]:
    """What failed fixtures (a build, a shared run such as HPCC's) make
    red: the tests that read them did not run, so the session that says
    "none failed" of its tests still failed (ReFrame's exit status 1; a
    night whose 8-node HPCC run was cancelled said PASSED)."""
    broken = [tc for tc in final_cases(report) if tc.get('fixture')
              and tc.get('result') in ('fail', 'abort')]
    if not broken:
        return []

    needy = sum(tc.get('result') == 'fail_deps' for tc in cases)
    return [f'{len(broken)} fixture(s) (builds, shared runs) failed' +
            (f', {needy} test case(s) that read them not run'
             if needy else '')]


#: system -> the line on the nightly points no night holds
_coverage = {}


def note_coverage(system: str, line: str) -> None:
    _coverage[system] = line


def coverage_lines() -> List[str]:
    """What the planned nights leave out, one line per system."""
    return [_coverage[s] for s in sorted(_coverage)]


def block(report, not_run: int, red_reasons: Sequence[str] = (),
          table: Optional[str] = None,
          coverage: Sequence[str] = ()) -> List[str]:
    """The verdict block of a session (a list of lines): headline,
    failures with their reason, regressions, metrics judged and not,
    cases not run, what the mode leaves to another (``coverage``: the
    nightly rotation's points that no night can hold), time, where the
    full table is. ``red_reasons``: what else makes the session red (an
    expected family that ran not at all)."""
    from clustergate.results.timing import _fmt

    cases = [tc for tc in final_cases(report) if not tc.get('fixture')]
    tally = counts.session_counts(report)
    mets = metrics(report)
    lines = [' VERDICT '.center(_WIDTH, '='),
             _headline(cases, list(red_reasons) + _fixture_reasons(
                 report, cases), mets)]
    fails = _failure_lines(report)
    if fails:
        lines.append(f'failures ({len(fails)}):')
        lines += _capped(fails, 'SUMMARY OF FAILURES above')

    regs = _regression_lines(mets)
    if regs:
        lines.append(f'regressions ({len(regs)} metric(s) outside their '
                     f'reference):')
        lines += _capped(regs, 'the performance table')

    # said, not failed: the verdict above stands (clustergate report
    # lists them alike)
    from clustergate.results import casewarnings
    warned = [f'{w.name} @{w.where}: {w.text}'
              for w in casewarnings.warnings_of(report)]
    if warned:
        lines.append(f'warnings ({len(warned)}, not failures):')
        lines += _capped(warned, 'clustergate report')

    lines.append(_metric_line(mets))
    lines.append(f'not run: {not_run} test case(s) (NOT RUN above)'
                 if not_run else 'not run: none')
    lines += list(coverage)
    lines.append(tally.line())
    wall = report.get('session_info', {}).get('time_elapsed')
    if wall is not None:
        lines.append(f'time: {_fmt(wall)} wall (TIME BREAKDOWN above)')

    if table:
        lines.append(f'performance table: {_rel(table)} '
                     f'(--performance-report prints ReFrame\'s here)')

    lines.append('=' * _WIDTH)
    return lines


def _rel(path):
    rel = os.path.relpath(path)
    return path if rel.startswith('..') else rel
