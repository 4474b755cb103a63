"""An error in a file the settings are assembled from (config/assemble.py,
config/common.py, the package they import) is one line naming the file,
the line and the cause, as ReFrame prints a ConfigError: never a
traceback.

config/settings.py itself holds nothing to edit (it loads
config/assemble.py): a syntax error there is ReFrame's to report, which
parses the file (``ast.parse``) before any of it runs."""

import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, reframe_cmd


@pytest.mark.parametrize('fname', ['common.py', 'assemble.py'])
@pytest.mark.parametrize('broken,cause', [
    ('\nPERF_TABLE = (\n', "SyntaxError: '(' was never closed"),
    ('\nraise KeyError("CG_NOTHING")\n', "KeyError: 'CG_NOTHING'"),
])
def test_an_error_in_what_settings_load_is_one_line(tmp_path, fname, broken,
                                                    cause):
    cfg = tmp_path / 'config'
    shutil.copytree(os.path.join(ROOT, 'config'), cfg)
    common = cfg / fname
    common.write_text(common.read_text() + broken)
    line = len(common.read_text().splitlines())
    # ReFrame logs a configuration it cannot load to $TMPDIR/rfm-*.log
    env = dict(os.environ, SLURM_CONF='', TMPDIR=str(tmp_path),
               CG_DEBUG_LOG=str(tmp_path / 'out' / 'reframe.log'))
    cp = subprocess.run(reframe_cmd() + ['-C', str(cfg / 'settings.py'),
                                         '--show-config=systems/0/name'],
                        capture_output=True, text=True, env=env,
                        timeout=300, cwd=tmp_path)
    out = (cp.stdout + cp.stderr).strip()
    assert cp.returncode != 0
    assert 'Traceback' not in out, out
    lines = out.splitlines()
    assert len(lines) == 1, out
    assert f'failed to load configuration: {common}:' in lines[0]
    assert cause in lines[0]
    # the line of the error (a syntax error: the unclosed bracket)
    assert f'{common}:{line}: ' in lines[0] or \
        f'{common}:{line - 1}: ' in lines[0], lines[0]


@pytest.mark.parametrize('argv,why', [
    (['--mode', 'nosuch'],
     '--mode nosuch: no such mode (modes: acceptance, ci, nightly)'),
    (['--system=nosuch'], '--system nosuch: no such system (systems: '),
    (['--system', 'localhost:gpu'], '--system localhost:gpu: system '
                                    'localhost has no partition gpu '
                                    '(partitions: local)'),
])
def test_an_unknown_name_on_the_command_line_lists_the_known(tmp_path, argv,
                                                           why):
    env = dict(os.environ, SLURM_CONF='', TMPDIR=str(tmp_path),
               CG_DEBUG_LOG=str(tmp_path / 'out' / 'reframe.log'),
               CG_PERFLOG_DIR=str(tmp_path / 'perflogs'),
               CG_RESULTS_DB=str(tmp_path / 'out' / 'results.db'))
    cp = subprocess.run(reframe_cmd() + [
        '-C', os.path.join(ROOT, 'config', 'settings.py'), *argv, '-l'],
        capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    out = cp.stdout + cp.stderr
    assert cp.returncode != 0 and 'Traceback' not in out, out
    errors = [ln for ln in out.splitlines() if 'ERROR' in ln]
    assert len(errors) == 1 and why in errors[0], out
    # nothing says the unknown system was chosen
    assert 'chosen with' not in out


def test_sweep_says_a_syntax_error_in_settings_in_one_line(tmp_path):
    """ReFrame prints its own traceback for a syntax error in the file it
    is given; ``clustergate sweep`` (the first step after adding a site)
    says it in one line, exit status 1 (sweep checks the configuration:
    a broken one is what it found)."""
    cfg = tmp_path / 'config'
    shutil.copytree(os.path.join(ROOT, 'config'), cfg)
    settings = cfg / 'settings.py'
    settings.write_text(settings.read_text() + '\nx = (\n')
    cp = subprocess.run([sys.executable, '-m', 'clustergate.cli', 'sweep',
                         '-C', str(settings)], capture_output=True,
                        text=True, cwd=ROOT, timeout=300,
                        env=dict(os.environ, SLURM_CONF=''))
    assert cp.returncode == 1, cp.stdout + cp.stderr
    assert 'Traceback' not in cp.stderr, cp.stderr
    lines = cp.stderr.strip().splitlines()
    assert lines == [lines[0]] and lines[0].startswith(
        f'clustergate sweep: failed to load configuration: {settings}: '
        f"SyntaxError: '(' was never closed"), cp.stderr
