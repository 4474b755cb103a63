"""The retest driver started beside the matrix (clustergate.links.beside):
it imports its analysis only once the matrix has written its first
results (not while the matrix's ranks start on the same cores), waits for
the matrix's exit status, then runs the retest driver."""

import subprocess
import sys
import threading
import time

from clustergate.links import beside


def test_a_fresh_driver_imports_nothing_heavy_before_it_waits():
    # the module as the job starts it: the standard library only
    code = ('import sys; import clustergate.links.beside; '
            'print(sorted(m for m in sys.modules '
            'if m.startswith("clustergate")))')
    cp = subprocess.run([sys.executable, '-c', code], capture_output=True,
                        text=True, timeout=60)
    assert cp.stdout.strip() == ("['clustergate', 'clustergate.links', "
                                 "'clustergate.links.beside']"), cp.stderr


def _imported(log, module):
    return f'| {module}\n' in log.read_text()


def _analysis_started(log):
    """Any module of the analysis imported (-X importtime logs each at
    its end: the first small ones within milliseconds of the start)"""
    return any(line.split('|')[-1].strip().startswith('clustergate.')
               and line.split('|')[-1].strip() != 'clustergate.links'
               for line in log.read_text().splitlines())


def _until(check, timeout=30.0):
    end = time.monotonic() + timeout
    while not check() and time.monotonic() < end:
        time.sleep(0.05)
    return check()


def test_imports_once_the_matrix_has_results_then_waits_for_its_status(
        tmp_path):
    out, rc, log = tmp_path / 'out', tmp_path / 'rc', tmp_path / 'imports'
    out.write_text('')
    with open(log, 'w') as err:
        proc = subprocess.Popen(
            [sys.executable, '-X', 'importtime', '-m',
             'clustergate.links.beside', '--output', str(out), '--inputs',
             'none.json', '--launch', 'false', '--result',
             str(tmp_path / 'result.json'), '--after', str(rc)],
            stderr=err, cwd=tmp_path)
    try:
        # its package imported: the driver runs (as __main__)
        assert _until(lambda: _imported(log, 'clustergate.links'))
        time.sleep(1.5)      # the matrix starting: nothing imported
        assert not _analysis_started(log)
        out.write_text('CG pattern=linkmatrix ...\n')   # round 1 done
        assert _until(lambda: _imported(log, 'clustergate.links.retest'))
        assert proc.poll() is None       # still waiting for the status
        rc.write_text('3\n')             # a failed matrix: no retest
        assert proc.wait(60) == 0
        assert not (tmp_path / 'result.json').exists()
    finally:
        proc.kill()
        proc.wait()


def test_a_matrix_that_fails_before_any_result_is_not_waited_for(tmp_path):
    rc = tmp_path / 'rc'
    seen = []

    def later():
        time.sleep(0.3)
        rc.write_text('2\n')

    writer = threading.Thread(target=later)
    t0 = time.monotonic()
    writer.start()
    beside.wait_for(lambda: beside.has_results(str(tmp_path / 'out')) or
                    rc.exists(), poll=0.01)
    seen.append(time.monotonic() - t0)
    writer.join()
    assert rc.exists() and 0.3 <= seen[0] < 10


def test_a_healthy_first_round_parses_the_output_once(monkeypatch):
    # after the matrix, on the job's critical path: the output is parsed
    # for the first round only; the node ranks (a second parse) only when
    # a retest is launched
    from clustergate.links import retest as lr
    from clustergate.parsers import cgoutput
    from conftest import fixture_text
    text = fixture_text('cg-outputs', 'emu-linkmatrix-4MB-fab0-busy.out')
    calls = []
    parse = cgoutput.parse

    def counted(*args, **kwargs):
        calls.append(1)
        return parse(*args, **kwargs)

    monkeypatch.setattr(cgoutput, 'parse', counted)
    result = lr.retest(text, {'fabric': 'fab0'}, 'false', 120.0)
    assert result['notes'] == ['no suspect or borderline node link']
    assert len(calls) == 1
