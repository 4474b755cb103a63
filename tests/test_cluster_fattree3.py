"""The emulated cluster as a three-level fat tree (``clustergate-lab cluster
up --topology fattree3``: leaves under spines under a core), without a
cluster: the tree and its device names, the topology.conf it writes as
the product's analysis reads it (parents, every trunk's nominal rate),
the link matrix's schedule on it, the ip/tc commands of bring-up,
``degrade --uplink spine1`` and ``restore`` as the commands they apply,
and the emucluster system loaded on the layout (its declared tree, its
own reference set, the check's topology rounds)."""

import json
import os

import pytest

from clustergate.links.topology import (all_pairs_rounds, parse_topology_conf, schedule,
                                        schedule_text)
from clustergate.links.topology.flowfit import Fault
from clustergate_lab.cli import build_parser
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


def _tree(spines=3, nodes=24, leaves=6):
    return tr.fattree3(Layout(nodes).node_names, leaves, spines)


def _conf(tree, over=2.0):
    up = tree.uplink_rate(NODE, over)
    return tree.topology_conf(NODE / 1e6, up / 1e6,
                              tree.trunk_rate(up, over) / 1e6)


def test_leaves_split_evenly_under_the_spines():
    t = _tree(spines=2)
    assert t.spines == (('spine1', ('leaf1', 'leaf2', 'leaf3')),
                        ('spine2', ('leaf4', 'leaf5', 'leaf6')))
    assert t.leaf_of('n13') == 'leaf4' and t.root == 'core'
    assert [t.parent_of(s) for s in ('leaf3', 'leaf4', 'spine2')] == \
        ['spine1', 'spine2', 'core']
    assert t.trunked == [f'leaf{i}' for i in range(1, 7)] + \
        ['spine1', 'spine2']
    assert tr.Tree.from_json(json.loads(json.dumps(t.to_json()))) == t
    # the two-level tree is unchanged: no spine, its leaves under 'spine'
    two = tr.leafspine(Layout(9).node_names, 3)
    assert two.spines == () and 'spines' not in two.to_json()
    assert two.parent_of('leaf2') == 'spine'
    with pytest.raises(ValueError, match='no leaf or spine'):
        t.parent_of('spine9')
    # a spine over one leaf could not be told from that leaf's uplink
    for leaves, spines in ((6, 4), (6, 1), (3, 2)):
        with pytest.raises(ValueError, match='at least 2 leaves each'):
            _tree(spines=spines, leaves=leaves)


def test_device_names_fit_and_are_covered_by_the_leftover_checks():
    t = _tree()
    names = t.device_names('fab1')
    assert {'cgsp1f1', 'cgsu3f1', 'cgsc2f1', 'cgl6f1', 'cgu6f1',
            'cgs6f1'} <= set(names)
    assert len(names) == len(set(names)) == 6 * 3 + 3 * 3
    # the largest tree the cluster allows: 64 nodes, 32 leaves, 16 spines
    big = tr.fattree3(Layout(MAX_NODES).node_names, 32, 16)
    for f in FABRICS:
        for name in big.device_names(f):
            assert len(name) <= tr.MAX_IFNAME, name
            assert name.startswith(COVERED), name
        # and no tree device is taken for a node's veth (cg<node>f<F>)
        assert not set(big.device_names(f)) & {
            Layout.host_veth(n, f) for n in Layout(MAX_NODES).node_names}


def test_topology_conf_is_read_by_the_analysis_with_every_trunk_rate():
    t = _tree(spines=2)
    text = _conf(t)
    lines = [ln for ln in text.splitlines() if not ln.startswith('#')]
    assert lines[-3:] == [
        'SwitchName=spine1 Switches=leaf[1-3] LinkSpeed=200',
        'SwitchName=spine2 Switches=leaf[4-6] LinkSpeed=200',
        'SwitchName=core Switches=spine[1-2] LinkSpeed=300']
    topo = parse_topology_conf(text)
    assert topo.parent == {**{f'leaf{i}': 'spine1' for i in (1, 2, 3)},
                           **{f'leaf{i}': 'spine2' for i in (4, 5, 6)},
                           'spine1': 'core', 'spine2': 'core',
                           'core': None}
    assert topo.leaf_of['n12'] == 'leaf3' and topo.leaf_of['n13'] == 'leaf4'
    assert topo.capacity(('node', 'n7', 'up')) == 100
    # 4 nodes x 100 / 2 per leaf uplink, 3 uplinks x 200 / 2 per trunk
    for d in ('up', 'down'):
        assert topo.capacity(('switch', 'leaf5', d)) == 200
        assert topo.capacity(('switch', 'spine2', d)) == 300
    # a flow between spines crosses both trunks
    assert ('switch', 'spine1', 'up') in topo.path('n1', 'n24')
    assert ('switch', 'spine2', 'down') in topo.path('n1', 'n24')
    assert all(link[1] not in ('spine1', 'spine2')
               for link in topo.path('n1', 'n9'))
    # the default: 3 spines of 2 leaves, trunks 2 x 200 / 2
    three = parse_topology_conf(_conf(_tree()))
    assert three.capacity(('switch', 'spine3', 'up')) == 200
    assert three.parent['leaf5'] == 'spine3'


