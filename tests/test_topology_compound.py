"""One explanation per fabric: compound faults on the 9-node, 3-leaf tree
(the emulated leaf/spine cluster: node links 250, uplinks 375), named
exactly, every culprit and no innocent node.

Where a real output of the emulated tree exists (tests/fixtures) it is
used. The compound cases are SYNTHETIC: each flow of the shift rounds of
cg_linkmatrix is measured as its max-min fair share on the faulty tree x
0.9 (the protocol's efficiency) x lognormal noise (sigma 0.05, seeded),
written as the CG lines cg_linkmatrix prints, and judged the way the
check judges a job's output (fabric verdict, then each node link against
its peers: :func:`clustergate.links.retest_driver.first_round`, no retest).
"""

import math
import random

import pytest

from clustergate.parsers import cgoutput
from clustergate.links import retest_driver
from clustergate.links import stats as linkstats
from clustergate.links import topology
from clustergate_lab.cluster import tree as tr
from clustergate.links.topology import Fault, shift_rounds
from conftest import fixture_text

NODES = [f'n{i}' for i in range(1, 10)]
TREE = topology.parse_topology_conf(
    tr.leafspine(NODES, 3).topology_conf(250, 375))


def uplink(leaf, factor):
    return Fault('uplink', leaf, (('switch', leaf, 'up'),
                                  ('switch', leaf, 'down')), factor, 'spine')


def node(n, factor):
    return Fault('node', n, (('node', n, 'up'), ('node', n, 'down')), factor)


def miscabled(n, leaf):
    return Fault('miscabled', n, (), 1.0, leaf)


def synthetic_output(faults, seed, sigma=0.05, topo=TREE, nodes=NODES):
    """CG lines of a synthetic link matrix on ``topo`` with ``faults``."""
    rng = random.Random(seed)
    true = topo
    for f in faults:
        true = f.apply(true)
    rank = {n: i for i, n in enumerate(nodes)}
    lines = []
    for r in shift_rounds(nodes):
        pred = topology.predict(true, r.flows)
        for s, d in r.flows:
            mbps = 0.9 * pred[(s, d)] / 8 * math.exp(rng.gauss(0, sigma))
            t_us = 4e6 / mbps
            k, _, half = r.label.partition('.')
            lines.append(
                f'CG pattern=linkmatrix bytes=4000000 ranks={len(nodes)} '
                f'ppn=1 nodes={len(nodes)} src={s} dst={d} '
                f't_us={t_us:.3f} min_us={t_us:.3f} bw_MBps={mbps:.4f} '
                f'round={k}{f" half={half}" if half else ""} '
                f'src_rank={rank[s]} dst_rank={rank[d]}')
    return '\n'.join(lines) + '\n'


def verdict(text, fabric='fab0', topo=TREE):
    """``(fabric lines, node-link lines, figures)`` as the check has them
    before the retest."""
    first = retest_driver.first_round(
        text, {'fabric': fabric,
               'topology': retest_driver.topology_to_json(topo)})
    return first.lines, first.verdict.lines, first.figures


def named(lines):
    """What the lines name: ('uplink', leaf), ('node', n), ..."""
    out = set()
    for ln in lines:
        words = ln.split()
        if ln.startswith('uplink '):
            out.add(('uplink', words[1].split('-')[0]))
        elif ln.startswith('miscabled node '):
            out.add(('miscabled', words[2], ln.split('cabled to ')[1]
                     .split(';')[0]))
        elif ln.startswith(('suspect node ', 'slow node link ')):
            out.add(('node', words[3] if ln.startswith('slow') else words[2]))
        else:
            out.add(('other', ln))
    return out


SEEDS = range(3)


@pytest.mark.parametrize('seed', SEEDS)
def test_uplink_and_node_link_name_both_and_no_leaf_mate(seed):
    # leaf1's uplink at 1/4 and n2 (on leaf1) at 1/2: n1 and n3 share the
    # cut trunk and n2's slow flows; judged against their peers on the
    # declared tree they were named too (0.50x its peers)
    lines, links, figures = verdict(synthetic_output(
        [uplink('leaf1', 0.25), node('n2', 0.5)], seed))
    assert named(lines + links) == {('uplink', 'leaf1'), ('node', 'n2')}
    for n in ('n1', 'n3'):
        assert figures[(n, 'both')].peer > 0.9, figures[(n, 'both')]


@pytest.mark.parametrize('seed', SEEDS)
def test_miscabled_node_does_not_slow_its_declared_leaf_mates(seed):
    # n7 (declared on leaf3) cabled to leaf1: against the declared tree
    # n9 ran at 0.76x its peers
    lines, links, figures = verdict(synthetic_output(
        [miscabled('n7', 'leaf1')], seed))
    assert named(lines + links) == {('miscabled', 'n7', 'leaf1')}
    assert min(f.peer for f in figures.values()) > 0.9


