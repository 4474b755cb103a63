"""Tests for clustergate.parsers.stream on real STREAM outputs."""

import pytest

from clustergate.parsers import ParseError, parse_stream
from clustergate.parsers.stream import KERNELS, StreamResult
from conftest import BenchmarkOutputs, cut_before

OUTPUTS = BenchmarkOutputs('stream')
ALL, read = OUTPUTS.all, OUTPUTS.read


@pytest.mark.parametrize('path', ALL, ids=lambda p: p.name)
def test_every_fixture_parses(path):
    r = parse_stream(path.read_text())
    assert isinstance(r, StreamResult)
    assert r.validates
    assert list(r.kernels) == list(KERNELS)
    for k in r.kernels.values():
        assert k.best_rate_mb_s > 0
        assert k.min_time_s <= k.avg_time_s <= k.max_time_s


def test_stream_c_one_thread():
    r = parse_stream(read('stream5.10-stream_c.10M.omp1.out'))
    assert r.version == '5.10'
    assert r.array_size == 10_000_000
    assert r.offset == 0
    assert r.bytes_per_element == 8
    assert r.ntimes == 10
    assert (r.threads_requested, r.threads) == (1, 1)
    assert r.mpi_ranks is None
    copy = r.kernels['Copy']
    assert (copy.best_rate_mb_s, copy.avg_time_s, copy.min_time_s,
            copy.max_time_s) == (34934.3, 0.005040, 0.004580, 0.006830)
    assert r.triad_mb_s == 32845.0
    assert r.rate('scale') == 36052.9


def test_stream_c_two_threads_80m():
    r = parse_stream(read('stream5.10-stream_c.80M.omp2.out'))
    assert r.array_size == 80_000_000
    assert r.threads == 2
    assert r.kernels['Add'].best_rate_mb_s == 44920.7
    assert r.kernels['Triad'].max_time_s == 0.058040


def test_stream_mpi():
    r = parse_stream(read('stream5.10-stream_mpi.80M.np2.out'))
    assert r.version == '1.8'
    assert r.array_size == 80_000_000
    assert r.array_size_per_rank == 40_000_000
    assert r.mpi_ranks == 2
    assert r.threads is None
    assert r.triad_mb_s == 61327.7
    assert r.validates


def test_failed_validation_is_reported():
    # stream.c prints "Failed Validation on array a[], ..." instead.
    text = read('stream5.10-stream_c.10M.omp1.out').replace(
        'Solution Validates: avg error less than 1.000000e-13 on all three arrays',
        'Failed Validation on array a[], AvgRelAbsErr > epsilon (1.000000e-13)')
    r = parse_stream(text)
    assert not r.validates
    assert r.validation_errors[0].startswith('Failed Validation on array a[]')


@pytest.mark.parametrize('name,marker,message', [
    ('stream5.10-stream_c.80M.omp2.out', 'Triad:',
     r"STREAM output has no 'Triad:' result row \(run cut short\?"),
    ('stream5.10-stream_mpi.80M.np2.out', 'Solution Validates',
     "no 'Solution Validates' line"),
    ('stream5.10-stream_c.10M.omp1.out', 'Function',
     "no 'Function  Best Rate MB/s' result table"),
], ids=['before triad', 'before validation', 'before table'])
def test_output_cut_short(name, marker, message):
    with pytest.raises(ParseError, match=message):
        parse_stream(cut_before(read(name), marker))


def test_empty_and_garbage():
    with pytest.raises(ParseError, match='empty'):
        parse_stream('\n\n')
    with pytest.raises(ParseError, match='not a STREAM output'):
        parse_stream(read('../npb/npb3.4-cg.A.2.out'))
