"""The adaptive retest of node links (clustergate.links.retest_candidates,
retest_rules, retest_verdict, retest_driver): decisions on
given retest vectors, the verdict lines after a retest, and the driver
with the real cg_linkmatrix --pairs on this machine."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from clustergate.parsers import cgoutput
from clustergate.links import judge as linkjudge
from clustergate.links import matrix as linkmatrix
from clustergate.links import stats as linkstats
import dataclasses
from clustergate.links import retest_candidates
from clustergate.links import retest_driver
from clustergate.links import retest_rules
from clustergate.links import retest_verdict
from clustergate.links.stats import NodeFigure
from conftest import fixture_text, mpirun_env

NODES = [f'n{i}' for i in range(1, 10)]
#: a healthy alone pair on the emulated tree (MB/s)
RATE = 30.0
#: per-pair wobble of +-2 %, different in every round (a fixed list, so
#: that the tests are exact)
WOBBLE = [0.0, 0.013, -0.018, 0.007, -0.004, 0.02, -0.011, 0.016, -0.02,
          0.003, -0.008, 0.012, -0.015, 0.009, -0.002, 0.018, -0.006]


def _count_calls(monkeypatch, module, name):
    """A list that grows by one on each call of ``module.name`` (which
    still runs)."""
    calls = []
    real = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def measured(the_plan, up=None, down=None, pair=None, round_no=0):
    """One retest round of ``the_plan``: every pair at RATE times the
    slower of the sender's up link and the receiver's down link (``up``,
    ``down``: {node: factor}; ``pair``: {(src, dst): factor}), wobbling."""
    up, down, pair = up or {}, down or {}, pair or {}
    out = {}
    for i, (s, d) in enumerate(the_plan.pairs):
        w = WOBBLE[(7 * round_no + i) % len(WOBBLE)]
        f = min(up.get(s, 1.0), down.get(d, 1.0)) * pair.get((s, d), 1.0)
        out[(s, d)] = RATE * f * (1 + w)
    return out


def run_rounds(cands, n, refs=('n1', 'n2', 'n3', 'n4'), final=False,
               **faults):
    """Decisions of ``cands`` as the driver takes them: a round, then a
    decision for each open candidate, up to ``n`` rounds (``final``: the
    budget ends after them)."""
    the_plan = retest_candidates.plan([c.node for c in cands], list(refs))
    rounds, out = [], {}
    for r in range(n):
        rounds.append(measured(the_plan, round_no=r, **faults))
        for c in cands:
            if c.node not in out:
                d = retest_rules.decide(rounds, c, the_plan)
                if d.status != 'open':
                    out[c.node] = d
    for c in cands:
        if c.node not in out:
            out[c.node] = retest_rules.decide(rounds, c, the_plan, final=final)
    return out


def cand(node, why='named'):
    return retest_candidates.Candidate(node, why, 'both ways 0.91x its peers (-6.0 MADs)')


def test_plan_measures_each_candidate_with_partners_and_controls():
    p = retest_candidates.plan(['n5', 'n6'], ['n1', 'n2', 'n3', 'n4', 'n7'])
    assert p.partners == {'n5': ['n1', 'n2', 'n3', 'n4'],
                          'n6': ['n1', 'n2', 'n3', 'n4']}
    cycle = [('n1', 'n2'), ('n2', 'n3'), ('n3', 'n4'), ('n4', 'n1')]
    assert p.controls == {'n5': cycle, 'n6': cycle}
    assert {('n5', 'n3'), ('n3', 'n5'), ('n6', 'n1')} <= set(p.pairs)
    # the shared controls are measured once, around the candidates' pairs
    assert len(p.pairs) == 4 + 2 * 2 * 4
    assert p.pairs[:2] == cycle[:2] and p.pairs[-2:] == cycle[2:]
    # no candidate is another candidate's partner
    assert ('n5', 'n6') not in p.pairs and ('n6', 'n5') not in p.pairs
    assert retest_candidates.plan(['n5'], ['n1']) is None
    # partners per candidate: each with the controls among its own
    p = retest_candidates.plan(['n5', 'n6'], {'n5': ['n1', 'n2'], 'n6': ['n7']})
    assert p.partners == {'n5': ['n1', 'n2']}
    assert p.controls == {'n5': [('n1', 'n2'), ('n2', 'n1')]}


def test_a_healthy_noisy_round_does_not_alarm():
    # the first round named n3 (one noisy round); its retests are healthy
    d = run_rounds([cand('n3')], 2)['n3']
    assert d.status == 'open'           # two rounds never decide
    # not even two clear ones (at half the rate: p = 0.005 after two)
    d = run_rounds([cand('n3')], 2, up={'n3': 0.5})['n3']
    assert d.status == 'open' and d.directions['sent']['p_slow'] < 0.01
    d = run_rounds([cand('n3')], 8)['n3']
    assert d.status == 'healthy' and d.retests <= 5, d
    assert d.text.startswith('cleared by retest: sent 1.00x, received '
                             '1.00x its partners alone, above 0.95x (p')
    line = ('slow node link n3 on fabric fab0: both ways 0.91x its peers '
            '[basis: peers only, no baseline]')
    lines, notes = retest_verdict.apply([line], {'decisions': [dataclasses.asdict(d)]}, 'fab0',
                                        [cand('n3')])
    assert lines == []
    assert notes == [f'{line} -- {d.text}']


def test_a_ten_percent_loss_is_named_with_its_confidence():
    d = run_rounds([cand('n5', 'borderline')], 3,
                   up={'n5': 0.9}, down={'n5': 0.9})['n5']
    assert d.status == 'slow', d
    assert d.retests == 3
    for dr in ('sent', 'recv'):
        assert 0.88 < d.directions[dr]['mean'] < 0.92
        assert d.directions[dr]['p_slow'] < 0.01
    assert 'x its partners alone, 3 of 3 retests at or below 0.975x (p' in \
        d.text
    assert 'its own link' in d.text
    # borderline in the first round (not named): the retest names it
    lines, _ = retest_verdict.apply([], {'decisions': [dataclasses.asdict(d)]}, 'fab0',
                                    [cand('n5', 'borderline')])
    assert len(lines) == 1
    assert lines[0].startswith('slow node link n5 on fabric fab0: retest: ')
    assert 'first round: both ways 0.91x' in lines[0]


def test_one_direction_lost_is_named_in_that_direction():
    d = run_rounds([cand('n7')], 8, up={'n7': 0.9})['n7']
    assert d.status == 'slow' and d.direction == 'sent', d
    # what it receives is no slower than its partners
    assert d.directions['recv']['mean'] > 0.97


def test_the_slow_nodes_partner_is_not_blamed():
    # n6 was flagged beside n5 (n5 dragged its figure); both retested
    # against healthy partners: n5 named, n6 cleared
    got = run_rounds([cand('n5'), cand('n6', 'borderline')], 8,
                     up={'n5': 0.85}, down={'n5': 0.85})
    assert got['n5'].status == 'slow'
    assert got['n6'].status == 'healthy', got['n6']


def test_halving_tells_a_partners_link_from_the_nodes_own():
    # n3 is fine, but what it sends to n4 is slow (n4's down link or the
    # route): slow with one partner only -> that pair, not n3
    d = run_rounds([cand('n3')], 8, refs=('n1', 'n2', 'n4', 'n6'),
                   pair={('n3', 'n4'): 0.8})['n3']
    assert d.status == 'partner', d
    assert d.blamed == ['n4'] and d.direction == 'sent'
    assert "not n3's own link" in d.text
    lines, _ = retest_verdict.apply([], {'decisions': [dataclasses.asdict(d)]}, 'fab0',
                                    [cand('n3', 'borderline')])
    assert lines[0].startswith('slow link n3->n4 on fabric fab0: retest: ')


def test_budget_exhaustion_says_inconclusive():
    # 0.94x: neither clearly below nor above 0.95x after two rounds
    d = run_rounds([cand('n8')], 2, final=True,
                   up={'n8': 0.94}, down={'n8': 0.94})['n8']
    assert d.status == 'inconclusive', d
    assert d.text.startswith('retest inconclusive after the time budget: ')
    line = ('slow node link n8 on fabric fab0: both ways 0.93x its '
            'baseline [basis: its baseline]')
    lines, _ = retest_verdict.apply([line], {'decisions': [dataclasses.asdict(d)]}, 'fab0',
                                    [cand('n8')])
    # a named link the budget left open keeps its verdict, saying so
    assert lines == [f'{line}; {d.text}']
    # a borderline one too: what the retest could not check is not passed
    lines, notes = retest_verdict.apply([], {'decisions': [dataclasses.asdict(d)]}, 'fab0',
                                        [cand('n8', 'borderline')])
    assert lines == [f'undecided node link n8 on fabric fab0: {d.text} '
                     f'(first round: both ways 0.91x its peers (-6.0 '
                     f'MADs), not named on its own)']


def test_borderline_is_halfway_to_both_bounds():
    b = retest_candidates.Bounds()
    base = linkjudge.LinkStat(1.0, 0.005, 8)

    def j(fig, direction='both', stat=base):
        f = {('n1', direction): NodeFigure('n1', direction, 30, fig, 3),
             ('n2', direction): NodeFigure('n2', direction, 30, 1.0, 3),
             ('n3', direction): NodeFigure('n3', direction, 30, 1.0, 3)}
        stats = {f'peer_n1_{direction}': stat} if stat else None
        return linkjudge.judge(f, stats).judgements[0]

    assert retest_candidates.is_borderline(j(0.97), b)         # 0.97x, -3 MADs
    assert not retest_candidates.is_borderline(j(0.98), b)     # above 0.975x
    assert not retest_candidates.is_borderline(j(0.93), b)     # named, not borderline
    assert retest_candidates.is_borderline(j(0.94, 'sent'), b)
    # peers only: a 10 % loss (0.89x) is not named, but borderline
    assert not j(0.89, stat=None).named
    assert retest_candidates.is_borderline(j(0.89, stat=None), b)
    # peers only: a 5 % loss (0.95x, 5 MADs below) is retested, as with a
    # baseline: halfway to the ratio and half the naming z below
    assert retest_candidates.is_borderline(j(0.95, stat=None), b)
    assert not retest_candidates.is_borderline(j(0.98, stat=None), b)


def test_peers_only_borderline_on_the_campaign_first_rounds():
    # first-round figures of the emulated 9-node tree without a per-link
    # baseline (the run's MAD at its 1 % floor): the 95 % links at
    # 0.93-0.96x of their peers, 2.6-5.6 MADs below, were retested in 1 of
    # 6 runs; a healthy link 2.4 MADs below is not retested
    b = retest_candidates.Bounds()

    def peers(fig, z, spread=0.01, count=27):
        return linkjudge.LinkJudgement('n3', 'both', fig, z, spread=spread,
                                       count=count)

    # 9 nodes (27 figures): 2.6 MADs
    assert round(retest_candidates.tight_z(27, b), 1) == 2.6
    for fig, z in ((0.956, -4.3), (0.959, -4.1), (0.930, -5.5),
                   (0.956, -4.1), (0.942, -4.7), (0.949, -5.4)):
        assert retest_candidates.is_borderline(peers(fig, z), b), (fig, z)
    assert not retest_candidates.is_borderline(peers(0.975, -2.4), b)
    assert not retest_candidates.is_borderline(peers(0.96, -2.5), b)
    # 1,024 nodes: one healthy figure expected 5.1 MADs below
    assert round(retest_candidates.tight_z(3072, b), 1) == 5.1
    assert not retest_candidates.is_borderline(peers(0.95, -4.3, count=3072), b)
    # in a noisy run (MAD 3.4 % of the median) a 5 % loss is within the
    # spread: 7.5 MADs as before
    assert not retest_candidates.is_borderline(peers(0.95, -5.4, spread=0.034), b)
    assert retest_candidates.is_borderline(peers(0.95, -7.6, spread=0.034), b)


# -- the driver with the real program --------------------------------------

def _mpirun(built, np, *args):
    exe = shutil.which('mpirun.openmpi') or shutil.which('mpirun')
    return subprocess.run([exe, '-np', str(np), '--bind-to', 'none',
                           '--oversubscribe',
                           os.path.join(built, 'cg_linkmatrix'),
                           '--any-placement', *args],
                          env=mpirun_env(), capture_output=True, text=True,
                          timeout=120)


def test_pairs_option_times_each_pair_alone(built_programs):
    cp = _mpirun(built_programs, 4, '--bytes', '64K', '--trials', '3',
                 '--pairs', '0-3,3-0,1-2')
    assert cp.returncode == 0, cp.stderr
    run = cgoutput.parse(cp.stdout)
    got = [(m['round'], m['alone'], m['src_rank'], m['dst_rank'])
           for m in run.measurements]
    assert got == [(1, 1, 0, 3), (2, 1, 3, 0), (3, 1, 1, 2)]
    assert all(m.best_bandwidth() > 0 for m in run.measurements)
    bad = _mpirun(built_programs, 4, '--pairs', '0-4')
    assert bad.returncode != 0
    assert "pair 0-4 is not two distinct ranks of 0..3" in bad.stderr


def test_a_pair_alone_is_timed_from_its_senders_start(built_programs):
    # each sender starts 0.3 s after the barrier (a test switch): timed
    # from the barrier, the receiver counted that wait (on the emulated
    # site rank 0, out of the barrier first, received at 0.96x alone);
    # timed from the sender's word it does not: 64 KB over loopback
    # takes well under 0.3 s on any machine
    cp = _mpirun(built_programs, 2, '--bytes', '64K', '--trials', '3',
                 '--pairs', '0-1,1-0', '--late-sender-us', '300000')
    assert cp.returncode == 0, cp.stderr
    run = cgoutput.parse(cp.stdout)
    assert len(run.measurements) == 2
    for m in run.measurements:
        assert m['med_us'] < 300000, m


def test_driver_retests_in_the_job_and_stops_at_its_budget(built_programs,
                                                           tmp_path):
    # the first round: a real healthy 4-node matrix of the emulated
    # cluster; n2's baseline 12 % above what it did there: named
    busy = fixture_text('cg-outputs', 'emu-linkmatrix-4MB-fab0-busy.out')
    (tmp_path / 'out').write_text(busy)
    figs = linkstats.flat_figures(linkmatrix.from_measurements(
        cgoutput.parse(busy).measurements))
    stats = {f'peer_{n}_{d}': [f.peer * (1.12 if n == 'n2' else 1.0),
                               # the others never borderline
                               0.005 if n == 'n2' else 0.5, 8]
             for (n, d), f in figs.items()}
    (tmp_path / 'in.json').write_text(json.dumps(
        {'fabric': 'fab0', 'stats': stats}))
    # the retests: the real program on this machine, ranks 0-3 standing
    # for n1-n4
    exe = shutil.which('mpirun.openmpi') or shutil.which('mpirun')
    # each launch waits 0.3 s first: at most one round fits the half
    # second on any machine (a fast one ran 3 rounds of 0.15 s in it)
    launch = (f'sleep 0.3; {exe} -np 4 --bind-to none --oversubscribe '
              f'{built_programs}/cg_linkmatrix --any-placement --bytes 64K')
    res = tmp_path / 'res.json'
    cp = subprocess.run(
        [sys.executable, '-m', 'clustergate.links.retest_driver',
         '--output', str(tmp_path / 'out'), '--inputs',
         str(tmp_path / 'in.json'), '--launch', launch, '--budget', '0.5',
         '--trials', '3', '--result', str(res), '--log',
         str(tmp_path / 'log')], env=mpirun_env(), capture_output=True,
        text=True, timeout=300)
    assert cp.returncode == 0, cp.stderr
    result = json.loads(res.read_text())
    (d,) = result['decisions']
    assert d['node'] == 'n2' and d['why'] == 'named'
    # half a second: the budget is spent before the rounds a decision
    # needs (a round takes 0.3 s and more: one at most, none under load,
    # the launch killed at the budget); the launches never run past it
    assert result['rounds'] < retest_rules.MIN_RETESTS, result
    # give or take the kill of the launch in flight and the clock's
    # rounding (1.0 s seen in CI); a launch left to finish ran 10 s past
    assert result['elapsed_s'] <= 0.5 + 1.0, result
    assert all(n.startswith('retest launch killed after ') and
               n.endswith(' s (the end of the budget)')
               for n in result['notes']), result
    assert d['status'] == 'inconclusive'
    assert d['text'].startswith('retest inconclusive after the time budget')
    assert len(d['directions']['sent']['values']) == result['rounds']
    log = (tmp_path / 'log').read_text() if result['rounds'] else ''
    # n2 (rank 1) with its 3 partners both ways, and 3 control pairs
    alone = [m for m in cgoutput.parse(log).measurements if m['alone'] == 1]
    assert len(alone) == 9 * result['rounds']
    assert sum(m['src_rank'] == 1 for m in alone) == 3 * result['rounds']
    assert sum(m['dst_rank'] == 1 for m in alone) == 3 * result['rounds']
    assert 'linkretest: n2 inconclusive' in cp.stderr


# -- the job script --------------------------------------------------------

def test_the_job_script_runs_the_retest_after_the_matrix(tmp_path):
    """A dry run on the emulated cluster (no cluster needed): the job
    script runs the driver after the matrix, a retest only after a whole
    output, and keeps the matrix's exit status; the driver's line works as written."""
    from conftest import ROOT, reframe_cmd
    env = {k: v for k, v in os.environ.items() if k != 'SLURM_CONF'}
    env.update(CG_RESULTS_DB=str(tmp_path / 'results.db'),
               CG_DEBUG_LOG=str(tmp_path / 'reframe.log'),
               CG_PERFLOG_DIR=str(tmp_path / 'perflogs'))
    proc = subprocess.run(
        reframe_cmd() + ['-C', os.path.join(ROOT, 'config', 'settings.py'),
                         '--system', 'emucluster',
                         '-c', os.path.join(ROOT, 'checks', 'linkmatrix'),
                         '-n', '^LinkMatrix.*fab0',
                         '-S', 'valid_prog_environs=openmpi',
                         '--dry-run', '--prefix', str(tmp_path / 'rfm')],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:]
    base = tmp_path / 'rfm' / 'stage' / 'emucluster' / 'emu' / 'openmpi'
    (stage,) = [base / d for d in os.listdir(base)
                if d.startswith('LinkMatrix')]
    lines = (stage / 'rfm_job.sh').read_text().splitlines()
    main = next(i for i, ln in enumerate(lines)
                if 'cg_linkmatrix --bytes 4000000 --trials 8' in ln)
    # the driver starts beside the matrix and waits for its exit status
    assert lines[main - 2:main] == ['rm -f cg_matrix_rc', lines[main - 1]]
    driver = lines[main - 1]
    assert driver.endswith(' --after cg_matrix_rc & cg_retest=$!')
    assert lines[main + 1:] == [
        'cg_rc=$?',
        'echo $cg_rc > cg_matrix_rc.new && mv cg_matrix_rc.new cg_matrix_rc',
        'wait $cg_retest', 'exit $cg_rc']
    assert "--launch '${CG_MPIRUN:-mpirun} -np 4 " in driver
    assert ' --budget 120.0 ' in driver
    inputs = json.loads((stage / 'linkretest_inputs.json').read_text())
    assert inputs['fabric'] == 'fab0' and inputs['ratio'] == 0.95

    def job(matrix):
        """the script's driver and tail around a 'matrix' command"""
        return subprocess.run(
            ['bash', '-c', '\n'.join(lines[main - 2:main] + [matrix] +
                                     lines[main + 1:])],
            cwd=stage, capture_output=True, text=True, timeout=300)

    # the driver as the job runs it, after a healthy matrix of 4 nodes
    # (written while the driver waits): nothing to retest, said in its
    # result
    busy = fixture_text('cg-outputs', 'emu-linkmatrix-4MB-fab0-busy.out')
    (stage / 'matrix.out').write_text(busy)
    cp = job('sleep 2; cp matrix.out rfm_job.out; true')
    assert cp.returncode == 0, cp.stderr
    result = json.loads((stage / 'linkretest_fab0.json').read_text())
    assert result['notes'] == ['no suspect or borderline node link'], \
        result
    # a failed matrix: no retest, its exit status kept, the result says why
    cp = job('sleep 1; head -3 matrix.out > rfm_job.out; (exit 3)')
    assert cp.returncode == 3
    result = json.loads((stage / 'linkretest_fab0.json').read_text())
    assert result['rounds'] == 0 and result['notes'][0].startswith(
        'the matrix launch exited 3 before its output was whole'), result


