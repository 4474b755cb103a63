"""Live test of the emulated cluster: up -> 4 idle nodes -> srun across
nodes -> OpenMPI ping-pong on fab0 and fab1 -> degrade lowers the measured
bandwidth -> down leaves nothing behind.

Needs root, the Debian packages (slurmctld, slurmd, slurm-client, munge,
openmpi-bin, libopenmpi-dev) and no emulated cluster already up; skipped
otherwise. Every step is bounded in time (whole test: well under a minute).
"""

import os
import shutil
import subprocess
import sys
import time

import pytest

from clustergate import launchlog
from clustergate.cluster import lifecycle, netns, procs
from clustergate.cluster import state as st

pytestmark = pytest.mark.cluster

NODES = 4
PINGPONG_C = r'''
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
/* 4 MiB ping-pong between ranks 0 and 1; prints the median bandwidth */
static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
int main(int argc, char **argv) {
    int rank, n = 4 << 20, reps = 7;
    double t[7];
    char *buf = calloc(n, 1);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < reps + 2; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(buf, n, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, n, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
        }
        if (i >= 2) t[i - 2] = (MPI_Wtime() - t0) / 2;
    }
    qsort(t, reps, sizeof(double), cmp);
    if (rank == 0) printf("MBps %.1f\n", n / t[reps / 2] / 1e6);
    MPI_Finalize();
    return 0;
}
'''


def _why_skip():
    if os.geteuid() != 0:
        return 'needs root'

    missing = lifecycle.missing_packages()
    if missing:
        return 'missing: ' + ', '.join(f'{c} ({p})' for c, p in
                                       missing.items())

    if not shutil.which('mpicc.openmpi'):
        return 'missing mpicc.openmpi (libopenmpi-dev)'

    if os.path.exists(st.Paths().state_file):
        return 'an emulated cluster is already up (state exists)'

    if any(n in netns.existing_namespaces() for n in ('n1', 'n2')):
        return 'namespaces n1/n2 already exist'

    return None


_reason = _why_skip()
if _reason:
    pytest.skip(_reason, allow_module_level=True)


def _cluster(*args, timeout=60):
    cp = subprocess.run([sys.executable, '-m', 'clustergate.cli', 'cluster',
                         *args], capture_output=True, text=True,
                        timeout=timeout)
    assert cp.returncode == 0, f'cluster {args}: {cp.stderr}'
    return cp


def _env(paths, fabric=None):
    env = dict(os.environ, SLURM_CONF=paths.slurm_conf,
               OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')
    if fabric:
        env.update(OMPI_MCA_pml='ob1', OMPI_MCA_btl='self,tcp',
                   OMPI_MCA_btl_tcp_if_include=fabric,
                   OMPI_MCA_oob_tcp_if_include=fabric)
    return env


def _pingpong(paths, exe, fabric):
    cp = subprocess.run(['srun', '-N2', '-n2', '--mpi=pmix', '-w', 'n1,n2',
                         exe], env=_env(paths, fabric), capture_output=True,
                        text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    return float(cp.stdout.split('MBps')[1].split()[0])


@pytest.fixture(scope='module')
def cluster(tmp_path_factory):
    paths = st.Paths()
    t0 = time.monotonic()
    try:
        _cluster('up', '--nodes', str(NODES))
        yield paths, time.monotonic() - t0
    finally:
        subprocess.run([sys.executable, '-m', 'clustergate.cli', 'cluster',
                        'down'], timeout=60)


def test_lifecycle(cluster, tmp_path):
    paths, up_time = cluster
    assert up_time < 15

    # a second up refuses without touching the running cluster
    cp = subprocess.run([sys.executable, '-m', 'clustergate.cli', 'cluster',
                         'up'], capture_output=True, text=True, timeout=30)
    assert cp.returncode == 1 and 'already up' in cp.stderr

    cp = subprocess.run(['sinfo', '-h', '-N', '-o', '%N %t'],
                        env=_env(paths), capture_output=True, text=True,
                        timeout=15)
    states = dict(line.split() for line in cp.stdout.splitlines())
    assert states == {f'n{i}': 'idle' for i in range(1, NODES + 1)}

    cp = subprocess.run(['srun', '-N', '2', '-n', '2', '--mpi=pmix',
                         'hostname'], env=_env(paths), capture_output=True,
                        text=True, timeout=30)
    assert cp.returncode == 0, cp.stderr
    # Slurm chooses the two nodes (not always n1, n2): two distinct ones
    names = cp.stdout.split()
    assert len(set(names)) == 2, names
    assert set(names) <= {f'n{i}' for i in range(1, NODES + 1)}, names

    # a task that dies ends its step at once (KillOnBadExit=1) instead of
    # leaving the others to wait until the time limit; the cause is named
    # (task 1 says where Slurm put it: the step may land on any two nodes)
    t0 = time.monotonic()
    cp = subprocess.run(['srun', '-N', '2', '-n', '2', 'sh', '-c',
                         'if [ "$SLURM_PROCID" = 1 ]; then '
                         'echo "crash on $SLURMD_NODENAME"; kill -SEGV $$; '
                         'fi; sleep 60'], env=_env(paths),
                        capture_output=True, text=True, timeout=90)
    assert cp.returncode != 0 and time.monotonic() - t0 < 30, cp.stderr
    where = cp.stdout.split('crash on ')[1].split()[0]
    assert where in {f'n{i}' for i in range(1, NODES + 1)}, cp.stdout
    assert (launchlog.diagnose(cp.stderr) ==
            f'task 1 on {where}: Segmentation fault'), cp.stderr

    src = tmp_path / 'pp.c'
    src.write_text(PINGPONG_C)
    exe = str(tmp_path / 'pp')
    subprocess.run(['mpicc.openmpi', '-O2', '-o', exe, str(src)],
                   check=True, timeout=60)
    healthy = {f: _pingpong(paths, exe, f) for f in ('fab0', 'fab1')}
    # shaped at 1 Gbit/s = 125 MB/s: the link is the bottleneck
    for f, bw in healthy.items():
        assert 60 < bw < 135, f'{f}: {bw} MB/s'

    _cluster('degrade', '--node', 'n2', '--fabric', 'fab0',
             '--rate', '250mbit')
    degraded = _pingpong(paths, exe, 'fab0')
    assert degraded < 0.5 * healthy['fab0'], (degraded, healthy)
    assert _pingpong(paths, exe, 'fab1') > 0.6 * healthy['fab1']
    status = subprocess.run([sys.executable, '-m', 'clustergate.cli',
                             'cluster', 'status'], capture_output=True,
                            text=True, timeout=30).stdout
    assert '250mbit/250mbit' in status

    _cluster('restore')
    assert _pingpong(paths, exe, 'fab0') > 0.6 * healthy['fab0']

    recs = list(st.load(paths)['procs'].values())
    assert len(recs) == NODES + 2
    t0 = time.monotonic()
    _cluster('down')
    assert time.monotonic() - t0 < 20
    assert not any(procs.alive(r) for r in recs)
    assert not [n for n in netns.existing_namespaces()
                if n in {f'n{i}' for i in range(1, NODES + 1)}]
    assert not netns.link_exists('cgfab0')
    assert not netns.link_exists('cgfab1')
    with open(netns.HOSTS_FILE) as fp:
        assert netns.HOSTS_BEGIN not in fp.read()
    assert not os.path.exists(paths.root)
    # down is idempotent
    _cluster('down')
