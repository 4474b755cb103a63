"""The verdict block that ends a session: failures with their reason,
regressions, metrics judged and not, cases not run, time, where the full
table is; one screen whatever the size of the session. Reports in the
shape ReFrame 4.10 writes them (``perfvalues``: value, reference, lower,
upper, unit, result; no reference is ``0, None, None``)."""

from clustergate.results import verdict


def case(name, result='pass', perf=None, phase=None, reason=None,
         fixture=False):
    return {'name': name.split()[0], 'display_name': name,
            'hashcode': f'{abs(hash(name)) % 16**8:08x}',
            'system': 'localhost', 'partition': 'local',
            'environ': 'openmpi', 'result': result, 'fail_phase': phase,
            'fail_reason': reason, 'fixture': fixture,
            'job_nodelist': 'vm', 'jobid': '42',
            'perfvalues': {f'localhost:local:{k}': v
                           for k, v in (perf or {}).items()}}


def report(cases, elapsed=131.0):
    return {'session_info': {'time_elapsed': elapsed, 'uuid': 'u',
                             'time_start': 't', 'cmdline': 'reframe -r'},
            'runs': [{'testcases': cases}]}


CASES = [
    case('CgProgramsBuild ~localhost:local+openmpi', fixture=True),
    case('MemoryLatency %scale=small', perf={
        'lat_L1': [4.181, 0, None, None, 'ns', 'pass'],
        'lat_L2': [17.17, 0, None, None, 'ns', 'pass']}),
    case('Barrier %msg_bytes=0', 'fail', phase='performance',
         reason='failed to meet references: t_us=12.1, expected 10 '
                '(l=9.5, u=11.0)', perf={
             't_us': [12.1, 10, -0.05, 0.1, 'us', 'fail'],
             'spread': [0.1, 0.2, None, 0.5, 'x', 'pass']}),
    case('RightShift %ppn=2', 'fail', phase='sanity',
         reason='payload error on rank 1\nsecond line'),
    case('NpbCG %npb_class=A', 'skip'),
]


def test_the_block_names_failures_regressions_and_counts():
    lines = verdict.block(report(CASES), not_run=1,
                          table='/abs/perf/performance.txt')
    assert lines == [
        ' VERDICT '.center(80, '='),
        'FAILED: 2 of 3 test case(s) failed',
        'failures (1):',
        '  RightShift %ppn=2 @localhost:local+openmpi: sanity: payload '
        'error on rank 1',
        'regressions (1 metric(s) outside their reference):',
        '  Barrier %msg_bytes=0 @localhost:local+openmpi: t_us = 12.1 us, '
        'reference 10 (-5 % .. +10 %)',
        'metrics: 4 measured: 2 judged against a reference (1 outside it), '
        '2 with no reference (not judged)',
        'not run: 1 test case(s) (NOT RUN above)',
        'cases: 3 of 4 test(s) ran, 1 not run; 1 of 1 fixture(s) (builds, '
        'shared runs) ran: ReFrame\'s "Ran 4/5"',
        'time: 2m11s wall (TIME BREAKDOWN above)',
        "performance table: /abs/perf/performance.txt (--performance-report "
        "prints ReFrame's here)",
        '=' * 80,
    ]


def test_nothing_judged_is_said_and_a_red_reason_fails():
    lines = verdict.block(report(CASES[:2]), not_run=0,
                          red_reasons=['npb expected on localhost:local ran '
                                       'not at all'])
    assert lines[1] == ('FAILED: npb expected on localhost:local ran not at '
                        'all')
    assert ('metrics: 2 measured: 0 judged against a reference (0 outside '
            'it), 2 with no reference (not judged): nothing was checked '
            'against a reference') in lines
    assert 'not run: none' in lines


def test_a_clean_session_without_references_is_unchecked():
    lines = verdict.block(report(CASES[:2]), not_run=0)
    assert lines[1] == ('PASSED, UNCHECKED: 1 test case(s) ran, none '
                        'failed, but none of their 2 metric(s) has a '
                        'reference')


