"""Per-link baselines (clustergate.links.linkbaselines): learnt from given
samples, written and validated, and the verdict of a run's node links
against their baseline and their peers, on given figures."""

import sys

import pytest
import yaml

from clustergate.results.samples import Key, Sample
from clustergate.links import linkbaselines as lb
from clustergate.links import judge as linkjudge
from clustergate.links.stats import NodeFigure
from clustergate.refs.references import ReferenceFileError

NODES = [f'n{i}' for i in range(1, 10)]
#: healthy figures of one run (x of the peers): a spread of about 2 %
HEALTHY = [0.99, 1.01, 1.00, 0.98, 1.02, 1.00, 0.99, 1.01, 1.00]


def figures(values_sent, values_recv=None):
    values_recv = values_recv or values_sent
    out = {}
    for n, s, r in zip(NODES, values_sent, values_recv):
        out[(n, 'sent')] = NodeFigure(n, 'sent', 28 * s, s, 3)
        out[(n, 'recv')] = NodeFigure(n, 'recv', 28 * r, r, 3)
        b = (s + r) / 2
        out[(n, 'both')] = NodeFigure(n, 'both', 28 * b, b, 6)
    return out


def stats(median=1.0, mad=0.015, runs=8):
    return {f'peer_{n}_{d}': linkjudge.LinkStat(median, mad, runs, median - 0.03,
                                         median + 0.03)
            for n in NODES for d in ('sent', 'recv', 'both')}


def test_a_link_at_90_percent_is_named_against_its_baseline():
    vals = list(HEALTHY)
    vals[4] = 0.90                      # n5 sends at 90 %
    v = linkjudge.judge(figures(vals, HEALTHY), stats(), 'fab0', basis='B')
    assert len(v.lines) == 1
    line = v.lines[0]
    # the ratio to its baseline and how far outside its noise (both ways
    # it is at 0.96x: not named)
    assert line.startswith('slow node link n5 on fabric fab0: sent 0.90x its '
                           'baseline (-6.7 MADs: 0.900 vs 1.000 +- 0.015, '
                           '8 runs), 0.90x its peers (')
    assert 'no baseline' not in line and 'both ways' not in line
    assert line.endswith(' [basis: its baseline]')
    assert v.basis.startswith('judged against the link baseline B (27 of '
                              '27 node links')
    assert v.worst().node == 'n5' and v.worst().z == pytest.approx(-20 / 3)


def test_a_link_slow_both_ways_is_named_at_a_smaller_loss():
    # 7 % down both ways: all its flows together are steadier than one
    # direction (which needs 10 %)
    vals = list(HEALTHY)
    vals[1] = 0.93
    v = linkjudge.judge(figures(vals, vals), stats(mad=0.01), 'fab0')
    assert v.lines == [
        'slow node link n2 on fabric fab0: both ways 0.93x its baseline '
        '(-7.0 MADs: 0.930 vs 1.000 +- 0.010, 8 runs), 0.93x its peers '
        '(-7.0 MADs) [basis: its baseline]']
    # one direction alone at 0.93: not named
    v = linkjudge.judge(figures(vals, HEALTHY), stats(mad=0.01), 'fab0')
    assert v.lines == []


def test_healthy_noise_is_not_named():
    v = linkjudge.judge(figures(HEALTHY), stats(), 'fab0')
    assert v.lines == []
    assert all(not j.named for j in v.judgements)


def test_both_bounds_must_be_crossed():
    # outside its (floored) noise but only 3 % down: not named (ratio)
    v = linkjudge.judge(figures([0.97] + HEALTHY[1:]), stats(mad=0.002), 'fab0',
                 z=2.5)
    j = next(j for j in v.judgements if j.node == 'n1' and
             j.direction == 'sent')
    assert j.z == pytest.approx(-3) and not j.named and v.lines == []
    # 8 % down inside a wide spread (MAD 0.03: -2.7 MADs): not named
    vals = list(HEALTHY)
    vals[0] = 0.92
    v = linkjudge.judge(figures(vals), stats(mad=0.03), 'fab0')
    assert v.lines == []


def test_a_zero_mad_is_floored():
    st = linkjudge.LinkStat(1.0, 0.0, 8)
    assert st.sigma() == pytest.approx(linkjudge.MAD_FLOOR)
    vals = list(HEALTHY)
    vals[2] = 0.99                      # 1 % below: 1 floored MAD
    v = linkjudge.judge(figures(vals), {'peer_n3_sent': st}, 'fab0')
    j = next(j for j in v.judgements if j.node == 'n3' and
             j.direction == 'sent')
    assert j.z == pytest.approx(-1.0)


