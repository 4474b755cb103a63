"""cg_contention run for real with 4 ranks: every pattern is printed in the
documented format, and the payload test switch makes it fail."""

import os
import subprocess

import pytest

from clustergate.parsers import cgoutput
from conftest import mpirun_env

MPIRUN = ['mpirun.openmpi', '-np', '4', '--oversubscribe', '--bind-to',
          'none', '--mca', 'mpi_yield_when_idle', '1']
FAST = ['--trials', '4', '--flush-bytes', '1M', '--sizes', '8,10K']


def run(built_programs, *args):
    if not os.path.exists('/usr/bin/mpirun.openmpi'):
        pytest.skip('OpenMPI not installed (apt-get install openmpi-bin)')

    return subprocess.run(MPIRUN + [os.path.join(built_programs,
                                                 'cg_contention'), *args],
                          capture_output=True, text=True, timeout=240,
                          env=mpirun_env())


def test_every_pattern_with_four_ranks(built_programs):
    res = run(built_programs, *FAST)
    assert res.returncode == 0, res.stderr[-2000:]
    parsed = cgoutput.parse(res.stdout)
    cgoutput.verify(parsed, program='cg_contention')
    patterns = {m.pattern for m in parsed.measurements}
    assert patterns == {'barrier', 'pingpong', 'bipingpong', 'shift',
                        'naive_bcast', 'tree_bcast', 'alltoall', 'hotspot',
                        'complement', 'concurrent_single', 'concurrent_pair',
                        'allreduce'}
    # distance: one line per peer of rank 0, per size
    assert sorted(m['peer'] for m in parsed.select('pingpong', bytes=8)) == \
        [1, 2, 3]
    for m in parsed.measurements:
        assert m['ranks'] == 4 and m['trials'] == 3
        assert m['t_us'] > 0 and m['min_us'] <= m['med_us'] <= m['max_us']
        assert 0 <= m['filtered'] <= 0.1

    for m in parsed.select('concurrent_pair'):
        assert m['ratio'] > 0


def test_corrupted_payload_is_reported(built_programs):
    res = run(built_programs, '--patterns', 'pingpong,shift,hotspot',
              '--corrupt-payload', *FAST)
    assert res.returncode == 3
    parsed = cgoutput.parse(res.stdout)
    assert any('kind=payload pattern=shift' in e for e in parsed.errors)
    assert any('kind=payload pattern=hotspot' in e for e in parsed.errors)
    with pytest.raises(cgoutput.OutputError, match='payload'):
        cgoutput.verify(parsed, program='cg_contention')


def test_bad_arguments_name_the_cause(built_programs):
    res = run(built_programs, '--patterns', 'wormhole')
    assert res.returncode != 0
    assert "unknown pattern 'wormhole'" in res.stderr
    res = run(built_programs, '--sizes', '8,ten')
    assert "--sizes: bad size 'ten'" in res.stderr


def test_trials_stop_on_the_noise(built_programs):
    # any noise is tight enough: every measurement stops at the floor; none
    # is: every one runs to the cap (--trials 9: 8 after the warm-up)
    args = ['--trials', '9', '--flush-bytes', '1M', '--sizes', '8,10K',
            '--patterns', 'barrier,pingpong,shift', '--min-trials', '3']
    for target, want in (('1e9', 3), ('1e-12', 8)):
        res = run(built_programs, *args, '--target-rse', target)
        assert res.returncode == 0, res.stderr[-2000:]
        parsed = cgoutput.parse(res.stdout)
        cgoutput.verify(parsed, program='cg_contention')
        assert len(parsed.measurements) == 9   # pingpong: 3 peers
        assert {m['trials'] for m in parsed.measurements} == {want}


def test_bad_stopping_options_name_the_cause(built_programs):
    res = run(built_programs, '--min-trials', '1', *FAST)
    assert res.returncode != 0
    assert '--min-trials must be at least 2' in res.stderr
