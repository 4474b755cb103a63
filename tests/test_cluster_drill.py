"""The emulated 4-node Slurm cluster end to end, with the fault drill:

1. ``--mode ci`` passes on the healthy cluster;
2. ``n4``'s link on ``fab0`` throttled to 25 % of its rate: the contention
   check of the nightly (every pattern of the point in one job) on fab0
   fails and its output names n4 and fab0, while fab1 still passes (the
   fault is localised);
3. restored: fab0 passes again;
4. the cluster we started is torn down and leaves no namespace or daemon.
"""

import os
import re

import pytest

import cluster_session as cs
from conftest import reframe_failures

pytestmark = pytest.mark.cluster

_reason = cs.why_not_available()
if _reason:
    pytest.skip(_reason, allow_module_level=True)

# ReFrame matches -n against the display name without blanks, parameters
# in declaration order; the ping-pong's peer verdict at 1 MB is one of the
# suite's variables (pingpong_1000000_peer_bandwidth_ratio)
CONTENTION = 'ContentionSuite%num_nodes=4%ppn=1%interconnect={}$'


@pytest.fixture(scope='module')
def session():
    with cs.Session(nodes=4) as s:
        yield s

    if s.started:
        assert cs.leftovers() == [], 'cluster down left things behind'


def contention(session, fabric, tag):
    return session.reframe('-n', CONTENTION.format(fabric),
                           '-r', tag=tag, timeout=600)


def test_ci_mode_passes_on_healthy_cluster(session):
    rc, out = session.reframe('--mode', 'ci', '-r',
                              tag='ci-healthy')
    assert rc == 0, reframe_failures(out)
    # real Slurm jobs ran on the emulated nodes: the performance table
    # (written beside the session log, named by the verdict block) shows
    # their ids and node lists
    table_file = os.path.join(session.workdir, 'ci-healthy',
                              'performance.txt')
    assert f'performance table: {table_file}' in out or \
        'performance table: ci-healthy/performance.txt' in out, out[-2000:]
    with open(table_file) as fp:
        table = fp.read()
    assert re.search(r'\bn\[?1', table), table[-2000:]
    assert re.search(r'jobid.*\n(.*\n)*.*\b\d+\b', table)
    assert 'emucluster:emu' in table


def _perf_values(session, check, metric):
    """``{interconnect: [values]}`` of one metric in the session's
    perflogs (HPCC kernels log their point as %hpcc.<axis>=...)."""
    import glob
    found = {}
    for path in glob.glob(os.path.join(session.workdir, 'perflogs', '**',
                                       f'{check}.log'), recursive=True):
        for line in open(path):
            m = re.search(rf'\|{metric}=([0-9.e+-]+)\|', line)
            ic = re.search(r'%hpcc\.interconnect=(\w+)', line)
            if m and ic:
                found.setdefault(ic.group(1), []).append(float(m.group(1)))

    return found


def test_ci_mode_ran_hpcc_across_the_cluster(session):
    # HPL and b_eff of the HPC Challenge ran in the ci session above, on
    # 4 nodes x 1 ppn over both fabrics, with their figures in the perflog
    gflops = _perf_values(session, 'HpccHpl', 'gflops')
    ring = _perf_values(session, 'HpccBeff', 'random_ring_bandwidth')
    for fabric in ('fab0', 'fab1'):
        assert gflops.get(fabric) and min(gflops[fabric]) > 0, gflops
        # 1 Gbit/s links: a ring over them cannot beat 0.125 GB/s per rank
        assert ring.get(fabric), ring
        assert all(0 < b < 0.3 for b in ring[fabric]), ring


def test_degraded_link_fails_and_is_named(session):
    cs.cluster('degrade', '--node', 'n4', '--fabric', 'fab0',
               '--rate', '250mbit')
    try:
        rc, out = contention(session, 'fab0', 'degraded-fab0')
        assert rc != 0, 'a link at 25 % of its rate went unnoticed'
        failures = [ln for ln in out.splitlines() if 'suspect' in ln]
        assert failures, reframe_failures(out)
        assert any('->n4 over fab0' in ln for ln in failures), failures
        assert not any('->n2 ' in ln or '->n3 ' in ln for ln in failures)

        rc1, out1 = contention(session, 'fab1', 'degraded-fab1')
        assert rc1 == 0, ('fab1 is healthy but failed:\n' +
                          reframe_failures(out1))
    finally:
        cs.cluster('restore')


def test_restored_link_passes_again(session):
    rc, out = contention(session, 'fab0', 'restored-fab0')
    assert rc == 0, reframe_failures(out)