@pytest.mark.parametrize('spines', [2, 3])
def test_the_schedule_covers_every_node_in_fewer_rounds(spines):
    topo = parse_topology_conf(_conf(_tree(spines)))
    rounds = schedule(topo, topo.nodes)
    pairs = all_pairs_rounds(len(topo.nodes))
    print(f'24 nodes, 6 leaves, {spines} spines: {len(rounds)} rounds '
          f'({", ".join(r.label for r in rounds)}) against {pairs} for '
          f'all pairs')
    assert len(rounds) < pairs == 24
    for r in rounds:
        assert len({a for a, _ in r.flows}) == len(r.flows), r.label
        assert len({b for _, b in r.flows}) == len(r.flows), r.label
    assert {a for r in rounds for a, _ in r.flows} == set(topo.nodes)
    assert {b for r in rounds for _, b in r.flows} == set(topo.nodes)
    # every leaf uplink and every spine trunk carries flows both ways
    used = {(sw, d) for r in rounds for a, b in r.flows
            for kind, sw, d in topo.path(a, b) if kind == 'switch'}
    assert used == {(sw, d) for sw, p in topo.parent.items() if p
                    for d in ('up', 'down')}


def _cut(switch, parent, factor=0.25):
    return Fault('uplink', switch, (('switch', switch, 'up'),
                                    ('switch', switch, 'down')), factor,
                 parent)


def test_the_analysis_names_a_cut_trunk_of_the_emulated_tree():
    """What ``degrade --uplink spine1 --rate 25%`` does (both directions
    of the trunk at 1/4), simulated on the declared tree: named with 3
    spines; with 2, the same flows cross both trunks (why 3 is the
    default)."""
    topo = parse_topology_conf(_conf(_tree()))
    for seed in (1, 2):
        got = simulated_verdicts(topo, _cut('spine1', 'core'), seed)
        assert len(got) == 1 and got[0].startswith(
            'uplink spine1-core on fabric fab0: '), got
        got = simulated_verdicts(topo, _cut('leaf4', 'spine2'), seed)
        assert len(got) == 1 and got[0].startswith(
            'uplink leaf4-spine2 on fabric fab0: '), got
        assert simulated_verdicts(topo, None, seed) == []
    two = parse_topology_conf(_conf(_tree(spines=2)))
    got = simulated_verdicts(two, _cut('spine1', 'core'), 1)
    assert got[0].startswith('uplink spine1-core or uplink spine2-core'), got


def test_bring_up_commands_build_the_three_levels():
    lay, t = Layout(24), _tree()
    host = netns.host_batch(lay, t)
    # the core keeps the fabric's bridge and the head's address
    assert 'addr add 10.77.0.1/24 dev cgfab0' in host
    for f, i in (('fab0', 0), ('fab1', 1)):
        assert f'link add cgsp2f{i} type bridge stp_state 0 ' \
               f'forward_delay 0' in host
        assert f'link add cgsu2f{i} type veth peer name cgsc2f{i}' in host
        assert f'link set cgsu2f{i} master cgsp2f{i} up' in host
        assert f'link set cgsc2f{i} master cgfab{i} up' in host
        # leaf3's uplink ends on its spine, not on the core
        assert f'link set cgu3f{i} master cgl3f{i} up' in host
        assert f'link set cgs3f{i} master cgsp2f{i} up' in host
        assert not any(ln.startswith(f'link set cgs3f{i} master cgfab')
                       for ln in host)
        assert f'link set cgn9f{i} master cgl3f{i} up' in host
    # a bridge exists before anything is enslaved to it
    for dev in ('cgsp2f0', 'cgl3f0', 'cgfab0'):
        made = next(k for k, ln in enumerate(host)
                    if ln.startswith(f'link add {dev} type bridge'))
        first = min(k for k, ln in enumerate(host)
                    if ln.endswith(f'master {dev} up'))
        assert made < first, dev
    devices = netns.tree_devices(t)
    assert {'bridge:cgsp1f0', 'link:cgsu1f0', 'bridge:cgsp3f1',
            'link:cgsu3f1', 'bridge:cgl6f1', 'link:cgu6f1'} <= set(devices)
    assert len(devices) == 2 * (6 + 3) * 2


