"""Baseline maths on given samples: median, MAD tolerance, floor, direction,
minimum of runs, and the reference file it writes."""

import pytest
import yaml

from clustergate.refs import baseline as bl
from clustergate.results.samples import (
    Key, Sample, group, parse_perflog_line, select,
)
from clustergate.refs import references
from clustergate.refs import refwriter


def test_median_and_mad_tolerance_higher_is_better():
    # median 100, |dev| = 0,2,2,4,4 -> MAD 2; sigma 2.9652 -> 3 sigma 8.90%
    st = bl.compute([100, 98, 102, 96, 104], 'bandwidth', 'MB/s', k=3,
                    floor=0.05, better_factor=3, check='OsuBw')
    assert st.median == 100
    assert st.mad == 2
    assert st.spread == pytest.approx(0.029652)
    assert st.tolerance == 0.089           # 3 x 2.9652% rounded up
    assert st.direction == 'higher'
    assert st.lower == -0.089              # worse side: slower
    assert st.upper == 0.267               # better side: 3 x tolerance


def test_floor_applies_when_spread_is_small():
    st = bl.compute([50.0, 50.1, 49.9], 'latency', 'us', k=3, floor=0.05,
                    check='OsuBarrier')
    assert st.median == 50.0
    assert st.mad == pytest.approx(0.1)
    assert st.tolerance == 0.05            # 3 x 0.3% < floor
    assert st.direction == 'lower'
    assert st.upper == 0.05                # worse side: slower
    assert st.lower == -0.15


def test_floor_is_configurable_and_better_side_can_be_open():
    st = bl.compute([10, 10, 10], 'bw_min', 'MB/s', floor=0.1,
                    better_factor=0, check='LinkMatrix')
    assert (st.tolerance, st.lower, st.upper) == (0.1, -0.1, None)
    st = bl.compute([10, 10, 10], 'time', 's', floor=0.1, better_factor=0,
                    check='NpbCG')
    assert (st.lower, st.upper) == (None, 0.1)


def test_lower_threshold_never_below_minus_one():
    st = bl.compute([1, 10, 100], 'bandwidth', 'MB/s', k=3, check='OsuBw')
    assert st.lower == -1.0


@pytest.mark.parametrize('check,metric,expected', [
    ('OsuLatency', 'latency_8B', 'lower'),
    ('PingPongDistance', 'latency_r3', 'lower'),
    ('NpbCG', 'time', 'lower'),
    ('ConcurrentSends', 'concurrent_ratio', 'lower'),
    ('OsuBw', 'bandwidth', 'higher'),
    ('LinkMatrix', 'bw_median', 'higher'),
    ('NpbCG', 'mops_total', 'higher'),
    ('Stream', 'triad', 'higher'),
    # the link matrix's per-node figures and its verdict count
    ('LinkMatrix', 'peer_n4_sent', 'higher'),
    ('LinkMatrix', 'peer_min', 'higher'),
    ('LinkMatrix', 'bw_n4_recv', 'higher'),
    ('LinkMatrix', 'faults', 'lower'),
    # declared, not read from the name: a slowdown is lower-is-better,
    # a memory bandwidth 'bw' higher, a step between cache levels higher
    ('OsNoise', 'slowdown_k', 'lower'),
    ('MemoryRandom', 'bw', 'higher'),
    ('MemoryLatency', 'step_DRAM', 'higher'),
    ('PingPongVsImb', 'latency_ratio', 'both'),
    # nobody declared it: judged both ways, never guessed
    ('SiteCheck', 'bandwidth', 'both'),
    ('OsuBw', 'count', 'both'),
])
def test_direction(check, metric, expected):
    assert bl.direction(check, metric) == expected


def test_both_direction_is_symmetric():
    st = bl.compute([5, 5, 5], 'count', None, floor=0.07)
    assert (st.lower, st.upper) == (-0.07, 0.07)


def _samples(values, metric='bandwidth', unit='MB/s', check='PingPongDistance',
             point='interconnect=fab0,num_nodes=2,ppn=1', result='pass'):
    key = Key('emu', 'p', check, point, metric)
    return [Sample(key, v, unit, 1000.0 + i, f'job{i}', result)
            for i, v in enumerate(values)]


