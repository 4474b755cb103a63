"""Tests for clustergate.parsers.stream_output on real STREAM outputs."""

import pytest

from clustergate.parsers import ParseError, parse_stream
from clustergate.parsers.stream_output import KERNELS, StreamResult
from conftest import BenchmarkOutputs, cut_before

OUTPUTS = BenchmarkOutputs('stream')
read = OUTPUTS.read


@OUTPUTS.each
def test_every_fixture_parses(path):
    r = parse_stream(path.read_text())
    assert isinstance(r, StreamResult)
    assert r.validates
    assert list(r.kernels) == list(KERNELS)
    for k in r.kernels.values():
        assert k.best_rate_mb_s > 0
        assert k.min_time_s <= k.avg_time_s <= k.max_time_s


@pytest.mark.parametrize('name,expected', [
    ('stream5.10-stream_c.10M.omp1.out', {
        'version': '5.10', 'array_size': 10_000_000, 'offset': 0,
        'bytes_per_element': 8, 'ntimes': 10, 'threads_requested': 1,
        'threads': 1, 'mpi_ranks': None, 'triad_mb_s': 32845.0}),
    ('stream5.10-stream_c.80M.omp2.out', {
        'array_size': 80_000_000, 'threads': 2}),
    ('stream5.10-stream_mpi.80M.np2.out', {
        'version': '1.8', 'array_size': 80_000_000,
        'array_size_per_rank': 40_000_000, 'mpi_ranks': 2, 'threads': None,
        'triad_mb_s': 61327.7, 'validates': True}),
], ids=['stream.c 1 thread', 'stream.c 2 threads 80M', 'stream_mpi'])
def test_run_description(name, expected):
    r = parse_stream(read(name))
    assert {k: getattr(r, k) for k in expected} == expected


def test_kernel_rows():
    r = parse_stream(read('stream5.10-stream_c.10M.omp1.out'))
    copy = r.kernels['Copy']
    assert (copy.best_rate_mb_s, copy.avg_time_s, copy.min_time_s,
            copy.max_time_s) == (34934.3, 0.005040, 0.004580, 0.006830)
    assert r.rate('scale') == 36052.9
    r = parse_stream(read('stream5.10-stream_c.80M.omp2.out'))
    assert r.kernels['Add'].best_rate_mb_s == 44920.7
    assert r.kernels['Triad'].max_time_s == 0.058040


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
