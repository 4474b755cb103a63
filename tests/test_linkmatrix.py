"""Link-matrix analysis on synthetic matrices, with exact verdicts, and on
real outputs of the emulated cluster."""

import statistics

import pytest

from clustergate.parsers import cgoutput
from clustergate.links import matrix as lm
from conftest import fixture_text

NODES = ['n1', 'n2', 'n3', 'n4']


def _matrix(nodes=NODES, base=100.0, slow=None, jitter=None):
    """base MB/s everywhere; ``slow``: {(src, dst): MB/s}."""
    bw = {}
    for i, s in enumerate(nodes):
        for j, d in enumerate(nodes):
            if s != d:
                bw[(s, d)] = base + (jitter(i, j) if jitter else 0.0)

    bw.update(slow or {})
    return lm.Matrix(list(nodes), bw)


def _wobble(i, j):
    return [-6, 3, -2, 5, 0, -4, 2, -1, 6, -3, 1, 4][(i * 3 + j) % 12]


def test_healthy():
    analysis = lm.analyse(_matrix(jitter=_wobble), fabric='fab0')
    assert analysis.healthy
    assert analysis.verdicts == []
    assert analysis.slow == []
    assert analysis.messages() == []
    assert 'healthy' in analysis.summary()


def test_one_bad_link_both_directions():
    m = _matrix(slow={('n1', 'n3'): 26.0, ('n3', 'n1'): 27.0})
    analysis = lm.analyse(m, fabric='fab0')
    assert analysis.median == 100.0
    assert analysis.messages() == ['suspect link n1<->n3 on fabric fab0: '
                             '0.26x median']
    assert analysis.verdicts[0].kind == 'link'
    assert analysis.verdicts[0].nodes == ('n1', 'n3')
    assert set(analysis.slow) == {('n1', 'n3'), ('n3', 'n1')}


def test_one_bad_link_one_direction():
    analysis = lm.analyse(_matrix(slow={('n2', 'n4'): 50.0}), fabric='fab1')
    assert analysis.messages() == ['suspect link n2->n4 on fabric fab1: 0.50x '
                             'median (n4->n2 1.00x)']


def test_one_bad_node():
    slow = {}
    for other in ('n1', 'n2', 'n3'):
        slow[('n4', other)] = 25.0
        slow[(other, 'n4')] = 26.0

    analysis = lm.analyse(_matrix(slow=slow), fabric='fab0')
    # half of the 12 pairs are slow: judged against the healthy pairs
    assert analysis.median == 100.0
    assert analysis.messages() == [
        'suspect node n4 on fabric fab0: row 0.25x, column 0.26x median '
        '(n1->n4 0.26x, n2->n4 0.26x, n3->n4 0.26x, n4->n1 0.25x, '
        'n4->n2 0.25x, n4->n3 0.25x)'
    ]
    assert [v.kind for v in analysis.verdicts] == ['node']
    assert analysis.verdicts[0].nodes == ('n4',)


def test_bad_node_and_separate_bad_link_on_eight_nodes():
    nodes = [f'n{i}' for i in range(1, 9)]
    slow = {('n8', o): 30.0 for o in nodes[:-1]}
    slow.update({(o, 'n8'): 30.0 for o in nodes[:-1]})
    slow.update({('n2', 'n5'): 40.0, ('n5', 'n2'): 45.0})
    analysis = lm.analyse(_matrix(nodes, slow=slow), fabric='ib0')
    assert analysis.messages() == [
        'suspect node n8 on fabric ib0: row 0.30x, column 0.30x median '
        '(n1->n8 0.30x, n2->n8 0.30x, n3->n8 0.30x, n4->n8 0.30x, '
        'n5->n8 0.30x, n6->n8 0.30x, n7->n8 0.30x, n8->n1 0.30x, '
        'n8->n2 0.30x, n8->n3 0.30x, n8->n4 0.30x, n8->n5 0.30x, '
        'n8->n6 0.30x, n8->n7 0.30x)',
        'suspect link n2<->n5 on fabric ib0: 0.40x median',
    ]


def test_three_nodes_bad_link_is_not_a_bad_node():
    m = _matrix(['a', 'b', 'c'], slow={('a', 'c'): 20.0, ('c', 'a'): 20.0})
    analysis = lm.analyse(m, fabric='f')
    assert analysis.messages() == ['suspect link a<->c on fabric f: 0.20x median']


