"""An error in a file the settings are assembled from (config/common.py,
the package they import) is one line naming the file, the line and the
cause, as ReFrame prints a ConfigError: never a traceback.

A syntax error in config/settings.py itself is ReFrame's to report: it
parses the file (``ast.parse``) before any of it runs."""

import os
import shutil
import subprocess

import pytest

from conftest import ROOT, reframe_cmd


@pytest.mark.parametrize('broken,cause', [
    ('\nPERF_TABLE = (\n', "SyntaxError: '(' was never closed"),
    ('\nraise KeyError("CG_NOTHING")\n', "KeyError: 'CG_NOTHING'"),
])
def test_an_error_in_common_is_one_line(tmp_path, broken, cause):
    cfg = tmp_path / 'config'
    shutil.copytree(os.path.join(ROOT, 'config'), cfg)
    common = cfg / 'common.py'
    common.write_text(common.read_text() + broken)
    line = len(common.read_text().splitlines())
    env = dict(os.environ, SLURM_CONF='',
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