@pytest.mark.parametrize('spines,trunk_mbit', [(3, 200), (2, 300)])
def test_the_trunks_are_shaped_at_their_nominal_rate(spines, trunk_mbit):
    lay = Layout(24)
    tree, up = lifecycle.plan_tree(lay, 'fattree3', 6, NODE, spines=spines)
    trunk = tree.trunk_rate(up, tr.DEFAULT_OVERSUBSCRIPTION)
    assert len(tree.spine_names) == spines
    assert (up, trunk) == (200 * 10**6, trunk_mbit * 10**6)
    state = st.new_state(24, NODE, tree, up, trunk)
    rates = st.uplink_rates(state, tree)
    assert len(rates) == (6 + spines) * 2
    tc = netns.uplink_batch(tree, rates)
    by_dev = {c.split()[3]: int(c.split()[7][:-3]) for c in tc}
    for i in (0, 1):
        for p in range(1, spines + 1):
            assert by_dev[f'cgsu{p}f{i}'] == by_dev[f'cgsc{p}f{i}'] == trunk
        for leaf in range(1, 7):
            assert by_dev[f'cgu{leaf}f{i}'] == by_dev[f'cgs{leaf}f{i}'] == up
    assert len(by_dev) == len(tc) == 4 * (6 + spines)
    text = tr.topology_conf_of_state(tree, state)
    assert f'SwitchName=core Switches=spine[1-{spines}] ' \
           f'LinkSpeed={trunk_mbit}' in text
    assert parse_topology_conf(text).capacity(
        ('switch', 'spine1', 'down')) == trunk_mbit
    # the default tree
    assert lifecycle.plan_tree(lay, 'fattree3', 6, NODE)[0].spine_names == \
        ['spine1', 'spine2', 'spine3']
    with pytest.raises(ValueError, match='--spines needs --topology '
                                         'fattree3'):
        lifecycle.plan_tree(lay, 'leafspine', 6, NODE, spines=2)


@pytest.fixture
def running(tmp_path, monkeypatch):
    """A recorded fattree3 cluster that is 'up', with the commands that
    would change the kernel captured instead."""
    if os.geteuid() != 0:
        pytest.skip('degrade and restore refuse to run without root')
    paths = st.Paths(str(tmp_path))
    tree = _tree(spines=2)          # trunks 300 Mbit/s, uplinks 200
    up = tree.uplink_rate(NODE, 2.0)
    state = st.new_state(24, NODE, tree, up, tree.trunk_rate(up, 2.0))
    state['phase'] = 'up'
    st.save(state, paths)
    applied = []
    monkeypatch.setattr(procs, 'run_batch', lambda cmd, lines: applied.append(
        (cmd, list(lines))))
    return paths, applied


def test_degrade_a_spine_trunk_and_restore(running, capsys):
    paths, applied = running
    lifecycle.degrade(None, 'fab0', '25%', paths=paths, uplink='spine1')
    assert applied == [(['tc'], [
        'qdisc replace dev cgsu1f0 root tbf rate 75000000bit burst 98304 '
        'latency 20ms',
        'qdisc replace dev cgsc1f0 root tbf rate 75000000bit burst 98304 '
        'latency 20ms'])]
    assert 'trunk spine1-core fab0: 75mbit (nominal 300mbit)' in \
        capsys.readouterr().err
    assert st.load(paths)['rates'] == {'spine1/fab0': 75 * 10**6}
    # a leaf's uplink is still the leaf-spine one
    applied.clear()
    lifecycle.degrade(None, 'fab1', '50%', paths=paths, uplink='leaf3')
    assert [c.split()[3] for c in applied[0][1]] == ['cgu3f1', 'cgs3f1']
    assert 'uplink leaf3-spine1 fab1: 100mbit (nominal 200mbit)' in \
        capsys.readouterr().err
    with pytest.raises(ValueError, match="no leaf or spine 'spine3'"):
        lifecycle.degrade(None, 'fab0', '25%', paths=paths, uplink='spine3')
    # restore: every uplink and trunk back at its nominal rate
    applied.clear()
    lifecycle.restore(paths)
    tc = [ln for cmd, lines in applied if cmd == ['tc'] for ln in lines
          if ' dev cgs' in ln or ' dev cgu' in ln]
    rate = {ln.split()[3]: ln.split()[7] for ln in tc}
    assert rate['cgsu1f0'] == rate['cgsc1f0'] == '300000000bit'
    assert rate['cgu3f1'] == '200000000bit' and len(rate) == 32
    assert st.load(paths)['rates'] == {}
    assert 'uplinks at 200mbit, trunks at 300mbit' in capsys.readouterr().err