def test_the_driver_judges_the_first_round_on_the_declared_tree():
    # the tree as the check resolved it travels as JSON to the job
    from clustergate.links import topology
    from clustergate_lab.cluster import tree as tr
    tree = tr.leafspine([f'n{i}' for i in range(1, 10)], 3)
    topo = topology.parse_topology_conf(tree.topology_conf(250, 375))
    data = json.loads(json.dumps(retest_driver.topology_to_json(topo)))
    assert retest_driver.topology_from_json(data) == topo
    text = fixture_text('cg-outputs', 'emu-linkmatrix-tree9-healthy.out')
    base = {f'peer_n{i}_{d}': [1.0, 0.01, 8] for i in range(1, 10)
            for d in ('sent', 'recv')}
    base['peer_n5_sent'] = [1.12, 0.01, 8]
    first = retest_driver.first_round(
        text, {'fabric': 'fab0', 'stats': base, 'topology': data})
    assert first.lines == [] and first.named == []
    cands = retest_candidates.candidates(first.verdict, retest_candidates.Bounds())
    assert 'n5' in [c.node for c in cands]
    assert next(c for c in cands if c.node == 'n5').why == 'named'
    # flat, the same matrix is judged against the flat median instead
    flat = retest_driver.first_round(text, {'fabric': 'fab0'})
    assert flat.figures != first.figures


