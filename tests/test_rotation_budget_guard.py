"""The night's budget holds at run time: once a partition's budget is
spent, tonight's rotating points that have not started are not started
(skipped, saying why), the sentinels still run, and such a skip is no
measurement for the next nights' plan (clustergate.rfm.point.nightly
.budget_spent, clustergate.rfm.point.base's run hook).

Measured on the 12-node emulated site, config as ``site init`` writes it,
budget 20 min a partition (2026-11-27): the first night was planned at
20 min by the cost model's defaults and had run 18 of its 93 cases
after 13 min (about 3 times its estimate)."""

import json
import os
import types

import pytest

from clustergate.rfm.point import nightly as rfmrot
from clustergate.rfm.point import nightbudget

FIXTURES = os.path.join(os.path.dirname(__file__), 'fixtures')
NIGHT = 'emusite'


class _Part:
    def __init__(self, budget_min=20, name='emu'):
        self.name, self.fullname = name, f'{NIGHT}:{name}'
        self.extras = {'cores_per_node': 2}
        if budget_min is not None:
            self.extras['rotation'] = {'budget_min': budget_min}


def _test(part, tags=('acceptance', 'nightly'), system=NIGHT):
    return types.SimpleNamespace(
        cg_tonight=rfmrot.Tonight(system, 'AllToAll %num_nodes=8'),
        display_name='AllToAll %num_nodes=8', tags=set(tags),
        current_partition=part)


@pytest.fixture
def night(monkeypatch):
    monkeypatch.setattr(rfmrot, '_night_began', {NIGHT: 1000.0})
    return 1000.0


def test_a_rotating_point_starts_while_budget_is_left(night):
    assert nightbudget.budget_spent(_test(_Part(20)), now=night + 19 * 60) \
        is None


def test_a_rotating_point_does_not_start_once_the_budget_is_spent(night):
    why = nightbudget.budget_spent(_test(_Part(20)), now=night + 21 * 60)
    assert why == ('not started: the night budget of emusite:emu is spent '
                   '(21 min of 20, extras.rotation.budget_min); the next '
                   'nights are planned from the times measured tonight')


def test_sentinels_and_tests_outside_the_rotation_always_start(night):
    late = night + 600 * 60
    # the fabric sentinel runs every night, whatever the clock
    assert nightbudget.budget_spent(
        _test(_Part(20), tags=('acceptance', 'nightly', 'sentinel')),
        now=late) is None
    # a partition without a rotation, a test outside it (ci, a fixture)
    assert nightbudget.budget_spent(_test(_Part(None)), now=late) is None
    assert nightbudget.budget_spent(_test(_Part(20), system=None),
                               now=late) is None
    # no night planned in this session (not a nightly run)
    assert nightbudget.budget_spent(_test(_Part(20), system='other'),
                               now=late) is None


def test_a_reader_of_a_run_that_started_judges_it_whatever_the_clock(
        night):
    # HPCC's kernels read the output of their run fixture (a local `cat`):
    # the run's time is spent; skipping them discarded a 14-min 4-node
    # HPCC run of a 12-node emulated night (2026-12-07, 28 min of 16)
    from clustergate.rfm.families.hpcc import HpccKernelTest
    assert HpccKernelTest.local.default_value is True
    reader = _test(_Part(20))
    reader.local = True
    assert nightbudget.budget_spent(reader, now=night + 28 * 60) is None
    job = _test(_Part(20))
    job.local = False
    assert nightbudget.budget_spent(job, now=night + 28 * 60).startswith(
        'not started: the night budget of emusite:emu is spent (28 min')


def test_the_point_hook_skips_with_the_reason_and_records_it(
        night, monkeypatch):
    from clustergate.rfm.point.base import PointTest
    monkeypatch.setattr(rfmrot.time, 'time', lambda: night + 30 * 60)
    skipped = []
    test = _test(_Part(20))
    test.night_not_started = ''
    test.skip = skipped.append
    PointTest.point_before_run(test)
    assert skipped == [test.night_not_started]
    assert test.night_not_started.startswith(
        'not started: the night budget of emusite:emu is spent (30 min')


