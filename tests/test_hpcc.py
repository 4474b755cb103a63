"""HPC Challenge: the input file generator (clustergate.parsers.hpccinf), the
parser of hpccoutf.txt and the kernel checks' sanity and performance, on
real outputs of Debian's hpcc 1.5.0 made here from inputs this generator
wrote (tests/fixtures/benchmark-outputs/hpcc, see its README)."""

import math

import pytest
import reframe.utility.sanity as sn
from reframe.core.exceptions import SanityError

from clustergate.parsers import hpccinf
from clustergate.parsers import ParseError, parse_hpcc
from conftest import cut_before, fixture_text
from rfm_loader import load_checks, perf_values, pick

PASS = 'hpcc1.5.0-np2-n768'
RESIDUAL_FAIL = 'hpcc1.5.0-np2-n768-residual-fail'
ONE_RANK = 'hpcc1.5.0-np1-n768'


def out(name):
    return fixture_text('benchmark-outputs', 'hpcc', f'{name}.hpccoutf.txt')


def inp(name):
    return fixture_text('benchmark-outputs', 'hpcc', f'{name}.hpccinf.txt')


# -- input file ---------------------------------------------------------------

@pytest.mark.parametrize('ranks,grid', [
    (1, (1, 1)), (2, (1, 2)), (4, (2, 2)), (6, (2, 3)), (7, (1, 7)),
    (8, (2, 4)), (12, (3, 4)), (16, (4, 4)),
])
def test_grid_is_nearest_square(ranks, grid):
    assert hpccinf.process_grid(ranks) == grid


def test_grid_needs_a_rank():
    with pytest.raises(hpccinf.HpccInputError):
        hpccinf.process_grid(0)


def test_problem_size_from_memory_fraction():
    mem = 24 * 2**30
    n = hpccinf.problem_size(mem, 0.5, 128)
    assert n % 128 == 0
    assert n <= math.sqrt(0.5 * mem / 8) < n + 128
    assert hpccinf.problem_size(mem, 0.5, 128, max_n=800) == 768
    assert hpccinf.problem_size(1000, 0.5, 128) == 128     # one block


def test_problem_size_grows_with_nodes():
    one = hpccinf.for_job(8, 1, 4)
    four = hpccinf.for_job(8, 4, 4)
    assert four.n == pytest.approx(2 * one.n, rel=0.01)
    assert (four.p, four.q) == (2, 2)


def test_ranks_on_fewer_cores_size_from_their_share_of_the_memory():
    # 1 rank of a 16-core, 125 GiB node: 1/16 of its memory, N / 4
    whole = hpccinf.for_job(125, 1, 16, cores_per_node=16)
    one = hpccinf.for_job(125, 1, 1, cores_per_node=16)
    assert whole.n == hpccinf.for_job(125, 1, 16).n   # all cores: all of it
    assert one.n == pytest.approx(whole.n / 4, rel=0.01)
    # more ranks than cores (oversubscribed): never above the whole memory
    assert hpccinf.for_job(1, 2, 8, cores_per_node=2).n == \
        hpccinf.for_job(1, 2, 8).n
    # the emulated site: 1 GiB, 2 cores; 1 x 1 was N = 8192 (9 min)
    assert hpccinf.for_job(1, 1, 1, cores_per_node=2).n == 5760


def test_no_memory_is_a_config_error():
    with pytest.raises(hpccinf.HpccInputError, match='memory_per_node_gib'):
        hpccinf.for_job(None, 1, 2, partition='sys:part')


@pytest.mark.parametrize('name,ranks,threshold', [
    (PASS, 2, 16), (RESIDUAL_FAIL, 2, 0.0001), (ONE_RANK, 1, 16)])
def test_fixture_inputs_are_the_generator(name, ranks, threshold):
    # the real outputs were made from exactly what the generator writes
    made = hpccinf.for_job(24, 1, ranks, max_n=768, threshold=threshold)
    assert made.render() == inp(name)


def test_hpcc_read_the_generated_input():
    text = out(PASS)
    assert 'N      :     768' in text
    assert 'P      :       1' in text and 'Q      :       2' in text
    res = parse_hpcc(text)
    assert (res.value('HPL_N'), res.value('HPL_NB')) == (768, 128)
    assert (res.value('HPL_nprow'), res.value('HPL_npcol')) == (1, 2)


# -- parser -------------------------------------------------------------------

def test_parse_complete_run():
    res = parse_hpcc(out(PASS))
    assert res.processes == 2
    assert res.residuals == [(0.0088113, 'PASSED')]
    assert (res.hpl_passed, res.hpl_failed) == (1, 0)
    assert res.hpl_verdict() is None
    assert res.value('HPL_Tflops') == 0.00186537
    assert res.value('RandomlyOrderedRingBandwidth_GBytes') == 5.83005
    for section in ('HPL', 'PTRANS', 'StarSTREAM', 'MPIFFT',
                    'MPIRandomAccess', 'LatencyBandwidth'):
        assert section in res.sections


def test_ptrans_residual_counts_are_not_hpl_s():
    # PTRANS prints "5 tests completed and passed residual checks" first
    res = parse_hpcc(out(PASS))
    assert res.hpl_passed == 1


def test_parse_failed_residual():
    res = parse_hpcc(out(RESIDUAL_FAIL))
    assert res.residuals == [(0.0088113, 'FAILED')]
    assert res.value('Success') == 0
    assert 'residual' in res.hpl_verdict()


@pytest.mark.parametrize('marker,what', [
    ('Begin of Summary section', 'no complete Summary'),
    ('End of Summary section', 'no complete Summary'),
    ('End of HPC Challenge tests', 'End of HPC Challenge tests'),
])
def test_parse_cut_short(marker, what):
    with pytest.raises(ParseError, match=what):
        parse_hpcc(cut_before(out(PASS), marker))


