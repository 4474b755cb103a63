"""What must run every night whatever the rotation (the sentinels), and
the ci mode's fabric check on a switch tree (the link matrix on a node
set that spans every leaf and uplink of the declared tree).

The emucluster system is loaded as on a running cluster, without one:
only its declared layout is written (slurm.conf, the state file with the
tree, topology.conf; tests/emu_layout.py), never a measurement.
"""

import datetime
import os
import random
import re
import subprocess

import pytest

from clustergate.planning import rotation
from clustergate.links import topology
from clustergate_lab.cluster import tree as tr
from clustergate.links.topology import span
from clustergate_lab import simulate
from clustergate.links.topology.flowfit import Prepared
from conftest import ROOT, edited_config, reframe_cmd
from emu_layout import environment

TREE = tr.leafspine([f'n{i}' for i in range(1, 10)], 3)
LINK_MATRIX = re.compile(r'^LinkMatrix %num_nodes=(\d+) %ppn=1 '
                         r'%interconnect=(fab[01]) ')


def _declared(tmp_path):
    path = tmp_path / 'topology.conf'
    path.write_text(TREE.topology_conf(250, 375))
    return topology.parse_topology_conf(path.read_text())


# -- the span: pure ---------------------------------------------------------

def test_span_takes_two_nodes_of_every_leaf(tmp_path):
    topo = _declared(tmp_path)
    nodes = span.span_nodes(topo)
    assert nodes == ['n1', 'n2', 'n4', 'n5', 'n7', 'n8']
    sub = span.restricted(topo, nodes)
    flows = [f for r in topology.shift_rounds(nodes) for f in r.flows]
    # pairs inside every leaf, and every uplink carries flows both ways
    for leaf in topo.leaves:
        inside = [f for f in flows if sub.leaf_of[f[0]] == leaf ==
                  sub.leaf_of[f[1]]]
        up = [f for f in flows if sub.leaf_of[f[0]] == leaf !=
              sub.leaf_of[f[1]]]
        down = [f for f in flows if sub.leaf_of[f[1]] == leaf !=
                sub.leaf_of[f[0]]]
        assert inside and up and down, leaf
    assert sub.uplink_rate == topo.uplink_rate and set(sub.nodes) == \
        set(nodes)
    assert span.span_nodes(topo, 1) == ['n1', 'n4', 'n7']


@pytest.mark.parametrize('kind', ['uplink', 'node', 'miscabled'])
def test_the_span_matrix_names_a_fault_of_the_tree(tmp_path, kind):
    # the 6-node matrix of the span, simulated on the declared tree with
    # one fault, judged against the tree restricted to the span
    sub = span.restricted(_declared(tmp_path), span.span_nodes(
        _declared(tmp_path)))
    rounds = topology.shift_rounds(sub.nodes)
    prepared = Prepared(sub, [r.flows for r in rounds])
    rng = random.Random(3)
    named = 0
    for _ in range(5):
        fault = simulate.inject(sub, kind, rng)
        measured = simulate.measure(sub, prepared.models, fault, rng, 0.03,
                                    scale=0.9)
        # judged as the check judges its job: the fabric fit, the node
        # links against the fitted fabric, the retest
        names, _, _ = simulate.verdict(sub, prepared, measured, 0.03,
                                       [fault], rng, 0.9)
        named += names == simulate.expected([fault])
    assert named == 5
    healthy = simulate.measure(sub, prepared.models, None, rng, 0.03, 0.9)
    assert topology.diagnose(sub, healthy, 'fab0', sigma=0.03,
                             prepared=prepared).healthy
    assert simulate.verdict(sub, prepared, healthy, 0.03, [], rng,
                            0.9)[0] == set()


# -- listings of the emucluster system on its declared layouts ----------------

def _env(tmp_path, layout, date='2026-11-22'):
    leaves = 3 if layout == 'tree' else None
    nodes = 9 if layout == 'tree' else 4
    return dict(environment(tmp_path / 'state', nodes=nodes, leaves=leaves),
                CG_ROTATION_DATE=date,
                CG_RESULTS_DB=str(tmp_path / 'results.db'),
                CG_DEBUG_LOG=str(tmp_path / 'reframe.log'),
                CG_PERFLOG_DIR=str(tmp_path / 'perflogs'),
                CG_ROTATION_DETAILS=str(tmp_path / 'rotation.tsv'))


