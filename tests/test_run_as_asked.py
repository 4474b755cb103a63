"""Every check verifies that the run was the run it asked for, as far as
the program's output says it (ranks, class, problem, threads, program),
and names a mismatch in one line: real outputs (tests/fixtures) fed to
the sanity of a check that asked for something else. HPCC's grid is in
test_hpcc.py, the benchmarks' own refusals in test_job_failures.py."""

import pytest
import reframe.utility.sanity as sn
from reframe.core.exceptions import SanityError

from conftest import fixture_text
from rfm_loader import family_checks, pick

# case -> ((family, check, pick params), (fixture folder, file), ranks
# asked, threads asked or None), the sanity message
_CASES = {
    'npb: process count': (
        (('npb', 'NpbCG', {'npb_class': 'A'}),
         ('benchmark-outputs/npb', 'npb3.4-cg.A.2.out'), 4, None),
        'NPB CG ran with 2 processes, expected 4'),
    'npb: class': (
        (('npb', 'NpbCG', {'npb_class': 'A'}),
         ('benchmark-outputs/npb', 'npb3.4-cg.B.2.out'), 2, None),
        'NPB CG ran class B, expected A'),
    # NPB 3.4 ran BT on 2 processes with only 1 active
    'npb: active processes': (
        (('npb', 'NpbBT', {'npb_class': 'A'}),
         ('benchmark-outputs/npb', 'npb3.4-bt.A.2.out'), 2, None),
        'NPB BT: only 1 of 2 processes were active (BT and SP need a '
        'square count), expected 2'),
    'npb: program': (
        (('npb', 'NpbCG', {'npb_class': 'A'}),
         ('benchmark-outputs/npb', 'npb3.4-mg.A.2.out'), 2, None),
        'output is NPB MG, expected CG'),
    'imb: process count': (
        (('imb', 'ImbAlltoall', {}),
         ('benchmark-outputs/imb', 'imb2021.7-Alltoall.np2.out'), 4, None),
        "IMB output has no Alltoall block with 4 processes; it has "
        "[('Alltoall', 2)]"),
    'imb: benchmark': (
        (('imb', 'ImbPingPong', {}),
         ('benchmark-outputs/imb', 'imb2021.7-Sendrecv.np2.out'), 2, None),
        "IMB output has no PingPong block with 2 processes; it has "
        "[('Sendrecv', 2)]"),
    'osu: program': (
        (('osu', 'OsuLatency', {}),
         ('benchmark-outputs/osu', 'omb7.4-osu_bw.np2.out'), 2, None),
        'output is OSU Bandwidth, not osu_latency (OSU Latency)'),
    'osu: pairs of osu_mbw_mr': (
        (('osu', 'OsuMbwMr', {}),
         ('benchmark-outputs/osu', 'omb7.4-osu_mbw_mr.np2.out'), 4, None),
        'osu_mbw_mr ran 1 pairs, expected 2'),
    'stream: thread count': (
        (('stream', 'Stream', {}),
         ('benchmark-outputs/stream', 'stream5.10-stream_c.80M.omp2.out'),
         1, 4),
        'STREAM counted 2 threads, expected 4'),
    # stream.c built without OpenMP ignores OMP_NUM_THREADS=2
    'stream: no OpenMP': (
        (('stream', 'Stream', {}),
         ('benchmark-outputs/stream', 'stream5.10-stream_c.10M.noomp.out'),
         1, 2),
        'STREAM prints no thread count (built without OpenMP): it ran 1 '
        'thread, expected 2'),
    'cg program: ranks': (
        (('contention', 'PingPongDistance', {}),
         ('cg-outputs', 'contention-np4-shm.out'), 8, None),
        'cg_contention ran with 4 ranks, expected 8'),
    'cg program: ranks per node': (
        (('contention', 'PingPongDistance', {}),
         ('cg-outputs', 'contention-np4-shm.out'), 4, None),
        '4 ranks per node, expected 1: placement is wrong'),
    'cg program: program': (
        (('contention', 'PingPongDistance', {}),
         ('cg-outputs', 'memory-np2.out'), 2, None),
        "cg_contention: completion line is from program 'cg_memory', "
        "expected 'cg_contention'"),
}


def _fed(monkeypatch, check, output, ranks, threads):
    """The check (shared with other tests: changed for this test only)
    asking ``ranks`` on one node, one rank per node, and ``threads``."""
    family, name, params = check
    c = pick(family_checks(family), name, **params)
    text = fixture_text(*output)
    asked = {'num_tasks': ranks, 'stdout_text': lambda: text,
             'stderr_text': lambda: ''}
    if family == 'contention':
        asked.update(num_nodes=1, ppn=1)
    if threads is not None:
        asked['threads'] = threads
    for attr, value in asked.items():
        monkeypatch.setattr(c, attr, value, raising=False)
    return c


@pytest.mark.parametrize('case', _CASES)
def test_other_run_than_asked_is_named(monkeypatch, case):
    (check, output, ranks, threads), expected = _CASES[case]
    c = _fed(monkeypatch, check, output, ranks, threads)
    with pytest.raises(SanityError) as err:
        sn.evaluate(c.validate())

    assert str(err.value) == expected


@pytest.mark.parametrize('check, output, ranks, threads', [
    (('stream', 'Stream', {}),
     ('benchmark-outputs/stream', 'stream5.10-stream_c.10M.noomp.out'), 1, 1),
    (('osu', 'OsuBw', {}),
     ('benchmark-outputs/osu', 'omb7.4-osu_bw.np2.out'), 2, None),
    (('osu', 'OsuAlltoall', {}),
     ('benchmark-outputs/osu', 'omb7.4-osu_alltoall.np2.out'), 2, None),
], ids=['stream without OpenMP asked 1 thread', 'osu_bw', 'osu_alltoall'])
def test_the_run_asked_passes(monkeypatch, check, output, ranks,
                              threads):
    assert sn.evaluate(_fed(monkeypatch, check, output, ranks,
                            threads).validate()) is True
