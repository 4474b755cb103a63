"""Two cut trunks on a 3-leaf tree: with leaf1's trunk the tighter, the
max-min fair share predicts every flow alike whether leaf3's or leaf2's
trunk is the other one cut. The recorded fault-campaign matrix (leaf1's
and leaf3's uplinks at 25 % on fab0) tells them apart by the flows that
cross both cut trunks: they run slowest."""

import re

from clustergate.links import topology
from clustergate.links.topology import flowfit
from clustergate.parsers import cgoutput
from clustergate_lab.cluster import tree as tr
from conftest import fixture_text

TREE = tr.leafspine([f'n{i}' for i in range(1, 10)], 3)
NAME = 'emu-linkmatrix-tree9-uplinks-leaf1-leaf3-25pct.out'


def _diagnose(text):
    topo = topology.parse_topology_conf(TREE.topology_conf(250, 375))
    run = cgoutput.parse(text)
    return topology.diagnose(topo, topology.rounds_from_measurements(
        run.measurements), 'fab0')


def _uplinks(an):
    """The trunks the verdict names (each message's head, where twins
    it cannot tell apart are named with "or")."""
    return sorted(leaf for m in an.messages() for leaf in
                  re.findall(r'uplink (leaf\d)-spine', m.split(' on fabric')[0]))


def test_two_cut_trunks_name_both_and_no_third():
    an = _diagnose(fixture_text('cg-outputs', NAME))
    assert _uplinks(an) == ['leaf1', 'leaf3'], an.messages()
    assert all(v.kind == 'uplink' for v in an.verdicts)
    told = [m for m in an.messages() if 'told from' in m]
    assert told and "told from a cut of leaf2's trunk" in told[0], \
        an.messages()
    # the campaign's and the report's readers see no verdict on leaf2
    from clustergate_lab.sensitivity import named_subjects
    assert named_subjects('; '.join(an.messages())) == [
        'uplink:leaf1', 'uplink:leaf3']


def test_the_choice_follows_the_measurements():
    # the same matrix with leaf2's and leaf3's nodes' names swapped: the
    # slow flows now cross leaf1's and leaf2's trunks
    swap = {'n4': 'n7', 'n5': 'n8', 'n6': 'n9',
            'n7': 'n4', 'n8': 'n5', 'n9': 'n6'}
    text = re.sub(r'\b(src|dst)=(n\d)\b',
                  lambda m: f'{m[1]}={swap.get(m[2], m[2])}',
                  fixture_text('cg-outputs', NAME))
    assert _uplinks(_diagnose(text)) == ['leaf1', 'leaf2']


def _cut(leaf, factor):
    return flowfit.Fault('uplink', leaf, (('switch', leaf, 'up'),
                                           ('switch', leaf, 'down')),
                          factor, 'spine')


def test_the_fair_share_alone_cannot_tell_them_apart():
    # the premise: leaf1 the tighter, "leaf1 and leaf3" and "leaf1 and
    # leaf2" predict every flow of these rounds alike
    topo = topology.parse_topology_conf(TREE.topology_conf(250, 375))
    rounds = topology.rounds_from_measurements(cgoutput.parse(
        fixture_text('cg-outputs', NAME)).measurements)
    fit = flowfit.Fit(topo, rounds, flowfit.DEFAULT_SIGMA)
    right = fit.rates_for([_cut('leaf1', 0.34), _cut('leaf3', 0.39)])
    wrong = fit.rates_for([_cut('leaf1', 0.34), _cut('leaf2', 0.39)])
    assert right == wrong
    assert fit.rates_for([_cut('leaf3', 0.34), _cut('leaf2', 0.39)]) != right
