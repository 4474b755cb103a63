"""The link-matrix check (clustergate.rfm.families.linkmatrix) on real outputs of the
emulated cluster: sanity judges that the program printed a complete
matrix, the verdict is a performance variable (``faults``, its unit
carrying the verdict lines) next to one figure per node link, the CSV and
heat map come from a hook after the run (so a failing matrix is kept
too), and the check sets no environment of its own."""

import json
import os

import pytest
import reframe.utility.sanity as sn
from reframe.core.exceptions import ConfigError, PerformanceError, SanityError

from clustergate.links import topology
from clustergate.links import matrix as lm
from clustergate_lab.cluster import tree as tr
from clustergate.rfm.families import linkmatrix as lmcheck
from conftest import fixture_text
from rfm_loader import load_checks

THROTTLED = fixture_text('cg-outputs', 'emu-linkmatrix-4MB-n4-fab0-250mbit.out')
BUSY = fixture_text('cg-outputs', 'emu-linkmatrix-4MB-fab0-busy.out')


@pytest.fixture
def check(tmp_path, monkeypatch):
    checks = load_checks('checks/linkmatrix/linkmatrix_check.py')
    c = next(c for c in checks if type(c).__name__ == 'LinkMatrix')
    # the fixtures ran on 4 nodes, one rank each, over fab0
    for name, value in (('num_nodes', 4), ('ppn', 1), ('num_tasks', 4),
                        ('interconnect', 'fab0'), ('_stagedir', str(tmp_path)),
                        ('heatmap_title', lambda: 'test')):
        monkeypatch.setattr(c, name, value, raising=False)

    c.monkeypatch = monkeypatch
    # the instance is shared by the tests: judged anew
    monkeypatch.setattr(lmcheck, '_JUDGED', {})
    return c


def feed(check, text):
    check.monkeypatch.setattr(check, 'stdout_text', lambda: text,
                              raising=False)
    return check


def perf(check):
    """The performance variables' values and units, and the variables
    that miss their reference (as ReFrame's performance stage judges)."""
    check.set_perf_variables()
    values, units, failed = {}, {}, []
    for name, fn in check.perf_variables.items():
        values[name], units[name] = sn.evaluate(fn), fn.unit
        try:
            ref = check.reference[f'*:{name}'][:3]
        except KeyError:
            continue
        try:
            sn.evaluate(sn.assert_reference(values[name], *ref))
        except SanityError:
            failed.append(name)
    return values, units, failed


def test_throttled_node_fails_performance_naming_it(check, tmp_path):
    c = feed(check, THROTTLED)
    # sanity judges the program: it ran and printed the whole matrix
    assert sn.evaluate(c.validate()) is True
    # sanity writes nothing
    assert os.listdir(tmp_path) == []
    values, units, failed = perf(c)
    assert sorted(failed) == ['faults', 'peer_min']
    assert values['faults'] == 1
    # the verdict line is in the unit: ReFrame's failure message and the
    # perflog carry it
    assert units['faults'].startswith('verdicts: suspect node n4 on fabric '
                                      'fab0: row 0.2')
    # n4's link at 250 of 1000 Mbit/s: a quarter of its peers, both ways
    for d in ('sent', 'recv'):
        assert 0.2 < values[f'peer_n4_{d}'] < 0.3
        assert 28 < values[f'bw_n4_{d}'] < 32
        for n in ('n1', 'n2', 'n3'):
            assert values[f'peer_{n}_{d}'] > 0.8
    assert values['peer_min'] == min(values[f'peer_n4_{d}']
                                     for d in ('sent', 'recv'))


