"""The report's figures of what the main job (``--mode nightly -r`` on
localhost) measures: ContentionSuite's latency and bandwidth against the
message size read from its metric names, the memory tests' bandwidth,
(all ranks)/(1 rank) ratios and latency; trend points measured before
their reference are marked as not judged."""

import os

import pytest

from clustergate.report import page as report
from clustergate.report import nodefigures, sizefigures, trends
from clustergate.results.samples import Key, Sample, read_perflogs

pytest.importorskip('matplotlib')

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: real perflogs of a localhost nightly (2 cores, 2026-11-26)
NIGHTLY = os.path.join(ROOT, 'tests', 'fixtures', 'perflogs-nightly-localhost')
SUITE = 'environ=openmpi,interconnect=shm,num_nodes=1,ppn=2'


def _suite_samples(t=1000.0, run='s1:0'):
    out = []
    for size, lat in ((8, 1.5), (1000, 2.5), (1000000, 300.0)):
        for pattern in ('pingpong', 'naive_bcast', 'alltoall'):
            for metric, value in (('latency', lat),
                                  ('bandwidth', size / lat)):
                out.append(Sample(Key('localhost', 'local', 'ContentionSuite',
                                      SUITE, f'{pattern}_{size}_{metric}'),
                                  value, 'us', t, run, 'pass'))
            # per-peer figures and ratios are not series of their own
            out.append(Sample(Key('localhost', 'local', 'ContentionSuite',
                                  SUITE, f'{pattern}_{size}_latency_r1'),
                              lat, 'us', t, run, 'pass'))
    out.append(Sample(Key('localhost', 'local', 'ContentionSuite', SUITE,
                          'barrier_latency'), 3.0, 'us', t, run, 'pass'))
    return out


def test_contention_suite_sizes_come_from_its_metric_names(tmp_path):
    groups = report._by_run_and_key(_suite_samples())
    figs = sizefigures.size_figures(groups, str(tmp_path))
    assert sorted(f['file'] for f in figs) == [
        'size_localhost_local_ContentionSuite_alltoall.png',
        'size_localhost_local_ContentionSuite_naive_bcast.png',
        'size_localhost_local_ContentionSuite_pingpong.png']
    series = sizefigures._size_series(groups)
    pp = series[('localhost', 'local', 'ContentionSuite pingpong')]
    assert sorted(pp['latency']['openmpi shm 1n x 2ppn']) == [
        (8.0, 1.5), (1000.0, 2.5), (1000000.0, 300.0)]


def test_contention_suite_ppn_ratios_at_equal_nodes_and_size(tmp_path):
    two = [Sample(Key(s.key.system, s.key.partition, s.key.check,
                      s.key.point.replace('num_nodes=1,ppn=2',
                                          'num_nodes=2,ppn=1'),
                      s.key.metric), s.value / 2, s.unit, s.time, s.run,
                  s.result) for s in _suite_samples()]
    more = [Sample(Key(s.key.system, s.key.partition, s.key.check,
                       s.key.point.replace('num_nodes=1,ppn=2',
                                           'num_nodes=2,ppn=2'),
                       s.key.metric), s.value, s.unit, s.time, s.run,
                   s.result) for s in _suite_samples()]
    groups = report._by_run_and_key(two + more)
    figs = sizefigures.ppn_ratio_figures(groups, str(tmp_path))
    assert 'ppn_localhost_local_ContentionSuite_pingpong.png' in \
        [f['file'] for f in figs]


