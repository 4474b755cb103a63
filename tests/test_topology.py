"""Switch-tree analysis (clustergate.links.topology): host lists, topology
parsers, max-min fair share on given vectors, the rounds of cg_linkmatrix
output, and each verdict on synthetic and real matrices."""

import math
import random

import pytest

from clustergate.parsers import cgoutput
from clustergate.links.topology import (Round, Topology, TopologyError, compress,
                                        diagnose, expand, fair_share, leaf_rounds,
                                        parse_rate, parse_scontrol_topology,
                                        parse_topology_conf, predict,
                                        rounds_from_measurements, shift_rounds)
from clustergate.links.topology.fairshare import RoundModel
from clustergate.links.topology.hostlist import HostlistError
from conftest import fixture_text

CONF = """# leaf/spine of the emulation, as meant to be cabled
SwitchName=leaf1 Nodes=n[1-4]
SwitchName=leaf2 Nodes=n[5-8]   # second rack
SwitchName=spine Switches=leaf[1-2]
"""

# -- host lists ----------------------------------------------------------


@pytest.mark.parametrize('expr, hosts', [
    ('n[1-4,7]', ['n1', 'n2', 'n3', 'n4', 'n7']),
    ('n[08-11]', ['n08', 'n09', 'n10', 'n11']),
    ('n1,m[3-4]', ['n1', 'm3', 'm4']),
    ('rack[1-2]-n[1-2]', ['rack1-n1', 'rack1-n2', 'rack2-n1', 'rack2-n2']),
    ('n5', ['n5']),
    ('', []),
])
def test_expand(expr, hosts):
    assert expand(expr) == hosts


@pytest.mark.parametrize('bad', ['n[1-', 'n]1[', 'n[3-1]', 'n[a-b]',
                                 'n[[1]]'])
def test_expand_rejects(bad):
    with pytest.raises(HostlistError):
        expand(bad)


def test_compress():
    assert compress(['n1', 'n2', 'n3', 'n5', 'm1']) == 'n[1-3,5],m1'
    assert compress(['n08', 'n09']) == 'n[08-09]'
    assert compress(['head']) == 'head'
    hosts = expand('n[1-4,7,9-12]')
    assert expand(compress(hosts)) == hosts


# -- topologies ----------------------------------------------------------

def test_parse_topology_conf():
    t = parse_topology_conf(CONF)
    assert t.nodes == [f'n{i}' for i in range(1, 9)]
    assert t.leaf_of['n3'] == 'leaf1' and t.leaf_of['n5'] == 'leaf2'
    assert t.parent == {'leaf1': 'spine', 'leaf2': 'spine', 'spine': None}
    assert t.leaves == ['leaf1', 'leaf2']
    # no LinkSpeed: node links 1, trunks non-blocking (4 nodes below)
    assert t.capacity(('node', 'n1', 'up')) == 1.0
    assert t.capacity(('switch', 'leaf1', 'up')) == 4.0
    assert t.path('n1', 'n2') == [('node', 'n1', 'up'),
                                  ('node', 'n2', 'down')]
    assert t.path('n1', 'n6') == [('node', 'n1', 'up'),
                                  ('switch', 'leaf1', 'up'),
                                  ('switch', 'leaf2', 'down'),
                                  ('node', 'n6', 'down')]


def test_parse_topology_conf_rates():
    t = parse_topology_conf('SwitchName=a Nodes=x[1-2] LinkSpeed=500mbit\n'
                            'SwitchName=b Nodes=y[1-2] LinkSpeed=500mbit\n'
                            'SwitchName=top Switches=a,b LinkSpeed=62.5')
    assert t.capacity(('node', 'x1', 'down')) == 62.5
    assert t.capacity(('switch', 'b', 'up')) == 62.5
    t2 = parse_topology_conf(CONF, node_rate='1gbit', uplink_rate='500mbit')
    assert t2.capacity(('node', 'n8', 'up')) == 125.0
    assert t2.capacity(('switch', 'leaf2', 'down')) == 62.5
    assert parse_rate('100gbit') == 12500.0
    assert parse_rate('125MB') == 125.0
    with pytest.raises(ValueError, match='bad rate'):
        parse_rate('fast')


