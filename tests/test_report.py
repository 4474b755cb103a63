"""``clustergate report``: figures and the HTML page, from synthetic
samples and (e2e) from the perflog of a real ReFrame run."""

import os
import subprocess
import sys

import pytest

from clustergate.results.samples import Key, Sample
from clustergate.links import matrix as lm
from clustergate.report import page as report
from clustergate.report import samplestatus, trends

pytest.importorskip('matplotlib')

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)


def _s(check, point, metric, value, unit, t, ref=None, lower=None,
       upper=None):
    return Sample(Key('emu', 'p', check, point, metric),
                           value, unit, t, f'run{t}', 'pass', ref, lower,
                           upper)


def _samples():
    out = []
    for t in (1000.0, 2000.0, 3000.0):
        for ppn in (1, 2):
            for size, lat in ((8, 5.0), (10000, 50.0), (1000000, 9000.0)):
                point = (f'interconnect=fab0,msg_bytes={size},num_nodes=2,'
                         f'ppn={ppn}')
                out.append(_s('PingPongDistance', point, 'latency',
                              lat * ppn, 'us', t))
                out.append(_s('PingPongDistance', point, 'bandwidth',
                              size / lat / ppn, 'MB/s', t))

        # a metric with a reference, out of it at the last run
        out.append(_s('LinkMatrix', 'interconnect=fab0,num_nodes=4,ppn=1',
                      'bw_median', 100.0 if t < 3000 else 40.0, 'MB/s', t,
                      ref=100.0, lower=-0.3, upper=0.9))
    return out


def test_status_and_band():
    ok = _s('A', '*', 'bw', 95.0, 'MB/s', 1, 100.0, -0.1, None)
    bad = _s('A', '*', 'bw', 80.0, 'MB/s', 1, 100.0, -0.1, None)
    noref = _s('A', '*', 'bw', 80.0, 'MB/s', 1, 0.0, None, None)
    assert samplestatus.status(ok) == 'ok'
    assert samplestatus.status(bad) == 'out of reference'
    assert samplestatus.status(noref) == 'no reference'
    assert samplestatus.band(ok) == (90.0, None)


def test_render_all_sections(tmp_path):
    mdir = tmp_path / 'output' / 'emu' / 'p' / 'openmpi' / 'LinkMatrix_1'
    mdir.mkdir(parents=True)
    bw = {(s, d): 100.0 for s in 'abcd' for d in 'abcd' if s != d}
    bw[('a', 'c')] = bw[('c', 'a')] = 26.0
    lm.write_csv(lm.Matrix(list('abcd'), bw), mdir / 'linkmatrix_fab0.csv')
    out = tmp_path / 'report'
    page = report.render(_samples(), str(out), [str(tmp_path / 'output')])
    text = open(page).read()
    pngs = sorted(p.name for p in out.glob('*.png'))
    assert 'size_emu_p_PingPongDistance.png' in pngs
    assert 'ppn_emu_p_PingPongDistance.png' in pngs
    assert 'linkmatrix_emu_p_fab0.png' in pngs
    assert any(p.startswith('trend_emu_LinkMatrix') for p in pngs)
    for png in pngs:
        assert (out / png).read_bytes()[:4] == b'\x89PNG'
        assert f'src="{png}"' in text

    assert 'suspect link a&lt;-&gt;c on fabric fab0: 0.26x median' in text
    assert 'out of reference' in text
    assert 'no reference' in text
    assert '0 within reference, 1 out of reference, 12 with no reference' \
        in text