def make(samples, **kw):
    """A baseline of ``samples``, grouped as the command groups them."""
    return bl.make(group(samples), **kw)


def test_refuses_below_minimum_runs_and_names_the_metric():
    with pytest.raises(bl.TooFewRuns) as err:
        make(_samples([1.0, 2.0]), min_runs=3)

    assert 'fewer than 3 healthy runs' in str(err.value)
    assert 'PingPongDistance emu:p [interconnect=fab0,num_nodes=2,ppn=1] bandwidth' \
        in str(err.value)


def test_skip_short_keeps_the_others():
    s = _samples([1, 2]) + _samples([5, 5, 5], metric='latency', unit='us')
    base = make(s, min_runs=3, skip_short=True)
    assert [k.metric for k in base.stats] == ['latency']
    assert [k.metric for k in base.short] == ['bandwidth']


def test_one_value_per_run_and_last_n_runs():
    s = _samples([10, 20, 30, 40, 50])
    chosen = select(s, last=3)
    assert sorted(x.value for x in chosen) == [30, 40, 50]
    # perf failures are excluded unless asked for
    bad = _samples([1, 1, 1], result='fail')
    assert select(bad) == []
    assert len(select(bad, include_perf_failures=True)) == 3


def test_rendered_file_loads_and_round_trips():
    s = _samples([100, 98, 102, 96, 104]) + \
        _samples([9.0, 9.5, 9.1], metric='latency', unit='us')
    base = make(s, min_runs=3)
    text = bl.render('emu', bl.entries(base), ['test'])
    refs = references.parse(yaml.safe_load(text), 'x.yaml', 'emu')
    key, metrics = refs.lookup('PingPongDistance', 'p', {'interconnect': 'fab0',
                                                 'num_nodes': 2, 'ppn': 1})
    assert metrics['bandwidth'] == (100.0, -0.089, 0.267, 'MB/s')
    assert metrics['latency'][0] == 9.1
    assert metrics['latency'][2] > 0 and metrics['latency'][3] == 'us'


def test_rebaseline_is_a_diff_of_changed_lines_only():
    a = make(_samples([100, 100, 100]) +
                _samples([9, 9, 9], metric='latency', unit='us'), min_runs=3)
    b = make(_samples([120, 120, 120]) +
                _samples([9, 9, 9], metric='latency', unit='us'), min_runs=3)
    old = bl.render('emu', bl.entries(a))
    new = bl.render('emu', bl.entries(b))
    d = bl.diff(old, new, 'config/references/emu.yaml')
    changed = [line for line in d.splitlines()
               if line[:1] in '+-' and not line.startswith(('+++', '---'))]
    assert len(changed) == 2
    assert all('"bandwidth"' in line for line in changed)


def test_rebaseline_keeps_points_not_measured_unless_replace():
    old = bl.render('emu', {('A', 'p', 'x=1'): {'m': {'value': 1}}})
    new = {('B', 'p', 'x=1'): {'m': {'value': 2}}}
    kept = yaml.safe_load(refwriter.update(old, 'emu', new))['references']
    assert set(kept) == {'A', 'B'}
    dropped = yaml.safe_load(refwriter.update(old, 'emu', new,
                                              replace=True))['references']
    assert set(dropped) == {'B'}


PERFLOG_LINE = (
    '2026-11-21T14:24:34|reframe 4.10.4|PingPongDistance %num_nodes=1 '
    '%ppn=2 %interconnect=shm %msg_bytes=8|openmpi|vm|17114|pass|x|'
    'latency=3.2559|ref=0|lower=None|upper=None|unit=us|'
    'bandwidth=2.4571|ref=2.5|lower=-0.1|upper=0.3|unit=MB/s|'
)


def test_perflog_line():
    ss = parse_perflog_line(PERFLOG_LINE, 'localhost', 'local')
    by = {s.key.metric: s for s in ss}
    assert set(by) == {'latency', 'bandwidth'}
    assert by['latency'].key.point == \
        'environ=openmpi,interconnect=shm,msg_bytes=8,num_nodes=1,ppn=2'
    assert by['latency'].key.check == 'PingPongDistance'
    assert by['latency'].value == 3.2559 and by['latency'].ref == 0
    assert (by['bandwidth'].ref, by['bandwidth'].lower,
            by['bandwidth'].upper) == (2.5, -0.1, 0.3)
