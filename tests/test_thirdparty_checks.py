"""Sanity and performance functions of the NPB, IMB, OSU and STREAM checks
on the real benchmark outputs of tests/fixtures/benchmark-outputs, and on
truncated copies of them (a sanity failure that says what is missing,
never a Python exception); plus the source resolution of
clustergate.site.benchmarks."""

import os

import pytest
import reframe.utility.sanity as sn
from reframe.core.exceptions import SanityError

from clustergate.site.partition import SweepPoint
from clustergate.site import benchmarks
from clustergate.site import sweep
from clustergate.site.partition import partition_model
from conftest import cut_before, fixture_text
from rfm_loader import checks_fixture, fed, pick


def bench(family, name):
    return fixture_text('benchmark-outputs', family, name)


def value(deferred):
    return sn.evaluate(deferred)


# -- NPB --------------------------------------------------------------------

npb = checks_fixture('checks/npb/npb_checks.py')


@pytest.mark.parametrize('kernel,cls,nprocs', [
    ('cg', 'A', 2), ('cg', 'A', 4), ('cg', 'B', 2), ('ep', 'A', 2),
    ('ft', 'A', 2), ('is', 'A', 2), ('is', 'A', 4), ('lu', 'A', 2),
    ('mg', 'A', 2),
])
def test_npb_real_output(npb, kernel, cls, nprocs):
    text = bench('npb', f'npb3.4-{kernel}.{cls}.{nprocs}.out')
    c = fed(pick(npb, f'Npb{kernel.upper()}', npb_class=cls), text, nprocs)
    assert value(c.validate()) is True
    total = float(next(line.split('=')[1] for line in text.splitlines()
                       if 'Mop/s total' in line))
    assert value(c.mops_total()) == total
    assert value(c.mops_per_process()) == pytest.approx(total / nprocs)
    assert value(c.time()) > 0


@pytest.mark.parametrize('cls,fname,nprocs,message', [
    ('NpbCG', 'npb3.4-cg.A.2.out', 4, 'ran with 2 processes, expected 4'),
    ('NpbCG', 'npb3.4-cg.B.2.out', 2, 'ran class B, expected A'),
    # NPB 3.4 ran BT on 2 processes with only 1 active: not what was asked
    ('NpbBT', 'npb3.4-bt.A.2.out', 2, 'only 1 of 2 processes were active'),
], ids=['process count', 'class', 'fewer active processes'])
def test_npb_other_run_than_asked_is_refused(npb, cls, fname, nprocs,
                                             message):
    c = fed(pick(npb, cls, npb_class='A'), bench('npb', fname), nprocs)
    with pytest.raises(SanityError, match=message):
        value(c.validate())


def test_npb_truncated_before_verification(npb):
    text = cut_before(bench('npb', 'npb3.4-cg.A.2.out'), 'Verification')
    c = fed(pick(npb, 'NpbCG', npb_class='A'), text, 2)
    with pytest.raises(SanityError, match="no 'Verification =' line"):
        value(c.validate())

    with pytest.raises(SanityError, match='Verification'):
        value(c.mops_total())


def test_npb_empty_output(npb):
    c = fed(pick(npb, 'NpbEP', npb_class='A'), '', 2)
    with pytest.raises(SanityError, match='empty'):
        value(c.validate())


def test_npb_tags(npb):
    assert 'acceptance' in pick(npb, 'NpbFT', npb_class='C').tags
    assert 'nightly' not in pick(npb, 'NpbFT', npb_class='C').tags
    assert 'nightly' in pick(npb, 'NpbFT', npb_class='A').tags