def test_artefacts_are_written_after_the_run(check, tmp_path):
    c = feed(check, THROTTLED)
    hooks = type(c)._rfm_pipeline_hooks
    assert 'write_artefacts' in [h.__name__ for h in
                                 hooks['post_run_wait']]
    c.write_artefacts()
    mat = lm.read_csv(tmp_path / 'linkmatrix_fab0.csv')
    want = lm.from_measurements(c._run().measurements)
    assert mat.nodes == want.nodes == ['n1', 'n2', 'n3', 'n4']
    assert mat.bw == pytest.approx(want.bw, abs=1e-4)
    c.describe_matrix()     # the init hook, at this point
    assert c.keep_files == ['linkmatrix_fab0.csv', 'linkmatrix_fab0.png',
                            'linkretest_fab0.json', 'linkretest_fab0.log',
                            'linkretest_inputs.json']
    assert set(os.listdir(tmp_path)) <= set(c.keep_files)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return

    assert (tmp_path / 'linkmatrix_fab0.png').read_bytes()[:4] == \
        b'\x89PNG'


def test_unreadable_output_gives_no_artefact(check, tmp_path):
    c = feed(check, THROTTLED[:200])
    c.write_artefacts()
    assert os.listdir(tmp_path) == []
    with pytest.raises(SanityError):
        sn.evaluate(c.validate())


def test_busy_healthy_matrix_passes_with_perf_values(check):
    c = feed(check, BUSY)
    assert sn.evaluate(c.validate()) is True
    bw = lm.from_measurements(c._run().measurements).bw.values()
    assert sn.evaluate(c.bw_min()) == min(bw)
    assert 115 < sn.evaluate(c.bw_median()) < 126
    values, units, failed = perf(c)
    assert failed == []
    assert values['faults'] == 0 and units['faults'] == 'verdicts'
    # every node link's figures, every night: 4 nodes x 2 directions x
    # (MB/s, x peers), x peers both ways, + the summary ones
    nodes = [f'n{i}' for i in range(1, 5)]
    assert set(values) == {'bw_median', 'bw_min', 'peer_min', 'faults',
                           'link_mads'} | {
        f'{k}_{n}_{d}' for k in ('bw', 'peer') for n in nodes
        for d in ('sent', 'recv')} | {f'peer_{n}_both' for n in nodes}
    assert all(0.85 < values[f'peer_{n}_{d}'] < 1.15 for n in nodes
               for d in ('sent', 'recv'))
    assert units['bw_n1_sent'] == 'MB/s' and units['peer_n1_recv'] == 'x'


def test_a_judged_check_can_be_written_as_json(check, tmp_path):
    # ReFrame writes every finished test's attributes as JSON (a judged
    # matrix once stopped the session: tuple keys)
    from reframe.utility import jsonext
    c = on_tree(check, 'emu-linkmatrix-tree9-n5-50pct.out')
    perf(c)
    with open(tmp_path / 'check.json', 'w') as fp:
        jsonext.dump(c, fp)


def test_many_nodes_keep_only_the_summary_variables(check):
    c = feed(check, BUSY)
    c.monkeypatch.setattr(c, 'max_node_variables', 3, raising=False)
    values, _, _ = perf(c)
    assert set(values) == {'bw_median', 'bw_min', 'peer_min', 'faults',
                           'link_mads'}


#: The emulated tree of the tree fixtures (LinkSpeed in Mbit/s)
TREE = tr.leafspine([f'n{i}' for i in range(1, 10)], 3)


def on_tree(check, name):
    topo = topology.parse_topology_conf(TREE.topology_conf(250, 375))
    c = feed(check, fixture_text('cg-outputs', name))
    for k, v in (('num_nodes', 9), ('num_tasks', 9),
                 ('declared', lambda: topo)):
        c.monkeypatch.setattr(c, k, v, raising=False)
    return c


