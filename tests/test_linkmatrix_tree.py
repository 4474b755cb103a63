"""The link matrix judged on a switch tree: the declared topology as a
partition names it (a topology.conf file, or ``scontrol show topology``),
and the verdicts on real outputs of cg_linkmatrix on the emulated
leaf/spine cluster (9 nodes, 3 leaves, 2:1 uplinks; fixtures README):
healthy, leaf2's uplink at 1/4, n2 cabled to leaf3."""

import subprocess

import pytest

from clustergate.parsers import cgoutput
from clustergate.links import matrix as linkmatrix
from clustergate.links import topology
from clustergate_lab.cluster import tree as tr
from clustergate.links.matrixjob import declared_topology
from conftest import fixture_text

#: The emulated tree of the fixtures, as `clustergate-lab cluster up` declares
#: it (LinkSpeed in Mbit/s: nodes 250, uplinks 375)
TREE = tr.leafspine([f'n{i}' for i in range(1, 10)], 3)

#: Real `scontrol show topology` of that cluster (Slurm 22.05), captured
#: from `clustergate-lab cluster up --topology leafspine` on 2026-11-22
SCONTROL = '''\
SwitchName=leaf1 Level=0 LinkSpeed=250 Nodes=n[1-3]
SwitchName=leaf2 Level=0 LinkSpeed=250 Nodes=n[4-6]
SwitchName=leaf3 Level=0 LinkSpeed=250 Nodes=n[7-9]
SwitchName=spine Level=1 LinkSpeed=375 Nodes=n[1-9] Switches=leaf[1-3]
'''


@pytest.fixture
def conf(tmp_path):
    path = tmp_path / 'topology.conf'
    path.write_text(TREE.topology_conf(250, 375))
    return str(path)


def _verdict(name, topo):
    run = cgoutput.parse(fixture_text(f'cg-outputs/{name}'))
    return topology.diagnose(topo, topology.rounds_from_measurements(
        run.measurements), 'fab0')


def test_topology_from_a_file(conf):
    topo = declared_topology({'file': conf})
    assert topo.leaf_of['n5'] == 'leaf2'
    assert topo.capacity(('switch', 'leaf2', 'up')) == 375
    over = declared_topology({'file': conf, 'uplink_rate': '250mbit',
                              'node_rate': '250mbit'})
    assert over.capacity(('switch', 'leaf2', 'up')) == \
        over.capacity(('node', 'n1', 'up'))


def test_topology_from_scontrol():
    def scontrol(cmd, **kw):
        assert cmd == ['scontrol', 'show', 'topology']
        return subprocess.CompletedProcess(cmd, 0, SCONTROL, '')

    topo = declared_topology({'source': 'scontrol'}, run=scontrol)
    assert topo.leaf_of == {f'n{i}': f'leaf{(i - 1) // 3 + 1}'
                            for i in range(1, 10)}


@pytest.mark.parametrize('spec,cause', [
    ({'file': '/nonexistent/topology.conf'},
     'file /nonexistent/topology.conf: No such file'),
    ({'source': 'netbox'}, "needs 'file' or 'source': 'scontrol'"),
    ('scontrol', "must be a dict"),
])
def test_topology_errors_are_one_line(spec, cause):
    with pytest.raises(topology.TopologyError, match=cause) as err:
        declared_topology(spec)
    assert '\n' not in str(err.value)


def test_scontrol_without_tree_is_named():
    def flat(cmd, **kw):
        return subprocess.CompletedProcess(
            cmd, 1, '', 'scontrol: error: No topology information '
            'available\n')

    with pytest.raises(topology.TopologyError,
                       match='No topology information'):
        declared_topology({'source': 'scontrol'}, run=flat)


def test_healthy_tree_is_healthy_where_the_flat_verdict_is_not(conf):
    topo = declared_topology({'file': conf})
    assert _verdict('emu-linkmatrix-tree9-healthy.out', topo).healthy
    # the flat matrix calls the oversubscribed cross-leaf flows slow
    run = cgoutput.parse(fixture_text(
        'cg-outputs/emu-linkmatrix-tree9-healthy.out'))
    flat = linkmatrix.analyse(linkmatrix.from_measurements(run.measurements))
    assert min(flat.ratios.values()) < 0.8


def test_cut_uplink_is_named(conf):
    an = _verdict('emu-linkmatrix-tree9-leaf2-uplink-25pct.out',
                  declared_topology({'file': conf}))
    assert [v.kind for v in an.verdicts] == ['uplink']
    assert an.messages()[0].startswith('uplink leaf2-spine on fabric fab0')


def test_miscabled_node_is_named_with_its_real_leaf(conf):
    an = _verdict('emu-linkmatrix-tree9-n2-on-leaf3.out',
                  declared_topology({'file': conf}))
    assert [v.kind for v in an.verdicts] == ['miscabled']
    assert 'n2 behaves as if cabled to leaf3' in an.messages()[0]
    assert 'says leaf1' in an.messages()[0]


def test_slow_node_link_is_named_on_the_tree(conf):
    an = _verdict('emu-linkmatrix-tree9-n5-50pct.out',
                  declared_topology({'file': conf}))
    assert [v.kind for v in an.verdicts] == ['node']
    assert an.messages()[0].startswith('suspect node n5 on fabric fab0')
