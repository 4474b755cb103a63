"""A ReFrame session leaves nothing outside its directories, and what the
commands write by default into the work tree is ignored by git."""

import os
import subprocess
import sys

import pytest

from clustergate import PROJECT_ROOT
from clustergate import cli
from conftest import ROOT

BIN = os.path.dirname(sys.executable)


def test_a_session_leaves_no_log_in_the_temporary_directory(tmp_path):
    """ReFrame logs its start to a new ``$TMPDIR/rfm-*.log`` before it
    reads our configuration (its built-in settings) and never removes it;
    the configuration moves it beside the session log."""
    reframe = os.path.join(BIN, 'reframe')
    if not os.path.exists(reframe):
        pytest.skip('reframe not installed in this environment')

    tmp = tmp_path / 'tmp'
    tmp.mkdir()
    env = dict(os.environ, SLURM_CONF='', TMPDIR=str(tmp),
               CG_PERFLOG_DIR=str(tmp_path / 'perflogs'),
               CG_RESULTS_DB=str(tmp_path / 'out' / 'results.db'),
               CG_DEBUG_LOG=str(tmp_path / 'out' / 'reframe.log'))
    cp = subprocess.run(
        [reframe, '-C', os.path.join(ROOT, 'config', 'settings.py'),
         '--prefix', str(tmp_path / 'rfm'), '-n', 'NoSuchCheckAtAll', '-l'],
        capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert 'nothing selected' in cp.stdout, cp.stdout + cp.stderr
    assert sorted(os.listdir(tmp)) == []
    startup = tmp_path / 'out' / 'reframe-startup.log'
    assert 'Loading configuration file' in startup.read_text()


def _default_page():
    parser = cli.build_parser()
    args = parser.parse_args(['report'])
    return args.output


def test_the_report_goes_where_git_ignores_it():
    page = _default_page()
    assert page.startswith(PROJECT_ROOT + os.sep)
    if not os.path.isdir(os.path.join(PROJECT_ROOT, '.git')):
        pytest.skip('not a git checkout')

    for path in (page, os.path.join(os.path.dirname(page), 'size_x.png')):
        cp = subprocess.run(['git', 'check-ignore', '-q',
                             os.path.relpath(path, PROJECT_ROOT)],
                            cwd=PROJECT_ROOT)
        assert cp.returncode == 0, f'{path} is not ignored by git'