def test_a_retry_the_budget_keeps_back_leaves_the_case_failed(
        night, monkeypatch):
    # on the 12-node emulated site (2026-12-02) a 24-rank PingPongDistance
    # over UCX was cut at its time limit; its retry, at minute 16 of 16,
    # was skipped, and the skip replaced the failure: the night was green
    from reframe.core.exceptions import SanityError
    from clustergate.rfm.point.base import PointTest
    monkeypatch.setattr(rfmrot.time, 'time', lambda: night + 16 * 60)
    monkeypatch.setattr(rfmrot.adapter, 'current_run', lambda: 1)
    test = _test(_Part(16))
    test.night_not_started = ''
    test.skip = pytest.fail
    with pytest.raises(SanityError, match='failed its first try, and its '
                       'retry did not start: not started: the night budget '
                       'of emusite:emu is spent'):
        PointTest.point_before_run(test)
    assert test.night_not_started == ''
    # a first try is skipped as before
    monkeypatch.setattr(rfmrot.adapter, 'current_run', lambda: 0)
    test.skip = lambda why: setattr(test, 'skipped', why)
    PointTest.point_before_run(test)
    assert test.skipped.startswith('not started: the night budget')


def test_a_point_not_started_keeps_its_last_measured_cost():
    with open(os.path.join(FIXTURES, 'rotation',
                           'night-2026-11-23.json')) as fp:
        report = json.load(fp)
    key = ('BiPingPong %num_nodes=4 %ppn=2 %interconnect=fab1 '
           '%msg_bytes=10000', 'emucluster:emu', 'intelmpi')
    before = rfmrot.case_costs([report])[key]
    later = json.loads(json.dumps(report))
    later['session_info']['time_end_unix'] += 86400
    for tc in later['runs'][0]['testcases']:
        tc['result'] = 'skip'
        tc['job_completion_time_unix'] = None
        tc[rfmrot.NOT_STARTED] = 'not started: the night budget of ...'
    # not a skip that costs nothing until mended: what it cost last time
    assert rfmrot.case_costs([report, later])[key] == before
    assert before[2] == 'measured' and before[0] > 40


def _tonight(monkeypatch, *pts):
    from clustergate.planning import rotation
    monkeypatch.setattr(rfmrot, '_points', {NIGHT: {p.name: p for p in pts}})
    return rotation


def _case(name, env='openmpi', fixture=False, tags=('acceptance',)):
    return types.SimpleNamespace(
        display_name=name, tags=set(tags), current_partition=_Part(16),
        current_environ=types.SimpleNamespace(name=env),
        is_fixture=lambda: fixture,
        cg_tonight=rfmrot.Tonight(None if fixture else NIGHT, name))


def test_a_point_that_would_end_past_the_budget_does_not_start(
        night, monkeypatch):
    rotation = _tonight(monkeypatch)
    name = 'AllToAll %num_nodes=8'
    pt = rotation.Point(name, {'emusite:emu': 300},
                        per_case={('emusite:emu', 'openmpi'): 300})
    _tonight(monkeypatch, pt)
    assert nightbudget.budget_spent(_case(name), now=night + 9 * 60) \
        is None
    # at 1.25 times its estimate it would end past the budget: an
    # estimate is a median, one run in two takes longer
    assert nightbudget.SAFETY == 1.25
    assert 'would end past' in nightbudget.budget_spent(
        _case(name), now=night + 10 * 60)
    why = nightbudget.budget_spent(_case(name), now=night + 12 * 60)
    assert why.startswith('not started: it would end past the night '
                          'budget of emusite:emu (est. 5.0 min, 12 of 16 '
                          'min used, extras.rotation.budget_min)')


