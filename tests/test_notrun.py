"""The end of a session says what did not run, per family and reason, and
exits non-zero when a family the partition expects ran not at all; JUnit
reports the skipped cases as skipped.

Real ReFrame sessions on localhost: NPB and OSU are pointed (-S) at a
prefix that does not exist, so their cases are skipped for a known reason
whether or not Spack is installed; a copy of the configuration declares
NPB expected on localhost.
"""

import os
import shutil
import subprocess
import xml.etree.ElementTree as ET

from conftest import ROOT, edited_config, reframe_cmd

MISSING = '/nonexistent/cg-prefix'
NPB_REASON = f'NPB prebuilt prefix {MISSING} does not exist'


def _config_expecting(tmp_path, families):
    return edited_config(tmp_path, 'localhost.py',
                         "'expected_families': _expected_families(),",
                         f"'expected_families': {families!r},")[0]


def _session(tmp_path, settings, *args):
    out = tmp_path / 'out'
    out.mkdir(exist_ok=True)
    env = dict(os.environ, SLURM_CONF='',
               CG_PERFLOG_DIR=str(out / 'perflogs'),
               CG_RESULTS_DB=str(out / 'results.db'),
               CG_DEBUG_LOG=str(out / 'reframe.log'))
    cmd = reframe_cmd() + [
        '-C', str(settings), '-c', os.path.join(ROOT, 'checks', 'npb'),
        '-c', os.path.join(ROOT, 'checks', 'osu'), '--mode', 'nightly',
        '-S', f'NpbBinaries.use_prefix={MISSING}',
        '-S', f'OsuBinaries.use_prefix={MISSING}',
        '--report-file', str(out / 'report.json'),
        '--report-junit', str(out / 'junit.xml'), *args, '-r'
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env,
                         timeout=600, cwd=str(tmp_path))
    return res, out


def _not_run_lines(stdout):
    lines = stdout.splitlines()
    start = next(i for i, ln in enumerate(lines) if ' NOT RUN ' in ln)
    return lines[start + 1:]


def test_expected_family_with_nothing_run_fails_the_session(tmp_path):
    settings = _config_expecting(tmp_path, ['npb'])
    res, out = _session(tmp_path, settings, '-n', 'NpbCG')
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr
    block = _not_run_lines(res.stdout)
    # localhost nightly: 8 NpbCG points (shm/tcp x ppn x class A/B)...
    n = int(block[0].split()[1])
    assert n > 0
    assert block[0] == f'npb: {n} of {n} case(s): {NPB_REASON}'
    assert (f'FAILED: npb is expected on localhost:local '
            f'(extras.expected_families) but none of its {n} selected '
            f'case(s) ran') in block

    # ReFrame itself called the session passed (all skipped)
    assert 'PASSED' in res.stdout

    # JUnit: every case skipped, with the reason, none counted as passed
    suite = ET.parse(out / 'junit.xml').getroot().find('testsuite')
    cases = suite.findall('testcase')
    assert len(cases) == n + 1          # + the NpbBinaries fixture
    assert suite.get('skipped') == str(len(cases))
    for case in cases:
        assert case.find('skipped').get('message') == NPB_REASON


def test_family_filtered_out_is_not_held_against_the_session(tmp_path):
    settings = _config_expecting(tmp_path, ['npb'])
    res, _ = _session(tmp_path, settings, '-n', 'NpbCG|OsuLatency',
                      '-x', 'NpbCG')
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    block = _not_run_lines(res.stdout)
    assert block[0].startswith('osu: ')
    assert block[0].endswith(f'OSU prebuilt prefix {MISSING} does not exist')
    assert not any(ln.startswith(('npb', 'FAILED')) for ln in block)


def test_localhost_without_spack_stays_green_and_says_so(tmp_path):
    # the shipped localhost expects NPB only when spack is on PATH
    settings = os.path.join(ROOT, 'config', 'settings.py')
    if shutil.which('spack'):
        import pytest
        pytest.skip('spack on PATH: localhost expects NPB here')

    res, _ = _session(tmp_path, settings, '-n', 'NpbCG')
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    block = _not_run_lines(res.stdout)
    assert block[1] == ('npb: nothing ran; not in expected_families of '
                        'localhost:local: the session stays green')


def test_listing_prints_no_block(tmp_path):
    settings = _config_expecting(tmp_path, ['npb'])
    cmd = reframe_cmd() + ['-C', str(settings), '-c',
                           os.path.join(ROOT, 'checks', 'npb'), '-l']
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, SLURM_CONF=''))
    assert res.returncode == 0
    assert 'NOT RUN' not in res.stdout