def test_a_healthy_first_round_does_not_import_the_statistics():
    """The retest's statistics (scipy) took 3 s to import on a loaded
    node: a job whose first round has nothing to retest must not pay it
    (a fresh interpreter, as in the job)."""
    code = ('import sys; from clustergate.links import retest_driver; '
            'r = retest_driver.retest(open(sys.argv[1]).read(), {"fabric": "fab0"}, '
            '"false", 120.0); print(r["notes"], "scipy" in sys.modules)')
    path = os.path.join(os.path.dirname(__file__), 'fixtures', 'cg-outputs',
                        'emu-linkmatrix-4MB-fab0-busy.out')
    cp = subprocess.run([sys.executable, '-c', code, path],
                        capture_output=True, text=True, timeout=120)
    assert cp.stdout.split('\n')[0] == \
        "['no suspect or borderline node link'] False", cp.stderr


@pytest.mark.parametrize('name', ['healthy', 'leaf2-uplink-25pct',
                                  'n2-on-leaf3', 'n5-50pct'])
def test_the_driver_fits_the_fabric_once(monkeypatch, name):
    """After the matrix, on the job's critical path, the switch-tree fit
    is made once: the node links are judged on the verdict's own fit,
    with the same figures and verdict as when each judgement refitted."""
    from clustergate.links import topology
    from clustergate_lab.cluster import tree as tr
    tree = tr.leafspine([f'n{i}' for i in range(1, 10)], 3)
    topo = topology.parse_topology_conf(tree.topology_conf(250, 375))
    inputs = {'fabric': 'fab0', 'topology': retest_driver.topology_to_json(topo)}
    text = fixture_text('cg-outputs', f'emu-linkmatrix-tree9-{name}.out')
    calls = _count_calls(monkeypatch, topology, 'diagnose')
    first = retest_driver.first_round(text, inputs)
    assert len(calls) == 1
    # the same judgement with the fit made again for each figure set
    run = cgoutput.parse(text)
    again = retest_driver.node_links(first.matrix, run, topo, first.lines, None,
                                     'fab0', retest_candidates.Bounds())
    assert len(calls) > 1
    assert again[0] == first.figures and again[2] == first.named
    assert [j.node for j in again[1].judgements if j.named] == \
        [j.node for j in first.verdict.judgements if j.named]


