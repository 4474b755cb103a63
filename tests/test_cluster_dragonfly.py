"""The emulated cluster as a dragonfly (``clustergate-lab cluster up
--topology dragonfly``: groups of leaves, every pair of groups joined by a
global link), without a cluster: the groups and their device names, the
topology.conf it writes and the partition's dragonfly as the analysis
reads them (groups, every global link's rate, the minimal route), the
static forwarding that makes the bridges route minimally without a loop,
the ip/tc/bridge commands of bring-up, ``degrade --global`` and
``restore``, ``miscable`` into another group, and the emucluster system
loaded on the layout."""

import json
import os

import pytest

from clustergate.links.topology import (all_pairs_rounds, parse_topology_conf, schedule,
                                        schedule_text)
from clustergate.links.topology.flowfit import Fault
from clustergate_lab.cli import build_parser
from clustergate_lab.cluster import dragonfly as df
from clustergate_lab.cluster import lifecycle, netns, procs
from clustergate_lab.cluster import state as st
from clustergate_lab.cluster import tree as tr
from clustergate_lab.cluster.layout import FABRICS, MAX_NODES, Layout
from clustergate_lab.commands import cluster as cli
from conftest import ROOT, linkmatrix_on
from emu_layout import emucluster_extras, simulated_verdicts, write_layout

NODE = 100 * 10**6
#: the device prefixes the leftover checks of the live drills look for
COVERED = ('cgl', 'cgu', 'cgs', 'cgfab')


def _tree(groups=3, nodes=24, leaves=6):
    return tr.dragonfly(Layout(nodes).node_names, leaves, groups)


def _rates(tree, over=2.0):
    up = tree.uplink_rate(NODE, over)
    return up, tree.trunk_rate(up, over)


def _conf(tree):
    up, glob = _rates(tree)
    return tree.topology_conf(NODE / 1e6, up / 1e6, glob / 1e6)


def _topo(tree=None):
    return parse_topology_conf(_conf(tree or _tree()), dragonfly=True)


def test_leaves_split_evenly_into_groups():
    t = _tree()
    assert t.dragonfly and t.root == 'fabric'
    assert t.spines == (('group1', ('leaf1', 'leaf2')),
                        ('group2', ('leaf3', 'leaf4')),
                        ('group3', ('leaf5', 'leaf6')))
    assert t.global_links == ['group1~group2', 'group1~group3',
                              'group2~group3']
    # the shaped links: every leaf's uplink, then the global links
    assert t.trunked == [f'leaf{i}' for i in range(1, 7)] + t.global_links
    assert [t.parent_of(s) for s in ('leaf2', 'leaf3', 'leaf6')] == \
        ['group1', 'group2', 'group3']
    assert t.global_name('group3-group1') == 'group1~group3'
    assert t.global_name('group2~group3') == 'group2~group3'
    for bad in ('group1-group4', 'group1', 'leaf1-leaf2'):
        with pytest.raises(ValueError, match='no global link'):
            t.global_name(bad)
    with pytest.raises(ValueError, match='not a dragonfly'):
        tr.fattree3(Layout(24).node_names, 6, 3).global_name('spine1-spine2')
    assert tr.Tree.from_json(json.loads(json.dumps(t.to_json()))) == t
    assert 'dragonfly' not in tr.fattree3(Layout(24).node_names).to_json()
    # a group of one leaf: its uplink and its global links carry the same
    # flows
    for leaves, groups in ((6, 4), (6, 1), (3, 2)):
        with pytest.raises(ValueError, match='at least 2 leaves each'):
            _tree(groups=groups, leaves=leaves)


def test_device_names_fit_and_are_covered_by_the_leftover_checks():
    t = _tree()
    names = t.device_names('fab1')
    assert {'cgsp3f1', 'cgsg1t2f1', 'cgsg2t1f1', 'cgsg2t3f1', 'cgsg3t2f1',
            'cgsmg1', 'cgsmh1', 'cgl6f1', 'cgu6f1', 'cgs6f1'} <= set(names)
    # 6 leaf bridges, 3 group bridges, 6 uplinks, 3 global links (2 ends
    # each), the head's link
    assert len(names) == len(set(names)) == 6 + 3 + 6 * 2 + 3 * 2 + 2
    big = tr.dragonfly(Layout(MAX_NODES).node_names, 32, 16)
    for f in FABRICS:
        for name in big.device_names(f):
            assert len(name) <= tr.MAX_IFNAME, name
            assert name.startswith(COVERED), name
        assert not set(big.device_names(f)) & {
            Layout.host_veth(n, f) for n in Layout(MAX_NODES).node_names}