def test_the_nightly_memory_tests_are_drawn(tmp_path):
    samples = read_perflogs([NIGHTLY])
    assert not samples.unreadable
    groups = report._by_run_and_key(samples)
    series = nodefigures.memory_series(groups)[('localhost', 'local')]
    # MemoryStrided: 4 kernels x (1 rank, all ranks), 5 strides each;
    # MemoryRandom at "stride" 0 (random)
    bw = series['bw']
    assert len(bw) == 12
    assert [x for x, _ in sorted(bw['openmpi shm copy ppn=2 1 rank'])] == \
        [1, 2, 4, 8, 17]
    assert [x for x, _ in bw['openmpi shm rand_read ppn=2 all ranks']] == [0]
    assert len(series['ratio']) == 6
    figs = nodefigures.memory_figures(groups, str(tmp_path))
    assert [f['file'] for f in figs] == [
        'memory_localhost_local_bandwidth.png',
        'memory_localhost_local_ratio.png']
    for f in figs:
        assert (tmp_path / f['file']).read_bytes()[:4] == b'\x89PNG'

    page = report.render(samples, str(tmp_path / 'r'), [])
    text = open(page).read()
    assert 'src="memory_localhost_local_bandwidth.png"' in text
    # the table of every value folded when long: the verdict and the
    # figures are what the page is opened for
    assert len(groups) > 60
    assert f'<details><summary>{len(groups)} metric(s): ' in text
    # the verdict before the figures, the table of every value after them
    assert text.index('class="headline"') < text.index('memory_localhost') \
        < text.index('Latest value of every metric')


def test_a_point_measured_before_its_reference_is_not_drawn_within_it(
        tmp_path):
    key = Key('localhost', 'local', 'MemoryStrided', SUITE, 'bw_s1')
    ss = [Sample(key, v, 'MB/s', 1000.0 + i, f'r{i}:0', 'pass',
                 *((100.0, -0.1, 0.1) if i >= 3 else (0.0, None, None)))
          for i, v in enumerate([50.0, 60.0, 100.0, 101.0, 99.0, 70.0])]
    assert trends.judged_points(ss) == ['no reference'] * 3 + [
        'ok', 'ok', 'out of reference']
    figs = trends.trend_figures({key: ss}, str(tmp_path))
    assert figs[0]['text'].endswith('(3 of 6 point(s) measured with no '
                                    'reference: not judged, drawn hollow)')


def test_the_nightly_contention_suite_is_drawn_per_pattern(tmp_path):
    """The real ContentionSuite perflog of a localhost nightly (one point,
    1 node x 2 ppn over shm): one figure per sized pattern (barrier has no
    size; concurrent needs 4 ranks), sizes 8 B, 10 kB, 1 MB."""
    samples = read_perflogs([NIGHTLY])
    groups = report._by_run_and_key(
        [s for s in samples if s.key.check == 'ContentionSuite'])
    series = sizefigures._size_series(groups)
    assert sorted(name for _, _, name in series) == [
        f'ContentionSuite {p}' for p in (
            'allreduce', 'alltoall', 'bipingpong', 'complement', 'hotspot',
            'naive_bcast', 'pingpong', 'shift', 'tree_bcast')]
    lat = series[('localhost', 'local', 'ContentionSuite pingpong')][
        'latency']
    assert list(lat) == ['openmpi shm 1n x 2ppn']
    assert [x for x, _ in sorted(lat['openmpi shm 1n x 2ppn'])] == [
        8.0, 10000.0, 1000000.0]
    assert len(sizefigures.size_figures(groups, str(tmp_path))) == 9


def test_on_one_node_the_ppn_ratio_is_against_the_fewest_ppn(tmp_path):
    """One node, the suite at 2, 4 and 8 ppn (no 1 ppn: a pattern needs
    two ranks): the ratios are against 2 ppn."""
    samples = []
    for ppn, lat in ((2, 1.0), (4, 1.5), (8, 3.0)):
        samples += [Sample(Key(s.key.system, s.key.partition, s.key.check,
                               s.key.point.replace('ppn=2', f'ppn={ppn}'),
                               s.key.metric), s.value * lat, s.unit, s.time,
                           s.run, s.result) for s in _suite_samples()]
    groups = report._by_run_and_key(samples)
    figs = sizefigures.ppn_ratio_figures(groups, str(tmp_path))
    assert 'ppn_localhost_local_ContentionSuite_pingpong.png' in \
        [f['file'] for f in figs]