@pytest.mark.parametrize('text,what', [
    ('', 'empty'), ('hello\n', 'not an HPCC output')])
def test_parse_foreign(text, what):
    with pytest.raises(ParseError, match=what):
        parse_hpcc(text)


# -- checks -------------------------------------------------------------------

@pytest.fixture(scope='module')
def checks():
    return load_checks('checks/hpcc/hpcc_checks.py')


def fed(checks, cls, text):
    c = pick(checks, cls)
    c.stdout_text = lambda: text
    return c


def value(deferred):
    return sn.evaluate(deferred)


def test_kernel_checks_read_one_run(checks):
    text = out(PASS)
    hpl = fed(checks, 'HpccHpl', text)
    assert value(hpl.validate()) is True
    assert perf_values(hpl) == {'gflops': pytest.approx(1.86537),
                         'time': 0.162367}
    beff = fed(checks, 'HpccBeff', text)
    assert value(beff.validate()) is True
    got = perf_values(beff)
    assert got['random_ring_bandwidth'] == 5.83005
    assert got['natural_ring_bandwidth'] == 11.6047
    assert got['pingpong_latency'] > 0
    for cls in ('HpccStream', 'HpccRandomAccess', 'HpccPtrans', 'HpccFft'):
        c = fed(checks, cls, text)
        assert value(c.validate()) is True, cls
        assert all(v > 0 for v in perf_values(c).values()), cls


def test_hpl_residual_failure_is_a_sanity_failure(checks):
    hpl = fed(checks, 'HpccHpl', out(RESIDUAL_FAIL))
    with pytest.raises(SanityError, match='residual 0.0088113'):
        value(hpl.validate())

    # the other kernels of the same run are still valid
    assert value(fed(checks, 'HpccStream',
                     out(RESIDUAL_FAIL)).validate()) is True


def test_beff_with_one_rank_measured_nothing(checks):
    beff = fed(checks, 'HpccBeff', out(ONE_RANK))
    with pytest.raises(SanityError, match='measured nothing'):
        value(beff.validate())


def test_truncated_run_names_what_is_missing(checks):
    hpl = fed(checks, 'HpccHpl', cut_before(out(PASS), 'Begin of HPL'))
    with pytest.raises(SanityError, match='Summary'):
        value(hpl.validate())


def test_checks_carry_the_run_s_point(checks):
    hpl = [c for c in checks if type(c).__name__ == 'HpccHpl']
    points = {(c.num_nodes, c.ppn, c.interconnect) for c in hpl}
    assert len(points) == len(hpl) >= 2
    # one rank runs over one interconnect only (sweep.why_not): the 1-rank
    # instances of the others have no partition, hence no mode
    runnable = [c for c in hpl if c.valid_systems]
    assert len({c.interconnect for c in runnable
                if c.num_nodes * c.ppn == 1}) == 1
    assert len({c.interconnect for c in runnable
                if c.num_nodes * c.ppn >= 2}) >= 2
    for c in runnable:
        # ci at 2+ ranks only: one rank repeats its work on each interconnect
        want = {'hpcc', 'HPL', 'nightly'} | ({'ci'} if c.ppn >= 2 else set())
        assert want <= set(c.tags) and ('ci' in c.tags) == (c.ppn >= 2)
    stream = pick(checks, 'HpccStream')
    assert 'ci' not in stream.tags and 'nightly' in stream.tags


# -- the run is the run that was asked ---------------------------------------

GRID_TOO_BIG = 'hpcc1.5.0-np2-grid2x2'


def run_fed(checks, name, ranks=2, stderr=''):
    """The HpccRun of the point with ``ranks`` ranks, reading the output
    and input of fixture ``name`` and ``stderr``."""
    run = next(c for c in checks if type(c).__name__ == 'HpccRun'
               and c.num_nodes * c.ppn == ranks)
    run.num_tasks = ranks
    run.output_text = lambda: out(name)
    run.input_text = lambda: inp(name)
    run.stderr_text = lambda: stderr
    return run


def test_input_read_back():
    assert hpccinf.read(inp(PASS)) == hpccinf.HpccInput(768, 128, 1, 2)
    with pytest.raises(hpccinf.HpccInputError, match="no 'Qs' line"):
        hpccinf.read(inp(PASS).replace('Qs', 'Q'))


def test_run_as_asked_passes(checks):
    assert sn.evaluate(run_fed(checks, PASS).validate()) is True


def test_grid_that_does_not_fit_the_ranks_is_named(checks):
    # hpccinf.txt asks 2 x 2 on 2 ranks: HPL refuses on stderr and HPCC
    # runs its own N=3520, NB=80 on 1 x 2, exit 0 (a real run)
    stderr = fixture_text('benchmark-outputs', 'hpcc',
                          f'{GRID_TOO_BIG}.stderr.txt')
    run = run_fed(checks, GRID_TOO_BIG, stderr=stderr)
    with pytest.raises(SanityError) as err:
        sn.evaluate(run.validate())

    assert str(err.value) == (
        "HPCC ran HPL with N=3520, NB=80, grid 1 x 2, not the N=768, "
        "NB=128, grid 2 x 2 of hpccinf.txt: grid 2 x 2 needs 4 ranks, the "
        "job has 2 (HPL: 'Need at least 4 processes for these tests'): its "
        "figures are of another problem")


def test_run_on_other_rank_count_is_named(checks):
    run = run_fed(checks, PASS)
    run.num_tasks = 4
    with pytest.raises(SanityError) as err:
        sn.evaluate(run.validate())

    assert str(err.value) == 'HPCC ran on 2 ranks, expected 4'
