"""``-S valid_prog_environs=...`` narrows every family to the environments
named (ReFrame 4.10's -p does not combine with --mode; -S is the way)."""

import os
import re
import subprocess

import pytest

from conftest import ROOT, reframe_cmd


def _listed_cases(*args):
    cmd = reframe_cmd() + ['-C', os.path.join(ROOT, 'config', 'settings.py'),
                           '-c', os.path.join(ROOT, 'checks'), '-R',
                           '-lC', *args]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, SLURM_CONF=''))
    assert res.returncode == 0, res.stderr
    cases = re.findall(r'^- (\w+) .*@(\S+):(\S+)\+(\S+)$', res.stdout,
                       re.MULTILINE)
    assert cases, res.stdout[-2000:]
    return cases


@pytest.mark.parametrize('environ', ['openmpi', 'intelmpi'])
def test_every_family_keeps_the_chosen_environment(environ):
    default = _listed_cases()
    if environ not in {env for *_, env in default}:
        pytest.skip(f'no {environ} environment on this machine')

    chosen = _listed_cases('-S', f'valid_prog_environs={environ}')
    others = sorted({(name, env) for name, _, _, env in chosen
                     if env != environ})
    assert not others, others
    # ...and no family vanished: every check listed by default that can
    # run in this environment is still there
    names = {name for name, *_ in chosen}
    assert {name for name, *_, env in default if env == environ} <= names