def test_three_levels_and_to_conf():
    t = parse_topology_conf('SwitchName=l1 Nodes=a[1-2]\n'
                            'SwitchName=l2 Nodes=b[1-2]\n'
                            'SwitchName=l3 Nodes=c[1-2]\n'
                            'SwitchName=m1 Switches=l[1-2]\n'
                            'SwitchName=top Switches=m1,l3\n')
    assert t.path('a1', 'b1') == [('node', 'a1', 'up'),
                                  ('switch', 'l1', 'up'),
                                  ('switch', 'l2', 'down'),
                                  ('node', 'b1', 'down')]
    assert len(t.path('a1', 'c2')) == 5      # a1 l1 m1 | l3 c2
    again = parse_topology_conf(t.to_topology_conf())
    assert again.leaf_of == t.leaf_of and again.parent == t.parent


@pytest.mark.parametrize('text, msg', [
    ('SwitchName=s Nodes=n1\nSwitchName=t Nodes=n1', 'node n1 on both'),
    ('SwitchName=s Switches=x', 'unknown switch x'),
    ('SwitchName=s Nodes=n[1-', 'unbalanced'),
    ('Nodes=n1', 'no SwitchName'),
    ('SwitchName=s Nodes=n1 LinkSpeed=quick', 'LinkSpeed'),
])
def test_parse_errors_name_the_cause(text, msg):
    with pytest.raises(TopologyError, match=msg) as err:
        parse_topology_conf(text, source='site/topology.conf')
    assert str(err.value).startswith('site/topology.conf')


def test_parse_scontrol_topology():
    # upper switches list every node below them
    text = ('SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=n[1-4]\n'
            'SwitchName=leaf2 Level=0 LinkSpeed=1 Nodes=n[5-8]\n'
            'SwitchName=spine Level=1 LinkSpeed=1 Nodes=n[1-8] '
            'Switches=leaf[1-2]\n')
    t = parse_scontrol_topology(text)
    assert t.leaf_of == parse_topology_conf(CONF).leaf_of
    assert t.parent['leaf2'] == 'spine'
    # the same text as a topology.conf would put n1 on two switches
    with pytest.raises(TopologyError, match='on both'):
        parse_topology_conf(text)


# -- fair share ------------------------------------------------------------

def test_fair_share_vectors():
    caps = {'A': 1.0, 'B': 0.2, 'C': 10.0, 'D': 4.0}
    # two flows on A, one of them also on the narrow B
    assert fair_share([['A'], ['A', 'B']], caps.get) == pytest.approx(
        [0.8, 0.2])
    # parking lot: the long flow shares each link with one short flow
    assert fair_share([['A', 'A2'], ['A'], ['A2']],
                      {'A': 1.0, 'A2': 1.0}.get) == pytest.approx([.5] * 3)
    # D full at 2 each, C's remaining 8 to the flow alone on it
    assert fair_share([['C'], ['C', 'D'], ['D']], caps.get) == \
        pytest.approx([8.0, 2.0, 2.0])
    assert fair_share([[]], caps.get) == [math.inf]


def test_predict_on_the_tree():
    t = parse_topology_conf(CONF, uplink_rate=1.0)
    # the first half of the mutual round: leaf1 -> leaf2, 4 flows on 1
    half = [('n1', 'n5'), ('n2', 'n6'), ('n3', 'n7'), ('n4', 'n8')]
    assert set(predict(t, half).values()) == {0.25}
    # round 1: n4->n5 and n8->n1 cross alone, all at the node rate
    r1 = shift_rounds(t.nodes)[0]
    assert set(predict(t, r1.flows).values()) == {1.0}
    # round 3: three flows leave each leaf
    p = predict(t, shift_rounds(t.nodes)[2].flows)
    assert p[('n1', 'n4')] == 1.0
    assert p[('n2', 'n5')] == pytest.approx(1 / 3)
    wider = {('switch', 'leaf1', 'up'): 2.0, ('switch', 'leaf2', 'down'): 2.0}
    assert predict(t, half, rates=wider)[('n1', 'n5')] == 0.5
    assert predict(t, half, rates={('switch', 'leaf1', 'up'): 2.0})[
        ('n1', 'n5')] == 0.25           # leaf2's side still holds them