def test_real_miscabled_node_leaves_its_leaf_mates_at_their_peers():
    # real output of the emulated tree: n2 cabled to leaf3; against the
    # declared tree n1 was at 0.81x its peers (a baseline names that)
    text = fixture_text('cg-outputs/emu-linkmatrix-tree9-n2-on-leaf3.out')
    lines, links, figures = verdict(text)
    assert named(lines + links) == {('miscabled', 'n2', 'leaf3')}
    worst = linkstats.worst(figures)
    assert worst.peer > 0.93, worst


def test_noisy_real_miscabled_node_is_still_named():
    # the same fault in a CI run under load. Read at each flow's fastest
    # trial the flows spread 0.23, above the noise model, so the analysis
    # judges again at 0.23; n2 (8 sigma at 0.15) must stay a candidate
    # there. Before: 'healthy', no verdict
    text = fixture_text(
        'cg-outputs/emu-linkmatrix-tree9-n2-on-leaf3-noisy.out')
    run = cgoutput.parse(text)
    tree = topology.diagnose(TREE, topology.rounds_from_measurements(
        run.measurements, fastest=True), 'fab0')
    assert any('judged against 0.23' in n for n in tree.notes), tree.notes
    assert named(tree.messages()) == {('miscabled', 'n2', 'leaf3')}
    # at each flow's median trial, as the check reads them, the spread is
    # within the noise model: n2 named, nothing else
    tree = topology.diagnose(
        TREE, topology.rounds_from_measurements(run.measurements), 'fab0')
    assert tree.residual_sigma < 0.19, tree.notes
    lines, links, _ = verdict(text)
    assert named(lines + links) == {('miscabled', 'n2', 'leaf3')}


def test_fabric_model_holds_the_fitted_faults_only():
    run = cgoutput.parse(fixture_text(
        'cg-outputs/emu-linkmatrix-tree9-leaf2-uplink-25pct.out'))
    rounds = topology.rounds_from_measurements(run.measurements)
    fitted = linkstats.fabric_model(TREE, rounds)
    declared = TREE.capacity(('switch', 'leaf2', 'up'))
    assert 0.15 < fitted.capacity(('switch', 'leaf2', 'up')) / declared \
        < 0.5
    assert fitted.capacity(('switch', 'leaf1', 'up')) == declared
    # a node link's own fault stays out of the model its figure is
    # judged against
    run = cgoutput.parse(fixture_text(
        'cg-outputs/emu-linkmatrix-tree9-n5-50pct.out'))
    rounds = topology.rounds_from_measurements(run.measurements)
    fitted = linkstats.fabric_model(TREE, rounds)
    assert fitted.capacity(('node', 'n5', 'up')) == \
        TREE.capacity(('node', 'n5', 'up'))
    assert linkstats.tree_figures(TREE, rounds)[('n5', 'both')].peer < 0.6


@pytest.mark.parametrize('seed', SEEDS)
def test_miscabled_node_and_a_node_link_name_both(seed):
    # n7 (leaf3) cabled to leaf1 and n3 (leaf1) at 1/2: n3 shares leaf1
    # with the miscabled n7, n8 and n9 its declared leaf
    lines, links, figures = verdict(synthetic_output(
        [miscabled('n7', 'leaf1'), node('n3', 0.5)], seed))
    assert named(lines + links) == {('miscabled', 'n7', 'leaf1'),
                                    ('node', 'n3')}
    assert all(f.peer > 0.9 for (n, _), f in figures.items() if n != 'n3')


@pytest.mark.parametrize('seed', SEEDS)
def test_faults_on_both_fabrics_are_named_each_on_its_own(seed):
    # one job per fabric, at the same time: on fab0 leaf2's uplink at 1/4
    # and n5 (leaf2) at 1/2, on fab1 n8 (leaf3) cabled to leaf1; each
    # fabric's verdict names its own faults only
    fab0 = verdict(synthetic_output([uplink('leaf2', 0.25), node('n5', 0.5)],
                                    seed), 'fab0')
    fab1 = verdict(synthetic_output([miscabled('n8', 'leaf1')], seed + 100),
                   'fab1')
    assert named(fab0[0] + fab0[1]) == {('uplink', 'leaf2'), ('node', 'n5')}
    assert named(fab1[0] + fab1[1]) == {('miscabled', 'n8', 'leaf1')}
    assert all(' on fabric fab0: ' in ln for ln in fab0[0] + fab0[1])
    assert all(' on fabric fab1: ' in ln for ln in fab1[0] + fab1[1])

