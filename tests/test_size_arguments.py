"""Size arguments of the C programs: one parser (cg_parse_size in
cg_harness.c), one meaning. K, M, G are 10^3, 10^6, 10^9 bytes, as MB in
MB/s; Ki, Mi, Gi are 2^10, 2^20, 2^30. The programs report the sizes they
use as plain byte counts, which is what these tests read."""

import os
import shutil
import subprocess

import pytest

from clustergate.parsers import cgoutput
from conftest import mpirun_env


def mpirun(built, program, *args, ranks=1):
    exe = shutil.which('mpirun.openmpi') or shutil.which('mpirun')
    return subprocess.run([exe, '-np', str(ranks), '--bind-to', 'none',
                           os.path.join(built, program), *args],
                          env=mpirun_env(), capture_output=True, text=True,
                          timeout=120)


def info(stdout, program):
    """The key=value fields of the program's first CG_INFO line."""
    for line in stdout.splitlines():
        if line.startswith(f'CG_INFO program={program} '):
            return dict(w.split('=', 1) for w in line.split()[1:])

    raise AssertionError(f'no CG_INFO line of {program} in:\n{stdout}')


def test_memory_array_and_flush_sizes_mean_the_same(built_programs):
    # Before the shared parser, cg_memory read --array-bytes with K = 1024
    # and the harness read --flush-bytes with K = 1000.
    cp = mpirun(built_programs, 'cg_memory', '--kernels', 'read',
                '--strides', '1', '--trials', '2',
                '--array-bytes', '64M', '--flush-bytes', '64M')
    assert cp.returncode == 0, cp.stderr
    fields = info(cp.stdout, 'cg_memory')
    assert fields['array_bytes'] == fields['flush_bytes'] == '64000000'
    assert cgoutput.parse(cp.stdout).select('read')[0]['bytes'] == 64000000


@pytest.mark.parametrize('text,expected', [
    ('4M', 4000000), ('4Mi', 4 << 20), ('512K', 512000), ('512Ki', 512 << 10),
    ('0.002G', 2000000), ('0.00390625Gi', 4 << 20), ('65536', 65536)])
def test_memlat_max_bytes(built_programs, text, expected):
    cp = mpirun(built_programs, 'cg_memlat', '--min-bytes', '4Ki',
                '--max-bytes', text, '--accesses', '1024', '--trials', '2',
                '--no-thp')
    assert cp.returncode == 0, cp.stderr
    fields = info(cp.stdout, 'cg_memlat')
    assert int(fields['max_bytes']) == expected
    assert int(fields['min_bytes']) == 4096


def test_contention_sizes_decimal_and_binary(built_programs):
    cp = mpirun(built_programs, 'cg_contention', '--patterns', 'allreduce',
                '--sizes', '1K,1Ki,2k', '--trials', '2', '--flush-bytes', '1M',
                ranks=2)
    assert cp.returncode == 0, cp.stderr
    sizes = [m['bytes'] for m in cgoutput.parse(cp.stdout).select('allreduce')]
    assert sizes == [1000, 1024, 2000]


@pytest.mark.parametrize('program,option', [
    ('cg_memory', '--array-bytes'), ('cg_memlat', '--max-bytes'),
    ('cg_linkmatrix', '--bytes'), ('cg_nic', '--bytes'),
    ('cg_contention', '--sizes'), ('cg_noise', '--flush-bytes')])
@pytest.mark.parametrize('bad', ['4X', '4Mb', 'ten'])
def test_bad_size_names_the_option(built_programs, program, option, bad):
    cp = mpirun(built_programs, program, option, bad, '--trials', '2')
    assert cp.returncode != 0
    lines = [x for x in cp.stderr.splitlines() if 'CG_ERROR' in x]
    assert len(lines) == 1, cp.stderr
    assert f"{option}: bad size" in lines[0] and repr(bad) in lines[0]