def test_round_model_variant_equals_full_solve():
    t = Topology.fat_tree(6, 4, oversubscription=2)
    rng = random.Random(5)
    for r in leaf_rounds(t):
        model = RoundModel(t, r.flows)
        assert model.rates == pytest.approx(
            [predict(t, r.flows)[f] for f in r.flows])
        for _ in range(3):
            n = rng.choice(t.nodes)
            leaf = rng.choice(t.leaves)
            link = ('switch', rng.choice(t.leaves), 'up')
            t2 = t.rehomed(n, leaf).scaled(link, 0.3)
            full = predict(t2, r.flows)
            assert model.variant(t2, [link], [n]) == pytest.approx(
                [full[f] for f in r.flows])


# -- rounds ----------------------------------------------------------------

def _fixture_rounds(name):
    run = cgoutput.parse(fixture_text('cg-outputs', name))
    return run, rounds_from_measurements(run.measurements)


def test_rounds_from_real_output():
    run, rounds = _fixture_rounds('emu-linkmatrix-4MB-n4-fab0-250mbit.out')
    assert [r.label for r in rounds] == ['1', '2.0', '2.1', '3']
    assert rounds[1].flows == [('n1', 'n3'), ('n2', 'n4')]
    assert rounds[2].flows == [('n3', 'n1'), ('n4', 'n2')]
    assert rounds[0].flows == [('n4', 'n1'), ('n1', 'n2'), ('n2', 'n3'),
                               ('n3', 'n4')]
    # each flow at its median trial (the fabric fit), or its fastest (the
    # node figures): the two differ on this output
    first = run.measurements[0]
    assert rounds[0].measured[0] == pytest.approx(first.median_bandwidth())
    fastest = rounds_from_measurements(run.measurements, fastest=True)
    assert fastest[0].measured[0] == pytest.approx(first.best_bandwidth())
    assert first.best_bandwidth() > first.median_bandwidth()
    # --no-split output: the mutual round is one round
    whole = rounds_from_measurements(run.measurements, split=False)
    assert [len(r) for r in whole] == [4, 4, 4]


def test_rounds_use_half_field_and_labels():
    run, _ = _fixture_rounds('emu-linkmatrix-4MB-fab0-busy.out')
    ms = run.measurements
    for i, m in enumerate(ms):
        m.fields = dict(m.fields)
        if m['round'] == 1:
            m.fields['half'] = i % 2          # as if timed in two halves
        if m['round'] == 3:
            m.fields['round'] = 'X1'          # an extra pattern's label
    rounds = rounds_from_measurements(ms)
    labels = [r.label for r in rounds]
    assert labels == ['1.0', '1.1', '2.0', '2.1', 'X1']
    assert sum(len(r) for r in rounds) == 12


# -- verdicts ----------------------------------------------------------------

def _measure(true, rounds, sigma=0.1, seed=0, scale=60.0):
    rng = random.Random(seed)
    out = []
    for r in rounds:
        p = predict(true, r.flows)
        out.append(Round(r.label, r.flows,
                         [p[f] * scale * math.exp(rng.gauss(0, sigma))
                          for f in r.flows]))
    return out


TREE8 = parse_topology_conf(CONF, uplink_rate=1.0)
TREE12 = parse_topology_conf('SwitchName=leaf1 Nodes=n[1-4]\n'
                             'SwitchName=leaf2 Nodes=n[5-8]\n'
                             'SwitchName=leaf3 Nodes=n[9-12]\n'
                             'SwitchName=spine Switches=leaf[1-3]\n',
                             uplink_rate=1.0)


def _cut(t, leaf, factor):
    return t.scaled(('switch', leaf, 'up'), factor).scaled(
        ('switch', leaf, 'down'), factor)


@pytest.mark.parametrize('seed', range(4))
def test_healthy_tree_no_verdict(seed):
    for t in (TREE8, TREE12):
        an = diagnose(t, _measure(t, shift_rounds(t.nodes), 0.15, seed),
                      fabric='fab0')
        assert an.healthy, an.summary()
        assert an.scale == pytest.approx(60.0, rel=0.1)


@pytest.mark.parametrize('seed', range(3))
def test_slow_uplink_named(seed):
    rounds = shift_rounds(TREE12.nodes)
    an = diagnose(TREE12, _measure(_cut(TREE12, 'leaf2', 0.25), rounds,
                                   seed=seed), fabric='fab0')
    assert [v.kind for v in an.verdicts] == ['uplink'], an.summary()
    v = an.verdicts[0]
    assert v.subject == ('leaf2', 'spine')
    assert v.message.startswith('uplink leaf2-spine on fabric fab0: '
                                'cross-switch flows at 0.2')
    assert 'within-switch flows at 1.0' in v.message or \
        'within-switch flows at 0.9' in v.message
    assert v.fault.factor == pytest.approx(0.25, rel=0.2)


