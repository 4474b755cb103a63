"""The pure C parts of cg_memory, cg_memlat and cg_noise (the very code the
programs run, through cg_node_cli compiled here with cc) and a short live
run of each node program."""

import os
import shutil
import subprocess

import pytest

from clustergate.parsers import cgoutput
from conftest import SRC, mpirun_env


@pytest.fixture(scope='module')
def cli(tmp_path_factory):
    cc = shutil.which('cc') or shutil.which('gcc')
    if cc is None:
        pytest.skip('no C compiler')

    out = str(tmp_path_factory.mktemp('nodecli') / 'cg_node_cli')
    subprocess.run([cc, '-O2', '-Wall', '-Werror', '-std=gnu11', '-o', out,
                    os.path.join(SRC, 'cg_node_cli.c'), '-lm'], check=True)
    return out


def run_cli(cli, *args, stdin=None):
    cp = subprocess.run([cli, *map(str, args)], input=stdin,
                        capture_output=True, text=True, check=True)
    return cp.stdout


def kv(line):
    return dict(w.split('=', 1) for w in line.split())


# -- index generation -----------------------------------------------------

@pytest.mark.parametrize('n', [1, 2, 3, 7, 64, 1000, 65536, 1 << 20])
@pytest.mark.parametrize('seed', [0, 1, 12345])
def test_sattolo_is_one_cycle_through_all_lines(cli, n, seed):
    r = kv(run_cli(cli, 'sattolo', n, seed))
    assert r['permutation'] == '1'
    assert int(r['cycle']) == n and r['single'] == '1'
    if n > 1:
        assert r['fixed_points'] == '0'      # no line points to itself


def test_sattolo_depends_on_seed(cli):
    # the cycle is random: different seeds give different orders
    outs = {run_cli(cli, 'perm', 1000, s) for s in range(5)}
    assert len(outs) > 1


@pytest.mark.parametrize('n', [1, 10, 4096, 100003])
def test_random_index_array_is_a_permutation(cli, n):
    r = kv(run_cli(cli, 'perm', n, 42))
    assert r['permutation'] == '1'


# -- stride bookkeeping ---------------------------------------------------

@pytest.mark.parametrize('s', range(1, 18))
@pytest.mark.parametrize('n', [1000, 4099])
def test_every_stride_visits_each_element_once(cli, n, s):
    r = kv(run_cli(cli, 'stride', n, s))
    assert int(r['visits']) == n            # same count at every stride
    assert r['each_once'] == '1'
    assert int(r['passes']) == min(s, n)    # s passes of stride s
    assert r['stride_ok'] == '1'


def test_stride_larger_than_array(cli):
    r = kv(run_cli(cli, 'stride', 5, 17))
    assert r['visits'] == '5' and r['each_once'] == '1'


def test_memlat_working_sets(cli):
    sizes = [int(x) for x in run_cli(cli, 'sizes', 4096,
                                     256 << 20).split()]
    assert sizes[0] == 4096 and sizes[-1] == 256 << 20
    assert sizes == sorted(sizes)
    assert 6144 in sizes and 1 << 30 not in sizes


def test_memlat_levels_only_keeps_the_sizes_the_levels_read(cli):
    # L1 32 KiB, L2 1 MiB, L3 32 MiB (this machine): each level from twice
    # the cache below to half its own, DRAM at its smallest size from 4x
    # L3; the transitions (24 KiB-48 KiB, 768 KiB-1.5 MiB, 24-96 MiB) and
    # DRAM's 192 and 256 MiB are left out
    kib, mib = 1 << 10, 1 << 20
    sizes = [int(x) for x in run_cli(cli, 'levels', 4096, 256 * mib,
                                     32 * kib, mib, 32 * mib).split()]
    assert sizes == [4 * kib, 6 * kib, 8 * kib, 12 * kib, 16 * kib,
                     64 * kib, 96 * kib, 128 * kib, 192 * kib, 256 * kib,
                     384 * kib, 512 * kib,
                     2 * mib, 3 * mib, 4 * mib, 6 * mib, 8 * mib, 12 * mib,
                     16 * mib, 128 * mib]
    # no L3: DRAM from 4x L2
    sizes = [int(x) for x in run_cli(cli, 'levels', 4096, 256 * mib,
                                     32 * kib, mib, 0).split()]
    assert sizes[-2:] == [512 * kib, 4 * mib]


# -- noise statistics -----------------------------------------------------

def test_noise_statistics_on_given_samples(cli):
    # 1000 quanta: 990 of 10 us, 9 of 20 us, one of 100 us
    samples = [10.0] * 990 + [20.0] * 9 + [100.0]
    r = kv(run_cli(cli, 'noise', stdin=' '.join(map(str, samples)) + '\n'))
    mean = (990 * 10 + 9 * 20 + 100) / 1000
    assert float(r['n']) == 1000
    assert float(r['min']) == 10 and float(r['max']) == 100
    assert float(r['mean']) == pytest.approx(mean)
    assert float(r['slowdown']) == pytest.approx(mean / 10 - 1)
    assert float(r['p50']) == 10 and float(r['p90']) == 10
    # nearest rank: p99 = 990th smallest, p99.9 = 999th smallest
    assert float(r['p99']) == 10
    assert float(r['p999']) == 20