@pytest.mark.e2e
def test_report_from_a_real_run(tmp_path):
    """A real ReFrame run on this machine (one small ping-pong) writes a
    perflog; the report renders from it."""
    reframe = os.path.join(BIN, 'reframe')
    if not os.path.exists(reframe):
        pytest.skip('reframe not installed in this environment')

    env = dict(os.environ, CG_PERFLOG_DIR=str(tmp_path / 'perflogs'),
               CG_RESULTS_DB=str(tmp_path / 'results.db'),
               CG_REFERENCES_DIR=str(tmp_path / 'refs'),
               CG_DEBUG_LOG=str(tmp_path / 'reframe.log'))
    env.pop('SLURM_CONF', None)         # this machine, not the cluster
    proc = subprocess.run(
        [reframe, '-C', os.path.join(ROOT, 'config', 'settings.py'),
         '--system', 'localhost', '--prefix', str(tmp_path / 'rfm'),
         '-n', 'PingPongDistance%num_nodes=1%ppn=2%interconnect=shm',
         '-S', 'valid_prog_environs=openmpi', '-S', 'trials=5', '-r'],
        capture_output=True, text=True, env=env, timeout=600, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    logs = list((tmp_path / 'perflogs').rglob('PingPongDistance.log'))
    assert logs, 'no perflog written'
    # the run had no reference file: the perflog says so
    assert 'no reference' in logs[0].read_text()

    cg = os.path.join(BIN, 'clustergate')
    proc = subprocess.run(
        [cg, 'report', '--perflogs', str(tmp_path / 'perflogs'),
         '--matrices', str(tmp_path / 'rfm'),
         '-o', str(tmp_path / 'r' / 'index.html')],
        capture_output=True, text=True, timeout=300
    )
    # no reference: nothing judged, not "checked and fine"
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stdout.startswith('UNCHECKED: ')
    text = (tmp_path / 'r' / 'index.html').read_text()
    assert 'size_localhost_local_PingPongDistance.png' in text
    assert (tmp_path / 'r' / 'size_localhost_local_PingPongDistance.png'
            ).exists()
    assert 'with no reference' in text and 'PingPongDistance' in text


def _tc(name, result, phase=None, reason=None, perf=None, t=5000.0):
    return {'name': name, 'display_name': name, 'system': 'emu',
            'partition': 'p', 'environ': 'openmpi', 'result': result,
            'fail_phase': phase, 'fail_reason': reason,
            'job_completion_time_unix': t, 'perfvalues': perf or {}}


def _session(uuid, t, cases):
    return {'session_info': {'uuid': uuid, 'time_end_unix': t},
            'runs': [{'run_index': 0, 'testcases': cases}]}


def test_outcomes_are_the_last_attempt_of_the_latest_session(tmp_path):
    import json
    old = _session('s1', 1000.0, [_tc('A', 'fail', 'sanity', 'old')])
    new = _session('s2', 2000.0, [_tc('B', 'pass')])
    new['runs'].append({'run_index': 1, 'testcases': [
        _tc('C', 'fail', 'sanity', 'performance error:\n  failed to meet '
            'reference(s):\n    latency=12420 us, expected 7821'),
        _tc('B', 'fail', 'run', 'retried and failed')]})
    new['runs'][0]['testcases'].append(_tc('C', 'fail', 'sanity', 'x'))
    paths = []
    for i, r in enumerate((old, new)):
        p = tmp_path / f'r{i}.json'
        p.write_text(json.dumps(r))
        paths.append(str(p))

    out = report.load_outcomes(None, paths)
    assert sorted((o.name, o.phase, o.reason, o.session) for o in out) == [
        ('B', 'run', 'retried and failed', 's2'),
        # every line of the reason: the figures are not on the first
        # a performance error, whichever stage raised it
        ('C', 'performance (raised in sanity)',
         'performance error: failed to meet reference(s): '
         'latency=12420 us, expected 7821', 's2')]
    assert report.load_outcomes(None, []) is None


def test_verdict_first_regression_apart_from_better(tmp_path):
    samples = []
    for i in range(10):
        t = 1000.0 * (i + 1)
        # a link that lost 20 % from run 6 on: a change point
        samples.append(_s('LinkMatrix', 'environ=openmpi,interconnect=fab0',
                          'bw_min', 100.0 if i < 6 else 80.0, 'MB/s', t,
                          ref=100.0, lower=-0.1, upper=None))
        # Hotspot far above its reference: better, not a regression
        samples.append(_s('Hotspot', 'environ=openmpi,msg_bytes=1048576',
                          'bandwidth', 302.0, 'MB/s', t, ref=63.6,
                          lower=-0.2, upper=0.5))
    failed = [report.Outcome('Barrier %ppn=2', 'emu:p+openmpi', 'fail',
                             'sanity', 'no CG_DONE line', 9000.0, 's9')]
    page = open(report.render(samples, str(tmp_path / 'r'), [],
                              outcomes=failed)).read()
    head = page[:page.index('Latency and bandwidth vs message size')]
    assert 'RED:' in head and 'Barrier %ppn=2' in head
    assert '1 metric(s) out of reference the worse way' in head
    row = head[head.index('<td>Hotspot'):]
    assert '+374.8 %' in row[:400] and 'better than reference' in row[:400]
    row = head[head.index('<td>LinkMatrix'):]
    assert '-20.0 %' in row[:400] and 'regression' in row[:400]
    # the change point, with its first run and date
    assert 'session run7000.0' in head
    assert '1970-01-01 01:56' in head
    # its trend is drawn first, marked as bad
    assert page.index('trend_emu_LinkMatrix') < page.index('trend_emu_Hotspot')


def test_empty_sections_say_why(tmp_path):
    samples = [_s('PingPongDistance', 'environ=openmpi,msg_bytes=8',
                  'latency', 5.0, 'us', 1000.0 * i) for i in range(1, 4)]
    page = open(report.render(samples, str(tmp_path / 'r'), [])).read()
    # nothing was checked: not green
    assert ('UNCHECKED: no metric was judged: none of the 1 metric(s) '
            'measured has a reference; no test results read (perflogs '
            'only) (write references: clustergate baseline)') in \
        ' '.join(page.split())
    assert 'no test results read: perflogs hold only measurements' in page
    assert 'none: no metric has a reference' in page
    assert 'every history is within its noise' in page
    assert 'no linkmatrix_&lt;fabric&gt;.csv below --matrices' in page


def test_size_figures_show_one_session_with_the_mpi():
    a = [_s('P', f'environ={e},msg_bytes=8', 'latency', v, 'us', t)
         for e, v, t in (('openmpi', 5.0, 1000.0), ('intelmpi', 9.0, 1100.0),
                         ('openmpi', 6.0, 9000.0), ('intelmpi', 8.0, 9100.0))]
    # perflog samples (job@time ids): sessions split at a gap of over 1 h
    a = [Sample(s.key, s.value, s.unit, s.time, f'1@{s.time}',
                         'pass')
         for s in a]
    assert sorted(s.value for s in samplestatus.latest_session(a)) == [6.0, 8.0]
    # results-DB samples: by session id, whatever the gaps
    b = [Sample(s.key, s.value, s.unit, s.time,
                         'u1:0' if s.time < 5000 else 'u2:0', 'pass')
         for s in a]
    b.append(Sample(a[0].key, 7.0, 'us', 20000.0, 'u2:0', 'pass'))
    assert sorted(s.value for s in samplestatus.latest_session(b)) == [6.0, 7.0,
                                                                  8.0]


TREE_HEALTHY = os.path.join(ROOT, 'tests', 'fixtures', 'reports',
                            'linkmatrix-tree-healthy')


def test_matrix_caption_is_the_checks_verdict_not_the_flat_median(tmp_path):
    # A real session of LinkMatrix on the emulated leaf/spine cluster
    # (9 nodes, 2:1 uplinks, healthy): the check judged the matrix against
    # the declared tree and passed; against the plain median the
    # oversubscribed cross-switch flows look slow. The page must show the
    # check's verdict, not a red flat one.
    import json
    import shutil
    mdir = tmp_path / 'output' / 'emucluster' / 'emu' / 'openmpi' / 'LM'
    mdir.mkdir(parents=True)
    csv = os.path.join(TREE_HEALTHY, 'linkmatrix_fab0.csv')
    shutil.copy(csv, mdir)
    assert not lm.analyse(lm.read_csv(csv), fabric='fab0').healthy
    with open(os.path.join(TREE_HEALTHY, 'report.json')) as fp:
        rep = json.load(fp)
    for run in rep['runs']:
        for tc in run['testcases']:
            tc['outputdir'] = str(mdir)    # where this copy of it lives
    path = tmp_path / 'report.json'
    path.write_text(json.dumps(rep))

    verdicts = report.matrix_verdicts(None, [str(path)])
    figs = report.matrix_figures([str(tmp_path / 'output')], str(tmp_path),
                                 verdicts=verdicts)
    assert len(figs) == 2
    assert figs[0]['text'].startswith('LinkMatrix passed')
    assert figs[0]['bad'] is False
    # this session's stage kept no tree: the page says so, draws none
    assert 'no fabric drawing' in figs[1]['title'] and 'svg' not in figs[1]

    # without the run report the page says what it judged by
    figs = report.matrix_figures([str(tmp_path / 'output')], str(tmp_path))
    assert figs[0]['text'].startswith('ratio to the median, no topology')
    assert figs[0]['bad'] is True


def test_a_single_run_is_not_drawn_as_a_trend(tmp_path):
    # one point drawn on a date axis spread over four years (seen in a
    # real nightly's page): the table has its value, a trend needs runs
    one = _s('A', '*', 'bw', 80.0, 'MB/s', 1000.0, 100.0, -0.1, None)
    two = [_s('B', '*', 'bw', v, 'MB/s', t, 100.0, -0.1, None)
           for v, t in ((99.0, 1000.0), (80.0, 2000.0))]
    figs = trends.trend_figures(report._by_run_and_key([one] + two),
                                str(tmp_path))
    drawn = [f for f in figs if f.get('file')]
    assert [f['title'] for f in drawn] == [two[0].key.label()]
    assert 'single run' in figs[-1]['title']


def test_a_bound_of_zero_is_out_of_reference_without_dividing_by_it():
    # the link matrix's `faults`: 0 expected, a failing matrix logs 1
    # (the page crashed with ZeroDivisionError on a real failing drill)
    s = _s('LinkMatrix', '*', 'faults', 1.0, 'verdicts', 1000.0, 0.0,
           None, 0.0)
    devs = report.deviations({s.key: [s]})
    assert [(d.kind, d.deviation) for d in devs] == [('regression', None)]


# -- the headline: GREEN only for what was judged ---------------------------

def _noref(metric='latency', value=5.0, t=1000.0):
    return _s('PingPongDistance', 'environ=openmpi,msg_bytes=8', metric,
              value, 'us', t)


def _judged(value=10.0, t=1000.0):
    return _s('PingPongDistance', 'environ=openmpi,msg_bytes=1000000',
              'bandwidth', value, 'MB/s', t, ref=10.0, lower=-0.5,
              upper=1.5)


def test_all_passed_and_no_reference_is_unchecked_not_green():
    # the results database read, every test passed, no metric has a
    # reference: nothing was judged
    ver = report.verdict([_noref(), _noref('latency_r1')], outcomes=[])
    assert ver.word == 'UNCHECKED'
    assert ver.headline() == (
        'UNCHECKED: no metric was judged: none of the 2 metric(s) measured '
        'has a reference; 0 failed test case(s) (write references: '
        'clustergate baseline)')


def test_green_names_what_was_judged_and_what_was_not():
    ver = report.verdict([_noref(), _judged()], outcomes=[])
    assert ver.headline() == (
        'GREEN: 0 failed test case(s), 0 metric(s) out of reference the '
        'worse way, 0 change point(s) across runs; 1 of 2 metric(s) judged '
        'against a reference, 1 with no reference (run and logged, not '
        'checked)')


def test_red_headline_counts_too():
    ver = report.verdict([_noref(), _judged(4.0)], outcomes=[])
    assert ver.headline() == (
        'RED: 0 failed test case(s), 1 metric(s) out of reference the '
        'worse way, 0 change point(s) across runs; 1 of 2 metric(s) judged '
        'against a reference, 1 with no reference (run and logged, not '
        'checked)')


def test_declared_directions_decide_better_or_regression():
    noise = _s('OsNoise', 'environ=openmpi,ppn=2', 'slowdown_k', 0.002, 'x',
               1000.0, ref=0.5, lower=-0.5, upper=0.5)
    mem = _s('MemoryRandom', 'kernel=rand_read', 'bw', 4180.0, 'MB/s',
             1000.0, ref=1000.0, lower=-0.5, upper=1.5)
    ver = report.verdict([noise, mem], outcomes=[])
    # a quieter machine (-99.6 %) and a faster memory (+318 %) are better
    # than their reference, not regressions
    assert sorted((d.key.metric, d.kind, round(100 * d.deviation, 1))
                  for d in ver.deviations) == [
        ('bw', 'better than reference', 318.0),
        ('slowdown_k', 'better than reference', -99.6)]
    assert ver.word == 'GREEN'


def test_junit_carries_the_headline_and_counts():
    from xml.etree import ElementTree as ET
    ver = report.verdict([_noref(), _noref('latency_r1')], outcomes=[])
    suite = ET.fromstring(report.junit(ver)).find('testsuite')
    props = {p.get('name'): p.get('value')
             for p in suite.find('properties')}
    assert props == {'verdict': 'UNCHECKED', 'metrics': '2', 'judged': '0',
                     'no_reference': '2', 'failed_tests': '0',
                     'failed_fixtures': '0'}
    cases = {c.get('name'): c for c in suite.findall('testcase')}
    assert cases['verdict'].find('skipped').get('message') == \
        ver.headline()
    assert cases['metrics with no reference'].find('skipped').get(
        'message') == ('2 of 2 metric(s) have no reference: run and logged, '
                       'not checked')
    ver = report.verdict([_noref(), _judged(4.0)], outcomes=[
        report.Outcome('Barrier %ppn=2', 'emu:p+openmpi', 'fail', 'sanity',
                       'no output', 1.0, 's1')])
    suite = ET.fromstring(report.junit(ver)).find('testsuite')
    assert (suite.get('tests'), suite.get('failures'),
            suite.get('skipped')) == ('4', '3', '1')
    failed = [c.get('name') for c in suite.findall('testcase')
              if c.find('failure') is not None]
    assert failed == ['verdict', 'Barrier %ppn=2 emu:p+openmpi',
                      'PingPongDistance emu:p '
                      '[environ=openmpi,msg_bytes=1000000] bandwidth']


def test_command_prints_the_headline_and_writes_junit(tmp_path, capsys):
    # a real run report of localhost, which has no reference file: every
    # test passed, nothing was judged
    from clustergate import cli
    out = tmp_path / 'r'
    args = cli.build_parser().parse_args([
        'report', '--json', os.path.join(
            ROOT, 'tests', 'fixtures', 'reports',
            'hpcc-ci-localhost.report.json'),
        '--matrices', str(tmp_path), '-o', str(out / 'index.html'),
        '--junit', str(out / 'verdict.xml')])
    assert args.func(args) == 3     # UNCHECKED: nothing was judged
    head = ('UNCHECKED: no metric was judged: none of the 20 metric(s) '
            'measured has a reference; 0 failed test case(s) (write '
            'references: clustergate baseline)')
    assert capsys.readouterr().out.splitlines()[0] == head
    assert head in ' '.join((out / 'index.html').read_text().split())
    assert f'<skipped message="{head}">' in (out / 'verdict.xml').read_text()


def test_ci_nightly_report_lists_failed_tests_and_publishes_the_verdict():
    # the results database holds the test results (perflogs hold only
    # measurements: a build or sanity failure would not be listed)
    import yaml
    with open(os.path.join(ROOT, 'ci', 'gitlab-ci.yml')) as fp:
        nightly = yaml.safe_load(fp)['nightly']
    (cmd,) = [line for line in nightly['script']
              if 'clustergate report' in line]
    assert '--db "$CG_RESULTS_DB"' in cmd and '--perflogs' not in cmd
    assert '--junit report/verdict.xml' in cmd
    assert nightly['artifacts']['reports']['junit'] == [
        'junit.xml', 'report/verdict.xml']
