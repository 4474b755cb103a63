"""cg_linkmatrix's payload check, run for real with 4 ranks: a large
message is checked by stamps (every 4 KiB block names sender, trial and
block) and whole in trial 1; a small one whole in every trial. The test
switch --corrupt-payload damages a byte in trial 1 and leaves a stamp of
trial 2 stale: both must be reported, in every pair."""


import pytest

from clustergate.parsers import cgoutput
from conftest import run_linkmatrix


def _errors(stdout):
    """(trial, receiving rank, sender) of every payload error"""
    got = set()
    for line in cgoutput.parse(stdout).errors:
        if 'kind=payload' in line:
            f = dict(kv.split('=', 1) for kv in line.split()[1:]
                     if '=' in kv)
            got.add((int(f['trial']), int(f['rank']), int(f['from'])))
    return got


@pytest.mark.parametrize('size', ['4M', '100003'])
def test_an_intact_matrix_has_no_payload_error(built_programs, size):
    cp = run_linkmatrix(built_programs, '--bytes', size)
    assert cp.returncode == 0, cp.stdout[-2000:] + cp.stderr[-2000:]
    run = cgoutput.parse(cp.stdout)
    cgoutput.verify(run, program='cg_linkmatrix')
    assert len(run.measurements) == 12 and not run.errors


@pytest.mark.parametrize('size', ['4M', '100003'])
def test_a_damaged_byte_and_a_stale_block_are_both_reported(built_programs,
                                                           size):
    cp = run_linkmatrix(built_programs, '--bytes', size, '--corrupt-payload')
    assert cp.returncode == 3
    got = _errors(cp.stdout)
    # rounds 1 and 3: every rank receives; round 2 (mutual): split halves
    receives = {(r, (r - k) % 4) for k in (1, 2, 3) for r in range(4)}
    # trial 1: the last byte, found by the whole check; trial 2: the last
    # block's stamp still of trial 1, found by the stamps
    assert {(r, s) for t, r, s in got if t == 1} == receives
    assert {(r, s) for t, r, s in got if t == 2} == receives
    assert {t for t, _, _ in got} == {1, 2}


def test_a_small_message_is_checked_whole_every_trial(built_programs):
    cp = run_linkmatrix(built_programs, '--bytes', '10000', '--corrupt-payload')
    assert cp.returncode == 3
    assert {t for t, _, _ in _errors(cp.stdout)} == {1}