def test_topology_conf_declares_groups_and_the_global_rate():
    """Groups are switches of leaves under the top switch, whose
    LinkSpeed is each global link's rate; read as the partition declares
    it (dragonfly: true), a flow between groups takes their global
    link, and the global link is the narrowest link of a group's
    traffic to another."""
    text = _conf(_tree())
    lines = [ln for ln in text.splitlines() if not ln.startswith('#')]
    assert lines[-4:] == [
        'SwitchName=group1 Switches=leaf[1-2] LinkSpeed=200',
        'SwitchName=group2 Switches=leaf[3-4] LinkSpeed=200',
        'SwitchName=group3 Switches=leaf[5-6] LinkSpeed=200',
        'SwitchName=fabric Switches=group[1-3] LinkSpeed=200']
    topo = parse_topology_conf(text, dragonfly=True)
    assert topo.dragonfly and topo.groups == ['group1', 'group2', 'group3']
    assert topo.leaf_of['n9'] == 'leaf3' and topo.chain('leaf3') == \
        ['leaf3', 'group2', 'fabric']
    assert topo.path('n1', 'n9') == [
        ('node', 'n1', 'up'), ('switch', 'leaf1', 'up'),
        ('global', 'group1~group2', 'up'), ('switch', 'leaf3', 'down'),
        ('node', 'n9', 'down')]
    assert topo.path('n1', 'n5') == [
        ('node', 'n1', 'up'), ('switch', 'leaf1', 'up'),
        ('switch', 'leaf2', 'down'), ('node', 'n5', 'down')]
    assert topo.capacity(('global', 'group2~group3', 'down')) == 200
    assert topo.capacity(('switch', 'leaf4', 'up')) == 200
    # 2 groups of 3 leaves: one global link of 3 x 200 / 1
    two = _topo(_tree(groups=2))
    assert two.capacity(('global', 'group1~group2', 'up')) == 600
    # read as a tree (the partition not declaring the dragonfly), the
    # same file has no global link: why emucluster says dragonfly
    assert not any(link[0] == 'global' for link in
                   parse_topology_conf(text).path('n1', 'n9'))