def test_three_nodes_bad_node():
    m = _matrix(['a', 'b', 'c'], slow={('c', 'a'): 20.0, ('a', 'c'): 20.0,
                                       ('c', 'b'): 20.0, ('b', 'c'): 20.0})
    analysis = lm.analyse(m, fabric='f')
    assert [v.message.split(':')[0] for v in analysis.verdicts] == \
        ['suspect node c on fabric f']


def test_fraction_is_configurable():
    m = _matrix(slow={('n1', 'n2'): 80.0})
    assert lm.analyse(m, 0.7).healthy
    assert not lm.analyse(m, 0.9).healthy
    with pytest.raises(ValueError):
        lm.analyse(m, 1.5)


def test_csv_round_trip(tmp_path):
    m = _matrix(slow={('n1', 'n3'): 26.5})
    path = tmp_path / 'm.csv'
    lm.write_csv(m, path)
    lines = path.read_text().splitlines()
    assert lines[0] == 'src\\dst,n1,n2,n3,n4'
    assert lines[1] == 'n1,,100.0000,26.5000,100.0000'
    assert lm.read_csv(path) == m


def test_from_program_output():
    text = '\n'.join(
        f'CG pattern=linkmatrix bytes=4000000 ranks=3 ppn=1 nodes=3 '
        f'peer={d} src=n{s + 1} dst=n{d + 1} t_us=40000 med_us=40000 '
        f'min_us=39000 max_us=41000 bw_MBps={bw} trials=5 kept=5 '
        f'filtered=0 round=1 src_rank={s} dst_rank={d}'
        for s, d, bw in [(0, 1, 100), (1, 2, 101), (2, 0, 99), (0, 2, 98),
                         (1, 0, 100), (2, 1, 30)]
    ) + '\nCG_DONE program=cg_linkmatrix measurements=6 errors=0\n'
    run = cgoutput.parse(text)
    cgoutput.verify(run, program='cg_linkmatrix', pattern='linkmatrix')
    m = lm.from_measurements(run.measurements)
    assert m.nodes == ['n1', 'n2', 'n3']
    # each pair at its fastest trial: 39 of 40 ms
    assert m.value('n3', 'n2') == pytest.approx(30 * 40000 / 39000)
    analysis = lm.analyse(m, fabric='fab0')
    assert analysis.messages() == ['suspect link n3->n2 on fabric fab0: 0.30x '
                             'median (n2->n3 1.02x)']


def test_heatmap_png(tmp_path):
    pytest.importorskip('matplotlib')
    out = lm.heatmap(_matrix(slow={('n1', 'n3'): 26.0}),
                     tmp_path / 'h.png')
    assert (tmp_path / 'h.png').read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    assert out.endswith('h.png')


def _real(name):
    run = cgoutput.parse(fixture_text('cg-outputs', name))
    cgoutput.verify(run, program='cg_linkmatrix', pattern='linkmatrix')
    return run


def test_busy_machine_is_not_a_slow_link():
    # Real: healthy links, both cores of the machine busy with other work.
    # By the mean of its trials n4->n1 looked slow (0.63x the median);
    # its fastest trial shows the link carried the full rate.
    run = _real('emu-linkmatrix-4MB-fab0-busy.out')
    means = {(m['src'], m['dst']): m['bw_MBps'] for m in run.measurements}
    worst_mean = min(means.values()) / statistics.median(means.values())
    assert worst_mean < lm.DEFAULT_FRACTION

    analysis = lm.analyse(lm.from_measurements(run.measurements), fabric='fab0')
    assert analysis.healthy, analysis.messages()
    assert min(analysis.ratios.values()) > 0.75
    assert 115 < analysis.median < 126       # the links are shaped to 125 MB/s


def test_throttled_node_is_named_by_its_fastest_trials():
    # Real: n4's fab0 link shaped to 250 Mbit/s (1/4 of the others)
    run = _real('emu-linkmatrix-4MB-n4-fab0-250mbit.out')
    analysis = lm.analyse(lm.from_measurements(run.measurements), fabric='fab0')
    assert [v.kind for v in analysis.verdicts] == ['node']
    assert analysis.verdicts[0].nodes == ('n4',)
    assert analysis.messages()[0].startswith(
        'suspect node n4 on fabric fab0: row 0.25x, column 0.25x median')
    assert 0.2 < analysis.verdicts[0].ratio < 0.3