def test_a_clean_judged_session_passes():
    judged = case('Barrier %msg_bytes=0', perf={
        't_us': [9.9, 10, -0.05, 0.1, 'us', 'pass']})
    lines = verdict.block(report(CASES[:2] + [judged]), not_run=0)
    assert lines[1] == 'PASSED: 2 test case(s) ran, none failed'


def test_many_failures_still_fit_one_screen():
    many = [case(f'RightShift %ppn={i}', 'fail', phase='run',
                 reason='x' * 500) for i in range(40)]
    many += [case(f'Barrier %ppn={i}', 'fail', phase='performance',
                  perf={'t_us': [2.0, 1.0, None, 0.1, 'us', 'fail']})
             for i in range(40)]
    lines = verdict.block(report(many), not_run=300, table='t.txt')
    assert len(lines) <= 30
    assert '  ... and 32 more (SUMMARY OF FAILURES above)' in lines
    assert '  ... and 32 more (the performance table)' in lines
    assert max(len(ln) for ln in lines) < 250


def test_the_table_file_has_every_metric(tmp_path):
    path = verdict.write_table(report(CASES), str(tmp_path / 'p' / 'perf.txt'))
    rows = (tmp_path / 'p' / 'perf.txt').read_text().splitlines()
    assert rows[0].startswith('# performance of session u')
    body = [r for r in rows[3:] if r.strip()]
    assert len(body) == 4 and path.endswith('perf.txt')
    t_us = next(r for r in body if ' t_us ' in r)
    assert '-5 %' in t_us and '+10 %' in t_us
    assert t_us.rstrip().endswith('fail')
    assert next(r for r in body if 'lat_L1' in r).rstrip().endswith(
        'not judged')
    # no metric: no file
    assert verdict.write_table(report(CASES[3:]), str(tmp_path / 'x')) is None
    assert not (tmp_path / 'x').exists()


def test_a_retry_that_measured_nothing_keeps_the_first_runs_metrics():
    first = case('LinkMatrix %interconnect=fab0', 'fail', phase='performance',
                 reason='faults=1 verdicts: slow uplink', perf={
                     'faults': [1, 0, None, 0, 'verdicts', 'fail'],
                     'bw_median': [28.1, 0, None, None, 'MB/s', 'pass']})
    retry = dict(first, fail_phase='setup', perfvalues={})
    rep = {'session_info': {'time_elapsed': 60.0},
           'runs': [{'testcases': [first]}, {'testcases': [retry]}]}
    lines = verdict.block(rep, not_run=0, table='/t/performance.txt')
    assert ('metrics: 2 measured: 1 judged against a reference (1 outside '
            'it), 1 with no reference (not judged)') in lines, lines
    assert 'FAILED: 1 of 1 test case(s) failed' in lines, lines


def _decided_retry():
    """A link matrix case whose verdict was decided in the first run; the
    retry keeps it, failing before its job (DecidedVerdict)."""
    reason = ('performance error: faults=1 verdicts: slow uplink (decided; '
              'not measured again)')
    first = case('LinkMatrix %interconnect=fab0', 'fail', phase='performance',
                 reason=reason, perf={
                     'faults': [1, 0, None, 0, 'verdicts', 'fail']})
    retry = dict(first, fail_phase='setup', perfvalues={})
    return first, retry


def test_a_performance_verdict_kept_by_a_retry_is_not_a_setup_failure():
    first, retry = _decided_retry()
    assert verdict.failure_stage(retry, [first]) == (
        'performance (of run 0; run 1 kept its verdict, stopped in setup)')
    rep = {'session_info': {}, 'runs': [{'testcases': [first]},
                                        {'testcases': [retry]}]}
    lines = verdict.block(rep, not_run=0)
    assert not any('setup: performance error' in ln for ln in lines), lines
    # the regression line names it, once
    assert 'regressions (1 metric(s) outside their reference):' in lines
    assert not any(ln.startswith('failures') for ln in lines), lines


def test_a_performance_error_raised_in_another_stage_says_so():
    _, retry = _decided_retry()
    assert verdict.failure_stage(retry) == 'performance (raised in setup)'
    lines = verdict.block(report([retry]), not_run=0)
    assert ('  LinkMatrix %interconnect=fab0 @localhost:local+openmpi: '
            'performance (raised in setup): performance error: faults=1 '
            'verdicts: slow uplink (decided; not measured again)') in lines
    plain = case('RightShift', 'fail', phase='setup', reason='no node')
    assert verdict.failure_stage(plain) == 'setup'