def test_npb_memory_estimates():
    # FT C: ~7.2 GB over the job; on one node with 2 ranks
    assert benchmarks.npb_memory_per_node_gb('ft', 'C', 1, 2) == \
        pytest.approx(7.7)
    reason = benchmarks.npb_memory_reason('ft', 'C', 1, 2, 4)
    assert 'FT class C needs ~7.7 GB per node' in reason
    assert benchmarks.npb_memory_reason('ft', 'C', 1, 2, 16) is None
    assert benchmarks.npb_memory_reason('ft', 'B', 1, 2, 1) is None
    assert 'does not declare' in benchmarks.npb_memory_reason(
        'mg', 'C', 1, 1, None)


# -- IMB --------------------------------------------------------------------

imb = checks_fixture('checks/imb/imb_checks.py')


def test_imb_pingpong_real_output(imb):
    c = fed(pick(imb, 'ImbPingPong'),
            bench('imb', 'impi-rt-imb2021.11-PingPong.np2.out'), 2)
    assert value(c.validate()) is True
    assert value(c.latency_at(0)) == 0.40
    assert value(c.latency_at(8)) == 0.38
    assert value(c.bandwidth_at()) == 23312.16     # the 4 MiB row


@pytest.mark.parametrize('cls,fname,nprocs', [
    ('ImbPingPong', 'imb2021.7-PingPong.np2.out', 2),
    ('ImbPingPing', 'imb2021.7-PingPing.np2.out', 2),
    ('ImbSendrecv', 'imb2021.7-Sendrecv.np2.out', 2),
    ('ImbBarrier', 'imb2021.7-Barrier.np2.out', 2),
    ('ImbAlltoall', 'imb2021.7-Alltoall.np2.out', 2),
    ('ImbAllreduce', 'imb2021.7-PingPong-Allreduce-Barrier.np4.out', 4),
    ('ImbBarrier', 'imb2021.7-PingPong-Allreduce-Barrier.np4.out', 4),
    # 4 ranks: PingPong uses 2, the others wait
    ('ImbPingPong', 'imb2021.7-PingPong-Allreduce-Barrier.np4.out', 4),
])
def test_imb_real_outputs(imb, cls, fname, nprocs):
    c = fed(pick(imb, cls), bench('imb', fname), nprocs)
    assert value(c.validate()) is True
    c.set_perf_variables()
    for name, fn in c.perf_variables.items():
        assert value(fn) >= 0, name


def test_imb_wrong_rank_count(imb):
    c = fed(pick(imb, 'ImbAlltoall'),
            bench('imb', 'imb2021.7-Alltoall.np2.out'), 4)
    with pytest.raises(SanityError, match='no Alltoall block with 4 proc'):
        value(c.validate())


def test_imb_time_out_is_a_sanity_failure_naming_it(imb):
    # real: IMB gave up on Allreduce at 2048 B (8 ranks, emulated cluster)
    c = fed(pick(imb, 'ImbAllreduce'),
            bench('imb', 'impi-rt-imb2021.11-Allreduce.np8.timeout.out'), 8)
    with pytest.raises(SanityError,
                       match=r'gave up at 2048 B: its time limit ran out '
                             r'\(measured up to 1024 B'):
        value(c.validate())


def test_imb_truncated(imb):
    text = cut_before(bench('imb', 'impi-rt-imb2021.11-PingPong.np2.out'),
                      '     65536 ')
    c = fed(pick(imb, 'ImbPingPong'), text, 2)
    with pytest.raises(SanityError, match='MPI_Finalize'):
        value(c.validate())


def test_imb_garbage(imb):
    c = fed(pick(imb, 'ImbPingPong'), 'Segmentation fault\n', 2)
    with pytest.raises(SanityError, match='not an IMB output'):
        value(c.validate())


# -- OSU --------------------------------------------------------------------

osu = checks_fixture('checks/osu/osu_checks.py')


