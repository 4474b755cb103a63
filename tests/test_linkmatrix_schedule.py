"""The link matrix on the rounds of the declared topology: the schedule
(clustergate.links.topology.rounds.schedule) is valid for cg_linkmatrix
(one send and one receive per node and round, every node in), covers
every pair of leaves on two- and three-level trees; cg_linkmatrix
--schedule runs it for real (4 ranks on this machine) and refuses a bad
one; the check writes it where a topology is declared and counts its
flows in sanity; the tree analysis names a cut uplink from its output."""

import math
import random
import re

import pytest
from reframe.core.exceptions import SanityError

from clustergate.links import topology
from clustergate.links.topology import Topology
from clustergate.links.topology.flowfit import Prepared
from clustergate.links.topology.rounds import (INTRA_SHIFTS, schedule, schedule_text,
                                               valid_rounds, Round)
from clustergate.parsers import cgoutput
from conftest import linkmatrix_on, run_linkmatrix


def _check_valid(rounds, nodes):
    sent, got = set(), set()
    for r in rounds:
        srcs = [a for a, _ in r.flows]
        dsts = [b for _, b in r.flows]
        assert len(srcs) == len(set(srcs)), r.label
        assert len(dsts) == len(set(dsts)), r.label
        assert not {(b, a) for a, b in r.flows} & set(r.flows), r.label
        sent.update(srcs)
        got.update(dsts)
    assert sent == set(nodes) and got == set(nodes)


def _leaf_pairs(topo, rounds):
    return {(topo.leaf_of[a], topo.leaf_of[b]) for r in rounds
            for a, b in r.flows if topo.leaf_of[a] != topo.leaf_of[b]}


@pytest.mark.parametrize('leaves,per_leaf', [(3, 3), (32, 32), (5, 4)])
def test_the_schedule_is_valid_and_short(leaves, per_leaf):
    topo = Topology.fat_tree(leaves, per_leaf, 1.0, 2.0)
    rounds = schedule(topo, topo.nodes)
    _check_valid(rounds, topo.nodes)
    n = leaves * per_leaf
    # every ordered pair of leaves is crossed by some round
    assert len(_leaf_pairs(topo, rounds)) == leaves * (leaves - 1)
    # intra-leaf shifts (a continuation for the mutual one), leaf shifts
    # (and their continuations), two contrast rounds per bit of a leaf's
    # index (and their continuations)
    intra = min(per_leaf - 1, INTRA_SHIFTS)
    bits = max(1, (leaves - 1).bit_length())
    assert len(rounds) <= intra + 1 + 2 * (leaves - 1) + 4 * bits
    if n > 100:
        assert len(rounds) < n / 10
    # all pairs: the N-1 shift rounds, the mutual one in two halves
    every = schedule(topo, topo.nodes, all_pairs=True)
    assert sum(len(r) for r in every) == n * (n - 1)
    assert schedule(None, topo.nodes)[0].flows == every[0].flows


def test_unequal_leaves_and_a_subset_of_nodes():
    conf = ('SwitchName=l1 Nodes=a[1-5]\nSwitchName=l2 Nodes=b[1-2]\n'
            'SwitchName=l3 Nodes=c[1-3]\nSwitchName=top Switches=l[1-3]\n')
    topo = topology.parse_topology_conf(conf)
    rounds = schedule(topo, topo.nodes)
    _check_valid(rounds, topo.nodes)
    # a leaf shift from 5 nodes into 2: continuation rounds, no double
    # receive
    assert any('.' in r.label for r in rounds)
    sub = ['a1', 'a2', 'b1', 'b2', 'c1']
    _check_valid(schedule(topo, sub), sub)
    with pytest.raises(ValueError, match='x9 is not in the declared'):
        schedule(topo, sub + ['x9'])


def test_continuations_keep_every_flow():
    r = Round('X', [('a', 'b'), ('c', 'b'), ('b', 'a'), ('a', 'c')])
    out = valid_rounds([r])
    assert sorted(f for x in out for f in x.flows) == sorted(r.flows)
    # b receives twice, b<->a both ways: both in the continuation
    assert [(x.label, x.flows) for x in out] == [
        ('X', [('a', 'b')]), ('X.1', [('c', 'b'), ('b', 'a'), ('a', 'c')])]


