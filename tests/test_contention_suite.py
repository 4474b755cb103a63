"""ContentionSuite: every pattern and size of a point in one job, read from
real cg_contention output (tests/fixtures/cg-outputs/README.md)."""

import pytest
import reframe.utility.sanity as sn
from reframe.core.exceptions import SanityError

from conftest import fixture_text
from rfm_loader import load_checks, pick
from test_contention_checks import fed, line_of

from clustergate.rfm.families.contention_suite import PATTERNS, metric_name

GOOD = fixture_text('cg-outputs', 'contention-np4-shm.out')
DEGRADED = fixture_text('cg-outputs', 'emu-pingpong-1MB-n4-fab0-250mbit.out')
HEALTHY = fixture_text('cg-outputs', 'emu-pingpong-1MB-fab0-healthy.out')


@pytest.fixture(scope='module')
def suite():
    checks = load_checks('checks/contention/contention_checks.py')
    return pick(checks, 'ContentionSuite')


def perf(check, only=None):
    """The performance variables' values (``only``: those starting so;
    the ping-pong fixtures hold one pattern)."""
    check.set_perf_variables()
    return {k: sn.evaluate(v) for k, v in check.perf_variables.items()
            if only is None or k.startswith(only)}


def test_one_launch_runs_every_pattern_and_size(suite):
    c = fed(suite, GOOD)
    names = [p.name for p in c.patterns()]
    assert names == [p.name for p in PATTERNS]   # 4 ranks, 4 ppn: all
    c.num_nodes, c.ppn, c.num_tasks = 2, 1, 2
    assert 'concurrent' not in [p.name for p in c.patterns()]


def test_trials_stop_on_the_suites_noise_target(suite, monkeypatch):
    c = fed(suite, GOOD)
    monkeypatch.setattr(c, 'program_path', lambda: 'cg_contention')
    c.set_command()
    opts = c.executable_opts
    assert opts[opts.index('--trials') + 1] == '51'          # the cap
    assert opts[opts.index('--target-rse') + 1] == '0.05'
    assert opts[opts.index('--min-trials') + 1] == '10'
    c.target_rse, c.min_trials = 0.02, 20                   # a site's -S
    c.set_command()
    assert c.executable_opts[-4:] == ['--target-rse', '0.02',
                                      '--min-trials', '20']


def test_real_output_gives_every_pattern_size_as_a_variable(suite):
    c = fed(suite, GOOD)
    assert sn.evaluate(c.validate()) is True
    values = perf(c)
    assert values['barrier_latency'] == float(
        line_of(GOOD, 'barrier', 0)['t_us'])
    for pattern in ('shift', 'alltoall', 'hotspot', 'allreduce'):
        for size in (8, 10000, 1000000):
            m = line_of(GOOD, pattern, size)
            assert values[f'{pattern}_{size}_latency'] == float(m['t_us'])
            assert values[f'{pattern}_{size}_bandwidth'] == \
                float(m['bw_MBps'])

    # per peer: each peer's figures and the worst as the headline
    peers = [line_of(GOOD, 'pingpong', 1000000, j) for j in (1, 2, 3)]
    assert values['pingpong_1000000_bandwidth_r2'] == \
        float(peers[1]['bw_MBps'])
    assert values['pingpong_1000000_latency'] == max(float(m['t_us'])
                                                     for m in peers)
    pair = line_of(GOOD, 'concurrent_pair', 10000)
    assert values['concurrent_10000_ratio'] == float(pair['ratio'])
    # 11 patterns: barrier once, the others at 3 sizes, per peer x 3 peers
    assert len([k for k in values if k.endswith('_latency')]) == 31


def test_a_missing_pattern_is_a_sanity_failure_naming_it(suite):
    kept = [ln for ln in GOOD.splitlines()
            if not ln.startswith('CG pattern=hotspot bytes=10000 ')]
    text = '\n'.join(kept).replace('measurements=46', 'measurements=45')
    c = fed(suite, text + '\n')
    with pytest.raises(SanityError, match='hotspot_10000'):
        sn.evaluate(c.validate())


def test_slow_peer_node_is_named_per_pattern_and_size(suite):
    c = fed(suite, DEGRADED)
    values = perf(c, 'pingpong_1000000')
    ratio = values['pingpong_1000000_peer_bandwidth_ratio']
    assert ratio == pytest.approx(29.09 / 81.77, abs=0.005)
    assert c.reference['*:pingpong_1000000_peer_bandwidth_ratio'] == \
        (0.7, 0, None, 'x')
    pingpong = next(p for p in PATTERNS if p.name == 'pingpong')
    worst, suspects = c.verdict(pingpong, 1000000)
    assert len(suspects) == 1
    assert 'n1->n4' in suspects[0] and '0.36x' in suspects[0]
    # 8 B and 10 KB are latency: no verdict there
    assert c.verdict(pingpong, 8) is None


def test_healthy_peers_pass(suite):
    c = fed(suite, HEALTHY)
    values = perf(c, 'pingpong_1000000')
    assert values['pingpong_1000000_peer_bandwidth_ratio'] > 0.7
    pingpong = next(p for p in PATTERNS if p.name == 'pingpong')
    assert c.verdict(pingpong, 1000000)[1] == []


def test_metric_names():
    barrier, pingpong = PATTERNS[0], PATTERNS[1]
    assert metric_name(barrier, 0, 'latency') == 'barrier_latency'
    assert metric_name(pingpong, 8, 'bandwidth_r3') == \
        'pingpong_8_bandwidth_r3'


def test_peer_fraction_follows_the_sites_reference():
    # the site's reference file may set a pattern's peer bound (emucluster:
    # bipingpong at 0.5); the suspects logged and the judgement use it
    from types import SimpleNamespace

    from reframe.utility import ScopedDict
    from clustergate.rfm.families.contention import peer_fraction

    point = SimpleNamespace(
        current_partition=SimpleNamespace(fullname='emucluster:emu'),
        peer_outlier_fraction=0.7,
        reference=ScopedDict({
            'emucluster:emu': {
                'bipingpong_1000000_peer_bandwidth_ratio':
                    (0.5, 0, None, 'x'),
                'shift_1000000_peer_bandwidth_ratio':
                    (0.8, -0.25, None, 'x')},
            # what add_bounds writes: a default, not the site's
            '*': {'pingpong_1000000_peer_bandwidth_ratio':
                  (0.9, 0, None, 'x')}}))
    assert peer_fraction(point,
                         'bipingpong_1000000_peer_bandwidth_ratio') == 0.5
    assert peer_fraction(point, 'shift_1000000_peer_bandwidth_ratio') == \
        pytest.approx(0.6)
    assert peer_fraction(point,
                         'pingpong_1000000_peer_bandwidth_ratio') == 0.7
    point.peer_outlier_fraction = 0.0       # disabled wins
    assert peer_fraction(point,
                         'bipingpong_1000000_peer_bandwidth_ratio') == 0.0
