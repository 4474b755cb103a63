"""Per-node link figures (clustergate.links.stats) on given matrices and
rounds: each node link against its peers, flat and on a declared tree."""

import pytest

from clustergate.links import stats as linkstats
from clustergate.links.matrix import Matrix
from clustergate.links.topology import Round, Topology, predict


def test_flat_figures_judge_each_node_against_pairs_not_touching_it():
    nodes = ['a', 'b', 'c', 'd']
    # every pair 100 MB/s except d's sends at 50 and its receives at 80
    rows = [[None if s == t else (50.0 if s == 'd' else
                                  80.0 if t == 'd' else 100.0)
             for t in nodes] for s in nodes]
    f = linkstats.flat_figures(Matrix.from_rows(nodes, rows))
    assert f[('d', 'sent')].bw == 50 and f[('d', 'sent')].peer == 0.5
    assert f[('d', 'recv')].bw == 80 and f[('d', 'recv')].peer == 0.8
    # a's row: 100, 100, 80 -> median 100; the pairs without a: median 80
    # (b->c 100, c->b 100, b->d 80, c->d 80, d->b 50, d->c 50)
    assert f[('a', 'sent')].bw == 100
    assert f[('a', 'sent')].peer == pytest.approx(100 / 80)
    assert f[('a', 'sent')].flows == 3
    assert linkstats.worst(f).node == 'd'
    assert linkstats.worst(f).direction == 'sent'


def test_tree_figures_use_the_flows_the_node_link_limits():
    topo = Topology.fat_tree(2, 2, node_rate=10.0, oversubscription=2)
    n = topo.nodes
    # a shift round: n0->n2 and n3->n1 cross the trunks, n1->n0 and
    # n2->n3 stay in their leaf
    flows = [(n[0], n[2]), (n[1], n[0]), (n[2], n[3]), (n[3], n[1])]
    pred = predict(topo, flows)
    # measured: all at 0.9 x prediction, except n[3]'s send at half of it
    measured = [0.9 * pred[f] * (0.5 if f[0] == n[3] else 1.0)
                for f in flows]
    fig = linkstats.tree_figures(topo, [Round('1', flows, measured)])
    s = fig[(n[3], 'sent')]
    # against the flows that do not touch n3 (at 0.9 of prediction)
    assert s.peer == pytest.approx(0.5)
    assert s.bw == pytest.approx(0.45 * pred[(n[3], n[1])])
    # what n3 receives is as its peers
    assert fig[(n[3], 'recv')].peer == pytest.approx(1.0)
    # (n1 receives n3's slow flow: on 4 nodes one flow is all it has)
    assert linkstats.worst(fig).peer == pytest.approx(0.5)


def test_tree_figures_skip_flows_held_at_a_trunk_share():
    topo = Topology.fat_tree(2, 2, node_rate=10.0, oversubscription=2)
    n = topo.nodes
    # round 1: n0 sends across with n1 (trunk shared: 5 each, not limited
    # by n0's link); round 2: n0 sends inside its leaf (10: limited by it)
    r1 = [(n[0], n[2]), (n[1], n[3])]
    r2 = [(n[0], n[1]), (n[2], n[3])]
    p1, p2 = predict(topo, r1), predict(topo, r2)
    assert p1[r1[0]] == pytest.approx(5.0) and p2[r2[0]] == 10.0
    # n0's crossing flow measured at a fifth of its share: not its link
    m1 = [0.2 * p1[r1[0]], p1[r1[1]]]
    m2 = [p2[f] for f in r2]
    fig = linkstats.tree_figures(topo, [Round('1', r1, m1),
                                        Round('2', r2, m2)])
    assert fig[(n[0], 'sent')].flows == 1
    assert fig[(n[0], 'sent')].bw == pytest.approx(10.0)


def test_metric_names_are_word_characters():
    assert linkstats.metric_names('rack1-n01.x', 'recv') == (
        'bw_rack1_n01_x_recv', 'peer_rack1_n01_x_recv')


def test_both_ways_and_slow_partners_left_out():
    nodes = ['a', 'b', 'c', 'd', 'e']
    # d's link at 0.8 both ways; every other pair 100 MB/s
    rows = [[None if s == t else (80.0 if 'd' in (s, t) else 100.0)
             for t in nodes] for s in nodes]
    m = Matrix.from_rows(nodes, rows)
    f = linkstats.flat_figures(m)
    assert f[('d', 'both')].flows == 8
    assert f[('d', 'both')].peer == pytest.approx(0.8)
    # a receives one of its 4 flows from d: its median is still 100, but
    # with d's flow left out it is judged on its 3 healthy ones only
    g = linkstats.flat_figures(m, exclude=['d'])
    assert g[('a', 'recv')].flows == 3 and f[('a', 'recv')].flows == 4
    assert g[('a', 'both')].peer == pytest.approx(1.0)
    # d's own figures keep all its flows
    assert g[('d', 'sent')].flows == 4
    assert g[('d', 'both')].peer == pytest.approx(0.8)