def test_the_counts_agree_with_reframes_and_the_time_breakdown():
    """Tests and fixtures apart, every block's figure adds up to ReFrame's
    "Ran N/M": a skipped test, an aborted one, a fixture that ran and one
    that did not."""
    from clustergate.results import counts, timing

    cases = CASES + [case('NpbEP %npb_class=A', 'abort', phase='run',
                          reason='KeyboardInterrupt'),
                     case('HpccRun ~localhost', 'skip', fixture=True)]
    rep = report(cases)
    tally = counts.session_counts(rep)
    # ReFrame: completed (pass, fail, xfail, xpass) / every case
    assert (tally.ran, tally.total) == (4, 7)
    assert (tally.tests, tally.tests_ran, tally.fixtures,
            tally.fixtures_ran) == (5, 3, 2, 1)
    lines = verdict.block(rep, not_run=tally.tests_not_run)
    assert lines[1] == 'FAILED: 3 of 4 test case(s) failed (1 aborted)'
    assert 'not run: 2 test case(s) (NOT RUN above)' in lines
    assert ('cases: 3 of 5 test(s) ran, 2 not run; 1 of 2 fixture(s) '
            '(builds, shared runs) ran: ReFrame\'s "Ran 4/7"') in lines
    head = timing.breakdown(rep)[0]
    assert head.startswith('TIME BREAKDOWN: 4 case(s) ran')
    assert head.endswith('; 3 test(s) + 1 fixture(s), ReFrame\'s '
                         '"Ran 4/7"')


def test_a_session_that_ran_nothing_is_unchecked_not_passed():
    skipped = case('NpbSP %npb_class=A', 'skip')
    lines = verdict.block(report([skipped]), not_run=1)
    assert lines[1] == ('PASSED, UNCHECKED: no test case ran, none failed; '
                        'nothing was checked (NOT RUN says why)')


def test_a_failed_shared_run_is_red_though_no_test_failed():
    # a night's 8-node HPCC run cancelled in HPL (2026-12-02): its reader
    # did not run, every test that ran passed, ReFrame exited 1
    cases = [case('HpccRun %num_nodes=8 ~emusite:emu+openmpi', 'fail',
                  phase='sanity', reason='HPCC output has no complete '
                  'Summary section', fixture=True),
             case('HpccStream %hpcc.num_nodes=8', 'fail_deps'),
             case('MemoryLatency %scale=small', perf={
                 'lat_L1': [4.181, 4.0, -0.1, 0.1, 'ns', 'pass']})]
    lines = verdict.block(report(cases), not_run=1)
    assert lines[1] == ('FAILED: 1 fixture(s) (builds, shared runs) '
                        'failed, 1 test case(s) that read them not run')
    assert lines[3].startswith('  HpccRun %num_nodes=8')
    # a fixture that was skipped (no source) is no failure
    cases[0] = case('HpccRun %num_nodes=8 ~emusite:emu+openmpi', 'skip',
                    fixture=True)
    cases[1] = case('HpccStream %hpcc.num_nodes=8', 'skip')
    assert verdict.block(report(cases), not_run=1)[1].startswith('PASSED')


def test_the_points_no_night_holds_are_said_after_the_cases_not_run(
        monkeypatch):
    # a nightly rotation's points that each alone exceed the night budget
    # run in acceptance only: the verdict says so, the headline stands
    monkeypatch.setattr(verdict, '_coverage', {'emusite': (
        'not in any night: 208 acceptance point(s) of emusite, each alone '
        'above the night budget: --mode acceptance runs them')})
    lines = verdict.block(report(CASES[:2]), not_run=0,
                          coverage=verdict.coverage_lines())
    at = lines.index('not run: none')
    assert lines[at + 1].startswith('not in any night: 208 acceptance '
                                    'point(s) of emusite')
    assert lines[1].startswith('PASSED, UNCHECKED')
    monkeypatch.setattr(verdict, '_coverage', {})
    assert verdict.coverage_lines() == []
