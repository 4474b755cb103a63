"""The picture of a fabric's verdict (clustergate.report.fabricsvg): the verdict
lines of real LinkMatrix failures parsed into culprits, the declared tree
drawn as SVG with each culprit where it is, and the report's figure.

The fixtures are two real sessions of the check on the emulated 9-node
leaf/spine cluster (3 leaves of 3 nodes, 2:1 uplinks): leaf2's uplink cut
with n2's link slowed, and n2 cabled to leaf3 while the topology says leaf1.
"""

import json
import math
import os
import random
import shutil
import xml.etree.ElementTree as ET

import pytest

from clustergate.report import fabricsvg
from clustergate.links import retest_driver
from clustergate.links.topology import (Round, Topology, diagnose,
                                        parse_topology_conf, predict, shift_rounds)
from conftest import FIXTURES, fixture_text

SVG = '{http://www.w3.org/2000/svg}'


def _case(name):
    d = os.path.join(FIXTURES, 'reports', f'linkmatrix-tree-{name}')
    with open(os.path.join(d, 'report.json')) as fp:
        tc = json.load(fp)['runs'][0]['testcases'][0]
    with open(os.path.join(d, fabricsvg.RECORDED)) as fp:
        topo = retest_driver.topology_from_json(json.load(fp)['topology'])
    return d, tc, topo


def _svg(topo, culprits):
    return ET.fromstring(fabricsvg.draw(topo, culprits, 'fab0'))


def _lines(root, cls):
    return {el.get('data-switch') or el.get('data-node'): el
            for el in root.iter(f'{SVG}line')
            if cls in el.get('class', '').split()}


def _boxes(root, cls):
    return [g for g in root.iter(f'{SVG}g')
            if set(cls.split()) <= set(g.get('class', '').split())]


# -- parsing real verdicts ------------------------------------------------

def test_uplink_and_node_verdict_parsed():
    _, tc, _ = _case('uplink-and-node')
    found = fabricsvg.parse_verdict(tc['fail_reason'])
    assert [(c.kind, c.where, c.sure) for c in found] == [
        ('uplink', ('leaf2',), True), ('node', ('n2',), True),
        ('node', ('n3',), True)]
    # a line's own '; ' does not split it; ReFrame's bound is not in it
    assert found[2].line.endswith('[no baseline: peers only]')
    assert '; sent 0.50x its peers' in found[2].line
    assert all(c.fabric == 'fab0' for c in found)
    assert fabricsvg.parse_verdict(tc['fail_reason'], 'fab1') == []


def test_miscabled_verdict_parsed():
    _, tc, _ = _case('miscabled')
    (c,) = fabricsvg.parse_verdict(tc['fail_reason'])
    assert (c.kind, c.where) == ('miscabled', ('n2', 'leaf3', 'leaf1'))
    assert c.line.startswith('miscabled node n2 on fabric fab0: n2 behaves')
    assert 'expected 0' not in c.line


def test_slow_node_link_line_of_a_real_perflog():
    log = fixture_text('nights-n5-90', 'perflogs', 'emucluster', 'emu',
                       'LinkMatrix.log')
    unit = next(ln for ln in log.splitlines() if 'slow node link' in ln)
    found = fabricsvg.parse_verdict(unit)
    assert {(c.kind, c.where) for c in found} == {('node', ('n5',))}


def _measure(true, rounds, seed=0):
    rng = random.Random(seed)
    out = []
    for r in rounds:
        p = predict(true, r.flows)
        out.append(Round(r.label, r.flows, [p[f] * 60 * math.exp(
            rng.gauss(0, 0.1)) for f in r.flows]))
    return out


def test_twin_uplinks_the_analysis_cannot_tell_apart():
    # two leaves: a cut trunk on either slows the same flows; the analysis
    # names both, the picture marks both as "one of them"
    tree = parse_topology_conf('SwitchName=leaf1 Nodes=n[1-4]\n'
                               'SwitchName=leaf2 Nodes=n[5-8]\n'
                               'SwitchName=spine Switches=leaf[1-2]\n',
                               uplink_rate=1.0)
    cut = tree.scaled(('switch', 'leaf1', 'up'), 0.25).scaled(
        ('switch', 'leaf1', 'down'), 0.25)
    an = diagnose(tree, _measure(cut, shift_rounds(tree.nodes)),
                  fabric='fab0')
    text = '; '.join(v.message for v in an.verdicts)
    (c,) = fabricsvg.parse_verdict(text)
    assert (c.kind, set(c.where), c.sure) == ('uplink', {'leaf1', 'leaf2'},
                                              False)
    trunks = _lines(_svg(tree, [c]), 'trunk')
    assert all(t.get('stroke') == fabricsvg.RED and t.get('stroke-dasharray')
               for t in trunks.values())


# -- the drawing ------------------------------------------------------------

def test_slow_uplink_and_node_links_are_red_where_they_are():
    _, tc, topo = _case('uplink-and-node')
    root = _svg(topo, fabricsvg.parse_verdict(tc['fail_reason']))
    trunks = _lines(root, 'trunk')
    assert set(trunks) == {'leaf1', 'leaf2', 'leaf3'}
    assert {s for s, t in trunks.items()
            if t.get('stroke') == fabricsvg.RED} == {'leaf2'}
    cables = _lines(root, 'cable')
    assert {n for n, c in cables.items()
            if c.get('stroke') == fabricsvg.RED} == {'n2', 'n3'}
    assert {g.get('data-node') for g in _boxes(root, 'node slow')} == \
        {'n2', 'n3'}
    assert _boxes(root, 'node moved') == []