def test_noise_percentiles_nearest_rank(cli):
    r = kv(run_cli(cli, 'noise', stdin='5 1 4 2 3 6 7 8 9 10\n'))
    assert (r['min'], r['p50'], r['p90'], r['p99'], r['p999']) == \
        ('1', '5', '9', '10', '10')
    assert float(r['slowdown']) == pytest.approx(5.5 - 1)


def test_noise_without_noise_is_zero(cli):
    r = kv(run_cli(cli, 'noise', stdin='3 3 3 3\n'))
    assert float(r['slowdown']) == 0.0


def test_noise_empty_sample(cli):
    assert run_cli(cli, 'noise', stdin='\n').strip() == \
        'error=empty_or_nonpositive'


# -- live runs (seconds) --------------------------------------------------

def mpirun(built, np, *args, timeout=120):
    exe = shutil.which('mpirun.openmpi') or shutil.which('mpirun')
    cp = subprocess.run([exe, '-np', str(np), '--bind-to', 'none',
                         os.path.join(built, args[0]), *args[1:]],
                        env=mpirun_env(), capture_output=True, text=True,
                        timeout=timeout)
    return cp


def test_memory_program_live(built_programs):
    cp = mpirun(built_programs, 2, 'cg_memory', '--kernels', 'read,copy',
                '--strides', '1,3', '--array-bytes', '4Mi', '--trials', '3',
                '--flush-bytes', '1M')
    assert cp.returncode == 0, cp.stderr
    run = cgoutput.parse(cp.stdout)
    cgoutput.verify(run, program='cg_memory')
    for kernel in ('read', 'copy'):
        for s in (1, 3):
            lines = [m for m in run.select(kernel) if m['stride'] == s]
            assert [m['active_ppn'] for m in lines] == [1, 2]
            assert lines[1]['ratio'] > 0
            assert lines[0]['bytes'] == 4 << 20     # same array, any stride


def test_memlat_program_live(built_programs):
    cp = mpirun(built_programs, 1, 'cg_memlat', '--max-bytes', '4Mi',
                '--accesses', '65536', '--trials', '3')
    assert cp.returncode == 0, cp.stderr
    run = cgoutput.parse(cp.stdout)
    cgoutput.verify(run, program='cg_memlat')
    assert run.select('memlat')[0]['bytes'] == 4096
    assert {m['level'] for m in run.select('memlat_level')} >= {'L1'}
    assert any('memlat_numa_remote' in s for s in run.skips)


def memlat_levels(built_programs, *args):
    """cg_memlat --levels-only on 1 rank: its parsed run and its
    CG_INFO line's fields."""
    cp = mpirun(built_programs, 1, 'cg_memlat', *args, '--accesses',
                '16384', '--trials', '2', '--levels-only')
    assert cp.returncode == 0, cp.stderr
    run = cgoutput.parse(cp.stdout)
    cgoutput.verify(run, program='cg_memlat')
    info = kv(next(ln for ln in cp.stdout.splitlines()
                   if ln.startswith('CG_INFO') and 'levels_only=1' in ln)
              .split(None, 1)[1])
    return run, info


def test_memlat_levels_only_live(built_programs, cli):
    # the program measures exactly the sizes the pure function keeps for
    # this machine's caches (as it reports them)
    run, info = memlat_levels(built_programs, '--max-bytes', '4Mi')
    want = [int(x) for x in run_cli(cli, 'levels', 4096, 4 << 20,
                                    info['L1'], info['L2'],
                                    info['L3']).split()]
    assert [m['bytes'] for m in run.select('memlat')] == want
    assert int(info['sizes']) == len(want) < 25    # the whole curve: 25


def test_memlat_auto_size_reaches_dram_behind_the_reported_llc(
        built_programs):
    # DRAM starts at 4x the last-level cache; a VM can report its host's
    # (300 MiB here), so a fixed 256 MiB left DRAM off the curve and the
    # check red; auto is 6x the LLC (at least 256 MiB)
    run, info = memlat_levels(built_programs)
    llc = max(int(info[k]) for k in ('L1', 'L2', 'L3', 'L4'))
    want = max(6 * llc, 256 << 20)
    # capped at half the available memory: this test needs twice that
    if want * 4 > os.sysconf('SC_AVPHYS_PAGES') * os.sysconf('SC_PAGESIZE'):
        pytest.skip(f'too little free memory for a {want}-byte set')
    assert int(info['max_bytes']) == want
    dram = [m for m in run.select('memlat_level') if m['level'] == 'DRAM']
    assert dram and dram[0]['bytes'] >= 4 * llc, run.skips


def test_noise_program_live(built_programs):
    cp = mpirun(built_programs, 2, 'cg_noise', '--seconds', '0.2')
    assert cp.returncode == 0, cp.stderr
    run = cgoutput.parse(cp.stdout)
    cgoutput.verify(run, program='cg_noise')
    noise = run.select('noise')
    assert [m['active_ppn'] for m in noise] == [1, 2]
    assert all(m['slowdown'] >= 0 for m in noise)
    assert run.select('noise_bsp')[0]['bsp_slowdown'] > -0.5


def test_nic_program_skips_on_one_node(built_programs):
    cp = mpirun(built_programs, 2, 'cg_nic', '--bytes', '1K', '--trials',
                '2')
    assert cp.returncode == 0, cp.stderr
    run = cgoutput.parse(cp.stdout)
    cgoutput.verify(run, program='cg_nic')
    assert run.skips and 'nodes=1' in run.skips[0]