def test_the_forwarding_is_the_minimal_route_and_floods_nothing_across():
    lay, t = Layout(24), _tree()
    topo = _topo(t)
    for a, b in (('n1', 'n9'), ('n9', 'n1'), ('n12', 'n24'), ('n2', 'n7'),
                 ('n17', 'n3'), ('n1', 'n2')):
        want = [('uplink ' + s if kind == 'switch' else
                 'global ' + s.replace('~', '-'))
                for kind, s, _ in topo.path(a, b) if kind != 'node']
        assert df.route(lay, t, a, b) == want, (a, b)
    table = df.ports(lay, t)
    # every group's bridge knows every node and the head, on each fabric
    assert len(table) == 2 * 3 * (24 + 1)
    assert table[('cgsp2f0', df.node_mac('n1', 'fab0'))] == 'cgsg2t1f0'
    assert table[('cgsp2f0', df.node_mac('n10', 'fab0'))] == 'cgs3f0'
    assert table[('cgsp1f1', df.head_mac('fab1'))] == 'cgsmg1'
    assert table[('cgsp3f1', df.head_mac('fab1'))] == 'cgsg3t1f1'
    lines = df.fdb_lines(lay, t)
    assert 'fdb replace 02:77:00:00:00:09 dev cgsg1t2f0 master static' \
        in lines
    host = netns.host_batch(lay, t)
    for f, i in (('fab0', 0), ('fab1', 1)):
        for end in ('cgsg1t2', 'cgsg2t1', 'cgsg1t3', 'cgsg3t1', 'cgsg2t3',
                    'cgsg3t2'):
            opts = f'link set {end}f{i} type bridge_slave learning off ' \
                   f'flood off mcast_flood off bcast_flood off'
            assert opts in host
            # no flooding from its first frame: set right after the link
            up = host.index(f'link set {end}f{i} master cgsp{end[4]}f{i} up')
            assert host.index(opts) < min(
                k for k, ln in enumerate(host) if 'cgn1f' in ln), end
            assert up < host.index(opts)
        assert f'link set cgfab{i} address 02:77:0{i}:00:00:00' in host
        assert f'neigh replace 10.77.{i}.34 lladdr 02:77:0{i}:00:00:18 ' \
               f'dev cgfab{i} nud permanent' in host
        assert f'link set cgsmh{i} master cgfab{i} up' in host
        assert f'link set cgsmg{i} master cgsp1f{i} up' in host
        # leaf3's uplink ends on group2's bridge; no trunk to the head
        assert f'link set cgs3f{i} master cgsp2f{i} up' in host
        assert not any(ln.startswith('link add cgsu') for ln in host)
    node = netns.node_batch(lay, 'n9', t)
    assert node.index('link set fab0 address 02:77:00:00:00:09') < \
        node.index('link set fab0 up')
    assert 'neigh replace 10.77.1.1 lladdr 02:77:01:00:00:00 dev fab1 ' \
           'nud permanent' in node
    assert sum(ln.startswith('neigh replace 10.77.0.') for ln in node) == 24
    # the trees keep learning bridges: no MAC, no neighbour, no fdb
    three = tr.fattree3(lay.node_names)
    assert not any('address' in ln or 'neigh' in ln
                   for ln in netns.host_batch(lay, three) +
                   netns.node_batch(lay, 'n9', three))
    devices = netns.tree_devices(t)
    assert {'bridge:cgsp1f0', 'link:cgsg1t2f0', 'link:cgsg2t3f1',
            'link:cgsmg0', 'link:cgu6f1'} <= set(devices)
    assert len(devices) == 2 * (6 * 2 + 3 + 3 + 1)


def test_a_node_cabled_into_another_group_is_routed_there():
    """``miscable --node n2 --leaf leaf5``: group3's bridge delivers n2
    over leaf5's uplink, the others send it over their global link to
    group3, not to group1 where topology.conf puts it."""
    lay, t = Layout(24), _tree()
    over = {'fab0': {'n2': 'leaf5'}}
    table = df.ports(lay, t, over)
    mac = df.node_mac('n2', 'fab0')
    assert table[('cgsp3f0', mac)] == 'cgs5f0'
    assert table[('cgsp1f0', mac)] == 'cgsg1t3f0'
    assert table[('cgsp2f0', mac)] == 'cgsg2t3f0'
    # fab1 is cabled as declared
    assert df.ports(lay, t, over)[('cgsp1f1', df.node_mac('n2', 'fab1'))] \
        == 'cgs1f1'
    assert df.route(lay, t, 'n1', 'n2', cabling=over) == [
        'uplink leaf1', 'global group1-group3', 'uplink leaf5']
    assert df.route(lay, t, 'n18', 'n2', cabling=over) == []
    assert df.route(lay, t, 'n21', 'n2', cabling=over) == [
        'uplink leaf6', 'uplink leaf5']


@pytest.mark.parametrize('groups', [2, 3])
def test_the_schedule_crosses_every_global_link_both_ways(groups):
    topo = _topo(_tree(groups))
    rounds = schedule(topo, topo.nodes)
    print(f'24 nodes, 6 leaves, {groups} groups: {len(rounds)} rounds '
          f'({", ".join(r.label for r in rounds)}) against '
          f'{all_pairs_rounds(24)} for all pairs')
    assert len(rounds) < all_pairs_rounds(24)
    used = {link for r in rounds for a, b in r.flows
            for link in topo.path(a, b) if link[0] == 'global'}
    assert used == {topo.global_link(a, b) for a in topo.groups
                    for b in topo.groups if a != b}


def test_the_analysis_names_a_cut_global_link_of_the_emulated_dragonfly():
    """What ``degrade --global group1-group2 --rate 25%`` does (both
    directions at 1/4), simulated on the declared dragonfly: named alone,
    and no verdict on the healthy fabric."""
    topo = _topo()
    link = ('global', 'group1~group2')
    fault = Fault('uplink', 'group1~group2', (link + ('up',),
                                              link + ('down',)), 0.25, None)
    for seed in (1, 2):
        got = simulated_verdicts(topo, fault, seed)
        assert len(got) == 1 and got[0].startswith(
            'global link group1-group2 on fabric fab0: '), got
        assert simulated_verdicts(topo, None, seed) == []


