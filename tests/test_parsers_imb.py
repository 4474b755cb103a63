"""Tests for clustergate.parsers.imb_output on real IMB 2021.7/2021.11 outputs."""

import pytest

from clustergate.parsers import ParseError, parse_imb
from clustergate.parsers.imb_output import IMBResult, normalise_imb_column
from conftest import BenchmarkOutputs, cut_before

OUTPUTS = BenchmarkOutputs('imb')
read = OUTPUTS.read
NP4 = 'imb2021.7-PingPong-Allreduce-Barrier.np4.out'


@OUTPUTS.each
def test_every_fixture_parses(path):
    r = parse_imb(path.read_text())
    assert isinstance(r, IMBResult)
    assert r.complete
    assert r.version in ('2021.7', '2021.11')
    assert r.suite == 'MPI-1 part'
    for b in r.blocks:
        assert b.rows
        assert all(set(row) == set(b.columns) for row in b.rows)


def test_pingpong_columns_and_values():
    r = parse_imb(read('imb2021.7-PingPong.np2.out'))
    assert len(r.blocks) == 1
    b = r.block('PingPong')
    assert b.processes == 2 and b.waiting == 0
    assert b.columns == ['bytes', 'repetitions', 't_usec', 'mbytes_per_sec']
    assert len(b.rows) == 24
    assert b.rows[0] == {'bytes': 0, 'repetitions': 1000, 't_usec': 0.11,
                         'mbytes_per_sec': 0.0}
    assert b.rows[-1] == {'bytes': 4194304, 'repetitions': 10,
                          't_usec': 563.67, 'mbytes_per_sec': 7441.09}
    assert b.by_bytes('mbytes_per_sec')[524288] == 12558.10
    assert isinstance(b.rows[0]['bytes'], int)


def test_impi_2021_11_pingpong():
    r = parse_imb(read('impi-rt-imb2021.11-PingPong.np2.out'))
    assert r.version == '2021.11'
    assert r.block('pingpong').by_bytes('t_usec')[0] == 0.40


def test_sendrecv_has_min_max_avg_and_bandwidth():
    b = parse_imb(read('imb2021.7-Sendrecv.np2.out')).block('Sendrecv')
    assert b.columns == ['bytes', 'repetitions', 't_min_usec', 't_max_usec',
                         't_avg_usec', 'mbytes_per_sec']
    assert b.by_bytes('t_avg_usec')[2097152] == 200.14
    assert b.by_bytes('mbytes_per_sec')[262144] == 21178.11


def test_alltoall_has_no_bandwidth():
    b = parse_imb(read('imb2021.7-Alltoall.np2.out')).block('Alltoall')
    assert 'mbytes_per_sec' not in b.columns
    assert b.column('t_max_usec')[-1] == 856.97
    with pytest.raises(KeyError):
        b.column('mbytes_per_sec')


def test_barrier_has_no_bytes_column():
    b = parse_imb(read('imb2021.7-Barrier.np2.out')).block('Barrier')
    assert b.columns == ['repetitions', 't_min_usec', 't_max_usec',
                         't_avg_usec']
    assert b.rows == [{'repetitions': 1000, 't_min_usec': 0.19,
                       't_max_usec': 0.19, 't_avg_usec': 0.19}]
    with pytest.raises(KeyError, match='no #bytes column'):
        b.by_bytes('t_avg_usec')


def test_four_ranks_waiting_and_repeated_blocks():
    r = parse_imb(read(NP4))
    assert [(b.name, b.processes, b.waiting) for b in r.blocks] == [
        ('PingPong', 2, 2),
        ('Allreduce', 2, 2), ('Allreduce', 4, 0),
        ('Barrier', 2, 2), ('Barrier', 4, 0),
    ]
    assert len(r.find('Allreduce')) == 2
    # block() without a count picks the run over all ranks.
    assert r.block('Allreduce').processes == 4
    assert r.block('Allreduce', processes=2).by_bytes('t_avg_usec')[64] == 1.62
    assert r.block('Allreduce').by_bytes('t_avg_usec')[64] == 5.60
    assert r.block('Barrier', 4).rows[0]['t_avg_usec'] == 13.98
    assert r.block('PingPong').by_bytes('t_usec')[64] == 1.88
    with pytest.raises(KeyError, match='no Alltoall block'):
        r.block('Alltoall')


def test_missing_finalize_marker_is_incomplete():
    text = cut_before(read('imb2021.7-PingPing.np2.out'),
                      '# All processes entering MPI_Finalize')
    with pytest.raises(ParseError, match=r"IMB output has no '# All processes "
                                         r"entering MPI_Finalize' line \(run "
                                         r"cut short during or after PingPing"):
        parse_imb(text)
    r = parse_imb(text, allow_incomplete=True)
    assert not r.complete
    assert len(r.block('PingPing').rows) == 24


def test_cut_between_blocks_names_last_block():
    text = cut_before(read(NP4), '# Benchmarking Barrier', occurrence=1)
    with pytest.raises(ParseError, match='after Allreduce with 4 processes'):
        parse_imb(text)
    r = parse_imb(text, allow_incomplete=True)
    assert [b.name for b in r.blocks] == ['PingPong', 'Allreduce', 'Allreduce']


def test_block_header_without_rows():
    # Cut just before the Barrier table header of the 4-process block.
    lines = read(NP4).splitlines(keepends=True)
    hits = [i for i, line in enumerate(lines)
            if line.lstrip().startswith('#repetitions')]
    text = ''.join(lines[:hits[1]])
    with pytest.raises(ParseError, match=r'IMB Barrier \(4 processes\) block '
                                         r'has no column header'):
        parse_imb(text, allow_incomplete=True)


def test_half_written_row():
    # Cut the last row after its second value, as a killed job leaves it.
    text = read('imb2021.7-Sendrecv.np2.out')
    start = text.index('      4194304 ')
    cut = text.index(' 10 ', start) + len(' 10')
    with pytest.raises(ParseError, match=r'IMB Sendrecv \(2 processes\): line '
                                         r'\d+ has 2 values, header has 6'):
        parse_imb(text[:cut])


def test_empty_and_garbage():
    with pytest.raises(ParseError, match='empty'):
        parse_imb('')
    with pytest.raises(ParseError, match='not an IMB output'):
        parse_imb(read('../osu/omb7.4-osu_bw.np2.out'))
    header_only = cut_before(read('imb2021.7-Barrier.np2.out'),
                             '# Benchmarking Barrier')
    with pytest.raises(ParseError, match=r"no '# Benchmarking <name>' block"):
        parse_imb(header_only)


def test_normalise_imb_column():
    assert normalise_imb_column('#bytes') == 'bytes'
    assert normalise_imb_column('Mbytes/sec') == 'mbytes_per_sec'
    assert normalise_imb_column('t_CPU[usec]') == 't_cpu_usec'
    assert normalise_imb_column('overlap[%]') == 'overlap_pct'


def test_time_out_stops_the_block_keeping_measured_rows():
    # Intel MPI's IMB, 8 ranks on the emulated cluster (2 cores): Allreduce
    # ran out of its time budget at 2048 B
    r = parse_imb(read('impi-rt-imb2021.11-Allreduce.np8.timeout.out'))
    b = r.block('Allreduce', 8)
    assert b.timed_out_at == 2048
    assert b.column('bytes')[-1] == 1024 and len(b.rows) == 10
    assert b.by_bytes('t_avg_usec')[1024] == 36848.08


def test_complete_blocks_have_no_time_out():
    assert all(b.timed_out_at is None
               for b in parse_imb(read(NP4)).blocks)
