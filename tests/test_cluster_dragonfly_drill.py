"""The fault drill on a dragonfly: the emulated cluster up as 24 nodes in 6
leaves of 4, in 3 groups of 2 leaves, every pair of groups joined by one
global link (``--topology dragonfly``; the partition declares
topology.conf a dragonfly), and the link matrix on fab0 on the rounds of
the declared dragonfly:

1. frames between two groups take their own global link, and nothing is
   flooded over the others (the groups' bridges form a loop);
2. healthy -> passes;
3. the global link group1-group2 at 1/4 -> fails naming exactly it;
4. n2 (leaf1, group1) cabled to leaf5 (group3) -> fails naming n2;
5. restored -> passes;
6. down leaves no namespace, daemon, bridge, uplink or global link behind.

Needs root and the emulated cluster's packages; uses the cluster only if
none is up (a cluster that is up may be someone else's). 24 nodes on the
machine's cores: it runs only when ``CG_DRAGONFLY_DRILL=1`` asks for it.
"""

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.cluster

if os.environ.get('CG_DRAGONFLY_DRILL') != '1':
    pytest.skip('the 24-node dragonfly drill runs with CG_DRAGONFLY_DRILL=1',
                allow_module_level=True)

import cluster_session as cs  # noqa: E402
from clustergate_lab.cluster.netns import NETNS_DIR  # noqa: E402

_reason = cs.why_not_available() or (
    'an emulated cluster is already up' if cs.is_up() else None)
if _reason:
    pytest.skip(_reason, allow_module_level=True)

#: datagrams n1 (group1) sends to n9 (group2) in the forwarding check
DATAGRAMS = 300
_SEND = ('import socket, sys\n'
         's = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n'
         'for _ in range(int(sys.argv[2])):\n'
         '    s.sendto(b"x" * 1000, (sys.argv[1], 9))\n')


@pytest.fixture(scope='module')
def session():
    yield from cs.tree_session(24, ['--topology', 'dragonfly'])


#: a 24-node session of the dragonfly's rounds, retest included
TIMEOUT = 1200


def _sent(dev):
    with open(f'/sys/class/net/{dev}/statistics/tx_packets') as fp:
        return int(fp.read())


def test_1_frames_take_their_own_global_link(session):
    conf = cs.declared_topology()
    assert 'SwitchName=fabric Switches=group[1-3] LinkSpeed=200' in conf
    ends = ('cgsg1t2f0', 'cgsg1t3f0', 'cgsg2t3f0', 'cgsg3t2f0')
    before = {d: _sent(d) for d in ends}
    subprocess.run(['nsenter', f'--net={NETNS_DIR}/n1', sys.executable,
                    '-c', _SEND, '10.77.0.19', str(DATAGRAMS)], check=True,
                   timeout=60)
    sent = {d: _sent(d) - before[d] for d in ends}
    assert sent['cgsg1t2f0'] >= DATAGRAMS, sent
    # group1 -> group3 carries only the head's few control messages; the
    # link between group2 and group3 nothing of it
    assert sent['cgsg1t3f0'] < DATAGRAMS / 10, sent
    assert sent['cgsg2t3f0'] + sent['cgsg3t2f0'] < DATAGRAMS / 10, sent


def test_2_healthy_dragonfly_passes(session):
    cs.drill_passes(session, 'df-healthy', timeout=TIMEOUT)


def test_3_cut_global_link_is_named_and_nothing_else(session):
    cs.drill_names(session, 'df-global',
                   ('degrade', '--global', 'group1-group2', '--rate', '25%'),
                   ['global:group1-group2'],
                   'global link group1-group2 on fabric fab0', timeout=TIMEOUT)


def test_4_node_cabled_into_another_group_is_named(session):
    cs.drill_names(session, 'df-miscabled',
                   ('miscable', '--node', 'n2', '--leaf', 'leaf5'), ['n2'],
                   'miscabled node n2 on fabric fab0', timeout=TIMEOUT)


def test_5_restored_dragonfly_passes(session):
    cs.drill_passes(session, 'df-restored', timeout=TIMEOUT)