def test_bring_up_shapes_the_global_links_at_their_nominal_rate():
    lay = Layout(24)
    tree, up = lifecycle.plan_tree(lay, 'dragonfly', 6, NODE)
    glob = tree.trunk_rate(up, tr.DEFAULT_OVERSUBSCRIPTION)
    assert (up, glob) == (200 * 10**6, 200 * 10**6)
    assert tree.spine_names == ['group1', 'group2', 'group3']
    state = st.new_state(24, NODE, tree, up, glob)
    rates = st.uplink_rates(state, tree)
    assert len(rates) == (6 + 3) * 2
    tc = netns.uplink_batch(tree, rates)
    by_dev = {c.split()[3]: int(c.split()[7][:-3]) for c in tc}
    assert by_dev['cgsg1t3f1'] == by_dev['cgsg3t1f1'] == glob
    assert by_dev['cgu4f0'] == by_dev['cgs4f0'] == up
    assert len(by_dev) == len(tc) == 4 * (6 + 3)
    text = tr.topology_conf_of_state(tree, state)
    assert 'SwitchName=fabric Switches=group[1-3] LinkSpeed=200' in text
    assert lifecycle.plan_tree(lay, 'dragonfly', 6, NODE,
                               groups=2)[0].global_links == ['group1~group2']
    with pytest.raises(ValueError, match='--groups needs --topology '
                                         'dragonfly'):
        lifecycle.plan_tree(lay, 'fattree3', 6, NODE, groups=2)
    assert 'in 3 dragonfly groups' in tr.describe(tree, NODE, up, glob)


@pytest.fixture
def running(tmp_path, monkeypatch):
    """A recorded dragonfly that is 'up', with the commands that would
    change the kernel captured instead."""
    if os.geteuid() != 0:
        pytest.skip('degrade and restore refuse to run without root')
    paths = st.Paths(str(tmp_path))
    tree = _tree()
    up, glob = _rates(tree)
    state = st.new_state(24, NODE, tree, up, glob)
    state['phase'] = 'up'
    st.save(state, paths)
    applied = []
    monkeypatch.setattr(procs, 'run_batch', lambda cmd, lines: applied.append(
        (cmd, list(lines))))
    monkeypatch.setattr(netns, 'recable', lambda *a: applied.append(
        (['recable'], list(a[:3]))))
    return paths, applied


def test_degrade_a_global_link_and_restore(running, capsys):
    paths, applied = running
    lifecycle.degrade(None, 'fab0', '25%', paths=paths,
                      global_link='group3-group1')
    assert applied == [(['tc'], [
        'qdisc replace dev cgsg1t3f0 root tbf rate 50000000bit burst 98304 '
        'latency 20ms',
        'qdisc replace dev cgsg3t1f0 root tbf rate 50000000bit burst 98304 '
        'latency 20ms'])]
    assert 'global link group1-group3 fab0: 50mbit (nominal 200mbit)' in \
        capsys.readouterr().err
    assert st.load(paths)['rates'] == {'group1~group3/fab0': 50 * 10**6}
    with pytest.raises(ValueError, match="no global link 'group1-group9'"):
        lifecycle.degrade(None, 'fab0', '25%', paths=paths,
                          global_link='group1-group9')
    with pytest.raises(ValueError, match='one of them'):
        lifecycle.degrade('n1', 'fab0', '25%', paths=paths,
                          global_link='group1-group2')
    applied.clear()
    lifecycle.restore(paths)
    tc = [ln for cmd, lines in applied if cmd == ['tc'] for ln in lines
          if ' dev cgs' in ln]
    rate = {ln.split()[3]: ln.split()[7] for ln in tc}
    assert rate['cgsg1t3f0'] == rate['cgsg3t1f0'] == '200000000bit'
    assert st.load(paths)['rates'] == {}
    # restore rewrites the groups' forwarding as declared
    fdb = [lines for cmd, lines in applied if cmd == ['bridge']]
    assert fdb == [df.fdb_lines(Layout(24), _tree())]
    assert 'global links at 200mbit' in capsys.readouterr().err


