"""The verdict page of ``clustergate report`` (see :mod:`clustergate.commands.report_cmd`
for what it shows): samples and outcomes read from perflogs, the results
database or JSON reports, the figures (matplotlib) and the HTML page.
"""

import datetime as dt
import glob
import math
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from clustergate.refs import baseline
from clustergate.results import counts
from clustergate.results import samples as results_samples
from clustergate.results.samples import Key, Sample
from clustergate.report import (fabricsvg, nodefigures, plotting,
                                samplestatus, sizefigures, trends)
from clustergate.results import history
from clustergate.links import matrix as linkmatrix
from clustergate.refs import references

# -- data ------------------------------------------------------------------

def load_samples(perflogs=(), db=None,
                 json_reports=()) -> List[Sample]:
    return results_samples.load_samples(db, json_reports, perflogs)


@dataclass
class Outcome:
    """One test case of one session that did not pass."""

    name: str
    where: str          # system:partition+environ
    result: str         # 'fail', 'abort', 'fail_deps'
    phase: str
    reason: str
    time: float
    session: str
    fixture: bool = False   # a build or shared run, not a test


def failure_counts(failures: Sequence[Outcome]) -> str:
    """'1 failed test case(s), 1 fixture(s) (builds, shared runs)
    failed, 1 test case(s) that read them not run': tests and fixtures
    apart, as the session's VERDICT counts them (a cancelled HPCC run is
    one failed fixture and the case that reads it did not run, not two
    failed test cases)."""
    bad = ('fail', 'abort')
    tests = sum(not o.fixture and o.result in bad for o in failures)
    fixtures = sum(o.fixture and o.result in bad for o in failures)
    needy = sum(not o.fixture and o.result == 'fail_deps' for o in failures)
    parts = [f'{tests} failed test case(s)']
    if fixtures:
        parts.append(f'{fixtures} fixture(s) (builds, shared runs) failed')
    if needy:
        parts.append(f'{needy} test case(s) that read them not run'
                     if fixtures else
                     f'{needy} test case(s) not run (a dependency failed)')
    return ', '.join(parts)


def _report_outcomes(report) -> List[Outcome]:
    uuid = report.get('session_info', {}).get('uuid', '?')
    runs = report.get('runs', [])
    last = {}
    # a retried case counts by its last attempt (ReFrame's own rule)
    for run in runs:
        for tc in run.get('testcases', []):
            last[(tc.get('name'), tc.get('system'), tc.get('partition'),
                  tc.get('environ'))] = tc

    from clustergate.results import verdict as session_verdict

    attempts = session_verdict.attempts_of(report)
    out = []
    for tc in last.values():
        if tc.get('result') not in ('fail', 'abort', 'fail_deps'):
            continue

        # the stage by what failed: a performance verdict a retry kept is
        # not a setup failure (clustergate.results.verdict.failure_stage)
        stage = session_verdict.failure_stage(
            tc, attempts.get(session_verdict.case_key(tc), [])[:-1]) \
            if tc.get('fail_phase') else ''

        # every line: the first is often only 'performance error:', the
        # figures (latency=12420 us, expected 7821) are on the next ones
        reason = [' '.join((tc.get('fail_reason') or '').split())]
        # a sentinel (run every night by the rotation) says so
        mark = ' [sentinel]' if 'sentinel' in (tc.get('tags') or ()) else ''
        mark += ' [fixture]' if tc.get('fixture') else ''
        out.append(Outcome(
            (tc.get('display_name') or tc.get('name', '?')) + mark,
            f'{tc.get("system")}:{tc.get("partition")}+{tc.get("environ")}',
            tc['result'], stage,
            reason[0] if reason else '',
            float(tc.get('job_completion_time_unix') or
                  report.get('session_info', {}).get('time_end_unix') or 0),
            uuid, bool(tc.get('fixture'))))

    return out


def _reports(db=None, json_reports=()) -> List[Dict]:
    """Every run report of the results database and the JSON files."""
    reports = []
    if db:
        reports += results_samples.results_db_reports(db)

    for path in json_reports or ():
        with open(path) as fp:
            reports.append(__import__('json').load(fp))

    return reports


