"""Which system a session runs on: named, or matched by a site's hostname
pattern; localhost's catch-all only while no site system is configured.
The README's main command (localhost on this machine) stays valid."""

import os
import subprocess

import pytest

from clustergate.rfm import syschoice
from conftest import ROOT, reframe_cmd

LOCAL = {'name': 'localhost', 'hostnames': ['.*']}
EMU = {'name': 'emucluster', 'hostnames': ['^cgemu-never$']}


def site(pattern=r'^login\d+$'):
    return {'name': 'mysite', 'hostnames': [pattern]}


def chosen(systems, argv=(), env=None, host='vm'):
    systems = [dict(s) for s in systems]
    syschoice.restrict_localhost(systems)
    return syschoice.choose(systems, ['reframe', *argv], env or {}, host)


def test_only_embedded_systems_run_localhost_by_its_pattern():
    assert chosen([EMU, LOCAL]) == (
        "system localhost: no site system is configured (only emucluster, "
        "localhost), hostname 'vm'")


def test_a_site_system_is_chosen_by_its_pattern():
    assert chosen([EMU, site(), LOCAL], host='login3') == (
        "system mysite: hostname 'login3' matches its pattern "
        "'^login\\\\d+$'")


def test_a_site_system_ends_the_catch_all():
    with pytest.raises(syschoice.NoSystem) as err:
        chosen([EMU, site(), LOCAL], host='laptop')
    assert str(err.value) == (
        "no system for host 'laptop': it matches none of the site systems' "
        "hostnames (mysite '^login\\\\d+$'); choose one with --system NAME "
        "or RFM_SYSTEM=NAME (--system localhost runs on this machine alone)")


@pytest.mark.parametrize('argv,env,how', [
    (['--system', 'localhost'], {}, '--system localhost'),
    (['--system=localhost:local'], {}, '--system localhost:local'),
    ([], {'RFM_SYSTEM': 'localhost'}, 'RFM_SYSTEM=localhost'),
])
def test_named_systems_win(argv, env, how):
    assert chosen([EMU, site(), LOCAL], argv, env, host='laptop') == \
        f'system localhost: chosen with {how}'


def test_the_command_line_wins_over_the_environment():
    assert chosen([site(), LOCAL], ['--system', 'mysite'],
                  {'RFM_SYSTEM': 'localhost'}) == \
        'system mysite: chosen with --system mysite'


def test_the_readme_command_says_localhost_and_why(tmp_path):
    # the README's main command, listed instead of run: this machine's
    # configuration has only the embedded systems
    env = {k: v for k, v in os.environ.items() if k != 'RFM_SYSTEM'}
    env.update(SLURM_CONF='', CG_DEBUG_LOG=str(tmp_path / 'rf.log'),
               CG_PERFLOG_DIR=str(tmp_path / 'perflogs'),
               CG_RESULTS_DB=str(tmp_path / 'results.db'))
    res = subprocess.run(
        reframe_cmd() + ['-C', os.path.join(ROOT, 'config', 'settings.py'),
                         '--mode', 'nightly', '-l'],
        capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr
    host = __import__('socket').gethostname()
    assert res.stdout.splitlines()[0] == (
        f'clustergate: system localhost: no site system is configured '
        f'(only emucluster, localhost), hostname {host!r}')


def test_with_a_site_system_localhost_matches_no_host():
    import re
    systems = [dict(EMU), site(), dict(LOCAL)]
    syschoice.restrict_localhost(systems)
    local = next(s for s in systems if s['name'] == 'localhost')
    assert not [p for p in local['hostnames'] for h in ('vm', 'laptop', '')
                if re.match(p, h)]
    # without one, it still matches any host
    systems = [dict(EMU), dict(LOCAL)]
    syschoice.restrict_localhost(systems)
    assert systems[1]['hostnames'] == ['.*']


def test_an_active_system_says_why_its_pattern_matches():
    emu = {'name': 'emucluster', 'hostnames': ['.*']}
    systems = [emu, dict(LOCAL)]
    line = syschoice.choose(systems, ['reframe'], {}, 'vm',
                            {'emucluster': "SLURM_CONF is the emulated "
                                           "cluster's slurm.conf"})
    assert line == ("system emucluster: hostname 'vm' matches its pattern "
                    "'.*' (SLURM_CONF is the emulated cluster's slurm.conf)")