def test_a_three_level_tree_loads_every_spine_trunk():
    topo = Topology.fat_tree3(4, 4, 8, 1.0, 2.0, 2.0)
    rounds = schedule(topo, topo.nodes)
    _check_valid(rounds, topo.nodes)
    up = {sw for r in rounds for a, b in r.flows
          for kind, sw, d in topo.path(a, b) if kind == 'switch'}
    assert up == {s for s, p in topo.parent.items() if p is not None}


def _mpirun(built, sched, *args):
    return run_linkmatrix(built, '--bytes', '64K', '--schedule', str(sched),
                          *args, trials=3)


def test_the_program_runs_a_schedule(built_programs, tmp_path):
    sched = tmp_path / 's'
    sched.write_text('# two rounds\nI1 #0:#1 #1:#0 #2:#3 #3:#2\n\n'
                     'X1 #0:#2 #2:#1 #1:#3 #3:#0 nX:#1\n')
    cp = _mpirun(built_programs, sched)
    assert cp.returncode == 0, cp.stdout[-2000:] + cp.stderr[-2000:]
    run = cgoutput.parse(cp.stdout)
    cgoutput.verify(run, program='cg_linkmatrix', pattern='linkmatrix')
    got = [(m.fields['round'], int(m['src_rank']), int(m['dst_rank']))
           for m in run.measurements]
    assert got == [('I1', 0, 1), ('I1', 1, 0), ('I1', 2, 3), ('I1', 3, 2),
                   ('X1', 0, 2), ('X1', 2, 1), ('X1', 1, 3), ('X1', 3, 0)]
    assert '1 flows name nodes outside this job' in cp.stderr
    rounds = topology.rounds_from_measurements(run.measurements)
    assert [r.label for r in rounds] == ['I1', 'X1'] and \
        [len(r) for r in rounds] == [4, 4]


@pytest.mark.parametrize('text,cause', [
    ('A #0:#1 #2:#1 #1:#0 #3:#2\n', 'round A: node .* receives twice'),
    ('A #0:#1 #1:#0\n', 'rank 2\\) never sends'),
    ('A #0-#1\n', 'expected SRC:DST'),
    ('A #0:#7\n', 'bad rank token'),
])
def test_a_bad_schedule_is_refused_naming_why(built_programs, tmp_path,
                                              text, cause):
    sched = tmp_path / 's'
    sched.write_text(text)
    cp = _mpirun(built_programs, sched)
    assert cp.returncode != 0
    lines = (cp.stdout + cp.stderr).splitlines()
    assert any(re.search(cause, ln) for ln in lines if 'CG_ERROR' in ln), \
        cp.stdout + cp.stderr


TREE = Topology.fat_tree(4, 6, 250.0, 2.0)


@pytest.fixture
def check(tmp_path, monkeypatch):
    c = linkmatrix_on(TREE, monkeypatch, tmp_path)
    c.monkeypatch = monkeypatch
    return c


def test_the_check_runs_the_topology_rounds(check, tmp_path):
    check.set_command()
    opts = check.executable_opts
    name = opts[opts.index('--schedule') + 1]
    text = (tmp_path / name).read_text()
    assert text == schedule_text(schedule(TREE, TREE.nodes))
    assert len(text.splitlines()) < 23
    # a tree where every pair takes no more rounds: every pair
    small = Topology.fat_tree(3, 3, 250.0, 2.0)
    check.monkeypatch.setattr(check, 'declared', lambda: small,
                              raising=False)
    check.set_command()
    assert '--schedule' not in check.executable_opts
    check.monkeypatch.setattr(check, 'declared', lambda: TREE,
                              raising=False)
    # all pairs: no schedule
    check.monkeypatch.setattr(check, 'link_schedule', 'all-pairs',
                              raising=False)
    check.set_command()
    assert '--schedule' not in check.executable_opts
    check.monkeypatch.setattr(check, 'link_schedule', 'all_pairs',
                              raising=False)
    with pytest.raises(SanityError, match="link_schedule 'all_pairs'"):
        check.set_command()


