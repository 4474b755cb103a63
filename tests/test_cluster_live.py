"""Live test of the emulated cluster: up -> 4 idle nodes -> srun across
nodes -> OpenMPI ping-pong on fab0 and fab1 -> degrade lowers the measured
bandwidth -> down leaves nothing behind.

Needs root, the Debian packages (slurmctld, slurmd, slurm-client, munge,
openmpi-bin, libopenmpi-dev) and no emulated cluster already up; skipped
otherwise. Every step is bounded in time (whole test: well under a minute).
"""

import os
import subprocess
import time

import pytest

from clustergate.results import launchlog
from clustergate_lab.cluster import netns, procs
from clustergate_lab.cluster import state as cluster_state
from live_cluster import (build_pingpong, cluster_command, job_env,
                          pingpong, why_skip)

pytestmark = pytest.mark.cluster

NODES = 4

_reason = why_skip()
if _reason:
    pytest.skip(_reason, allow_module_level=True)


def _pingpong(paths, exe, fabric):
    return pingpong(paths, exe, 'n1,n2', fabric)


@pytest.fixture(scope='module')
def cluster(tmp_path_factory):
    paths = cluster_state.Paths()
    t0 = time.monotonic()
    try:
        cluster_command('up', '--nodes', str(NODES))
        yield paths, time.monotonic() - t0
    finally:
        cluster_command('down', check=False)


def _crashed_task_ends_its_step(paths):
    """A task that dies ends its step at once (KillOnBadExit=1) instead of
    leaving the others to wait until the time limit; the cause is named
    (task 1 says where Slurm put it: the step may land on any two
    nodes; it waits a second before dying, since srun lost the line of
    a task killed right after printing it once, in CI)."""
    t0 = time.monotonic()
    cp = subprocess.run(['srun', '-N', '2', '-n', '2', 'sh', '-c',
                         'if [ "$SLURM_PROCID" = 1 ]; then '
                         'echo "crash on $SLURMD_NODENAME"; sleep 1; '
                         'kill -SEGV $$; '
                         'fi; sleep 60'], env=job_env(paths),
                        capture_output=True, text=True, timeout=90)
    assert cp.returncode != 0 and time.monotonic() - t0 < 30, cp.stderr
    where = cp.stdout.split('crash on ')[1].split()[0]
    assert where in {f'n{i}' for i in range(1, NODES + 1)}, cp.stdout
    assert (launchlog.diagnose(cp.stderr) ==
            f'task 1 on {where}: Segmentation fault'), cp.stderr


def _down_leaves_nothing(paths):
    """down stops every daemon up started and removes the namespaces,
    bridges, hosts entries and state directory, within 20 s."""
    recs = list(cluster_state.load(paths)['procs'].values())
    assert len(recs) == NODES + 2
    t0 = time.monotonic()
    cluster_command('down')
    assert time.monotonic() - t0 < 20
    assert not any(procs.alive(r) for r in recs)
    assert not [n for n in netns.existing_namespaces()
                if n in {f'n{i}' for i in range(1, NODES + 1)}]
    assert not netns.link_exists('cgfab0')
    assert not netns.link_exists('cgfab1')
    with open(netns.HOSTS_FILE) as fp:
        assert netns.HOSTS_BEGIN not in fp.read()
    assert not os.path.exists(paths.root)


def test_lifecycle(cluster, tmp_path):
    paths, up_time = cluster
    assert up_time < 15

    # a second up refuses without touching the running cluster
    cp = cluster_command('up', timeout=30, check=False)
    assert cp.returncode == 1 and 'already up' in cp.stderr

    cp = subprocess.run(['sinfo', '-h', '-N', '-o', '%N %t'],
                        env=job_env(paths), capture_output=True, text=True,
                        timeout=15)
    states = dict(line.split() for line in cp.stdout.splitlines())
    assert states == {f'n{i}': 'idle' for i in range(1, NODES + 1)}

    cp = subprocess.run(['srun', '-N', '2', '-n', '2', '--mpi=pmix',
                         'hostname'], env=job_env(paths), capture_output=True,
                        text=True, timeout=30)
    assert cp.returncode == 0, cp.stderr
    # Slurm chooses the two nodes (not always n1, n2): two distinct ones
    names = cp.stdout.split()
    assert len(set(names)) == 2, names
    assert set(names) <= {f'n{i}' for i in range(1, NODES + 1)}, names

    _crashed_task_ends_its_step(paths)

    exe = build_pingpong(tmp_path)
    healthy = {f: _pingpong(paths, exe, f) for f in ('fab0', 'fab1')}
    # shaped at 1 Gbit/s = 125 MB/s: the link is the bottleneck
    for f, bw in healthy.items():
        assert 60 < bw < 135, f'{f}: {bw} MB/s'

    cluster_command('degrade', '--node', 'n2', '--fabric', 'fab0',
             '--rate', '250mbit')
    degraded = _pingpong(paths, exe, 'fab0')
    assert degraded < 0.5 * healthy['fab0'], (degraded, healthy)
    assert _pingpong(paths, exe, 'fab1') > 0.6 * healthy['fab1']
    status = cluster_command('status', timeout=30, check=False).stdout
    assert '250mbit/250mbit' in status

    cluster_command('restore')
    assert _pingpong(paths, exe, 'fab0') > 0.6 * healthy['fab0']

    _down_leaves_nothing(paths)
    # down is idempotent
    cluster_command('down')