def test_a_run_fixture_read_only_by_rotating_points_is_judged_as_they_are(
        night, monkeypatch):
    # HPCC's run ran 12 of a 16-min night's 19 min on the emulated site,
    # started whatever the clock (a fixture is no point of the rotation)
    from clustergate import adapter
    rotation = _tonight(monkeypatch)
    monkeypatch.setattr(adapter, 'current_system',
                        lambda: types.SimpleNamespace(name=NIGHT))
    group = 'hpcc.interconnect=fab0 hpcc.num_nodes=2 hpcc.ppn=1'
    readers = [rotation.Point(
        f'Hpcc{k} %{group.replace(" ", " %")}', {'emusite:emu': 200},
        group=group, per_case={('emusite:emu', 'openmpi'): 200})
        for k in ('Hpl', 'Fft')]
    _tonight(monkeypatch, *readers)
    run = _case('HpccRun %num_nodes=2 %ppn=1 %interconnect=fab0 '
                '~emusite:emu+openmpi', fixture=True)
    assert nightbudget.budget_spent(run, now=night + 7 * 60) is None
    why = nightbudget.budget_spent(run, now=night + 11 * 60)
    assert 'would end past the night budget of emusite:emu (est. 6.7 min' \
        in why
    # another run of the fixture (other parameters) is none of theirs
    other = _case('HpccRun %num_nodes=4 %ppn=1 %interconnect=fab0 '
                  '~emusite:emu+openmpi', fixture=True)
    assert nightbudget.budget_spent(other, now=night + 11 * 60) is None
    # a sentinel reads it: the run always starts
    readers[0].sentinel = 'canary of hpcc'
    assert nightbudget.budget_spent(run, now=night + 30 * 60) is None


def test_the_readers_of_a_run_kept_from_starting_keep_their_cost():
    with open(os.path.join(FIXTURES, 'rotation',
                           'night-2026-11-23.json')) as fp:
        report = json.load(fp)
    run = {'unique_name': 'HpccRun_1', 'fixture': True, 'result': 'skip',
           rfmrot.NOT_STARTED: 'not started: it would end past ...'}
    reader = {'display_name': 'HpccHpl %hpcc.num_nodes=2', 'result': 'skip',
              'system': 'emucluster', 'partition': 'emu',
              'environ': 'intelmpi', 'job_completion_time_unix': None,
              'dependencies_actual': [['HpccRun_1', 'emucluster:emu',
                                       'intelmpi']]}
    report['runs'][0]['testcases'] += [run, reader]
    key = ('HpccHpl %hpcc.num_nodes=2', 'emucluster:emu', 'intelmpi')
    # not a skip that costs nothing until mended
    assert key not in rfmrot.case_costs([report])
    del run[rfmrot.NOT_STARTED]
    assert rfmrot.case_costs([report])[key][2] == 'skipped'


def test_the_sentinels_still_to_run_keep_their_time(night, monkeypatch):
    # ReFrame orders the cases, not the plan: on the emulated site the
    # link matrices and the HPCC canary ran last, after the rotating points
    # had taken the budget, and the night ended 13 s past its 16 min
    monkeypatch.setattr(nightbudget, '_started', {})
    rotation = _tonight(monkeypatch)
    case = ('emusite:emu', 'openmpi')
    matrix = rotation.Point('LinkMatrix %num_nodes=12', {'emusite:emu': 360},
                            sentinel='check LinkMatrix',
                            per_case={case: 360})
    rot = rotation.Point('AllToAll %num_nodes=8', {'emusite:emu': 120},
                         per_case={case: 120})
    _tonight(monkeypatch, matrix, rot)
    why = nightbudget.budget_spent(_case(rot.name), now=night + 8 * 60)
    assert why.startswith('not started: it would end past the night budget '
                          'of emusite:emu (est. 2.0 min, 8 of 16 min used, '
                          '6.0 min kept for the sentinels still to run')
    sentinel = _case(matrix.name, tags=('acceptance', 'sentinel'))
    assert nightbudget.budget_spent(sentinel, now=night + 8 * 60) is None
    # the matrix started: its time is no longer kept
    assert nightbudget.reserved(NIGHT, 'emusite:emu') == 0
    assert nightbudget.budget_spent(_case(rot.name), now=night + 8 * 60) \
        is None