def test_two_leaves_uplink_is_ambiguous_and_says_so():
    rounds = shift_rounds(TREE8.nodes)
    an = diagnose(TREE8, _measure(_cut(TREE8, 'leaf1', 0.25), rounds),
                  fabric='fab0')
    assert [v.kind for v in an.verdicts] == ['uplink']
    assert 'leaf1-spine or uplink leaf2-spine' in an.verdicts[0].message
    assert 'cannot tell them apart' in an.verdicts[0].message


@pytest.mark.parametrize('t', [TREE8, TREE12], ids=['8', '12'])
@pytest.mark.parametrize('seed', range(3))
def test_miscabled_node_named_with_its_leaf(t, seed):
    rounds = shift_rounds(t.nodes)
    an = diagnose(t, _measure(t.rehomed('n3', 'leaf2'), rounds, seed=seed),
                  fabric='fab0')
    assert [v.kind for v in an.verdicts] == ['miscabled'], an.summary()
    assert an.verdicts[0].subject == ('n3', 'leaf2')
    assert ('n3 behaves as if cabled to leaf2; topology.conf says leaf1'
            in an.verdicts[0].message)


@pytest.mark.parametrize('seed', range(3))
def test_slow_node_link_on_the_tree(seed):
    t = TREE8
    slow = t.scaled(('node', 'n4', 'up'), 0.5).scaled(('node', 'n4', 'down'),
                                                       0.5)
    an = diagnose(t, _measure(slow, shift_rounds(t.nodes), seed=seed),
                  fabric='fab0')
    assert [v.kind for v in an.verdicts] == ['node'], an.summary()
    assert an.verdicts[0].message.startswith('suspect node n4 on fabric fab0')


def test_real_outputs_flat_fabric():
    flat = parse_topology_conf('SwitchName=fab0 Nodes=n[1-4]')
    _, rounds = _fixture_rounds('emu-linkmatrix-4MB-n4-fab0-250mbit.out')
    an = diagnose(flat, rounds, fabric='fab0')
    assert [v.kind for v in an.verdicts] == ['node']
    assert an.verdicts[0].message.startswith(
        'suspect node n4 on fabric fab0: its link behaves as 0.2')
    _, rounds = _fixture_rounds('emu-linkmatrix-4MB-fab0-busy.out')
    assert diagnose(flat, rounds, fabric='fab0').healthy


def test_undeclared_trunk_rate_is_fitted():
    # topology.conf without LinkSpeed, the fabric oversubscribed 4:1
    bare = parse_topology_conf(TREE12.to_topology_conf())
    rounds = _measure(TREE12, shift_rounds(TREE12.nodes), seed=2)
    an = diagnose(bare, rounds, fabric='fab0')
    assert an.healthy, an.summary()
    assert 'fitted to the flows as 0.25x non-blocking' in an.summary()
    # taken as declared (non-blocking), every trunk looks slow
    an = diagnose(bare, rounds, fabric='fab0', fit_trunks=False)
    assert not an.healthy
    # fitted, a single cut trunk of three still shows
    cut = _measure(_cut(TREE12, 'leaf3', 0.25), shift_rounds(TREE12.nodes))
    an = diagnose(bare, cut, fabric='fab0')
    assert [v.subject for v in an.verdicts] == [('leaf3', 'spine')]


def test_groups_inferred_without_a_topology():
    rounds = _measure(TREE12, shift_rounds(TREE12.nodes), seed=4)
    an = diagnose(None, rounds, fabric='fab0')
    assert an.groups == [TREE12.nodes_of(l) for l in TREE12.leaves]
    assert an.healthy, an.summary()
    assert 'n[1-4] | n[5-8] | n[9-12]' in an.summary()
    # and a slow node link is still named on the inferred groups
    slow = TREE12.scaled(('node', 'n6', 'up'), 0.4).scaled(
        ('node', 'n6', 'down'), 0.4)
    an = diagnose(None, _measure(slow, shift_rounds(TREE12.nodes), seed=1),
                  fabric='fab0')
    assert [v.subject for v in an.verdicts] == [('n6',)], an.summary()
    # a non-blocking fabric shows no contention: one group
    flat = Topology.fat_tree(3, 4, oversubscription=1.0)
    an = diagnose(None, _measure(flat, shift_rounds(flat.nodes), seed=3))
    assert an.groups == [flat.nodes] and an.healthy
    assert 'no contention seen' in an.summary()


