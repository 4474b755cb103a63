"""The sensitivity benchmark's bookkeeping (clustergate_lab.sensitivity): the
plan, what a verdict names, how a run is scored, the table. The runs
themselves need the emulated cluster (docs/reports/sensitivity.md)."""

import os

from clustergate_lab import sensitivity as sens


def test_campaign_plan_is_deterministic_and_hops_nodes():
    plan = sens.campaign(nodes=9, levels=(90, 50), runs=5, healthy=3)
    assert [r.kind for r in plan] == ['healthy'] * 3 + ['degraded'] * 10
    assert plan == sens.campaign(nodes=9, levels=(90, 50), runs=5,
                                 healthy=3)
    nodes90 = [r.node for r in plan if r.level == 90]
    # five runs of a level: five different nodes, not two on one leaf in a
    # row (leaves are n1-3, n4-6, n7-9)
    assert len(set(nodes90)) == 5
    leaf = [(int(n[1:]) - 1) // 3 for n in nodes90]
    assert all(a != b for a, b in zip(leaf, leaf[1:]))
    assert len({r.id for r in plan}) == len(plan)


def test_nights_plan_degrades_from_night_k():
    plan = sens.nights(12, 7, 90, 'n5')
    assert [r.night for r in plan] == list(range(1, 13))
    assert [r.node for r in plan[:6]] == [None] * 6
    assert {(r.node, r.level) for r in plan[6:]} == {('n5', 90)}


def test_named_subjects_of_each_verdict_kind():
    reason = ('suspect node n5 on fabric fab0: its link behaves as 0.43x; '
              'suspect link n1->n4 on fabric fab0: 0.6x; uplink '
              'leaf2-spine on fabric fab0: cross-switch flows at 0.39x; '
              'miscabled node n2 on fabric fab0: n2 behaves as if cabled '
              'to leaf3')
    assert sens.named_subjects(reason) == ['n1', 'n2', 'n4', 'n5',
                                           'uplink:leaf2']
    assert sens.named_subjects('no CG_DONE completion line') == []
    # a node link named by its retest: the partners it was measured with
    # are not named (the real line of a live run, 2026-11-23)
    retest = ('performance error: failed to meet reference(s): faults=1 '
              'verdicts: slow node link n2 on fabric fab0: retest: sent '
              '0.89x its partners alone, 3 of 3 retests at or below 0.95x '
              '(p = 0.005, 3 retests); slow against both halves of its '
              'partners (n7, n9, n1, n6): its own link (first round: sent '
              '0.89x its peers (-11.8 MADs), not named on its own)')
    assert sens.named_subjects(retest) == ['n2']
    assert sens.named_subjects('slow link n3->n4 on fabric fab0: retest: '
                               '...') == ['n3', 'n4']


def _run(kind, node, result, named, level=90):
    return sens.Run('x', kind, level, node, result=result, named=named,
                    wall_s=30.0)


def test_classify_right_wrong_and_missed():
    assert sens.classify(_run('degraded', 'n5', 'fail', ['n5'])) == \
        (True, True, False)
    assert sens.classify(_run('degraded', 'n5', 'fail', ['n4'])) == \
        (True, False, True)
    assert sens.classify(_run('degraded', 'n5', 'fail', ['n4', 'n5'])) == \
        (True, True, True)
    assert sens.classify(_run('degraded', 'n5', 'pass', [])) == \
        (False, False, False)


def test_table_counts_levels_and_false_alarms():
    runs = [_run('degraded', 'n5', 'fail', ['n5']),
            _run('degraded', 'n1', 'pass', []),
            _run('degraded', 'n2', 'fail', ['n2'], level=50),
            _run('healthy', None, 'pass', [], level=100),
            _run('healthy', None, 'fail', ['n3'], level=100)]
    rows, hrow = sens.table(runs)
    assert rows == [(90, 2, 1, 1, 0, 30.0), (50, 1, 1, 1, 0, 30.0)]
    assert hrow[:3] == (100, 2, 1)
    text = sens.markdown(rows, hrow)
    assert '| 90 % | 2 | 1/2 | 1/2 | 0/2 |' in text
    assert 'false alarms 1/2' in text


def test_interleaved_campaign_covers_every_level_early():
    plan = sens.campaign(nodes=9, levels=(90, 50), runs=5, healthy=20)
    order = sens.interleaved(plan)
    assert sorted(r.id for r in order) == sorted(r.id for r in plan)
    first = order[:6]           # one round: 4 healthy, one of each level
    assert [r.kind for r in first].count('healthy') == 4
    assert {r.level for r in first if r.kind == 'degraded'} == {90, 50}


def test_a_decided_retry_counts_as_its_verdict(tmp_path):
    import json
    verdict = ('faults=1 verdicts: suspect node n5 on fabric fab0: ... '
               '[basis: fabric model]; retest: sent 0.50x its partners '
               'alone (decided by the link retest in an earlier run of '
               'this session; not measured again: -S retry_decided=true '
               'to measure again)')

    def report(phase, reason):
        path = tmp_path / 'report.json'
        path.write_text(json.dumps({'session_info': {'uuid': 'u'}, 'runs': [
            {'testcases': [{'name': 'LinkMatrix %x', 'result': 'fail',
                            'fail_phase': 'performance',
                            'fail_reason': 'first run'}]},
            {'testcases': [{'name': 'LinkMatrix %x', 'result': 'fail',
                            'fail_phase': phase, 'fail_reason': reason}]}]}))
        return sens.read_report(str(path))

    assert report('setup', verdict) == ('fail', 'performance', verdict, 'u')
    assert sens.named_subjects(verdict) == ['n5']
    # another failure before the job is no verdict
    assert report('setup', 'OSError: no space')[0] == 'error'
    assert sens.named_subjects('undecided node link n7 on fabric fab0: '
                               'retest inconclusive') == ['n7']


def test_fault_plan_covers_leaves_fabrics_and_compound_faults():
    plan = sens.fault_plan(runs=3, healthy=4)
    assert [r.fabric for r in plan[:4]] == ['fab0', 'fab1', 'fab0', 'fab1']
    faults = [r for r in plan if r.kind == 'fault']
    assert len(faults) == 3 * len(sens.FAULT_CASES) >= 36
    assert len({r.id for r in plan}) == len(plan)
    # one round of every case before the second run of any
    first = [r.case for r in faults[:len(sens.FAULT_CASES)]]
    assert sorted(first) == sorted(sens.FAULT_CASES)
    culprits = {c for r in faults for c in r.culprits}
    assert {f'uplink:leaf{i}' for i in (1, 2, 3)} <= \
        {c.split('@')[0] for c in culprits}
    assert {c.split('@')[1] for c in culprits} == {'fab0', 'fab1'}
    by_case = {r.case: r for r in faults}
    # a session measures the fabric(s) its faults are on
    assert by_case['n3-fab0+uplink-leaf2-fab1'].fabric == 'all'
    assert by_case['uplink-leaf2+n2-fab0'].fabric == 'fab0'
    assert len(by_case['two-uplinks-fab0'].culprits) == 2
    assert any(f[-1] == '95%' for r in faults for f in r.faults)
    # healthy runs within the rounds, both fabrics, after the first ones
    more = sens.fault_plan(runs=2, healthy=4, healthy_per_round=2)
    assert [r.id for r in more[:4]] == [r.id for r in plan[:4]]
    late = [r for r in more[4:] if r.kind == 'healthy']
    assert [r.fabric for r in late] == ['fab0', 'fab1'] * 2
    assert len({r.id for r in more}) == len(more)


def test_fault_outcome_names_per_fabric_and_finds_innocents():
    fab0 = ('fail', 'performance',
            'uplink leaf2-spine on fabric fab0: cross-switch flows at 0.35x;'
            ' slow node link n2 on fabric fab0: both ways 0.49x; '
            'slow node link n1 on fabric fab0: both ways 0.50x its peers')
    per = {'fab0': fab0, 'fab1': ('pass', None, '')}
    result, _, reason, named = sens.fault_outcome(per, ['fab0', 'fab1'])
    assert result == 'fail' and reason.startswith('fab0: uplink')
    assert named == ['n1@fab0', 'n2@fab0', 'uplink:leaf2@fab0']
    run = sens.Run('x', 'fault', culprits=['n2@fab0', 'uplink:leaf2@fab0'],
                   named=named, result=result)
    assert sens.classify_fault(run) == (['n2@fab0', 'uplink:leaf2@fab0'],
                                        ['n1@fab0'])
    # a fabric without a verdict is no verdict, never a pass
    assert sens.fault_outcome({'fab0': fab0}, ['fab0', 'fab1'])[0] == 'error'
    # a node link the retest could not decide is named too
    undecided = (fab0[:2] + ('uplink leaf2-spine on fabric fab0: 0.38x; '
                             'undecided node link n8 on fabric fab0: retest '
                             'inconclusive after the time budget',))
    assert sens.fault_outcome({'fab0': undecided}, ['fab0'])[3] == \
        ['n8@fab0', 'uplink:leaf2@fab0']
    launch = ('error', 'sanity', 'no CG_DONE completion line')
    assert sens.fault_outcome({'fab0': launch}, ['fab0'])[0] == 'error'


def test_read_fabrics_takes_the_last_try_of_each_fabric(tmp_path):
    def case(fab, result, reason=''):
        return {'name': f'LinkMatrix %num_nodes=9 %interconnect={fab}',
                'result': result, 'fail_phase': 'performance' if reason
                else None, 'fail_reason': reason}
    report = {'session_info': {'uuid': 'u1'}, 'runs': [
        {'testcases': [case('fab0', 'fail', 'suspect node n4 on fabric '
                            'fab0'), case('fab1', 'pass')]},
        {'testcases': [case('fab0', 'fail', 'slow node link n5 on fabric '
                            'fab0')]}]}
    path = tmp_path / 'report.json'
    path.write_text(sens.json.dumps(report))
    per, uuid = sens.read_fabrics(str(path))
    assert uuid == 'u1' and per['fab1'] == ('pass', None, '')
    assert per['fab0'][2] == 'slow node link n5 on fabric fab0'


def test_fault_table_counts_culprits_and_innocents():
    def run(case, named, result='fail'):
        return sens.Run(f'{case}-x', 'fault', case=case, result=result,
                        culprits=['n2@fab0', 'uplink:leaf2@fab0'],
                        named=named, wall_s=60.0)
    runs = [run('uplink-leaf2+n2-fab0', ['n2@fab0', 'uplink:leaf2@fab0']),
            run('uplink-leaf2+n2-fab0', ['n1@fab0', 'n2@fab0',
                                         'uplink:leaf2@fab0']),
            run('uplink-leaf2+n2-fab0', ['uplink:leaf2@fab0']),
            run('uplink-leaf2+n2-fab0', [], result='error')]
    rows = sens.fault_table(runs)
    assert rows == [('uplink-leaf2+n2-fab0', ['n2@fab0', 'uplink:leaf2@fab0'],
                     3, 2, 1, ['n1@fab0'], 60.0)]
    text = sens.fault_markdown(rows, (100, 20, 0, 0, 0, 50.0))
    assert '| 3 | 2/3 | 1/3 (n1@fab0) | 60 |' in text
    assert 'false alarms 0/20' in text


def _run_args(*argv):
    """``clustergate-lab sensitivity run --plan faults`` with ``argv``,
    parsed as the command does."""
    import argparse
    from clustergate_lab.commands import sensitivity as cmd
    parser = argparse.ArgumentParser()
    cmd.add_parser(parser.add_subparsers())
    return parser.parse_args(['sensitivity', 'run', '--workdir', 'w',
                              '--plan', 'faults', *argv])


def test_fault_plan_of_chosen_cases_keeps_the_run_names(capsys):
    """--case NAME: only those cases (with the healthy runs, which a work
    dir already holds), under the run names of the whole plan, so that a
    resumed work dir runs only what those cases lack; a name that is no
    case is one line naming it."""
    from clustergate_lab.commands import sensitivity as cmd
    args = _run_args('--runs', '5', '--healthy', '20', '--case',
                     'node-n3-95-fab0', '--case', 'two-uplinks-fab0')
    plan = cmd._plan(args)
    whole = {r.id for r in sens.fault_plan(runs=5, healthy=20)}
    assert {r.id for r in plan} <= whole
    assert sorted(r.id for r in plan if r.kind == 'fault') == sorted(
        [f'node-n3-95-fab0-{i}' for i in range(1, 6)] +
        [f'two-uplinks-fab0-{i}' for i in range(1, 6)])
    assert sum(r.kind == 'healthy' for r in plan) == 20
    args.case.append('node-n3-90-fab0')
    assert cmd.cmd_run(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        'clustergate-lab sensitivity run: error: --case node-n3-90-fab0: no '
        'such fault case of --cases tree9 (cases: uplink-leaf1-fab0, ')


def test_three_level_cases_fit_the_emulated_tree_and_both_schedules():
    """--cases fattree3: every culprit and every fault names a node,
    leaf or spine of the 24-node three-level tree the set brings up; the
    set covers each level, both fabrics, a node under another spine and a
    compound case; --schedule reaches the session's command line."""
    from clustergate_lab.cluster import tree as tr
    from clustergate_lab.commands import sensitivity as cmd
    cases, up = sens.CASE_SETS['fattree3']
    assert up == ('--topology', 'fattree3', '--nodes', '24')
    layout = tr.fattree3([f'n{i}' for i in range(1, 25)])
    leaf_of = {n: leaf for leaf, nodes in layout.leaves for n in nodes}
    spine_of = {leaf: sp for sp, leaves in layout.spines for leaf in leaves}
    subjects = set()
    for name, (faults, culprits) in cases.items():
        for fault in faults:
            target = fault[2]
            assert target in set(leaf_of) | set(spine_of) | \
                {sp for sp, _ in layout.spines}, (name, fault)
            if fault[0] == 'miscable':
                leaf = fault[fault.index('--leaf') + 1]
                assert leaf in spine_of and leaf != leaf_of[target], name
        subjects |= {c.split('@')[0] for c in culprits}
        assert len(culprits) == len(faults), name
    assert {'uplink:spine1', 'uplink:leaf4'} <= subjects
    assert any(len(f) > 1 for f, _ in cases.values())
    assert {c.split('@')[1] for _, cs in cases.values() for c in cs} == \
        {'fab0', 'fab1'}
    # n2 (leaf1, spine1) is cabled under another spine, n14 under its own
    assert spine_of[leaf_of['n2']] != spine_of['leaf5']
    assert spine_of[leaf_of['n14']] == spine_of['leaf3']
    args = _run_args('--cases', 'fattree3', '--runs', '3', '--healthy',
                     '10', '--schedule', 'all-pairs')
    plan = cmd._plan(args)
    assert sum(r.kind == 'fault' for r in plan) == 3 * len(cases)
    assert {r.schedule for r in plan} == {'all-pairs'}
    command = sens.session_command(plan[0], 'b', 'b/report.json')
    assert command[command.index('LinkMatrix.link_schedule=all-pairs')
                   - 1] == '-S'
    assert 'LinkMatrix.link_schedule=topology' in sens.session_command(
        sens.fault_plan(runs=1, healthy=1)[0], 'b', 'r')
    args.case = ['uplink-leaf1-fab0']
    assert 'of --cases fattree3' in cmd._unknown_case(args)


def test_the_faults_are_injected_through_the_labs_cluster_command():
    """degrade / miscable / restore are subcommands of the lab's command
    (the product's has no 'cluster'): every fault run failed on it."""
    import subprocess
    proc = subprocess.run([sens._cli(), 'cluster', 'degrade', '--help'],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert '--uplink' in proc.stdout and '--rate' in proc.stdout


def test_a_job_limit_reaches_the_check_and_the_session(monkeypatch):
    """--time-limit: the check's job limit (every pair with a cut trunk
    took 12 of 23 rounds in the check's 10 minutes on the 24-node tree),
    the session allowed 5 minutes beyond it, a bad limit refused."""
    import pytest
    args = _run_args('--cases', 'fattree3', '--runs', '1', '--healthy', '1',
                     '--schedule', 'all-pairs', '--time-limit', '30m')
    plan = cmd_plan(args)
    assert {r.time_limit for r in plan} == {'30m'}
    command = sens.session_command(plan[-1], 'b', 'b/report.json')
    assert command[command.index('LinkMatrix.time_limit=30m') - 1] == '-S'
    assert command[-1] == '-r'
    assert sens.session_timeout(plan[-1]) == 30 * 60 + 300
    # without it: the check's own limit, the default session timeout
    plan = sens.fault_plan(runs=1, healthy=1)
    assert not any('time_limit' in a for a in
                   sens.session_command(plan[0], 'b', 'r'))
    assert sens.session_timeout(plan[0]) == sens.SESSION_TIMEOUT
    # every pair: the check's own limit grows with its rounds (17 minutes
    # on the 24-node tree), the session's with it
    plan = sens.fault_plan(runs=1, healthy=1, schedule='all-pairs')
    assert sens.session_timeout(plan[0]) == 2 * sens.SESSION_TIMEOUT > \
        600 * 24 / 14 + 300
    assert sens.limit_seconds('1h30m') == 5400
    assert sens.limit_seconds('90s') == 90
    for bad in ('30', '30 min', 'm', ''):
        with pytest.raises(ValueError, match='not such as 30m'):
            sens.limit_seconds(bad)
    with pytest.raises(SystemExit):
        _run_args('--time-limit', 'half an hour')


def cmd_plan(args):
    from clustergate_lab.commands import sensitivity as cmd
    return cmd._plan(args)


def test_a_run_cut_by_its_time_limit_is_not_tried_again(tmp_path,
                                                        monkeypatch):
    """A job that Slurm ended at its limit gives no verdict, and a second
    try of the same run ends the same: the plan goes on to the next run;
    other errors are tried again."""
    tries = []
    reasons = {'a': 'fab0: sanity error: the job did not end by itself: '
                    'Slurm cancelled job 3 on n1 due to time limit',
               'b': 'OSError: no space left on device'}

    def execute(run, workdir, references=None):
        tries.append(run.id)
        run.result, run.reason = 'error', reasons[run.id]
        run.wall_s = 1.0

    monkeypatch.setattr(sens, 'execute', execute)
    plan = [sens.Run('a', 'healthy', fabric='fab0'),
            sens.Run('b', 'healthy', fabric='fab0')]
    left = sens.run_plan(plan, str(tmp_path), max_minutes=5,
                         bring_up=False, out=open(os.devnull, 'w'))
    assert tries == ['a', 'b', 'b', 'b'] and left == 2
    assert sens.cut_by_limit(sens.Run('a', 'healthy', result='error',
                                      reason=reasons['a']))
    assert not sens.cut_by_limit(sens.Run('b', 'healthy', result='error',
                                          reason=reasons['b']))
    saved = {r.id: r.reason for r in sens.load(str(tmp_path))}
    assert saved == {'a!error': reasons['a'], 'b!error': reasons['b']}
    # the next sitting tries each once more and keeps one record of each
    sens.run_plan(plan, str(tmp_path), max_minutes=5, bring_up=False,
                  out=open(os.devnull, 'w'))
    assert tries[4:] == ['a', 'b', 'b', 'b']
    assert sorted(r.id for r in sens.load(str(tmp_path))) == \
        ['a!error', 'b!error']