def test_miscable_into_another_group_reroutes_and_restore_undoes_it(running):
    paths, applied = running
    lifecycle.miscable('n2', 'leaf5', 'fab0', paths=paths)
    assert applied[0] == (['recable'], ['n2', 'fab0', 'cgl5f0'])
    over = {'fab0': {'n2': 'leaf5'}}
    assert applied[1] == (['bridge'], df.fdb_lines(Layout(24), _tree(),
                                                   over))
    assert st.load(paths)['cabling'] == over
    applied.clear()
    lifecycle.restore(paths)
    assert (['recable'], ['n2', 'fab0', 'cgl1f0']) in applied
    assert applied[-1] == (['bridge'], df.fdb_lines(Layout(24), _tree()))


def test_status_shows_the_global_links():
    t = _tree()
    real = {'fab0': tr.real_cabling(t, {'n2': 'leaf5'})}
    rates = {(sw, 'fab0'): 200 * 10**6 for sw in t.trunked}
    rates[('group2~group3', 'fab0')] = 50 * 10**6
    lines = tr.cabling_lines(t, real, rates, 200 * 10**6, 200 * 10**6)
    assert '  fab0 global group1-group2 200mbit  ' in lines
    assert "  fab0 global group2-group3 50mbit *" in lines
    assert not any(' trunk ' in ln for ln in lines)
    assert any('n2!(topology.conf: leaf1)' in ln and 'leaf5' in ln
               for ln in lines)


def test_cli_dragonfly_defaults(monkeypatch):
    got = {}
    monkeypatch.setattr(lifecycle, 'up', lambda **kw: got.update(kw))
    monkeypatch.setattr(lifecycle, 'env_lines', lambda: [])
    args = build_parser().parse_args(['cluster', 'up', '--topology',
                                      'dragonfly'])
    assert args.func(args) == 0
    assert {k: got[k] for k in ('nodes', 'rate', 'leaves', 'spines',
                                'groups', 'topology')} == {
        'nodes': 24, 'rate': '100mbit', 'leaves': 6, 'spines': None,
        'groups': 3, 'topology': 'dragonfly'}
    args = build_parser().parse_args(['cluster', 'up', '--topology',
                                      'fattree3'])
    args.func(args)
    assert (got['spines'], got['groups']) == (3, None)
    args = build_parser().parse_args(['cluster', 'degrade', '--global',
                                      'group1-group2', '--rate', '25%'])
    assert (args.global_link, args.uplink, args.func) == \
        ('group1-group2', None, cli._degrade)


def test_emucluster_declares_the_dragonfly(tmp_path, monkeypatch):
    """The system loaded on a 24-node dragonfly layout declares
    topology.conf as a dragonfly (what Slurm's topology/tree cannot
    say); the link matrix judged against it runs rounds between the
    groups."""
    env, tree = write_layout(tmp_path / 'state', nodes=24, leaves=6,
                             groups=3, rate=NODE)
    assert tree.dragonfly
    extras = emucluster_extras(env)
    assert extras['topology'] == {
        'file': str(tmp_path / 'state' / 'topology.conf'), 'dragonfly': True}
    assert extras['reference_set'] == 'dragonfly'
    assert os.path.isfile(os.path.join(ROOT, 'config', 'references',
                                       'emucluster.dragonfly.yaml'))

    from clustergate.links.matrixjob import declared_topology
    topo = declared_topology(extras['topology'])
    assert topo.dragonfly and topo.groups == ['group1', 'group2', 'group3']
    assert topo.capacity(('global', 'group1~group3', 'up')) == 200
    c = linkmatrix_on(topo, monkeypatch, tmp_path)
    c.set_command()
    text = (tmp_path / 'linkmatrix_fab0.schedule').read_text()
    assert text == schedule_text(schedule(topo, topo.nodes))


def test_a_global_verdict_names_its_group_pair():
    from clustergate_lab.sensitivity import named_subjects
    assert named_subjects('global link group1-group2 on fabric fab0: flows '
                          'between group1 and group2 at 0.31x ...; uplink '
                          'leaf3-group2 on fabric fab0: ...') == \
        ['global:group1-group2', 'uplink:leaf3']
    assert named_subjects('uplink leaf4-spine2 on fabric fab0') == \
        ['uplink:leaf4']