@pytest.mark.parametrize('cls,name', [
    ('OsuLatency', 'osu_latency'), ('OsuBw', 'osu_bw'),
    ('OsuBibw', 'osu_bibw'), ('OsuMbwMr', 'osu_mbw_mr'),
    ('OsuBarrier', 'osu_barrier'), ('OsuBcast', 'osu_bcast'),
    ('OsuAllreduce', 'osu_allreduce'), ('OsuAlltoall', 'osu_alltoall'),
])
def test_osu_real_outputs(osu, cls, name):
    c = fed(pick(osu, cls), bench('osu', f'omb7.4-{name}.np2.out'), 2)
    assert value(c.validate()) is True
    c.set_perf_variables()
    assert c.perf_variables
    for var, fn in c.perf_variables.items():
        assert value(fn) > 0, var


def test_osu_latency_values(osu):
    text = bench('osu', 'omb7.4-osu_latency.np2.out')
    c = fed(pick(osu, 'OsuLatency'), text, 2)
    row8 = next(line for line in text.splitlines() if line.startswith('8 '))
    assert value(c.latency_at(8)) == float(row8.split()[1])


def test_osu_message_rate_is_small_messages(osu):
    text = bench('osu', 'omb7.4-osu_mbw_mr.np2.out')
    c = fed(pick(osu, 'OsuMbwMr'), text, 2)
    row1 = next(line for line in text.splitlines() if line.startswith('1 '))
    assert value(c.message_rate()) == float(row1.split()[2])   # 14.2 M/s


def test_osu_truncated(osu):
    text = bench('osu', 'omb7.4-osu_bw.np2.out')
    cut = ''.join(text.splitlines(keepends=True)[:-5])
    c = fed(pick(osu, 'OsuBw'), cut, 2)
    with pytest.raises(SanityError, match='4194304'):
        value(c.validate())


def test_osu_validation_failure(osu):
    c = fed(pick(osu, 'OsuAllreduce'),
            bench('osu', 'omb7.4-osu_allreduce.c.np2.out'), 2)
    with pytest.raises(SanityError):
        value(c.validate())


def test_osu_pair_programs_need_two_ranks(osu):
    for cls in ('OsuLatency', 'OsuBw', 'OsuBibw'):
        req = pick(osu, cls).sweep_requirements
        assert (req.min_ranks, req.max_ranks) == (2, 2)


# -- STREAM -----------------------------------------------------------------

stream = checks_fixture('checks/stream/stream_checks.py')


def test_stream_real_output(stream):
    c = fed(pick(stream, 'Stream'),
            bench('stream', 'stream5.10-stream_c.80M.omp2.out'), 1)
    c.threads = 2
    assert value(c.validate()) is True
    assert value(c.rate('Triad')) == 42177.2
    assert value(c.rate('Copy')) == 53054.7


def test_stream_thread_count_checked(stream):
    c = fed(pick(stream, 'Stream'),
            bench('stream', 'stream5.10-stream_c.80M.omp2.out'), 1)
    c.threads = 4
    with pytest.raises(SanityError, match='counted 2 threads, expected 4'):
        value(c.validate())


def test_stream_truncated(stream):
    text = cut_before(bench('stream', 'stream5.10-stream_c.80M.omp2.out'),
                      'Triad:')
    c = fed(pick(stream, 'Stream'), text, 1)
    c.threads = 2
    with pytest.raises(SanityError):
        value(c.validate())


# -- sources ----------------------------------------------------------------

EXTRAS = {
    'benchmarks': {
        'npb': {'source': 'spack', 'spack_env': '/site/env'},
        'imb': [{'source': 'prebuilt', 'prefix': '/opt/impi',
                 'environs': ['intelmpi']},
                {'source': 'spack', 'spack_env': '/site/env',
                 'environs': ['openmpi']}],
        'osu': {'source': 'prebuilt', 'modules': ['omb/7.5']},
    }
}