def _x(g):
    return float(g.find(f'{SVG}rect').get('x'))


def test_miscabled_node_drawn_on_its_real_leaf():
    _, tc, topo = _case('miscabled')
    root = _svg(topo, fabricsvg.parse_verdict(tc['fail_reason']))
    (moved,) = _boxes(root, 'node moved')
    (ghost,) = _boxes(root, 'node ghost')
    assert (moved.get('data-node'), moved.get('data-leaf')) == ('n2', 'leaf3')
    assert (ghost.get('data-node'), ghost.get('data-leaf')) == ('n2', 'leaf1')
    # the moved box sits among leaf3's nodes, the ghost among leaf1's
    xs = {g.get('data-node'): _x(g) for g in _boxes(root, 'node')
          if 'ghost' not in g.get('class')}
    assert min(xs[n] for n in ('n7', 'n8', 'n9')) < _x(moved)
    assert max(xs[n] for n in ('n1', 'n3')) > _x(ghost) > min(
        xs[n] for n in ('n1', 'n3'))
    cable = _lines(root, 'cable')['n2']
    assert cable.get('data-leaf') == 'leaf3'
    assert cable.get('stroke') == fabricsvg.RED
    assert not any(t.get('stroke') == fabricsvg.RED
                   for t in _lines(root, 'trunk').values())


def test_nothing_named_draws_the_declared_tree_and_says_so():
    _, _, topo = _case('miscabled')
    svg = fabricsvg.draw(topo, [])
    root = ET.fromstring(svg)
    assert len(_boxes(root, 'node')) == 9
    assert fabricsvg.RED not in svg
    assert 'nothing named' in svg


def test_a_large_tree_folds_its_unnamed_nodes():
    tree = Topology.fat_tree(32, 32, oversubscription=2)
    node = tree.nodes_of(tree.leaves[5])[3]
    c = fabricsvg.Culprit('node', 'fab0', (node,), f'slow node link {node}')
    root = _svg(tree, [c])
    named = [g for g in _boxes(root, 'node') if 'fold' not in g.get('class')]
    assert [g.get('data-node') for g in named] == [node]
    assert len(_boxes(root, 'node fold')) == 32


# -- the report's figure ----------------------------------------------------

def _copied(tmp_path, name, inputs=True, check='LinkMatrix'):
    src, tc, _ = _case(name)
    tc = dict(tc, name=tc['name'].replace('LinkMatrix', check, 1))
    d = tmp_path / 'stage' / 'emucluster' / 'emu' / 'openmpi' / 'LM'
    d.mkdir(parents=True)
    shutil.copy(os.path.join(src, 'linkmatrix_fab0.csv'), d)
    if inputs:
        shutil.copy(os.path.join(src, fabricsvg.RECORDED), d)
    tc = dict(tc, stagedir=str(d), outputdir=str(tmp_path / 'out'))
    path = tmp_path / 'report.json'
    path.write_text(json.dumps({'runs': [{'testcases': [tc]}]}))
    return str(path)


@pytest.mark.parametrize('check', ['LinkMatrix', 'LeafSpanLinkMatrix'])
def test_report_draws_the_fabric_beside_the_heat_map(tmp_path, check):
    pytest.importorskip('matplotlib')
    from clustergate.report import page as report
    verdicts = report.matrix_verdicts(
        None, [_copied(tmp_path, 'miscabled', check=check)])
    figs = report.matrix_figures([str(tmp_path / 'stage')], str(tmp_path),
                                 verdicts=verdicts)
    assert [bool(f.get('file')) for f in figs] == [True, False]
    assert figs[1]['bad'] is True
    root = ET.fromstring(figs[1]['svg'])
    assert _boxes(root, 'node moved')[0].get('data-leaf') == 'leaf3'
    # no run report: the tree is not drawn as if nothing were wrong
    figs = report.matrix_figures([str(tmp_path / 'stage')], str(tmp_path))
    assert 'svg' not in figs[1]
    assert 'no run report' in figs[1]['title']


def test_no_recorded_tree_is_one_line(tmp_path):
    path = _copied(tmp_path, 'uplink-and-node', inputs=False)
    seen = {'result': 'fail', 'reason': 'x'}
    d = str(tmp_path / 'stage' / 'emucluster' / 'emu' / 'openmpi' / 'LM')
    fig = fabricsvg.figure(d, 'fab0', 'emu fab0', seen)
    assert 'svg' not in fig
    assert f'{fabricsvg.RECORDED} missing' in fig['title']
    with open(os.path.join(d, fabricsvg.RECORDED), 'w') as fp:
        json.dump({'topology': None}, fp)     # a flat fabric
    assert 'no switch tree declared' in \
        fabricsvg.figure(d, 'fab0', 'emu fab0', seen)['title']
    assert os.path.exists(path)
    # a failure that names no culprit (a crash, a sanity error): no tree
    # drawn with nothing marked
    shutil.copy(os.path.join(FIXTURES, 'reports', 'linkmatrix-tree-miscabled',
                             fabricsvg.RECORDED), d)
    fig = fabricsvg.figure(d, 'fab0', 'emu fab0', {
        'result': 'fail', 'reason': 'sanity error: no matrix in output'})
    assert 'svg' not in fig and 'without naming' in fig['title']
    fig = fabricsvg.figure(d, 'fab0', 'emu fab0', {'result': 'pass',
                                                   'reason': ''})
    assert 'nothing named' in fig['svg'] and fig['bad'] is False