def test_status_shows_the_trunks():
    t = _tree()
    real = {'fab0': tr.real_cabling(t, {'n2': 'leaf5'})}
    rates = {(sw, 'fab0'): 200 * 10**6 for sw in t.trunked}
    rates[('spine2', 'fab0')] = 50 * 10**6
    lines = tr.cabling_lines(t, real, rates, 200 * 10**6, 200 * 10**6)
    assert '  fab0 spine1 trunk  200mbit   to core, leaves: leaf1 leaf2' \
        in lines
    assert any(ln.startswith('  fab0 spine2 trunk  50mbit * ') for ln in lines)
    assert any('n2!(topology.conf: leaf1)' in ln and 'leaf5' in ln
               for ln in lines)


def test_cli_fattree3_defaults(monkeypatch):
    got = {}
    monkeypatch.setattr(lifecycle, 'up', lambda **kw: got.update(kw))
    monkeypatch.setattr(lifecycle, 'env_lines', lambda: [])
    args = build_parser().parse_args(['cluster', 'up', '--topology',
                                      'fattree3'])
    assert args.func(args) == 0
    assert {k: got[k] for k in ('nodes', 'rate', 'leaves', 'spines',
                                'topology')} == {
        'nodes': 24, 'rate': '100mbit', 'leaves': 6, 'spines': 3,
        'topology': 'fattree3'}
    args = build_parser().parse_args(['cluster', 'up', '--topology',
                                      'leafspine'])
    args.func(args)
    assert (got['nodes'], got['leaves'], got['spines']) == (9, 3, None)
    args = build_parser().parse_args(['cluster', 'degrade', '--uplink',
                                      'spine1', '--rate', '25%'])
    assert (args.uplink, args.func) == ('spine1', cli._degrade)


def test_emucluster_declares_the_three_levels(tmp_path, monkeypatch):
    """The system loaded on a 24-node fattree3 layout: its topology extra
    is the topology.conf Slurm reads, its reference set its own; the link
    matrix judged against it runs the topology rounds."""
    env, tree = write_layout(tmp_path / 'state', nodes=24, leaves=6,
                             spines=3, rate=NODE)
    extras = emucluster_extras(env)
    assert extras['topology'] == {'file': str(tmp_path / 'state' /
                                              'topology.conf')}
    assert extras['reference_set'] == 'fattree3'
    assert 24 in extras['sweep']['nodes']
    assert os.path.isfile(os.path.join(ROOT, 'config', 'references',
                                       'emucluster.fattree3.yaml'))

    from clustergate.links.matrixjob import declared_topology
    topo = declared_topology(extras['topology'])
    assert topo.chain('leaf6') == ['leaf6', 'spine3', 'core']
    c = linkmatrix_on(topo, monkeypatch, tmp_path)
    c.set_command()
    opts = c.executable_opts
    assert opts[opts.index('--schedule') + 1] == 'linkmatrix_fab0.schedule'
    text = (tmp_path / 'linkmatrix_fab0.schedule').read_text()
    assert text == schedule_text(schedule(topo, topo.nodes))
    labels = [ln.split()[0] for ln in text.splitlines()]
    assert 'S1' in labels and 'S2' in labels and len(labels) < 24


def test_a_trunk_verdict_names_its_spine():
    """What the drills and campaigns count as named: a spine's trunk as
    ``uplink:spine1``, a leaf under a spine as ``uplink:leaf4``."""
    from clustergate_lab.sensitivity import named_subjects
    assert named_subjects('uplink spine1-core on fabric fab0: cross-switch '
                          'flows at 0.25x; slow node link n2 on fabric '
                          'fab0: both ways 0.5x') == ['n2', 'uplink:spine1']
    assert named_subjects('uplink leaf4-spine2 on fabric fab0: ...') == \
        ['uplink:leaf4']
    assert named_subjects('uplink spine1-core or uplink spine2-core on '
                          'fabric fab0') == ['uplink:spine1', 'uplink:spine2']
