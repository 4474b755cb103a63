"""The verdict block at the end of a real ReFrame session on this machine:
a performance verdict decided in the first run and kept by the retry
(which fails in setup, before its job) is named a performance failure
and listed once, as its regression; the counts add up to ReFrame's."""

import re

from test_decided_retry import session


def test_a_kept_verdict_is_a_performance_failure_and_counted_once(tmp_path):
    proc, runs, _ = session(tmp_path, 'decided')
    out = re.sub(r'\x1b\[[0-9;]*m', '', proc.stdout)
    assert proc.returncode != 0 and runs == 1, out[-3000:]
    block = out[out.index(' VERDICT '):].splitlines()
    assert not any('setup: performance error' in ln for ln in block), block
    assert block[1] == 'FAILED: 1 of 1 test case(s) failed', block
    assert 'regressions (1 metric(s) outside their reference):' in block
    assert not any(ln.startswith('failures') for ln in block), block
    ran = re.search(r'Ran (\d+)/(\d+) test case', out)
    assert (f'cases: 1 of 1 test(s) ran, 0 not run; 0 of 0 fixture(s) '
            f'(builds, shared runs) ran: ReFrame\'s "Ran {ran[1]}/{ran[2]}"'
            ) in block, (ran[0], block)