def test_slow_node_link_on_the_tree_is_named_in_performance(check):
    c = on_tree(check, 'emu-linkmatrix-tree9-n5-50pct.out')
    assert sn.evaluate(c.validate()) is True
    values, units, failed = perf(c)
    assert 'faults' in failed
    assert units['faults'].startswith('verdicts: suspect node n5 on fabric '
                                      'fab0')
    # n5 at half its rate; its peers' flows at their prediction
    assert 0.35 < values['peer_n5_sent'] < 0.55
    assert 0.35 < values['peer_n5_recv'] < 0.55
    others = [values[f'peer_n{i}_{d}'] for i in range(1, 10) if i != 5
              for d in ('sent', 'recv')]
    assert min(others) > 0.85 and max(others) < 1.15


def test_healthy_tree_passes_with_node_figures_near_prediction(check):
    c = on_tree(check, 'emu-linkmatrix-tree9-healthy.out')
    values, units, failed = perf(c)
    assert failed == [] and values['faults'] == 0
    assert values['peer_min'] > 0.93
    # node-limited flows ran at 27-31 MB/s of 31.25
    assert all(26 < values[f'bw_n{i}_{d}'] < 31.5 for i in range(1, 10)
               for d in ('sent', 'recv'))


def test_cut_uplink_is_named_in_the_faults_unit(check):
    c = on_tree(check, 'emu-linkmatrix-tree9-leaf2-uplink-25pct.out')
    values, units, failed = perf(c)
    assert 'faults' in failed
    assert units['faults'].startswith('verdicts: uplink leaf2-spine on '
                                      'fabric fab0')


def test_verdict_lines_decide_the_verdict(check):
    # the extension point: a subclass may judge the analysed matrix itself
    c = feed(check, BUSY)
    c.monkeypatch.setattr(c, 'verdict_lines',
                          lambda analysis: [f'{len(analysis.ratios)} pairs '
                                            f'judged'],
                          raising=False)
    assert sn.evaluate(c.validate()) is True
    values, units, failed = perf(c)
    assert failed == ['faults']
    assert units['faults'] == 'verdicts: 12 pairs judged'


def test_an_incomplete_matrix_fails_sanity(check):
    lines = BUSY.splitlines(True)
    pairs = [i for i, l in enumerate(lines) if 'pattern=linkmatrix' in l]
    text = ''.join(l for i, l in enumerate(lines) if i != pairs[3])
    c = feed(check, text)
    with pytest.raises(SanityError):
        sn.evaluate(c.validate())


def test_no_emulation_variable_set_by_the_check(check):
    c = check
    c.monkeypatch.setattr(c, 'program_path', lambda: '/x/cg_linkmatrix',
                          raising=False)
    c.set_command()
    assert c.executable == '/x/cg_linkmatrix'
    assert 'OMPI_MCA_mpi_yield_when_idle' not in c.env_vars
    # the matrix flushes no cache between trials (the flushes of 2x the
    # last-level cache cost the 9-node job 5 s of its 30)
    opts = c.executable_opts
    assert opts[opts.index('--flush-bytes') + 1] == '64'


def link_file(tmp_path, check, metrics, commit='abc1234'):
    """A link-baseline file for the check's system (every point: '*')."""
    system, part = 'emucluster', 'emu'
    check.monkeypatch.setattr(check, 'link_point', lambda: (
        system, part, {'interconnect': 'fab0', 'num_nodes': 9}),
        raising=False)
    links = tmp_path / 'refs' / 'links'
    links.mkdir(parents=True, exist_ok=True)
    lines = [f'system: "{system}"',
             f'provenance: {{written: "2026-11-22T23:00:00Z", host: "h", '
             f'commit: "{commit}", source: "db", runs: 8, first: "a", '
             f'last: "b", sessions: ["s1:0"]}}',
             'links:', '  "LinkMatrix":', f'    "{part}":', '      "*":']
    lines += [f'        "{m}": {{median: {v}, mad: 0.01, runs: 8}}'
              for m, v in metrics.items()]
    (links / f'{system}.yaml').write_text('\n'.join(lines) + '\n')
    check.monkeypatch.setenv('CG_REFERENCES_DIR', str(tmp_path / 'refs'))


