"""Tests for clustergate.parsers.osu_output on real OSU Micro-Benchmarks 7.4 outputs."""

import pytest

from clustergate.parsers import ParseError, parse_osu
from clustergate.parsers.osu_output import OSUResult, normalise_osu_column
from conftest import BenchmarkOutputs, cut_before

OUTPUTS = BenchmarkOutputs('osu')
read = OUTPUTS.read


@OUTPUTS.each
def test_every_fixture_parses(path):
    r = parse_osu(path.read_text())
    assert isinstance(r, OSUResult)
    assert r.version == '7.4'
    assert r.rows
    assert all(set(row) == set(r.columns) for row in r.rows)


@pytest.mark.parametrize('name,benchmark,metric,max_size', [
    ('omb7.4-osu_latency.np2.out', 'Latency', 'avg_latency_us', 4194304),
    ('omb7.4-osu_bw.np2.out', 'Bandwidth', 'bandwidth_mb_per_s', 4194304),
    ('omb7.4-osu_bibw.np2.out', 'Bi-Directional Bandwidth',
     'bandwidth_mb_per_s', 4194304),
    ('omb7.4-osu_allreduce.np2.out', 'Allreduce Latency', 'avg_latency_us',
     1048576),
    ('omb7.4-osu_alltoall.np2.out',
     'All-to-All Personalized Exchange Latency', 'avg_latency_us', 1048576),
    ('omb7.4-osu_bcast.np2.out', 'Broadcast Latency', 'avg_latency_us',
     1048576),
])
def test_title_metric_and_sizes(name, benchmark, metric, max_size):
    r = parse_osu(read(name), max_size=max_size)
    assert r.benchmark == benchmark
    assert r.metric == metric
    assert r.columns == ['size', metric]
    assert r.datatype == 'MPI_CHAR'
    assert r.rows[0]['size'] == 1 and r.max_size == max_size
    assert r.validated is None


def test_latency_values():
    r = parse_osu(read('omb7.4-osu_latency.np2.out'))
    lat = r.by_size()
    assert lat[1] == 0.15 and lat[8192] == 12.14 and lat[4194304] == 1695.55
    assert len(lat) == 23


def test_bw_values():
    bw = parse_osu(read('omb7.4-osu_bw.np2.out')).by_size()
    assert bw[2048] == 16373.93
    assert bw[4194304] == 5148.26


def test_barrier_single_value():
    r = parse_osu(read('omb7.4-osu_barrier.np2.out'))
    assert r.benchmark == 'Barrier Latency'
    assert r.columns == ['avg_latency_us']
    assert r.value == 0.33
    assert r.max_size is None


def test_barrier_full_statistics():
    r = parse_osu(read('omb7.4-osu_barrier.f.np2.out'))
    assert r.columns == ['avg_latency_us', 'min_latency_us', 'max_latency_us',
                         'iterations']
    assert r.value == 0.41
    assert r.rows[0]['iterations'] == 1000


def test_full_statistics_columns():
    r = parse_osu(read('omb7.4-osu_allreduce.f.np2.out'))
    assert r.columns == ['size', 'avg_latency_us', 'min_latency_us',
                         'max_latency_us', 'iterations']
    assert r.rows[6] == {'size': 64, 'avg_latency_us': 2.97,
                         'min_latency_us': 2.94, 'max_latency_us': 3.00,
                         'iterations': 1000}
    assert r.by_size('max_latency_us')[4096] == 0.88


def test_validation_all_pass():
    r = parse_osu(read('omb7.4-osu_latency.c.np2.out'))
    assert r.columns == ['size', 'avg_latency_us', 'validation']
    assert set(r.column('validation')) == {'Pass'}
    assert r.validated is True
    assert r.by_size()[4096] == 7.45


def test_validation_failure_stops_table():
    r = parse_osu(read('omb7.4-osu_allreduce.c.np2.out'))
    assert r.column('validation') == ['Pass'] * 4 + ['Fail']
    assert r.validated is False
    assert r.max_size == 16
    assert r.messages[0].startswith('DATA VALIDATION ERROR:')
    with pytest.raises(ParseError, match='stops at 16 bytes, expected up to '
                                         '4096'):
        parse_osu(read('omb7.4-osu_allreduce.c.np2.out'), max_size=4096)


def test_mbw_mr_pairs_window_and_rate():
    r = parse_osu(read('omb7.4-osu_mbw_mr.np2.out'))
    assert r.benchmark == 'Multiple Bandwidth / Message Rate'
    assert (r.pairs, r.window_size) == (1, 64)
    assert r.columns == ['size', 'mb_per_s', 'messages_per_s']
    assert r.rows[0] == {'size': 1, 'mb_per_s': 14.15,
                         'messages_per_s': 14153999.94}
    assert r.by_size('messages_per_s')[4194304] == 1193.90


def test_truncated_table_detected_with_max_size():
    text = cut_before(read('omb7.4-osu_bw.np2.out'), '1048576 ')
    r = parse_osu(text)             # no end marker: parses as is ...
    assert r.max_size == 524288
    with pytest.raises(ParseError, match=r'OSU Bandwidth output stops at '
                                         r'524288 bytes, expected up to '
                                         r'4194304 \(run cut short\?\)'):
        parse_osu(text, max_size=4194304)   # ... unless told the range


def test_half_written_row():
    text = read('omb7.4-osu_allreduce.f.np2.out')
    cut = text.index('4096                    0.86') + len('4096                    0.86')
    with pytest.raises(ParseError, match=r'line \d+ has 2 values, header has 5'):
        parse_osu(text[:cut])


def test_header_only():
    text = cut_before(read('omb7.4-osu_latency.np2.out'), '1      ')
    with pytest.raises(ParseError, match='OSU Latency output has no result rows'):
        parse_osu(text)
    text = cut_before(read('omb7.4-osu_latency.np2.out'), '# Size')
    with pytest.raises(ParseError, match='OSU Latency output has no column '
                                         'header line'):
        parse_osu(text)


def test_empty_and_garbage():
    with pytest.raises(ParseError, match='empty'):
        parse_osu('\n')
    with pytest.raises(ParseError, match=r"not an OSU output: no '# OSU MPI "
                                         r"<name> Test vX' title line"):
        parse_osu(read('../imb/imb2021.7-PingPong.np2.out'))


def test_normalise_osu_column():
    assert normalise_osu_column('Avg Latency(us)') == 'avg_latency_us'
    assert normalise_osu_column('Bandwidth (MB/s)') == 'bandwidth_mb_per_s'
    assert normalise_osu_column('P99 Tail Lat(us)') == 'p99_tail_lat_us'
    assert normalise_osu_column('Overlap(%)') == 'overlap_pct'