def test_without_a_baseline_peers_only_and_says_so():
    vals = list(HEALTHY)
    vals[6] = 0.92
    v = linkjudge.judge(figures(vals), None, 'fab0', basis='in links/x.yaml')
    # 8 % below its peers is not enough without a baseline (with one, it
    # is: see above)
    assert v.lines == []
    assert v.basis.startswith('no link baseline in links/x.yaml: judged '
                              'against its peers only')
    vals[6] = 0.60
    v = linkjudge.judge(figures(vals, vals), None, 'fab0')
    assert v.lines == [v.lines[0]]
    assert v.lines[0].startswith('slow node link n7 on fabric fab0: both '
                                 'ways 0.60x its peers (')
    assert '; sent 0.60x its peers (' in v.lines[0]
    assert '; received 0.60x its peers (' in v.lines[0]
    assert v.lines[0].endswith('[basis: peers only, no baseline]')


def test_nodes_named_by_the_fabric_verdict_are_not_named_twice():
    vals = list(HEALTHY)
    vals[4] = 0.5
    v = linkjudge.judge(figures(vals), stats(), 'fab0', skip=['n5'])
    assert v.lines == []
    assert next(j for j in v.judgements if j.node == 'n5').named


# -- learning and the file ---------------------------------------------------

POINT = 'environ=openmpi,interconnect=fab0,num_nodes=9'


def sample(metric, value, run, t, check='LinkMatrix', result='pass'):
    return Sample(Key('emucluster', 'emu', check, POINT, metric), value,
                     'x', t, run, result)


def history():
    vals = [1.00, 0.98, 1.01, 0.99, 1.03, 1.00, 0.97]
    out = [sample('peer_n1_sent', v, f's{i}:0', 1.7e9 + 3600 * i)
           for i, v in enumerate(vals)]
    out += [sample('bw_n1_sent', 28 * v, f's{i}:0', 1.7e9 + 3600 * i)
            for i, v in enumerate(vals)]
    # not node links, or not the link matrix: ignored
    out += [sample('bw_median', 28.0, f's{i}:0', 1.7e9) for i in range(7)]
    out += [sample('peer_n1_sent', 0.5, f's{i}:0', 1.7e9, check='Other')
            for i in range(7)]
    return out


def test_learn_median_and_mad_per_node_link():
    table = lb.learn(lb.link_samples(history()), min_runs=5)
    st = table[('LinkMatrix', 'emu', POINT)]
    assert set(st) == {'peer_n1_sent', 'bw_n1_sent'}
    assert st['peer_n1_sent'].median == 1.00
    # |deviations| 0, .02, .01, .01, .03, 0, .03 -> median .01
    assert st['peer_n1_sent'].mad == pytest.approx(0.01)
    assert st['peer_n1_sent'].runs == 7
    with pytest.raises(lb.TooFewRuns, match='no node link has 8 healthy '
                                            'runs'):
        lb.learn(lb.link_samples(history()), min_runs=8)


def test_rendered_file_round_trips_with_provenance():
    chosen = lb.link_samples(history())
    table = lb.learn(chosen)
    prov = lb.provenance(chosen, 'results.db')
    text = lb.render('emucluster', table, prov)
    assert text.startswith('# Link baselines of system emucluster')
    got = lb.parse(yaml.safe_load(text), 'f.yaml', 'emucluster')
    assert got.provenance['sessions'] == [f's{i}:0' for i in range(7)]
    assert got.provenance['runs'] == 7 and got.provenance['source'] == \
        'results.db'
    assert got.provenance['first'].startswith('2023-11-14')
    key, st = got.lookup('LinkMatrix', 'emu', {
        'environ': 'openmpi', 'interconnect': 'fab0', 'num_nodes': 9,
        'ppn': 1})
    assert key == POINT
    assert st['peer_n1_sent'].median == 1.0
    assert got.lookup('LinkMatrix', 'emu', {'interconnect': 'fab1'}) is None


@pytest.mark.parametrize('edit,key,problem', [
    (lambda d: d['provenance'].pop('commit'), 'provenance.commit',
     'missing'),
    (lambda d: d['provenance'].update(sessions=[]), 'provenance.sessions',
     'must list'),
    (lambda d: d.update(extra=1), 'extra', 'unknown top-level key'),
    (lambda d: d.update(system='other'), 'system', 'file is for system'),
    (lambda d: next(iter(d['links']['LinkMatrix']['emu'].values()))[
        'peer_n1_sent'].update(median=-1),
     f'links.LinkMatrix.emu.{POINT}.peer_n1_sent.median', 'must be a number'),
    (lambda d: next(iter(d['links']['LinkMatrix']['emu'].values()))[
        'peer_n1_sent'].pop('mad'),
     f'links.LinkMatrix.emu.{POINT}.peer_n1_sent', "missing field 'mad'"),
    (lambda d: next(iter(d['links']['LinkMatrix']['emu'].values())).update(
        bandwidth={'median': 1, 'mad': 0, 'runs': 3}),
     f'links.LinkMatrix.emu.{POINT}.bandwidth', 'not a node link metric'),
])
def test_a_malformed_file_names_file_and_key(edit, key, problem):
    chosen = lb.link_samples(history())
    text = lb.render('emucluster', lb.learn(chosen),
                     lb.provenance(chosen, 'db'))
    data = yaml.safe_load(text)
    edit(data)
    with pytest.raises(ReferenceFileError) as info:
        lb.parse(data, 'links/emucluster.yaml', 'emucluster')
    assert info.value.key == key
    assert problem in info.value.problem
    assert str(info.value).startswith('malformed reference file '
                                      'links/emucluster.yaml: key')