def test_resolve_per_environment():
    s = benchmarks.resolve(EXTRAS, 'imb', 'intelmpi')
    assert (s.kind, s.prefix) == ('prebuilt', '/opt/impi')
    s = benchmarks.resolve(EXTRAS, 'imb', 'openmpi')
    assert (s.kind, s.spack_env) == ('spack', '/site/env')
    assert s.root == '/site/env/.spack-env/view'
    assert benchmarks.resolve(EXTRAS, 'imb', 'mpich').kind is None
    assert benchmarks.configured_environs(EXTRAS, 'imb') == ['intelmpi',
                                                             'openmpi']


def test_resolve_override():
    s = benchmarks.resolve(EXTRAS, 'npb', 'openmpi',
                           override_prefix='/apps/npb')
    assert (s.kind, s.prefix) == ('prebuilt', '/apps/npb')
    assert s.origin.startswith('command line')


def test_an_override_keeps_to_the_environments_of_its_kind():
    # IMB from Spack is built with OpenMPI: -S ...use_spack_env names
    # another Spack environment for openmpi, and intelmpi keeps its own
    # Intel MPI build (not the OpenMPI one under Intel MPI's mpirun)
    s = benchmarks.resolve(EXTRAS, 'imb', 'openmpi',
                           override_spack_env='/home/me/env')
    assert (s.kind, s.spack_env, s.origin) == (
        'spack', '/home/me/env', 'command line (-S)')
    s = benchmarks.resolve(EXTRAS, 'imb', 'intelmpi',
                           override_spack_env='/home/me/env')
    assert (s.kind, s.prefix, s.origin) == ('prebuilt', '/opt/impi',
                                            'config')
    # no source of that kind configured: the override is for every one
    s = benchmarks.resolve(EXTRAS, 'osu', 'intelmpi',
                           override_spack_env='/home/me/env')
    assert (s.kind, s.spack_env) == ('spack', '/home/me/env')


def test_unavailable_reasons(tmp_path):
    s = benchmarks.resolve(EXTRAS, 'npb', 'openmpi')
    assert 'spack is not on PATH' in benchmarks.why_unavailable(
        s, which=lambda _: None)
    s = benchmarks.resolve(EXTRAS, 'imb', 'intelmpi',
                           override_prefix=str(tmp_path / 'none'))
    assert 'does not exist' in benchmarks.why_unavailable(s)
    s = benchmarks.resolve(EXTRAS, 'imb', 'intelmpi',
                           override_prefix=str(tmp_path))
    assert benchmarks.why_unavailable(s) is None
    assert 'IMB-MPI1 not found under' in benchmarks.why_binary_missing(
        s, 'IMB-MPI1')
    assert 'no NPB source configured' in benchmarks.why_unavailable(
        benchmarks.resolve({}, 'npb', 'openmpi'))


def test_osu_binary_found_in_libexec(tmp_path):
    d = tmp_path / 'libexec' / 'osu-micro-benchmarks' / 'mpi' / 'collective'
    d.mkdir(parents=True)
    exe = d / 'osu_allreduce'
    exe.write_text('#!/bin/sh\n')
    os.chmod(exe, 0o755)
    assert benchmarks.find_binary(str(tmp_path), 'osu',
                                  'osu_allreduce') == str(exe)


def test_bad_config():
    with pytest.raises(benchmarks.BenchmarkConfigError, match='spack_env'):
        benchmarks.resolve({'benchmarks': {'npb': {'source': 'spack'}}},
                           'npb')


def test_npb_ep_takes_any_rank_count(npb):
    # issue 14: EP is not limited to powers of two; CG is
    extras = {'sweep': {'nodes': [3], 'ppn': [1]},
              'interconnects': {'net': {'scope': 'network',
                                        'env': {'openmpi': {}}}}}
    model = partition_model(extras)
    point = SweepPoint(3, 1, 'net')
    ep = pick(npb, 'NpbEP', npb_class='A')
    cg = pick(npb, 'NpbCG', npb_class='A')
    assert sweep.why_not(model, point, ep.sweep_requirements) is None
    assert 'power of two' in sweep.why_not(model, point,
                                           cg.sweep_requirements)