def test_a_healthy_first_round_parses_the_output_once(monkeypatch):
    """After the matrix, on the job's critical path: the output is parsed
    for the first round only; the node ranks (a second parse) only when
    a retest is launched."""
    text = fixture_text('cg-outputs', 'emu-linkmatrix-4MB-fab0-busy.out')
    calls = _count_calls(monkeypatch, cgoutput, 'parse')
    result = retest_driver.retest(text, {'fabric': 'fab0'}, 'false', 120.0)
    assert result['notes'] == ['no suspect or borderline node link']
    assert len(calls) == 1


def _teardown_launch(tmp_path, text, rc=143):
    """A launch line that prints ``text`` (what the real one printed),
    says srun's last words and exits ``rc``: the retest's options are
    its arguments."""
    out = tmp_path / 'launch.out'
    out.write_text(text)
    return (f"sh -c 'cat {out}; echo \"srun: Force Terminated "
            f"StepId=53.1\" >&2; exit {rc}' launch")


def test_a_launch_whose_teardown_failed_keeps_its_whole_output(tmp_path):
    # MPICH on the loaded 12-node site: every pair measured, CG_DONE
    # with no error, then srun exited 143; its figures were thrown away
    # and the candidate was left without a round
    text = fixture_text('cg-outputs', 'emu-linkretest-n8-mpich-teardown.out')
    run = cgoutput.parse(text)
    ranks = {m['src']: int(m['src_rank']) for m in run.measurements}
    ranks.update({m['dst']: int(m['dst_rank']) for m in run.measurements})
    pairs = [(m['src'], m['dst']) for m in run.measurements]
    notes = []
    got = retest_driver._measure(_teardown_launch(tmp_path, text), ranks, pairs, 4,
                                 open(os.devnull, 'w'), 60, notes)
    assert len(got) == 12 and got[pairs[0]] > 20
    (note,) = notes
    assert note.startswith('retest launch exited 143 after its last '
                           'result (CG_DONE, 12 pairs, no error)'), note
    # cut before its end: the launch failed, no figure
    cut = text[:text.index('CG_DONE')]
    with pytest.raises(RuntimeError, match='retest launch exited 143: '
                       'srun: Force Terminated'):
        retest_driver._measure(_teardown_launch(tmp_path, cut), ranks, pairs, 4,
                               open(os.devnull, 'w'), 60, [])