def args(tmp_path, **kw):
    d = dict(system=None, since=None, last=None, check=None, min_runs=5,
             output=str(tmp_path / 'links' / 'emucluster.yaml'),
             dry_run=False)
    d.update(kw)
    return d


def test_command_writes_a_file_that_loads(tmp_path, capsys):
    rc = lb.command(history(), 'results.db', sys.stdout, sys.stderr,
                    **args(tmp_path))
    assert rc == 0
    out = capsys.readouterr().out
    assert 'peer_n1_sent' in out and 'median 1.0000  MAD 0.01 (1.0 %)' in out
    got = lb.load(str(tmp_path / 'links' / 'emucluster.yaml'), 'emucluster')
    assert got.provenance['runs'] == 7
    # a dry run writes nothing
    rc = lb.command(history(), 'db', sys.stdout, sys.stderr,
                    **args(tmp_path, output=str(tmp_path / 'x.yaml'),
                           dry_run=True))
    assert rc == 0 and not (tmp_path / 'x.yaml').exists()


def test_command_refuses_too_few_runs(tmp_path, capsys):
    rc = lb.command(history(), 'db', sys.stdout, sys.stderr,
                    **args(tmp_path, min_runs=10))
    assert rc == 3
    assert 'no node link has 10 healthy runs' in capsys.readouterr().err


def perflog_line(i, peer):
    # the perflog format of config/common.py, as the LinkMatrix check
    # writes it (values made up; the format is the point)
    return (f'2026-11-2{i}T23:0{i}:00|reframe 4.10.4|LinkMatrix %num_nodes=9 '
            f'%ppn=1 %interconnect=fab0 %msg_bytes=4000000|openmpi|n[1-9]|'
            f'{100 + i}|pass|x|bw_median=29.{i}|ref=0|lower=None|upper=None|'
            f'unit=MB/s|peer_n1_sent={peer}|ref=0|lower=None|upper=None|'
            f'unit=x|link_mads=1.{i}|ref=0|lower=None|upper=None|unit=MADs|'
            f'faults=0|ref=0|lower=None|upper=0|unit=verdicts|\n')


def test_the_reference_file_leaves_node_links_to_the_link_baseline(tmp_path):
    from clustergate import cli
    from clustergate.commands import baseline_cmd
    logs = tmp_path / 'perflogs' / 'emucluster' / 'emu'
    logs.mkdir(parents=True)
    (logs / 'LinkMatrix.log').write_text(''.join(
        perflog_line(i, p) for i, p in enumerate([1.0, 0.98, 1.01], 1)))

    def run(*extra):
        args = cli.build_parser().parse_args(
            ['baseline', '--perflogs', str(tmp_path / 'perflogs'), *extra])
        assert baseline_cmd.run(args, out=sys.stdout, err=sys.stderr) == 0

    run('-o', str(tmp_path / 'refs.yaml'))
    metrics = yaml.safe_load((tmp_path / 'refs.yaml').read_text())[
        'references']['LinkMatrix']['emu']
    assert set(next(iter(metrics.values()))) == {'bw_median', 'faults'}
    run('--links', '--min-runs', '3', '-o', str(tmp_path / 'links.yaml'))
    got = lb.load(str(tmp_path / 'links.yaml'), 'emucluster')
    key, st = got.lookup('LinkMatrix', 'emu', {
        'environ': 'openmpi', 'interconnect': 'fab0',
        'msg_bytes': 4000000, 'num_nodes': 9, 'ppn': 1})
    assert set(st) == {'peer_n1_sent'}
    assert st['peer_n1_sent'].median == 1.0 and st['peer_n1_sent'].runs == 3


def test_the_source_of_a_link_baseline_is_recorded(tmp_path, monkeypatch):
    from clustergate import cli
    from clustergate.commands import baseline_cmd
    logs = tmp_path / 'perflogs' / 'emucluster' / 'emu'
    logs.mkdir(parents=True)
    (logs / 'LinkMatrix.log').write_text(''.join(
        perflog_line(i, p) for i, p in enumerate([1.0, 0.98, 1.01], 1)))
    # no source named: the default perflog directory
    monkeypatch.setenv('CG_PERFLOG_DIR', str(tmp_path / 'perflogs'))
    args = cli.build_parser().parse_args(
        ['baseline', '--links', '--min-runs', '3', '-o',
         str(tmp_path / 'links.yaml')])
    assert baseline_cmd.run(args, out=sys.stdout, err=sys.stderr) == 0
    got = lb.load(str(tmp_path / 'links.yaml'), 'emucluster')
    assert got.provenance['source'] == str(tmp_path / 'perflogs')
    assert got.provenance['runs'] == 3