def test_a_node_link_below_its_baseline_is_named(check, tmp_path):
    # the healthy tree, but n5's baseline is 12 % above what it did: a
    # node link at 0.89x of its own level, which no peer verdict sees
    c = on_tree(check, 'emu-linkmatrix-tree9-healthy.out')
    base = {f'peer_n{i}_{d}': 1.0 for i in range(1, 10)
            for d in ('sent', 'recv')}
    base['peer_n5_sent'] = 1.12
    link_file(tmp_path, c, base)
    values, units, failed = perf(c)
    assert failed == ['faults']
    assert units['faults'].startswith(
        'verdicts: slow node link n5 on fabric fab0: sent 0.89x its '
        'baseline (')
    assert values['link_mads'] > 10


def test_without_a_baseline_the_healthy_tree_passes(check, tmp_path):
    c = on_tree(check, 'emu-linkmatrix-tree9-healthy.out')
    c.monkeypatch.setenv('CG_REFERENCES_DIR', str(tmp_path))
    c.monkeypatch.setattr(c, 'link_point', lambda: (
        'emucluster', 'emu', {'interconnect': 'fab0'}), raising=False)
    values, units, failed = perf(c)
    assert failed == [] and values['faults'] == 0
    assert c.judge()[2].basis.startswith('no link baseline for this point')


def test_a_malformed_link_baseline_fails_naming_file_and_key(check, tmp_path):
    c = on_tree(check, 'emu-linkmatrix-tree9-healthy.out')
    link_file(tmp_path, c, {'peer_n1_sent': -1})
    with pytest.raises(ConfigError, match=r'links/.*\.yaml: key .*'
                                          r'peer_n1_sent.median'):
        c.set_perf_variables()


def retest_file(tmp_path, **decisions):
    """The retest driver's result: ``node=(status, text)``."""
    (tmp_path / 'linkretest_fab0.json').write_text(json.dumps({
        'budget_s': 120, 'rounds': 4, 'notes': [], 'decisions': [
            {'node': n, 'why': 'named', 'status': st, 'first': 'both ways',
             'retests': 4, 'directions': {}, 'blamed': [], 'direction': '',
             'text': text} for n, (st, text) in decisions.items()]}))


def test_the_retest_decides_a_named_node_link(check, tmp_path):
    # n5 named against a baseline 12 % above what it did
    base = {f'peer_n{i}_{d}': 1.0 for i in range(1, 10)
            for d in ('sent', 'recv')}
    base['peer_n5_sent'] = 1.12
    c = on_tree(check, 'emu-linkmatrix-tree9-healthy.out')
    link_file(tmp_path, c, base)
    # confirmed by the retests of the same job: the line says how sure
    retest_file(tmp_path, n5=('slow', 'retest: sent 0.89x its partners '
                              'alone, 4 of 4 retests (p < 0.001)'))
    values, units, failed = perf(c)
    first = values
    assert failed == ['faults'] and values['faults'] == 1
    assert units['faults'].startswith('verdicts: slow node link n5 on '
                                      'fabric fab0: sent 0.89x its baseline')
    assert units['faults'].endswith('; retest: sent 0.89x its partners '
                                    'alone, 4 of 4 retests (p < 0.001)')
    # cleared by them: one noisy round is no fault
    check.monkeypatch.setattr(lmcheck, '_JUDGED', {})
    retest_file(tmp_path, n5=('healthy', 'cleared by retest: ...'))
    values, units, failed = perf(c)
    assert failed == [] and values['faults'] == 0
    # the history's variables are the first round's, retest or not
    assert {k: v for k, v in values.items() if k != 'faults'} == \
        {k: v for k, v in first.items() if k != 'faults'}
    assert values['link_mads'] > 10