def judged_session(db=None, json_reports=(),
                   session=None) -> Optional[Dict]:
    """The run report whose failed cases the verdict lists: the session of
    the results database and JSON reports whose uuid starts with
    ``session``, else the latest; None when there is no such source
    (perflogs hold only measurements). ValueError naming the sessions
    there when ``session`` names none or several."""
    from clustergate.results import timing

    reports = _reports(db, json_reports)
    if session:
        where = ', '.join(([db] if db else []) + list(json_reports or ()))
        return timing.pick_session(reports, session, where or 'perflogs')

    if not reports:
        return None

    return max(reports, key=lambda r: r.get('session_info', {})
               .get('time_end_unix') or 0)


def outcomes_of(report) -> List[Outcome]:
    """The test cases of the run report ``report`` that did not pass
    (each by its last attempt)."""
    return _report_outcomes(report)


def load_outcomes(db=None, json_reports=(),
                  session=None) -> Optional[List[Outcome]]:
    """Failed test cases of the session judged_session() picks; None when
    there is no such source (perflogs hold only measurements)."""
    report = judged_session(db, json_reports, session)
    return None if report is None else _report_outcomes(report)


def matrix_verdicts(db=None, json_reports=()) -> Dict[str, Dict]:
    """The LinkMatrix check's own verdict per directory its matrix was kept
    in (stage and output directory of each test case): the check judges the
    matrix against the declared switch tree when there is one, which the
    flat ratio to the median cannot (on an oversubscribed tree every
    cross-switch flow is "slow" against the median)."""
    out = {}
    for report in _reports(db, json_reports):
        for run in report.get('runs', []):
            for tc in run.get('testcases', []):
                # LinkMatrix, and LeafSpanLinkMatrix (the ci's span of a tree)
                if not (tc.get('name') or '?').split()[0].endswith(
                        'LinkMatrix'):
                    continue

                seen = {'result': tc.get('result'),
                        'phase': tc.get('fail_phase') or '',
                        'reason': (tc.get('fail_reason') or '').strip()}
                for d in (tc.get('stagedir'), tc.get('outputdir')):
                    if d:
                        out[os.path.normpath(d)] = seen

    return out


def _by_run_and_key(samples):
    """Latest run's sample per key, and all samples per key (by time)."""
    groups = {}
    for s in samples:
        groups.setdefault(s.key, []).append(s)

    for g in groups.values():
        g.sort(key=lambda s: s.time)

    return groups


@dataclass
class Deviation:
    """A latest value out of its reference, and which way."""

    key: Key
    value: float
    ref: float
    unit: Optional[str]
    deviation: Optional[float]  # value / ref - 1 (None: reference 0)
    kind: str               # 'regression' or 'better than reference'


def deviations(groups) -> List[Deviation]:
    """Latest values out of their reference, regressions first (largest
    first). A value far on the *good* side is listed apart: a network
    figure that suddenly doubles most likely went through shared memory."""
    out = []
    for key, ss in groups.items():
        s = ss[-1]
        if samplestatus.status(s) != 'out of reference':
            continue

        # a bound of 0 (the link matrix's ``faults``: no verdict expected)
        # has no relative deviation: shown as the value against 0
        dev = s.value / s.ref - 1 if s.ref else None
        delta = dev if dev is not None else s.value - s.ref
        good = {'lower': delta < 0, 'higher': delta > 0}.get(
            baseline.direction(key.check, key.metric), False)
        out.append(Deviation(key, s.value, s.ref, s.unit, dev,
                             'better than reference' if good
                             else 'regression'))

    return sorted(out, key=lambda d: (
        d.kind != 'regression',
        -abs(d.deviation) if d.deviation is not None else -math.inf,
        d.key.label()))