def _listing(env, mode, *args, settings=None):
    proc = subprocess.run(
        reframe_cmd() + ['-C', str(settings or os.path.join(
            ROOT, 'config', 'settings.py')), '--system', 'emucluster',
            '--mode', mode, *args],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    names = [re.sub(r' /[0-9a-f]+$', '', ln[2:])
             for ln in proc.stdout.splitlines() if ln.startswith('- ')]
    return proc, names


def _plan(tsv):
    """night ('every' or a number) -> point names, from the details."""
    plan = {}
    for ln in tsv.read_text().splitlines()[1:]:
        night, _, _, _, name = ln.split('\t')
        plan.setdefault(night, set()).add(name)
    return plan


@pytest.mark.parametrize('layout,nodes', [('tree', 9), ('flat', 4)])
def test_nightly_lists_the_link_matrix_on_both_fabrics_every_night(
        tmp_path, layout, nodes):
    env = _env(tmp_path, layout)
    proc, tonight = _listing(env, 'nightly', '-l')
    assert proc.returncode == 0, proc.stderr[-2000:]
    head = re.search(r'nightly rotation: night (\d+) of (\d+) ', proc.stdout)
    sent = re.search(r'  sentinels: (\d+) cases \((\d+) points\), est\. '
                     r'(\d+) min of 25, run every night:', proc.stdout)
    assert head and sent, proc.stdout[:3000]
    night, cycle = map(int, head.groups())
    plan = _plan(tmp_path / 'rotation.tsv')
    every = plan.pop('every')
    assert set(tonight) == every | plan[str(night)]
    assert int(sent.group(2)) == len(every)
    # every night of the whole cycle, as CG_ROTATION_DATE picks it
    day = datetime.date(2026, 11, 22)
    for d in range(cycle):
        date = day + datetime.timedelta(d)
        index = rotation.night_index(date, cycle) + 1
        names = every | plan[str(index)]
        fabrics = {m.group(2) for m in map(LINK_MATRIX.match, names)
                   if m and int(m.group(1)) == nodes}
        assert fabrics == {'fab0', 'fab1'}, (date, index)
    # the header names each sentinel and why it runs every night
    for fab in ('fab0', 'fab1'):
        assert re.search(rf'    sentinel LinkMatrix %num_nodes={nodes} '
                         rf'%ppn=1 %interconnect={fab} .*\(check '
                         rf'LinkMatrix\)', proc.stdout), fab
    assert len(re.findall(r'\(canary of \w+\)', proc.stdout)) >= 5


def test_ci_on_the_tree_lists_a_fabric_check_spanning_every_leaf(tmp_path):
    # the command: `--mode ci -n LinkMatrix` selected nothing
    proc, names = _listing(_env(tmp_path, 'tree'), 'ci', '-L', '-n',
                           'LinkMatrix', '-c',
                           os.path.join(ROOT, 'checks', 'linkmatrix'))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not [n for n in names if LINK_MATRIX.match(n)]   # 9 nodes: not ci
    spans = [n for n in names if n.startswith('LeafSpanLinkMatrix ')]
    assert {re.search(r'%interconnect=(\w+)', n).group(1)
            for n in spans} == {'fab0', 'fab1'}, names
    assert all('%num_nodes=6 ' in n for n in spans)
    # its nodes (the description -L prints) are on every leaf
    descr = re.findall(r'description: link matrix of 6 nodes \(([\w,]+)\)',
                       proc.stdout)
    assert len(descr) == 2
    for nodes in descr:
        assert {TREE.leaf_of(n) for n in nodes.split(',')} == \
            set(TREE.leaf_names)
        assert len(nodes.split(',')) == 6


def test_a_tree_that_cannot_be_read_still_gives_the_ci_fabric_check(
        tmp_path):
    # not silence: the case exists (on the whole partition) and fails when
    # it runs, naming the cause (LeafSpanLinkMatrixTest.span)
    env = _env(tmp_path, 'tree')
    os.unlink(tmp_path / 'state' / 'topology.conf')
    proc, names = _listing(env, 'ci', '-l', '-n', 'LinkMatrix', '-c',
                           os.path.join(ROOT, 'checks', 'linkmatrix'))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [n.split(' %msg')[0] for n in names] == [
        f'LeafSpanLinkMatrix %num_nodes=9 %ppn=1 %interconnect={f}'
        for f in ('fab0', 'fab1')]


def test_ci_on_the_flat_layout_keeps_the_whole_matrix(tmp_path):
    proc, names = _listing(_env(tmp_path, 'flat'), 'ci', '-l', '-c',
                           os.path.join(ROOT, 'checks', 'linkmatrix'))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(m.group(2) for m in map(LINK_MATRIX.match, names) if m) \
        == ['fab0', 'fab1']
    assert not [n for n in names if n.startswith('LeafSpanLinkMatrix')]


def _nightly_with(tmp_path, layout, rotation):
    """The nightly listing of the link matrix with emucluster's rotation
    settings replaced by ``rotation``: (process, names, the changed
    file, the output without colours)."""
    settings, path = edited_config(
        tmp_path, 'emucluster.py', "'rotation': {'budget_min': 25},",
        rotation)
    proc, names = _listing(_env(tmp_path, layout), 'nightly', '-l', '-c',
                           os.path.join(ROOT, 'checks', 'linkmatrix'),
                           settings=settings)
    out = re.sub(r'\x1b\[[0-9;]*m', '', proc.stdout + proc.stderr)
    return proc, names, path, out


def test_sentinels_over_the_budget_stop_the_load_with_one_line(tmp_path):
    # the link matrix alone (2 fabrics, one MPI in the nightly, at the
    # cost model's 28 s each on 9 nodes) cannot fit a half-minute night
    proc, names, path, out = _nightly_with(
        tmp_path, 'tree', "'rotation': {'budget_min': 0.5},")
    assert proc.returncode == 1 and not names
    errors = [ln for ln in out.splitlines() if 'extras.sentinels' in ln]
    assert len(errors) == 1 and 'Traceback' not in out, out[-2000:]
    assert re.fullmatch(
        rf'(ERROR: )?nightly rotation: {re.escape(str(path))}: partition '
        r'emucluster:emu: extras\.sentinels: the sentinels take [\d.]+ min '
        r'of every night, above the 0.5 min budget '
        r'\(extras\.rotation\.budget_min\)', errors[0]), errors[0]


def test_a_declared_sentinel_check_without_a_point_is_named(tmp_path):
    proc, names, path, out = _nightly_with(
        tmp_path, 'flat', "'rotation': {'budget_min': 25}, "
        "'sentinels': {'checks': ['LinkMatrx']},")
    assert proc.returncode == 1 and not names
    assert (f"{path}: partition emucluster:emu: extras.sentinels.checks: "
            f"'LinkMatrx' has no point in the partition's acceptance space"
            ) in out


def test_sentinels_declared_as_none_leave_everything_to_the_rotation(
        tmp_path):
    proc, _, _, _ = _nightly_with(
        tmp_path, 'flat', "'rotation': {'budget_min': 25}, "
        "'sentinels': {'checks': [], 'canaries': False},")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert '  sentinels: none (every point rotates)' in proc.stdout
    assert 'every' not in _plan(tmp_path / 'rotation.tsv')


def test_the_report_marks_a_failed_sentinel():
    from clustergate.report.page import _report_outcomes
    case = {'display_name': 'LinkMatrix %num_nodes=9', 'name': 'LinkMatrix_1',
            'system': 'emucluster',
            'partition': 'emu', 'environ': 'openmpi', 'result': 'fail',
            'fail_reason': 'faults=1', 'tags': ['nightly', 'sentinel']}
    other = dict(case, display_name='OsuBw %num_nodes=2', name='OsuBw_2',
                 tags=['nightly'])
    got = _report_outcomes({'runs': [{'testcases': [case, other]}]})
    assert [o.name for o in got] == ['LinkMatrix %num_nodes=9 [sentinel]',
                                     'OsuBw %num_nodes=2']