def test_the_retest_budget_comes_from_the_variable_or_the_partition(check):
    c = check
    assert c.retest_budget is None
    assert c.budget() == 120.0
    part = type('P', (), {'extras': {'link_retest_budget_s': 45}})()
    c.monkeypatch.setattr(c, '_current_partition', part, raising=False)
    assert c.budget() == 45.0
    c.monkeypatch.setattr(c, 'retest_budget', 0.0, raising=False)
    assert c.budget() == 0.0


def test_a_decided_verdict_is_not_measured_again_in_the_session(check,
                                                                tmp_path):
    # run 0: n5 at half its rate, named by the fabric verdict and
    # confirmed by the retest of the same job
    check.monkeypatch.setattr(lmcheck, '_DECIDED', {})
    c = on_tree(check, 'emu-linkmatrix-tree9-n5-50pct.out')
    c.monkeypatch.setenv('CG_REFERENCES_DIR', str(tmp_path))
    retest_file(tmp_path, n5=('slow', 'retest: sent 0.50x its partners '
                              'alone, 3 of 3 retests (p < 0.001)'))
    values, units, failed = perf(c)
    assert 'faults' in failed and values['faults'] == 1
    verdict = units['faults'][len('verdicts: '):]
    assert verdict.startswith('suspect node n5 on fabric fab0: ')
    assert '[basis: fabric model]; retest: sent 0.50x' in verdict
    # in run 0 the case is measured
    c.monkeypatch.setattr(lmcheck, '_run_of_session', lambda: 0)
    c.keep_decided_verdict()
    # a retry (run 1) fails at once with the decided verdict, no job
    c.monkeypatch.setattr(lmcheck, '_run_of_session', lambda: 1)
    with pytest.raises(PerformanceError) as info:
        c.keep_decided_verdict()
    assert str(info.value).startswith(f'faults=1 verdicts: {verdict} '
                                      f'(decided by the link retest in an '
                                      f'earlier run of this session')
    # unless asked to measure again
    c.monkeypatch.setattr(c, 'retry_decided', True, raising=False)
    c.keep_decided_verdict()


def test_a_gross_node_link_the_retest_clears_passes(check, tmp_path):
    c = on_tree(check, 'emu-linkmatrix-tree9-n5-50pct.out')
    c.monkeypatch.setenv('CG_REFERENCES_DIR', str(tmp_path))
    retest_file(tmp_path, n5=('healthy', 'cleared by retest: sent 1.00x, '
                              'received 1.00x its partners alone'))
    values, units, failed = perf(c)
    # the first round's figures stay in the history; no fault, no bound
    assert values['peer_min'] < 0.6 and values['faults'] == 0
    assert failed == []
    # not cleared: peer_min is a bound again
    check.monkeypatch.setattr(lmcheck, '_JUDGED', {})
    retest_file(tmp_path, n5=('slow', 'retest: sent 0.50x'))
    values, units, failed = perf(c)
    assert failed == ['peer_min', 'faults']


def test_an_undecided_verdict_may_be_measured_again(check, tmp_path):
    # no retest result (the driver did not write one): the named node
    # link says so and fails, and a retry measures again
    check.monkeypatch.setattr(lmcheck, '_DECIDED', {})
    c = on_tree(check, 'emu-linkmatrix-tree9-n5-50pct.out')
    c.monkeypatch.setenv('CG_REFERENCES_DIR', str(tmp_path))
    values, units, failed = perf(c)
    assert 'faults' in failed
    assert units['faults'].endswith('; not retested: no retest result')
    c.monkeypatch.setattr(lmcheck, '_run_of_session', lambda: 1)
    c.keep_decided_verdict()
    # the retest switched off (budget 0): the first round's verdict, and
    # a retry is the only second look
    check.monkeypatch.setattr(lmcheck, '_JUDGED', {})
    c.monkeypatch.setattr(c, 'retest_budget', 0.0, raising=False)
    values, units, failed = perf(c)
    assert units['faults'].endswith('[basis: fabric model]')
    c.keep_decided_verdict()