@dataclass
class Verdict:
    """What the page says first."""

    failures: Optional[List[Outcome]]   # None: no source of test results
    deviations: List[Deviation]
    changes: List[history.Finding]
    metrics: int
    referenced: int
    #: what the session's cases said without failing
    #: (:mod:`clustergate.results.casewarnings`): listed, not judged
    warnings: List = field(default_factory=list)
    #: test cases (fixtures apart) of the judged session that ran to their
    #: end; None: no session read (perflogs hold only measurements)
    ran: Optional[int] = None

    @property
    def red(self) -> bool:
        return bool(self.failures) or any(
            d.kind == 'regression' for d in self.deviations) or any(
            c.band == 'fail' for c in self.changes)

    @property
    def unchecked(self) -> int:
        """Metrics measured with no reference: run and logged, not
        judged."""
        return self.metrics - self.referenced

    @property
    def word(self) -> str:
        """RED; UNCHECKED when there was nothing to be red about and no
        metric was judged against a reference, or the judged session ran
        no test case (its latest values are older runs'): green would
        claim a check that did not happen; else GREEN."""
        if self.red:
            return 'RED'

        if self.ran == 0:
            return 'UNCHECKED'

        if not self.referenced and (self.metrics or self.failures is None):
            return 'UNCHECKED'

        return 'GREEN'

    def counts(self) -> str:
        """'12 of 511 metric(s) judged against a reference, 499 with no
        reference (run and logged, not checked)'."""
        return (f'{self.referenced} of {self.metrics} metric(s) judged '
                f'against a reference, {self.unchecked} with no reference '
                f'(run and logged, not checked)')

    def headline(self) -> str:
        """The verdict in one line: the word, what failed, what was judged
        and what was not (the terminal, the page and JUnit say it
        alike)."""
        tests = (failure_counts(self.failures)
                 if self.failures is not None
                 else 'no test results read (perflogs only)')
        worse = sum(1 for d in self.deviations if d.kind == 'regression')
        if self.word == 'UNCHECKED' and self.ran == 0:
            return (f'UNCHECKED: no test case of the session ran (each '
                    f'was skipped or none was selected): nothing was '
                    f'checked; {tests}')

        if self.word == 'UNCHECKED':
            return (f'UNCHECKED: no metric was judged: none of the '
                    f'{self.metrics} metric(s) measured has a reference; '
                    f'{tests} (write references: clustergate baseline)')

        return (f'{self.word}: {tests}, {worse} metric(s) out of reference '
                f'the worse way, {len(self.changes)} change point(s) across '
                f'runs; {self.counts()}')

    def empty_reasons(self) -> Dict[str, str]:
        """Why each empty section is empty."""
        why = {}
        if self.failures is None:
            why['failures'] = ('no test results read: perflogs hold only '
                               'measurements (give --db or --json)')
        elif not self.failures:
            why['failures'] = 'none: every test case of the latest ' \
                              'session passed or was skipped'
        if not self.deviations:
            why['deviations'] = (
                'none: no metric has a reference' if not self.referenced
                else f'none: all {self.referenced} metric(s) with a '
                     f'reference are within it')
        if not self.changes:
            why['changes'] = (f'none in {self.metrics} metric(s): every '
                              f'history is within its noise (or has fewer '
                              f'than 4 runs)')
        return why


def cases_ran(report) -> int:
    """Test cases (fixtures apart) of the run report ``report`` that ran
    to their end, each by its last attempt."""
    return counts.session_counts(report).tests_ran


def verdict(samples, outcomes=None, warnings=(), ran=None) -> Verdict:
    groups = _by_run_and_key(samples)
    referenced = sum(1 for ss in groups.values()
                     if samplestatus.status(ss[-1]) != references.NO_REFERENCE)
    changes = [c for c in history.analyse(samples)
               if c.band != 'improvement']
    return Verdict(outcomes, deviations(groups), changes, len(groups),
                   referenced, list(warnings), ran)


def warning_lines(ver: Verdict) -> List[str]:
    """The verdict's warnings for the terminal: a count, then one line
    each (none: no line)."""
    if not ver.warnings:
        return []
    return [f'warnings ({len(ver.warnings)}, not failures: the verdict '
            f'stands):'] + [f'  {w.name} @{w.where}: {w.text}'
                            for w in ver.warnings]


def _case(suite, classname, name, kind=None, message=''):
    from xml.etree import ElementTree as ET

    case = ET.SubElement(suite, 'testcase', classname=classname, name=name)
    if kind:
        ET.SubElement(case, kind, message=message).text = message
    return case


