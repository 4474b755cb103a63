"""The nightly rotation (issue 15, item 3): a partition's nightly budget
makes ``--mode nightly`` run a share of the acceptance space each night,
all of it over a cycle (clustergate.planning.rotation, clustergate.rfm.point.nightly).
"""

import datetime
import os
import random
import re
import shutil
import subprocess

import pytest

from clustergate.planning import rotation
from conftest import FIXTURES, ROOT, reframe_cmd

DAY = datetime.date(2026, 11, 22)


def _points(n=300, parts=('sys:a',), seed=1):
    rng = random.Random(seed)
    return [rotation.Point(f'Check%{i}', {p: rng.uniform(2, 90)
                                          for p in parts})
            for i in range(n)]


def test_every_point_runs_once_per_cycle_and_nights_fit():
    pts = _points()
    budget = {'sys:a': 30 * 60}
    plan = rotation.plan(pts, budget)
    seen = [n for night in plan.nights for n in night]
    assert sorted(seen) == sorted(p.name for p in pts)      # each once
    cost = {p.name: p.cost['sys:a'] for p in pts}
    for night in plan.nights:
        assert sum(cost[n] for n in night) <= budget['sys:a']
    # first fit keeps the nights full: at most one more than the minimum
    total = sum(cost.values())
    assert plan.cycle <= -(-total // budget['sys:a']) + 1
    # over the dates of a cycle every point is someone's tonight
    covered = set()
    for d in range(plan.cycle):
        t = rotation.tonight(pts, budget, DAY + datetime.timedelta(d))
        assert sum(cost[n] for n in t.names) <= budget['sys:a']
        covered |= set(t.names)
    assert covered == {p.name for p in pts}


def test_same_date_same_subset_and_next_date_another():
    pts = _points()
    budget = {'sys:a': 30 * 60}
    one = rotation.tonight(pts, budget, DAY).names
    assert rotation.tonight(list(reversed(pts)), budget, DAY).names == one
    assert set(rotation.tonight(pts, budget,
                                DAY + datetime.timedelta(1)).names) \
        .isdisjoint(one)


def test_date_from_the_environment(monkeypatch):
    monkeypatch.setenv(rotation.DATE_VAR, '2026-12-01')
    assert rotation.night_date() == datetime.date(2026, 12, 1)
    monkeypatch.setenv(rotation.DATE_VAR, '1 Dec')
    with pytest.raises(rotation.RotationError, match=rotation.DATE_VAR):
        rotation.night_date()


def test_a_changed_budget_changes_the_cycle():
    pts = _points()
    cycles = [rotation.plan(pts, {'sys:a': m * 60}).cycle
              for m in (15, 30, 60)]
    assert cycles[0] > cycles[1] > cycles[2] >= 1


def test_sentinels_run_every_night_within_the_budget():
    pts = _points(100)
    for p in pts[:5]:
        p.sentinel = 'check X'
    budget = {'sys:a': 20 * 60}
    plan = rotation.plan(pts, budget)
    pinned_cost = sum(p.cost['sys:a'] for p in pts[:5])
    for d in range(plan.cycle):
        t = rotation.tonight(pts, budget, DAY + datetime.timedelta(d))
        assert {p.name for p in pts[:5]} <= set(t.names)
        assert t.load['sys:a'] <= budget['sys:a']
        assert t.load['sys:a'] >= pinned_cost
    # sentinels that alone overrun the budget: one line naming it
    with pytest.raises(rotation.SentinelsOverBudget, match='partition sys:a'):
        rotation.plan(pts, {'sys:a': pinned_cost / 2})
    # the header says which points are sentinels and what they cost
    t = rotation.tonight(pts, budget, DAY)
    head = rotation.header(t, pts, 0)
    line = next(ln for ln in head if ln.startswith('  sentinels:'))
    assert line.startswith(f'  sentinels: 5 cases (5 points), est. '
                           f'{pinned_cost / 60:.0f} min of 20, run every')
    assert sum(ln.startswith('    sentinel Check%') for ln in head) == 5
    every = [ln.split('\t')[-1] for ln in rotation.details(t, pts)
             if ln.startswith('every\t')]
    assert sorted(every) == sorted(p.name for p in pts[:5])


def test_every_budgeted_partition_fits():
    pts = _points(200, parts=('sys:a', 'sys:b'))
    budget = {'sys:a': 30 * 60, 'sys:b': 10 * 60}
    plan = rotation.plan(pts, budget)
    for load in plan.load:
        assert load['sys:a'] <= budget['sys:a']
        assert load['sys:b'] <= budget['sys:b']


def test_a_point_above_the_budget_is_in_no_night_and_said_so():
    # a night of its own ran 27 min of 16 on the 12-node emulated site
    pts = _points(20) + [rotation.Point('Huge', {'sys:a': 5000})]
    plan = rotation.plan(pts, {'sys:a': 1800})
    assert plan.oversized == ['Huge']
    assert all('Huge' not in night for night in plan.nights)
    assert all(load['sys:a'] <= 1800 for load in plan.load)
    t = rotation.tonight(pts, {'sys:a': 1800}, DAY)
    head = '\n'.join(rotation.header(t, pts, 0))
    assert 'cycle covers all acceptance points but 1' in head
    assert 'alone exceed the night budget: in no night, run them with ' \
        '--mode acceptance' in head
    rows = [ln.split('\t') for ln in rotation.details(t, pts)]
    assert ['acceptance', 'Huge'] in [[r[0], r[-1]] for r in rows]


def test_the_readers_of_one_run_rotate_together_and_pay_it_once():
    # HPCC's kernels read one run: on different nights each night would
    # run (and pay for) the whole run again
    readers = [rotation.Point(f'Hpcc{k} %hpcc.num_nodes=2', {'sys:a': 100},
                              group='hpcc.num_nodes=2')
               for k in ('Hpl', 'Fft', 'Stream')]
    pts = _points(40) + readers
    plan = rotation.plan(pts, {'sys:a': 400})
    night = [n for n in plan.nights if readers[0].name in n]
    assert len(night) == 1
    assert {r.name for r in readers} <= set(night[0])
    # together above the budget: none of them in any night
    plan = rotation.plan(pts, {'sys:a': 250})
    assert sorted(plan.oversized) == sorted(r.name for r in readers)


def test_header_says_the_night_and_summarises_last_runs():
    pts = _points(50)
    now = 1_800_000_000
    for i, p in enumerate(pts[:30]):
        p.last_ran = now - i * 86400
    t = rotation.tonight(pts, {'sys:a': 600}, DAY)
    head = rotation.header(t, pts, now)
    assert re.match(rf'nightly rotation: night {t.index + 1} of '
                    rf'{t.plan.cycle} \(2026-11-22\), {len(t.names)} of 50 '
                    r'points, est\. \d+ min of 10; cycle covers all', head[0])
    assert len(head) < 8
    whole = [ln for ln in head if ln.startswith('  all points')][0]
    assert f'{t.plan.cycle + 1} within the cycle' in whole
    assert '20 never recorded' in whole and 'oldest Check%29 (29 d ago)' \
        in whole
    assert len(rotation.details(t, pts)) == 51


# -- in ReFrame: the emulated cluster's acceptance space (no cluster) -----

def _config_with_budget(tmp_path, minutes):
    cfg = tmp_path / 'config'
    if not cfg.exists():
        shutil.copytree(os.path.join(ROOT, 'config'), cfg)
    path = cfg / 'systems' / 'emucluster.py'
    text = path.read_text()
    old = "'cores_per_node': _cores,"
    text = re.sub(r"'rotation': \{[^}]*\},\s*", '', text)
    path.write_text(text.replace(
        old, f"'rotation': {{'budget_min': {minutes}}}, " + old, 1))
    return cfg / 'settings.py'


def _listing(settings, mode, tmp_path, date='2026-11-22'):
    env = dict(os.environ, SLURM_CONF='', CG_ROTATION_DATE=date,
               CG_RESULTS_DB=str(tmp_path / 'results.db'),
               CG_DEBUG_LOG=str(tmp_path / 'reframe.log'),
               CG_PERFLOG_DIR=str(tmp_path / 'perflogs'),
               CG_ROTATION_DETAILS=str(tmp_path / 'rotation.tsv'))
    proc = subprocess.run(
        reframe_cmd() + ['-C', str(settings), '--system', 'emucluster',
                         '-c', os.path.join(ROOT, 'checks'), '-R',
                         '--mode', mode, '-l'],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    names = {re.sub(r' /[0-9a-f]+$', '', ln[2:])
             for ln in proc.stdout.splitlines() if ln.startswith('- ')}
    return proc.stdout, names


def test_nightly_lists_tonights_share_and_the_cycle_covers_acceptance(
        tmp_path):
    settings = _config_with_budget(tmp_path, 120)
    out, tonight = _listing(settings, 'nightly', tmp_path)
    head = re.search(r'nightly rotation: night (\d+) of (\d+) .*?, '
                     r'(\d+) of (\d+) points, est\. (\d+) min of 120', out)
    assert head, out[:3000]
    night, cycle, count, total, est = map(int, head.groups())
    assert 1 < cycle < 10 and int(est) <= 120 and count == len(tonight)
    plan = {}
    for ln in (tmp_path / 'rotation.tsv').read_text().splitlines()[1:]:
        n, _, _, _, name = ln.split('\t')
        plan.setdefault(n, set()).add(name)
    every = plan.pop('every')         # the sentinels
    assert plan[str(night)] | every == tonight
    assert sorted(map(int, plan)) == list(range(1, cycle + 1))
    # the cycle's nights together are the acceptance listing (impossible
    # points are in neither)
    _, acceptance = _listing(settings, 'acceptance', tmp_path)
    assert len(acceptance) == total
    assert set().union(every, *plan.values()) == acceptance


def test_a_case_costs_its_time_its_run_fixtures_share_and_a_skip_nothing():
    # trimmed real report of the emulated nightly of 2026-11-23 (night 6):
    # HPCC's run jobs took 32 s (1 node) and 56 s (4 nodes) of the night,
    # their readers under 1 s each; OSU was skipped (no spack)
    import json
    from clustergate.rfm.point.nightly import case_costs
    with open(os.path.join(FIXTURES, 'rotation', 'night-2026-11-23.json')) as fp:
        report = json.load(fp)

    costs = case_costs([report])
    part = 'emucluster:emu'
    hpl = costs['HpccHpl %hpcc.num_nodes=1 %hpcc.ppn=2 '
                '%hpcc.interconnect=fab0', part, 'openmpi']
    assert hpl[0] == pytest.approx(0.386 + 32.01, abs=0.01)   # sole reader
    assert hpl[2] == 'measured' and hpl[1] > 1.7e9
    # two readers share the 4-node run (56.29 s)
    ptrans = costs['HpccPtrans %hpcc.num_nodes=4 %hpcc.ppn=1 '
                   '%hpcc.interconnect=fab1', part, 'openmpi']
    assert ptrans[0] == pytest.approx(0.298 + 56.29 / 2, abs=0.01)
    # a build fixture is not charged to its readers; fixtures are no cases
    bpp = costs['BiPingPong %num_nodes=4 %ppn=2 %interconnect=fab1 '
                '%msg_bytes=10000', part, 'intelmpi']
    assert bpp[0] == pytest.approx(42.2, abs=0.1)
    assert not any(k[0].startswith(('HpccRun', 'CgProgramsBuild'))
                   for k in costs)
    # a skipped case costs nothing and has not run
    assert costs['OsuBw %num_nodes=1 %ppn=2 %interconnect=fab1', part,
                 'openmpi'] == (0.0, None, 'skipped')
    # a later session that skips a case that ran keeps when it last ran
    later = json.loads(json.dumps(report))
    later['session_info']['time_end_unix'] += 86400
    for tc in later['runs'][0]['testcases']:
        tc['result'] = 'skip'
    again = case_costs([report, later])
    assert again[hpl_key := ('HpccHpl %hpcc.num_nodes=1 %hpcc.ppn=2 '
                             '%hpcc.interconnect=fab0', part, 'openmpi')
                 ] == (0.0, hpl[1], 'skipped')
    # the newest session decides, whatever the order of the records
    assert case_costs([later, report])[hpl_key] == (0.0, hpl[1], 'skipped')


def test_a_ci_or_acceptance_session_does_not_plan_a_night():
    # the 12-node emulated site, 2026-12-01: a ci session (HPCC's N capped
    # at 768) ran the 2-node HPCC point in 28 s between two nights; the next
    # night planned it at 28 s and its run took 510 s, 24.6 min of a 16-min
    # budget. Only sessions that run the night's sizes plan a night.
    import json
    from clustergate.rfm.point.nightly import case_costs
    with open(os.path.join(FIXTURES, 'rotation', 'night-2026-11-23.json')) as fp:
        night = json.load(fp)

    key = ('HpccHpl %hpcc.num_nodes=1 %hpcc.ppn=2 %hpcc.interconnect=fab0',
           'emucluster:emu', 'openmpi')
    at_night = case_costs([night])[key]

    def later(mode_args, seconds):
        rep = json.loads(json.dumps(night))
        info = rep['session_info']
        info['time_end_unix'] += 3600
        info['cmdline'] = info['cmdline'].replace('--mode nightly', mode_args)
        for tc in rep['runs'][0]['testcases']:
            tc['time_total'] = tc['time_run'] = seconds
            if tc.get('job_completion_time_unix'):
                tc['job_completion_time_unix'] += 3600
        return rep

    for args in ('--mode ci', '--mode=ci', '--mode acceptance'):
        assert case_costs([night, later(args, 1.0)])[key] == at_night, args
        assert key not in case_costs([later(args, 1.0)]), args
    # a newer night, or a session without a mode (the night's sizes), counts
    for args in ('--mode nightly', ''):
        newer = case_costs([night, later(args, 7.0)])[key]
        assert newer[0] == pytest.approx(14.0) and newer[1] > at_night[1]


def test_a_kernel_never_measured_costs_what_a_reader_of_its_run_paid():
    # the 12-node emulated site, 2026-12-02: HPCC's 1-node run was measured
    # through its RandomAccess reader (359 s) and its FFT reader, never
    # measured, was planned at the cost model's 167 s, the night's cheapest
    # HPCC point, so its canary
    from clustergate.rfm.point.nightly import (SHARED_RUN, like_costs,
                                               shared_run)
    part, env = 'emusite:emu', 'openmpi'
    one = '%hpcc.num_nodes=1 %hpcc.ppn=1 %hpcc.interconnect=fab0'
    records = {
        (f'HpccRandomAccess {one}', part, env): (359.6, 1.0, 'measured'),
        # two readers shared another run: each paid half of it
        ('HpccHpl %hpcc.num_nodes=2 %hpcc.ppn=1 %hpcc.interconnect=fab0',
         part, env): (56.0, 1.0, 'measured'),
        ('HpccBeff %hpcc.num_nodes=2 %hpcc.ppn=1 %hpcc.interconnect=fab0',
         part, env): (56.0, 1.0, 'measured'),
        ('HpccHpl %hpcc.num_nodes=2 %hpcc.ppn=1 %hpcc.interconnect=fab1',
         part, env): (510.5, 1.0, 'measured'),
        # the same run on another night, shared by two readers
        ('HpccStream %hpcc.num_nodes=2 %hpcc.ppn=1 %hpcc.interconnect=fab1',
         part, env): (255.0, 1.0, 'measured'),
    }
    assert shared_run(f'HpccFft {one}') == shared_run(
        f'HpccRandomAccess {one}') != shared_run(
        'HpccFft %hpcc.num_nodes=1 %hpcc.ppn=1 %hpcc.interconnect=fab1')
    assert shared_run('BiPingPong %num_nodes=4 %ppn=2') == ''
    alike = like_costs(records)
    assert alike[(SHARED_RUN, shared_run(f'HpccFft {one}'), part, env)
                 ] == pytest.approx(359.6)
    assert alike[(SHARED_RUN, shared_run(
        'HpccFft %hpcc.num_nodes=2 %hpcc.ppn=1 %hpcc.interconnect=fab1'),
        part, env)] == pytest.approx(510.5)    # not the median, 382.75
    # no run of another MPI, and no key for a case that reads no run
    assert (SHARED_RUN, shared_run(f'HpccFft {one}'), part,
            'mpich') not in alike
    assert not any(k[0] == SHARED_RUN and not k[1] for k in alike)


def test_a_point_never_run_costs_the_median_of_its_kind():
    from clustergate.rfm.point.nightly import kind, like_costs
    part = 'emucluster:emu'
    records = {
        ('BiPingPong %num_nodes=4 %ppn=2 %interconnect=fab1 %msg_bytes=8',
         part, 'openmpi'): (20.0, 1.0, 'measured'),
        ('BiPingPong %num_nodes=4 %ppn=1 %interconnect=fab0 %msg_bytes=8',
         part, 'openmpi'): (30.0, 1.0, 'measured'),
        ('BiPingPong %num_nodes=4 %ppn=2 %interconnect=fab0 %msg_bytes=10',
         part, 'openmpi'): (70.0, 1.0, 'measured'),
        # other node count, other MPI, a skip: not of the kind
        ('BiPingPong %num_nodes=2 %ppn=2 %interconnect=fab1 %msg_bytes=8',
         part, 'openmpi'): (5.0, 1.0, 'measured'),
        ('BiPingPong %num_nodes=4 %ppn=2 %interconnect=fab1 %msg_bytes=8',
         part, 'intelmpi'): (9.0, 1.0, 'measured'),
        ('BiPingPong %num_nodes=4 %ppn=2 %interconnect=fab1 %msg_bytes=9',
         part, 'openmpi'): (0.0, None, 'skipped'),
    }
    alike = like_costs(records)
    assert alike[('BiPingPong', '4', part, 'openmpi')] == 30.0
    assert alike[('BiPingPong', '2', part, 'openmpi')] == 5.0
    assert alike[('BiPingPong', '4', part, 'intelmpi')] == 9.0
    assert kind('HpccHpl %hpcc.num_nodes=4 %hpcc.ppn=1') == ('HpccHpl', '4')
    assert kind('CgProgramsBuild ~emucluster:emu+openmpi') == (
        'CgProgramsBuild', '')
    # a check only ever skipped: 0
    npb = like_costs({('NpbLU %num_nodes=2 %ppn=1', part, 'openmpi'):
                      (0.0, None, 'skipped')})
    assert npb[('NpbLU', '2', part, 'openmpi')] == 0.0


def test_a_run_never_measured_costs_its_kind_over_another_fabric():
    # the 12-node emulated site, 2026-12-02, fresh results database: three
    # 1-node x 2 HPCC runs (fab0, fab0_ucx, fab1_ucx) were planned at the
    # cost model's 167 s each; each ran about 278 s and the night 19 min
    # of its 16
    from clustergate.planning.estimates import run_kind
    from clustergate.rfm.point.nightly import (SHARED_RUN, like_costs,
                                               shared_run)
    part, env = 'emusite:emu', 'openmpi'
    at = '%hpcc.num_nodes=1 %hpcc.ppn=2 %hpcc.interconnect={}'.format
    records = {
        (f'HpccRandomAccess {at("fab0_ucx")}', part, env):
            (278.0, 1.0, 'measured'),
        (f'HpccBeff {at("fab0")}', part, env): (139.0, 1.0, 'measured'),
        # another ppn, another node count, another MPI: not of the kind
        ('HpccHpl %hpcc.num_nodes=1 %hpcc.ppn=1 %hpcc.interconnect=fab1',
         part, env): (214.0, 1.0, 'measured'),
        ('HpccHpl %hpcc.num_nodes=2 %hpcc.ppn=2 %hpcc.interconnect=fab1',
         part, env): (550.0, 1.0, 'measured'),
        (f'HpccFft {at("fab0")}', part, 'mpich'): (900.0, 1.0, 'measured'),
    }
    never = run_kind(shared_run(f'HpccStream {at("fab1_ucx")}'))
    assert never == run_kind(shared_run(f'HpccFft {at("fab0")}'))
    assert never != run_kind(shared_run(
        'HpccFft %hpcc.num_nodes=1 %hpcc.ppn=1 %hpcc.interconnect=fab1_ucx'))
    alike = like_costs(records)
    # the most a run of the kind paid, not the median of 208.5
    assert alike[(SHARED_RUN, never, part, env)] == pytest.approx(278.0)
    # the exact run keeps its own figure: a reader that shared it
    assert alike[(SHARED_RUN, shared_run(f'HpccBeff {at("fab0")}'), part,
                  env)] == pytest.approx(139.0)
