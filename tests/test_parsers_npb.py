"""Tests for clustergate.parsers.npb_output on real NPB 3.4 outputs."""

import pytest

from clustergate.parsers import ParseError, parse_npb
from clustergate.parsers.npb_output import NPBResult
from conftest import BenchmarkOutputs, cut_before

OUTPUTS = BenchmarkOutputs('npb')
read = OUTPUTS.read


def test_fixtures_present():
    assert len(OUTPUTS.all) == 13


@OUTPUTS.each
def test_every_fixture_parses(path):
    # File names are npb3.4-<bench>.<class>.<nprocs>.out
    bench, klass, nprocs = path.name[len('npb3.4-'):-len('.out')].split('.')
    r = parse_npb(path.read_text())
    assert isinstance(r, NPBResult)
    assert r.benchmark == bench.upper()
    assert r.npb_class == klass
    assert r.total_processes == int(nprocs)
    assert r.verified and r.verification == 'SUCCESSFUL'
    assert r.version == '3.4'
    assert r.mops_total > 0 and r.time_s > 0


def test_cg_a_2_exact_values():
    r = parse_npb(read('npb3.4-cg.A.2.out'))
    assert r.benchmark == 'CG'
    assert r.npb_class == 'A'
    assert r.size == '14000'
    assert r.iterations == 15
    assert r.time_s == 0.36
    assert r.total_processes == 2
    assert r.active_processes == 2
    assert r.mops_total == 4117.81
    assert r.mops_per_process == 2058.91
    assert r.operation_type == 'floating point'
    assert r.extra['compile date'] == '21 Nov 2026'


def test_bt_with_fewer_active_processes():
    r = parse_npb(read('npb3.4-bt.A.2.out'))
    assert (r.total_processes, r.active_processes) == (2, 1)
    assert r.size == '64x64x64'
    assert r.iterations == 200
    assert r.mops_total == 3617.86
    # NPB divides by total, not active, processes.
    assert r.mops_per_process == 1808.93


def test_ep_has_zero_iterations():
    r = parse_npb(read('npb3.4-ep.A.2.out'))
    assert r.iterations == 0
    assert r.size == '536870912'
    assert r.operation_type == 'Random numbers generated'
    assert r.mops_total == 268.80


def test_is_without_trailing_dot_and_ft_sizes():
    assert parse_npb(read('npb3.4-is.A.4.out')).mops_per_process == 133.00
    assert parse_npb(read('npb3.4-ft.A.2.out')).size == '256x256x128'
    assert parse_npb(read('npb3.4-lu.W.4.out')).npb_class == 'W'


def test_npb_341_active_processes_label():
    # NPB 3.4.1 prints "Active processes=" instead of "Active procs    =";
    # relabel one real 3.4 line to check the tolerant matching.
    text = read('npb3.4-sp.A.2.out').replace(
        ' Active procs    =', ' Active processes=')
    assert 'Active processes=' in text
    assert parse_npb(text).active_processes == 1


def test_unsuccessful_verification_is_reported_not_raised():
    text = read('npb3.4-mg.A.2.out').replace(
        '=               SUCCESSFUL', '=             UNSUCCESSFUL')
    r = parse_npb(text)
    assert r.verification == 'UNSUCCESSFUL'
    assert not r.verified


@pytest.mark.parametrize('name,marker,message', [
    ('npb3.4-cg.A.2.out', 'Verification    =',
     r"NPB output has no 'Verification =' line \(run cut short\?"),
    ('npb3.4-lu.A.2.out', 'Mop/s total', r"no 'Mop/s total =' line"),
], ids=['before verification', 'before mops'])
def test_output_cut_short(name, marker, message):
    with pytest.raises(ParseError, match=message):
        parse_npb(cut_before(read(name), marker))


def test_truncated_before_summary():
    text = cut_before(read('npb3.4-bt.A.2.out'), 'Time step  100')
    with pytest.raises(ParseError) as info:
        parse_npb(text)
    msg = str(info.value)
    assert "no '<NAME> Benchmark Completed' line" in msg
    assert "Time step   80" in msg      # the last line is quoted


def test_empty_and_garbage():
    with pytest.raises(ParseError, match='empty'):
        parse_npb('')
    with pytest.raises(ParseError, match='not an NPB output'):
        parse_npb(read('../stream/stream5.10-stream_c.10M.omp1.out'))