def junit(ver: Verdict) -> str:
    """The verdict as a JUnit file: a ``verdict`` case (failed when RED,
    skipped when UNCHECKED) whose message is the headline, a failed case
    per failed test and per regression, a skipped case counting the
    metrics with no reference; the counts as properties."""
    from xml.etree import ElementTree as ET

    root = ET.Element('testsuites')
    suite = ET.SubElement(root, 'testsuite', name='clustergate verdict')
    props = ET.SubElement(suite, 'properties')
    for name, value in (('verdict', ver.word), ('metrics', ver.metrics),
                        ('judged', ver.referenced),
                        ('no_reference', ver.unchecked),
                        ('failed_tests', '' if ver.failures is None
                         else sum(not f.fixture for f in ver.failures)),
                        ('failed_fixtures', '' if ver.failures is None
                         else sum(f.fixture for f in ver.failures))):
        ET.SubElement(props, 'property', name=name, value=str(value))

    kind = {'RED': 'failure', 'UNCHECKED': 'skipped'}.get(ver.word)
    _case(suite, 'clustergate', 'verdict', kind, ver.headline())
    for f in ver.failures or ():
        _case(suite, 'clustergate.failed', f'{f.name} {f.where}', 'failure',
              f'{f.result} in {f.phase or "?"}: {f.reason}')
    for d in ver.deviations:
        if d.kind == 'regression':
            dev = '' if d.deviation is None else f' ({100 * d.deviation:+.1f} %)'
            _case(suite, 'clustergate.regression', d.key.label(), 'failure',
                  f'{d.value:g} {d.unit or ""} against {d.ref:g}{dev}')
    for w in ver.warnings:
        # a warning is a passed case whose output says it
        _case(suite, 'clustergate.warning', f'{w.name} {w.where}',
              'system-out', w.text)
    if ver.unchecked:
        _case(suite, 'clustergate', 'metrics with no reference', 'skipped',
              f'{ver.unchecked} of {ver.metrics} metric(s) have no '
              f'reference: run and logged, not checked')

    cases = suite.findall('testcase')
    suite.set('tests', str(len(cases)))
    suite.set('failures', str(sum(1 for c in cases if c.find('failure')
                                  is not None)))
    suite.set('skipped', str(sum(1 for c in cases if c.find('skipped')
                                 is not None)))
    return ET.tostring(root, encoding='unicode')


# -- figures ---------------------------------------------------------------

def find_matrices(dirs: Sequence[str]) -> Dict[str, str]:
    """Latest ``linkmatrix_<fabric>.csv`` per system/partition/fabric
    below ReFrame output (or stage) directories."""
    found = {}
    for d in dirs:
        for path in glob.glob(os.path.join(d, '**', 'linkmatrix_*.csv'),
                              recursive=True):
            parts = os.path.normpath(path).split(os.sep)
            fabric = os.path.basename(path)[len('linkmatrix_'):-4]
            # <prefix>/<system>/<partition>/<environ>/<test>/file
            where = '/'.join(parts[-5:-3]) if len(parts) >= 5 else '?'
            label = f'{where} {fabric}'
            if label not in found or \
                    os.path.getmtime(path) > os.path.getmtime(found[label]):
                found[label] = path

    return found


def _matrix_caption(path, analysis, verdicts):
    """(caption, bad) of a matrix: the check's verdict where the run report
    has it, else the flat analysis (ratio to the median, no topology)."""
    seen = verdicts.get(os.path.dirname(os.path.abspath(path)))
    flat = f'ratio to the median, no topology: {analysis.summary()}'
    if seen is None:
        return flat, not analysis.healthy

    if seen['result'] == 'pass':
        return ('LinkMatrix passed: no fault named (its verdict on the '
                'declared topology, or the flat matrix where none is '
                'declared)'), False

    return (f'LinkMatrix failed in {seen["phase"] or "?"}: '
            f'{seen["reason"]}'), True


def matrix_figures(dirs, outdir, fraction=linkmatrix.DEFAULT_FRACTION,
                   verdicts=None):
    figs = []
    for label, path in sorted(find_matrices(dirs).items()):
        mat = linkmatrix.read_csv(path)
        fabric = label.split()[-1]
        analysis = linkmatrix.analyse(mat, fraction, fabric)
        when = dt.datetime.fromtimestamp(os.path.getmtime(path),
                                         dt.timezone.utc)
        name = f'linkmatrix_{plotting.slug(label)}.png'
        linkmatrix.heatmap(mat, os.path.join(outdir, name),
                           f'{label}: link matrix (MB/s), '
                           f'{when:%Y-%m-%d %H:%M} UTC', fraction, analysis)
        text, bad = _matrix_caption(path, analysis, verdicts or {})
        figs.append({'file': name, 'title': f'link matrix {label}',
                     'text': text, 'bad': bad})
        where = os.path.dirname(os.path.abspath(path))
        figs.append(fabricsvg.figure(where, fabric, label,
                                     (verdicts or {}).get(where)))

    return figs