def _output(rounds, rates):
    """CG lines of cg_linkmatrix --schedule for ``rounds`` at ``rates``
    (MB/s, per round and flow)."""
    rank = {n: i for i, n in enumerate(TREE.nodes)}
    out = []
    for r, row in zip(rounds, rates):
        for (a, b), bw in zip(r.flows, row):
            t = 4e6 / bw
            out.append(f'CG pattern=linkmatrix bytes=4000000 ranks=24 '
                       f'ppn=1 nodes=24 peer={rank[b]} src={a} dst={b} t_us={t} '
                       f'med_us={t} min_us={t} max_us={t} bw_MBps={bw} '
                       f'trials=7 kept=7 filtered=0 round={r.label} '
                       f'src_rank={rank[a]} dst_rank={rank[b]}')
    n = len(out)
    return '\n'.join(out) + f'\nCG_DONE program=cg_linkmatrix ' \
        f'measurements={n} errors=0\n'


def test_the_short_schedule_names_a_cut_uplink(check):
    check.set_command()         # the schedule file the job runs
    rounds = schedule(TREE, TREE.nodes)
    prepared = Prepared(TREE, [r.flows for r in rounds])
    cut = TREE.scaled(('switch', 'leaf2', 'up'), 0.7).scaled(
        ('switch', 'leaf2', 'down'), 0.7)
    links = [('switch', 'leaf2', 'up'), ('switch', 'leaf2', 'down')]
    rng = random.Random(3)
    for faulty, expect in ((False, []), (True, ['uplink leaf2-spine'])):
        rates = [[p * 0.9 * math.exp(rng.gauss(0, 0.05)) for p in
                  (m.variant(cut, links) if faulty else m.rates)]
                 for m in prepared.models]
        run = cgoutput.parse(_output(rounds, rates))
        check.check_run(run)            # every flow of the schedule
        an = topology.diagnose(TREE, topology.rounds_from_measurements(
            run.measurements), 'fab0')
        assert [v.message.split(' on fabric')[0].split(' (')[0]
                for v in an.verdicts] == expect, an.messages()
    short = cgoutput.parse(_output(rounds[:-1], rates[:-1]))
    flows = sum(len(r) for r in rounds)
    with pytest.raises(SanityError, match=f'expected {flows}'):
        check.check_run(short)
    # the job ran every pair: sanity expects every pair
    check.monkeypatch.setattr(check, 'link_schedule', 'all-pairs',
                              raising=False)
    check.set_command()
    with pytest.raises(SanityError, match='expected 552'):
        check.check_run(run)


def test_the_job_limit_grows_with_the_rounds_it_runs(check):
    """10 minutes for the tree's rounds; every pair on the emulated 24-node
    three-level tree (24 rounds against its 14) gets 24/14 of them: the
    13m52s its cut trunk took; a limit set on the command line is kept."""
    tree3 = Topology.fat_tree3(3, 2, 4, 12.5, 2.0, 2.0)
    check.monkeypatch.setattr(check, 'declared', lambda: tree3,
                              raising=False)
    check.monkeypatch.setattr(check, 'time_limit', None, raising=False)
    check.set_command()
    tree_rounds = len(schedule(tree3, tree3.nodes))
    assert tree_rounds == 14
    assert check.time_limit == 600
    check.monkeypatch.setattr(check, 'link_schedule', 'all-pairs',
                              raising=False)
    check.monkeypatch.setattr(check, 'time_limit', None, raising=False)
    check.set_command()
    assert check.time_limit == round(600 * 24 / 14)
    assert check.time_limit > 13 * 60 + 52
    # no declared tree: every pair is the only schedule, 10 minutes
    check.monkeypatch.setattr(check, 'declared', lambda: None, raising=False)
    check.monkeypatch.setattr(check, 'time_limit', None, raising=False)
    check.set_command()
    assert check.time_limit == 600
    # -S LinkMatrix.time_limit=30m: kept
    check.monkeypatch.setattr(check, 'declared', lambda: tree3,
                              raising=False)
    check.monkeypatch.setattr(check, 'time_limit', 1800, raising=False)
    check.set_command()
    assert check.time_limit == 1800
