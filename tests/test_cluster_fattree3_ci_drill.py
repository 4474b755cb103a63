"""The CI's drill on a three-level fat tree: the emulated cluster up as 18
nodes in 6 leaves of 3 under 3 spines under a core (``--topology fattree3
--nodes 18``; Slurm's topology.conf has switches of switches), one fault
on the upper level, and the link matrix on fab0:

1. spine1's trunk to the core cut to 1/4 (``degrade --uplink spine1
   --rate 25%``) -> the matrix runs the rounds of the declared three-level
   topology (not every pair) and fails naming exactly the trunk
   spine1-core: no node, no leaf uplink, no other trunk;
2. restore, down: nothing of the cluster is left behind.

Why 18 nodes and not 16: the trunk is named alone only under three spines
or more (with two, every flow between the spines crosses both trunks:
"uplink spine1-core or uplink spine2-core"), and a spine needs two leaves
(6 leaves); 16 nodes in 6 leaves are uneven leaves and 21 rounds, 18 are
6 leaves of 3 and 14 rounds, the 24-node tree's schedule. Node links at
the tree's 100 Mbit/s: the 18 flows of a round within the leaves measure
0.97x of it, link-bound on the machine's 2 cores. 4 trials a round
instead of 8 (the first dropped): the trunk at 1/4 is still named 41-45
sigma outside noise, and the whole drill takes about 3 minutes with
bring-up and tear-down (a healthy session: 96 s at 4 trials, 139 s at 8;
docs/reports/emulated-cluster.md). The healthy tree, the leaf uplink
and the miscabled node across spines are the 24-node drill's
(test_cluster_fattree3_drill.py, run when asked for).

Needs root and the emulated cluster's packages; uses the cluster only if
none is up (a cluster that is up may be someone else's).
"""


import pytest

import cluster_session as cs
from clustergate.links.topology import (all_pairs_rounds, parse_topology_conf,
                                        schedule)

pytestmark = pytest.mark.cluster

_reason = cs.why_not_available() or (
    'an emulated cluster is already up' if cs.is_up() else None)
if _reason:
    pytest.skip(_reason, allow_module_level=True)

NODES = 18
#: trials of every round (the check's default is 8; the first is dropped)
TRIALS = 4
#: spine1's trunk to the core at 1/4 of its rate
CUT_TRUNK = ('degrade', '--uplink', 'spine1', '--rate', '25%')


@pytest.fixture(scope='module')
def session():
    yield from cs.tree_session(NODES, ['--topology', 'fattree3'])


def test_cut_spine_trunk_is_named_alone_on_the_topology_schedule(session):
    topo = parse_topology_conf(cs.declared_topology())
    assert topo.parent['spine1'] == 'core' and \
        len(topo.nodes) == NODES, topo.parent
    planned = [r.label for r in schedule(topo, topo.nodes)]
    assert len(planned) < all_pairs_rounds(NODES), planned

    failures = cs.drill_names(session, 'fat3-ci-trunk', CUT_TRUNK,
                              ['uplink:spine1'],
                              'uplink spine1-core on fabric fab0',
                              options=('-S', f'trials={TRIALS}'))
    # judged on the rounds of the declared tree, every one of them run
    assert cs.matrix_rounds(session, 'fat3-ci-trunk') == planned, \
        failures[-3000:]