# -- page ------------------------------------------------------------------

def _utc(t):
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime(
        '%Y-%m-%d %H:%M')


def _number(value):
    """A table cell: 4 significant digits, empty for no value."""
    return '' if value is None else f'{value:.4g}'


def _rows(groups):
    """Rows of the table of latest values, and the status counts."""
    rows = []
    counts = {'ok': 0, 'out of reference': 0, references.NO_REFERENCE: 0}
    for key in sorted(groups, key=lambda k: k.label()):
        latest = groups[key][-1]
        verdict = samplestatus.status(latest)
        counts[verdict] += 1
        lo, hi = samplestatus.band(latest)
        rows.append({
            'key': key, 'value': _number(latest.value),
            'unit': latest.unit or '',
            'ref': (_number(latest.ref)
                    if verdict != references.NO_REFERENCE else ''),
            'band': f'{_number(lo)} .. {_number(hi)}', 'status': verdict,
            'cls': {'ok': 'ok', 'out of reference': 'bad'}.get(verdict,
                                                                'noref'),
            'runs': len(groups[key]), 'when': _utc(latest.time),
        })

    summary = (f'{counts["ok"]} within reference, '
               f'{counts["out of reference"]} out of reference, '
               f'{counts[references.NO_REFERENCE]} with no reference '
               f'(run and logged, not checked)')
    return rows, summary


#: why a figure section can be empty
_EMPTY_FIGURES = {
    'Latency and bandwidth vs message size':
        'no metric of these runs has a message size (a msg_bytes '
        'parameter, or a ContentionSuite metric <pattern>_<size>_latency)',
    '(k ppn) / (1 ppn) ratios':
        'no latency measured at two ppn or more on the same nodes, '
        'interconnect and size',
    'Memory: bandwidth, (all ranks)/(1 rank), latency':
        'no MemoryStrided, MemoryRandom or MemoryLatency metric read',
    'Link matrices': 'no linkmatrix_<fabric>.csv below --matrices',
    'Trends with reference bands and change points':
        'no metric has a reference or a change point',
}


def render(samples, outdir, matrix_dirs=(), max_trends=40,
           title='clustergate report', outcomes=None,
           verdicts=None, ver=None, name='index.html') -> str:
    """Write the figures and the page ``name`` to ``outdir``; return the
    page's path. ``outcomes``: failed test cases (:func:`load_outcomes`),
    None when the sources hold no test results; ``verdicts``: the
    LinkMatrix check's verdict per matrix directory
    (:func:`matrix_verdicts`); ``ver``: the :class:`Verdict` if the caller
    has it."""
    import jinja2

    os.makedirs(outdir, exist_ok=True)
    groups = _by_run_and_key(samples)
    ver = ver or verdict(samples, outcomes)
    sections = [
        ('Latency and bandwidth vs message size',
         sizefigures.size_figures(groups, outdir)),
        ('(k ppn) / (1 ppn) ratios',
         sizefigures.ppn_ratio_figures(groups, outdir)),
        ('Memory: bandwidth, (all ranks)/(1 rank), latency',
         nodefigures.memory_figures(groups, outdir)),
        ('Link matrices', matrix_figures(matrix_dirs, outdir,
                                         verdicts=verdicts)),
        ('Trends with reference bands and change points',
         trends.trend_figures(groups, outdir, max_trends, ver.changes)),
    ]
    rows, summary = _rows(groups)
    span = ''
    if samples:
        span = (f'{_utc(min(s.time for s in samples))} .. '
                f'{_utc(max(s.time for s in samples))} UTC')

    env = jinja2.Environment(
        loader=jinja2.PackageLoader('clustergate.report.page', 'templates'),
        autoescape=True, undefined=jinja2.StrictUndefined)
    page = env.get_template('report.html.j2').render(
        title=title, verdict=ver, why=ver.empty_reasons(),
        regressions=[d for d in ver.deviations if d.kind == 'regression'],
        now=_utc(dt.datetime.now().timestamp()), measurements=len(samples),
        span=span, summary=summary, sections=sections,
        empty_figures=_EMPTY_FIGURES, rows=rows)
    path = os.path.join(outdir, name)
    with open(path, 'w') as fp:
        fp.write(page)

    return path
