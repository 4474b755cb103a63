"""The shared-NIC study reproduced with its own tools on the emulated
cluster (links TBF-shaped to their nominal rate): NetPIPE (NPtcp) and
iperf3 from n1 to n2 and n3, one stream alone, two streams leaving n1
through one interface (fab0 twice: expected per-stream ratio ~0.5), and
through two interfaces (fab0 and fab1: ~1.0); our own cg_nic measured
in the same module, the three printed side by side.

The tools run in the nodes' network namespaces (``ip netns exec nK``,
what the emulation's rsh agent does), not through Slurm: NPtcp and
iperf3 are not MPI programs, and a receiver must listen before its
transmitter starts.
"""

import os
import re
import shutil
import statistics
import subprocess
import time

import pytest

from clustergate.parsers.netpipe_output import parse_iperf3, parse_netpipe
import cluster_session as cs

pytestmark = pytest.mark.cluster

#: NetPIPE ping-pong of one 4 MiB message (33.6 ms at 1 Gbit/s), in
#: bidirectional mode (-2: both ends send at once, so two pairs from n1
#: contend for its link whatever their phase; a plain ping-pong pair can
#: fall into the other pair's gaps), socket buffers large enough for it
MSG = 4 * 2**20
NETPIPE_OPTS = ['-p', '0', '-l', str(MSG), '-u', str(MSG), '-n', '15',
                '-2', '-b', str(8 * 2**20), '-o', '/dev/null']
IPERF_SECONDS = 3
IPERF_PORT = '5301'

#: goal of the study and the tolerance asserted here
GOAL = {'one_iface': 0.5, 'two_ifaces': 1.0}
TOLERANCE = 0.1

LAYOUTS = {
    'one_iface': [('n2', 'fab0'), ('n3', 'fab0')],
    'two_ifaces': [('n2', 'fab0'), ('n3', 'fab1')],
}


def _why_skip():
    for tool in ('NPtcp', 'iperf3', 'ip'):
        if not shutil.which(tool):
            return f'{tool} not installed (bash ci/setup-debian.sh)'
    return cs.why_not_available()


_reason = _why_skip()
if _reason:
    pytest.skip(_reason, allow_module_level=True)


def addr(node, fabric):
    from clustergate_lab.cluster.layout import Layout
    return Layout.node_addr(node, fabric)


def _ns(node, cmd):
    return ['ip', 'netns', 'exec', node, 'timeout', '60'] + cmd


def _concurrently(streams, server, client, parse):
    """Start a receiver on each destination, then every transmitter on n1
    at once; the per-stream rates in MB/s (10^6 B/s)."""
    rx = [subprocess.Popen(_ns(dst, server), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL) for dst, _ in streams]
    try:
        time.sleep(0.5)       # listening before the transmitters connect
        tx = [subprocess.Popen(_ns('n1', client(addr(dst, fab))),
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
              for dst, fab in streams]
        outs = [p.communicate(timeout=90)[0] for p in tx]
    finally:
        for p in rx:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    return [parse(o) for o in outs]


def netpipe(streams):
    return _concurrently(
        streams, ['NPtcp'] + NETPIPE_OPTS,
        lambda a: ['NPtcp', '-h', a] + NETPIPE_OPTS,
        lambda o: parse_netpipe(o)[-1].mb_per_s)


def iperf3(streams):
    return _concurrently(
        streams, ['iperf3', '-s', '-1', '-p', IPERF_PORT],
        lambda a: ['iperf3', '-c', a, '-p', IPERF_PORT, '-t',
                   str(IPERF_SECONDS), '-J'],
        parse_iperf3)


#: runs of each measurement; its median per stream is used: two streams
#: leaving n1 on 2 cores are near CPU-bound, and one run of two
#: interfaces gave 0.82 where 1.0 is meant (a CI run, 2026-11-28)
RUNS = 3


def _median_of_runs(tool, streams):
    """Per-stream median MB/s of :data:`RUNS` runs of ``tool``."""
    runs = [tool(streams) for _ in range(RUNS)]
    return [statistics.median(r[i] for r in runs)
            for i in range(len(streams))]


def ratios(tool):
    """``{layout: (ratio, alone MB/s, together MB/s)}``: per-stream rate
    together / the same stream alone (medians of :data:`RUNS` runs),
    averaged over the two streams."""
    alone = {s: _median_of_runs(tool, [s])[0] for s in
             {s for streams in LAYOUTS.values() for s in streams}}
    out = {}
    for layout, streams in LAYOUTS.items():
        together = _median_of_runs(tool, streams)
        r = sum(t / alone[s] for s, t in zip(streams, together)) / 2
        out[layout] = (r, [alone[s] for s in streams], together)

    return out


@pytest.fixture(scope='module')
def cluster():
    with cs.Session(nodes=4) as session:
        for line in cs.cluster('status').stdout.splitlines():
            if re.match(r'\s+n[1-4]\s+fab0', line) and '*' in line:
                pytest.skip(f'a link is not at its nominal rate: '
                            f'{line.strip()}')
        yield session


@pytest.fixture(scope='module')
def study(cluster, built_programs):
    from test_nic_cluster import _ratio, _srun
    cg = os.path.join(str(built_programs), 'cg_nic')
    two = ' '.join(f'{r}:{"fab0" if r % 2 == 0 else "fab1"}'
                   for r in range(8))
    res = {'NPtcp -2': ratios(netpipe), 'iperf3': ratios(iperf3),
           'cg_nic': {'one_iface': (_ratio(_srun(cg, None))[0], [], []),
                      'two_ifaces': (_ratio(_srun(cg, two))[0], [], [])}}
    print('\nshared NIC, per-stream ratio (together / alone), goal '
          '0.5 on one interface, 1.0 on two:')
    for tool, by_layout in res.items():
        print(f'  {tool:9} ' + '  '.join(
            f'{layout} {r:.2f}' for layout, (r, _, _) in by_layout.items()))
    return res


@pytest.mark.parametrize('tool', ['NPtcp -2', 'iperf3', 'cg_nic'])
@pytest.mark.parametrize('layout', ['one_iface', 'two_ifaces'])
def test_shared_nic_ratio(study, tool, layout):
    r, alone, together = study[tool][layout]
    assert abs(r - GOAL[layout]) <= TOLERANCE, (tool, layout, r, alone,
                                                 together)
