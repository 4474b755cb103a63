"""Helpers of the live tests of the emulated cluster
(test_cluster_live.py, test_cluster_tree_live.py): why they cannot run
here, the ``clustergate-lab cluster`` command, a job's environment and a 4 MiB
MPI ping-pong between two nodes."""

import os
import shutil
import subprocess
import sys

import cluster_session as cs
from clustergate_lab.cluster import lifecycle, netns

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


def why_skip():
    """Why a live cluster test cannot run here, or None."""
    if os.geteuid() != 0:
        return 'needs root'

    missing = lifecycle.missing_packages()
    if missing:
        return 'missing: ' + ', '.join(f'{c} ({p})' for c, p in
                                       missing.items())

    if not shutil.which('mpicc.openmpi'):
        return 'missing mpicc.openmpi (libopenmpi-dev)'

    if cs.is_up():
        return 'an emulated cluster is already up (state exists)'

    if any(n in netns.existing_namespaces() for n in ('n1', 'n2')):
        return 'namespaces n1/n2 already exist'

    return None


def cluster_command(*args, timeout=60, check=True):
    """``clustergate-lab cluster ARGS`` in a subprocess; with ``check``, its
    exit status must be 0."""
    cp = subprocess.run([sys.executable, '-m', 'clustergate_lab.cli', 'cluster',
                         *args], capture_output=True, text=True,
                        timeout=timeout)
    assert not check or cp.returncode == 0, f'cluster {args}: {cp.stderr}'
    return cp


def job_env(paths, fabric=None):
    """The environment of a Slurm job on the cluster; with ``fabric``,
    OpenMPI over TCP on that fabric only."""
    env = dict(os.environ, SLURM_CONF=paths.slurm_conf,
               OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')
    if fabric:
        env.update(OMPI_MCA_pml='ob1', OMPI_MCA_btl='self,tcp',
                   OMPI_MCA_btl_tcp_if_include=fabric,
                   OMPI_MCA_oob_tcp_if_include=fabric)
    return env


def build_pingpong(directory):
    """PINGPONG_C built with OpenMPI's wrapper: the executable's path."""
    exe = os.path.join(str(directory), 'pp')
    subprocess.run(['mpicc.openmpi', '-O2', '-x', 'c', '-o', exe, '-'],
                   input=PINGPONG_C, text=True, check=True, timeout=60)
    return exe


def pingpong(paths, exe, nodes='n1,n2', fabric='fab0', attempts=1,
             timeout=60):
    """Median MB/s of the ping-pong between two nodes over ``fabric``;
    ``attempts`` > 1 retries a failed start (a start-up crash of OpenMPI,
    docs/reports/emulated-cluster.md)."""
    for _ in range(attempts):
        cp = subprocess.run(['srun', '-N2', '-n2', '--mpi=pmix', '-w', nodes,
                             exe], env=job_env(paths, fabric),
                            capture_output=True, text=True, timeout=timeout)
        if cp.returncode == 0:
            return float(cp.stdout.split('MBps')[1].split()[0])

    raise AssertionError(cp.stderr)
