"""``clustergate report``: figures and the HTML page, from synthetic
samples and (e2e) from the perflog of a real ReFrame run."""

import os
import subprocess
import sys

import pytest

from clustergate import baseline as bl
from clustergate import linkmatrix as lm
from clustergate import report

pytest.importorskip('matplotlib')

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)


def _s(check, point, metric, value, unit, t, ref=None, lower=None,
       upper=None):
    return bl.Sample(bl.Key('emu', 'p', check, point, metric), value, unit,
                     t, f'run{t}', 'pass', ref, lower, upper)


def _samples():
    out = []
    for t in (1000.0, 2000.0, 3000.0):
        for ppn in (1, 2):
            for size, lat in ((8, 5.0), (10000, 50.0), (1000000, 9000.0)):
                point = (f'interconnect=fab0,msg_bytes={size},num_nodes=2,'
                         f'ppn={ppn}')
                out.append(_s('PingPongDistance', point, 'latency',
                              lat * ppn, 'us', t))
                out.append(_s('PingPongDistance', point, 'bandwidth',
                              size / lat / ppn, 'MB/s', t))

        # a metric with a reference, out of it at the last run
        out.append(_s('LinkMatrix', 'interconnect=fab0,num_nodes=4,ppn=1',
                      'bw_median', 100.0 if t < 3000 else 40.0, 'MB/s', t,
                      ref=100.0, lower=-0.3, upper=0.9))
    return out


def test_status_and_band():
    ok = _s('A', '*', 'bw', 95.0, 'MB/s', 1, 100.0, -0.1, None)
    bad = _s('A', '*', 'bw', 80.0, 'MB/s', 1, 100.0, -0.1, None)
    noref = _s('A', '*', 'bw', 80.0, 'MB/s', 1, 0.0, None, None)
    assert report.status(ok) == 'ok'
    assert report.status(bad) == 'out of reference'
    assert report.status(noref) == 'no reference'
    assert report.band(ok) == (90.0, None)


def test_render_all_sections(tmp_path):
    mdir = tmp_path / 'output' / 'emu' / 'p' / 'openmpi' / 'LinkMatrix_1'
    mdir.mkdir(parents=True)
    bw = {(s, d): 100.0 for s in 'abcd' for d in 'abcd' if s != d}
    bw[('a', 'c')] = bw[('c', 'a')] = 26.0
    lm.write_csv(lm.Matrix(list('abcd'), bw), mdir / 'linkmatrix_fab0.csv')
    out = tmp_path / 'report'
    page = report.render(_samples(), str(out), [str(tmp_path / 'output')])
    text = open(page).read()
    pngs = sorted(p.name for p in out.glob('*.png'))
    assert 'size_emu_p_PingPongDistance.png' in pngs
    assert 'ppn_emu_p_PingPongDistance.png' in pngs
    assert 'linkmatrix_emu_p_fab0.png' in pngs
    assert any(p.startswith('trend_emu_LinkMatrix') for p in pngs)
    for png in pngs:
        assert (out / png).read_bytes()[:4] == b'\x89PNG'
        assert f'src="{png}"' in text

    assert 'suspect link a&lt;-&gt;c on fabric fab0: 0.26x median' in text
    assert 'out of reference' in text
    assert 'no reference' in text
    assert '0 within reference, 1 out of reference, 12 with no reference' \
        in text


@pytest.mark.e2e
def test_report_from_a_real_run(tmp_path):
    """A real ReFrame run on this machine (one small ping-pong) writes a
    perflog; the report renders from it."""
    reframe = os.path.join(BIN, 'reframe')
    if not os.path.exists(reframe):
        pytest.skip('reframe not installed in this environment')

    env = dict(os.environ, CG_PERFLOG_DIR=str(tmp_path / 'perflogs'),
               CG_RESULTS_DB=str(tmp_path / 'results.db'),
               CG_REFERENCES_DIR=str(tmp_path / 'refs'),
               CG_DEBUG_LOG=str(tmp_path / 'reframe.log'))
    env.pop('SLURM_CONF', None)         # this machine, not the cluster
    proc = subprocess.run(
        [reframe, '-C', os.path.join(ROOT, 'config', 'settings.py'),
         '--system', 'localhost', '--prefix', str(tmp_path / 'rfm'),
         '-n', 'PingPongDistance%num_nodes=1%ppn=2%interconnect=shm',
         '-S', 'valid_prog_environs=openmpi', '-S', 'trials=5', '-r'],
        capture_output=True, text=True, env=env, timeout=600, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    logs = list((tmp_path / 'perflogs').rglob('PingPongDistance.log'))
    assert logs, 'no perflog written'
    # the run had no reference file: the perflog says so
    assert 'no reference' in logs[0].read_text()

    cg = os.path.join(BIN, 'clustergate')
    proc = subprocess.run(
        [cg, 'report', '--perflogs', str(tmp_path / 'perflogs'),
         '--matrices', str(tmp_path / 'rfm'), '-o', str(tmp_path / 'r')],
        capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = (tmp_path / 'r' / 'index.html').read_text()
    assert 'size_localhost_local_PingPongDistance.png' in text
    assert (tmp_path / 'r' / 'size_localhost_local_PingPongDistance.png'
            ).exists()
    assert 'with no reference' in text and 'PingPongDistance' in text
