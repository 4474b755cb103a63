"""Live test of the leaf/spine emulated fabric: ``up --topology leafspine``
(4 nodes: n1, n2 under leaf1, n3, n4 under leaf2) -> Slurm knows the tree
-> a cut uplink slows the flows across the leaves, not those within one ->
a miscabled node really sits on its new leaf (its "cross" flow becomes
local) while topology.conf stays as meant -> restore (and jobs reach the
node at once) -> down leaves no bridge or uplink behind.

Needs root, the Slurm/munge packages and OpenMPI; skipped otherwise, and
when an emulated cluster is already up. About 1 minute.
"""

import os
import subprocess

import pytest

from clustergate_lab.cluster import netns
from clustergate_lab.cluster import state as cluster_state
from live_cluster import (build_pingpong, cluster_command, job_env,
                          pingpong, why_skip)

pytestmark = pytest.mark.cluster


_reason = why_skip()
if _reason:
    pytest.skip(_reason, allow_module_level=True)


def _cg(*args):
    cp = cluster_command(*args)
    return cp.stdout + cp.stderr


def _pingpong(paths, exe, a, b):
    """Median MB/s between nodes a and b over fab0, a failed start retried
    once."""
    return pingpong(paths, exe, f'{a},{b}', 'fab0', attempts=2,
                    timeout=120)


@pytest.fixture(scope='module')
def tree_cluster(tmp_path_factory):
    paths = cluster_state.Paths()
    try:
        _cg('up', '--topology', 'leafspine', '--nodes', '4',
            '--leaves', '2')
        exe = build_pingpong(tmp_path_factory.mktemp('pp'))
        yield paths, exe
    finally:
        cluster_command('down', check=False)


def test_leafspine_faults(tree_cluster):
    paths, exe = tree_cluster
    topo = subprocess.run(['scontrol', 'show', 'topology'],
                          env=job_env(paths, 'fab0'),
                          capture_output=True, text=True,
                          timeout=15).stdout
    assert 'SwitchName=leaf1 ' in topo and 'Nodes=n[1-2]' in topo
    assert 'SwitchName=leaf2 ' in topo and 'Nodes=n[3-4]' in topo
    with open(paths.topology_conf) as fp:
        declared = fp.read()
    assert netns.bridge_of('cgn2f0') == 'cgl1f0'

    # nodes at 250 Mbit/s = 31.25 MB/s: the link is the bottleneck
    cross = _pingpong(paths, exe, 'n1', 'n3')
    local = _pingpong(paths, exe, 'n1', 'n2')
    assert 20 < cross < 34 and 20 < local < 34, (cross, local)

    # the uplink of leaf1 cut to 1/4 (250 -> 62.5 Mbit/s): across slows,
    # within the leaf does not
    out = _cg('degrade', '--uplink', 'leaf1', '--rate', '25%')
    assert 'uplink leaf1-spine fab0: 62500kbit' in out
    assert _pingpong(paths, exe, 'n1', 'n3') < 0.4 * cross
    assert _pingpong(paths, exe, 'n1', 'n2') > 0.7 * local

    # n2 miscabled to leaf2: its flow to n3 no longer takes the cut uplink
    # (full rate) and its flow to n1 now does
    _cg('miscable', '--node', 'n2', '--leaf', 'leaf2')
    assert netns.bridge_of('cgn2f0') == 'cgl2f0'
    status = _cg('status')
    assert 'n2!(topology.conf: leaf1)' in status
    assert _pingpong(paths, exe, 'n2', 'n3') > 0.7 * local
    assert _pingpong(paths, exe, 'n1', 'n2') < 0.4 * local

    # restore: rates and cabling as meant; a job reaches n2 at once
    _cg('restore')
    assert netns.bridge_of('cgn2f0') == 'cgl1f0'
    assert netns.read_dev_rate('cgu1f0') == cluster_state.load(paths)['uplink_rate']
    assert _pingpong(paths, exe, 'n1', 'n3') > 0.7 * cross
    with open(paths.topology_conf) as fp:
        assert fp.read() == declared

    _cg('down')
    for dev in ('cgfab0', 'cgl1f0', 'cgl2f1', 'cgu1f0', 'cgs2f1'):
        assert not netns.link_exists(dev), dev
    assert not os.path.exists(paths.root)