def test_leaf_rounds_scale_and_contrast_every_pair_of_leaves():
    t = Topology.fat_tree(32, 32, oversubscription=2)
    rounds = leaf_rounds(t)
    labels = [r.label for r in rounds]
    assert labels[:2] == ['I1', 'I16'] and len(rounds) == 2 + 31 + 10
    for r in rounds:
        # every node sends one flow and receives one
        assert sorted(s for s, _ in r.flows) == sorted(t.nodes), r.label
        assert sorted(d for _, d in r.flows) == sorted(t.nodes), r.label
    # every ordered pair of leaves (A, B): a round with A's nodes staying
    # in A while B's trunk is loaded (where a node of A cabled to B shows)
    seen = set()
    for r in rounds:
        if not r.label.startswith('C'):
            continue
        crossing = {t.leaf_of[s] for s, d in r.flows
                    if t.leaf_of[s] != t.leaf_of[d]}
        inside = set(t.leaves) - crossing
        seen |= {(a, b) for a in inside for b in crossing}
    assert len(seen) == 32 * 31
    # the leaf shifts send each leaf to every other leaf once
    sent = {(t.leaf_of[s], t.leaf_of[d]) for r in rounds
            if r.label.startswith('X') for s, d in r.flows}
    assert len(sent) == 32 * 31


#: the emulated 12-node tree as Slurm describes it: LinkSpeed, no unit
LEAFSPINE12 = ''.join(f'SwitchName=leaf{i + 1} Nodes=n[{3 * i + 1}-{3 * i + 3}]'
                      f' LinkSpeed=250\n' for i in range(4)) + \
    'SwitchName=spine Switches=leaf[1-4] LinkSpeed=375\n'


def test_a_declared_node_rate_sets_the_unit_of_the_trunks_linkspeed():
    # node links declared at 250 Mbit/s (31.25 MB/s), the trunks left to
    # LinkSpeed: 375 against the leaves' 250 is 1.5 node links, 2:1 for
    # 3 nodes, not 375 MB/s
    t = parse_topology_conf(LEAFSPINE12, node_rate='250mbit')
    assert t.capacity(('node', 'n1', 'up')) == 31.25
    assert t.capacity(('switch', 'leaf2', 'up')) == pytest.approx(46.875)
    # the other way round: the trunks declared, the node links by ratio
    t = parse_topology_conf(LEAFSPINE12, uplink_rate='375mbit')
    assert t.capacity(('node', 'n7', 'down')) == pytest.approx(31.25)
    assert t.capacity(('switch', 'leaf4', 'down')) == pytest.approx(46.875)
    # node links declared, LinkSpeed on the spine only: no common unit, the
    # trunks are undeclared (fitted by the analysis), not 375 MB/s
    t = parse_topology_conf(LEAFSPINE12.replace(' LinkSpeed=250', ''),
                            node_rate='250mbit')
    assert 'leaf1' not in t.uplink_rate


def test_healthy_tree_with_a_declared_node_rate_names_nothing(tmp_path):
    # the healthy fab0 matrix of a rotation night on the emulated 12-node
    # tree (node links 250 Mbit/s, trunks 375: 2:1), its partition
    # declaring node_rate 250mbit as the written config suggests; with
    # the trunks taken as 375 MB/s every leaf's uplink was named at 0.14x
    from clustergate.links.matrixjob import declared_topology
    path = tmp_path / 'topology.conf'
    path.write_text(LEAFSPINE12)
    topo = declared_topology({'file': str(path), 'node_rate': '250mbit'})
    run = cgoutput.parse(fixture_text(
        'cg-outputs/emu-linkmatrix-leafspine12-healthy-intel.out'))
    an = diagnose(topo, rounds_from_measurements(run.measurements), 'fab0')
    assert an.verdicts == [], an.messages()
    assert an.flows == 132
