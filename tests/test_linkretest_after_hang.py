"""The link retest after a matrix launch that did not exit 0.

On the emulated 12-node site (MPICH 4.0.2 over UCX) the 12-node matrix
printed every measurement and its completion line, then 11 ranks hung in
``MPI_Finalize`` until our harness's watchdog stopped them; srun exited
143. The figures stand (the hang is a warning naming the ranks), so the
borderline links they leave must be retested, not left "undecided"
without a word. A launch that crashed before its output was whole is not
retested, and the verdict says why."""

import json
import os

from clustergate.links import retest_driver, retest_verdict
from clustergate.results import launchlog

FIX = os.path.join(os.path.dirname(__file__), 'fixtures', 'cg-outputs',
                   'emu-linkmatrix-leafspine12-mpich-finalize-hang')


def _text():
    with open(FIX + '.out') as fp:
        return fp.read()


def _truncated():
    # the same run cut before its last measurements and completion line
    return '\n'.join(_text().splitlines()[:100]) + '\n'


def test_a_whole_output_is_retested_whatever_the_exit_status():
    assert retest_driver.not_after(0, _text()) is None
    assert retest_driver.not_after(143, _text()) is None


def test_an_output_cut_short_is_not_retested_and_says_why():
    why = retest_driver.not_after(143, _truncated())
    assert why.startswith('the matrix launch exited 143 before its output '
                          'was whole (no CG_DONE completion line'), why
    # a crash that exited 0 cannot happen here; rc 0 is judged by sanity
    assert retest_driver.not_after(0, _truncated()) is None


def test_the_recorded_hang_is_named_by_the_watchdog_lines():
    with open(FIX + '.err') as fp:
        why = launchlog.hung_ranks(fp.read())
    assert why.startswith('cg_linkmatrix: 11 rank(s) hung after the last '
                          'result and were stopped after 20 s'), why


def _main(tmp_path, rc, text, monkeypatch):
    out = tmp_path / 'rfm_job.out'
    out.write_text(text)
    (tmp_path / 'inputs.json').write_text('{}')
    (tmp_path / 'rc').write_text(f'{rc}\n')
    calls = []

    def fake_retest(text, inputs, launch, budget, trials, log):
        calls.append(len(text))
        return {'budget_s': budget, 'rounds': 1, 'decisions': [],
                'notes': []}

    monkeypatch.setattr(retest_driver, 'retest', fake_retest)
    result = tmp_path / 'result.json'
    assert retest_driver.main([
        '--output', str(out), '--inputs', str(tmp_path / 'inputs.json'),
        '--launch', 'false', '--result', str(result),
        '--after', str(tmp_path / 'rc')]) == 0
    return calls, json.loads(result.read_text())


def test_the_driver_retests_after_a_hang_and_explains_a_crash(
        tmp_path, monkeypatch):
    calls, result = _main(tmp_path, 143, _text(), monkeypatch)
    assert calls and result['rounds'] == 1

    calls, result = _main(tmp_path, 143, _truncated(), monkeypatch)
    assert calls == []
    assert result['rounds'] == 0 and result['notes'][0].startswith(
        'the matrix launch exited 143 before its output was whole')
    # the verdict's line of an open candidate carries that reason
    lines, _ = retest_verdict.apply(
        ['slow node link n6 on fabric fab1: recv 0.89x its peers'],
        result, 'fab1', cands=[_Cand('n6')])
    assert lines[0].endswith('not retested: the matrix launch exited 143 '
                             'before its output was whole (no CG_DONE '
                             'completion line: the program did not finish '
                             '(crashed, killed or timed out?))'), lines


class _Cand:
    def __init__(self, node):
        self.node = node
