"""The fault drill on a switch tree (docs/reports/emulated-cluster.md): the
emulated cluster up as 9 nodes under 3 leaf switches and a spine
(``--topology leafspine``; Slurm's topology.conf describes the switches as
meant), and the link matrix on fab0, judged against the declared topology
(``scontrol show topology``, as the emucluster partition declares it):

1. healthy -> passes;
2. leaf2's uplink cut to 1/4 of its rate (a trunk that lost cables, the
   LANL study's 4x) -> fails naming the uplink leaf2-spine;
3. n2 cabled to leaf3 instead of leaf1 (topology.conf unchanged) -> fails
   naming n2 and the leaf it is really on;
4. leaf2's uplink at 1/4 AND n2's node link at 1/2, both on fab0 (a
   compound fault: n2 sits under leaf1, so its slow link is not explained
   by the trunk) -> fails naming exactly the uplink leaf2-spine and n2,
   no healthy node and no other uplink;
5. restored -> passes;
6. down leaves no namespace, daemon, bridge or uplink behind.

Needs root and the emulated cluster's packages; uses the cluster only if
none is up (a cluster that is up may be someone else's).
"""

import pytest

import cluster_session as cs
from clustergate_lab.sensitivity import named_subjects
from conftest import reframe_failures

pytestmark = pytest.mark.cluster

_reason = cs.why_not_available() or (
    'an emulated cluster is already up' if cs.is_up() else None)
if _reason:
    pytest.skip(_reason, allow_module_level=True)

#: leaf2's uplink at 1/4 of its rate
CUT_LEAF2 = ('degrade', '--uplink', 'leaf2', '--rate', '25%')


@pytest.fixture(scope='module')
def session():
    yield from cs.tree_session(9, ['--topology', 'leafspine'])


def linkmatrix(session, tag, *faults):
    return cs.drill_linkmatrix(session, tag, *faults)


def test_1_healthy_tree_passes(session):
    cs.drill_passes(session, 'tree-healthy')


def test_2_cut_uplink_is_named(session):
    rc, out = linkmatrix(session, 'tree-uplink', CUT_LEAF2)

    assert rc != 0, 'leaf2 uplink at 1/4 went unnoticed'
    assert 'uplink leaf2-spine on fabric fab0' in out, reframe_failures(out)
    assert 'leaf1-spine' not in out and 'leaf3-spine' not in out


def test_3_miscabled_node_is_named_with_its_real_leaf(session):
    rc, out = linkmatrix(session, 'tree-miscabled',
                         ('miscable', '--node', 'n2', '--leaf', 'leaf3'))

    assert rc != 0, 'n2 cabled to leaf3 went unnoticed'
    assert 'miscabled node n2 on fabric fab0' in out, reframe_failures(out)
    assert 'as if cabled to leaf3' in out, reframe_failures(out)


def test_4_uplink_and_node_link_are_both_named_and_nothing_else(session):
    rc, out = linkmatrix(session, 'tree-uplink-and-node', CUT_LEAF2,
                         ('degrade', '--node', 'n2', '--rate', '50%'))

    failures = reframe_failures(out)
    assert rc != 0, 'leaf2 uplink at 1/4 and n2 at 1/2 went unnoticed'
    # every verdict line of every try counts: a healthy node named once
    # sends a technician to the wrong cable
    assert named_subjects(failures) == ['n2', 'uplink:leaf2'], failures


def test_5_restored_tree_passes(session):
    cs.drill_passes(session, 'tree-restored')
