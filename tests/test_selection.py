"""A session that selects no test case is red and says why in one line, in
every mode and for every action (run, dry run, listing); real ReFrame
sessions on localhost that stop before running anything."""

import os
import re
import shutil
import subprocess

import pytest

from clustergate.planning import selection
from conftest import ROOT, reframe_cmd

ANSI = re.compile(r'\x1b\[[0-9;]*m')


def session(tmp_path, *args, config=None):
    """ReFrame's exit status, its output without colours, and the
    'Generated N test case(s)' count of its log."""
    log = tmp_path / 'rf.log'
    env = {k: v for k, v in os.environ.items() if k != 'RFM_SYSTEM'}
    env.update(SLURM_CONF='', CG_DEBUG_LOG=str(log),
               CG_PERFLOG_DIR=str(tmp_path / 'perflogs'),
               CG_RESULTS_DB=str(tmp_path / 'results.db'))
    cfg = config or os.path.join(ROOT, 'config', 'settings.py')
    res = subprocess.run(reframe_cmd() + ['-C', str(cfg), *args],
                         capture_output=True, text=True, env=env,
                         timeout=600, cwd=str(tmp_path))
    gen = re.search(r'Generated (\d+) test case', log.read_text())
    return (res.returncode, ANSI.sub('', res.stdout + res.stderr),
            int(gen[1]) if gen else None)


def last_line(out):
    return out.rstrip('\n').splitlines()[-1]


@pytest.mark.parametrize('mode', [None, 'ci', 'nightly', 'acceptance'])
def test_a_name_matching_nothing_fails_the_run_in_every_mode(tmp_path, mode):
    opts = ['--mode', mode] if mode else []
    code, out, gen = session(tmp_path, *opts, '-n', 'NoSuchTest', '-r')
    assert code == 1, out[-2000:]
    what = f', mode {mode}' if mode else ''
    assert last_line(out) == (
        f'nothing selected: system localhost{what}, -n NoSuchTest: {gen} '
        f'test case(s) generated, none left after filtering by name')
    assert gen > 0


def test_a_mode_without_the_check_fails_the_dry_run(tmp_path):
    # Barrier exists on localhost, but it is no ci test here
    code, out, gen = session(tmp_path, '--mode', 'ci', '-n', '^Barrier',
                             '--dry-run')
    assert code == 1, out[-2000:]
    assert last_line(out) == (
        f'nothing selected: system localhost, mode ci, -n ^Barrier: {gen} '
        f'test case(s) generated, none left after filtering by tags')


def test_an_empty_listing_is_red_too(tmp_path):
    code, out, gen = session(tmp_path, '-t', 'nosuchtag', '-l')
    assert code == 1
    assert 'Found 0 check(s)' in out
    assert last_line(out) == (
        f'nothing selected: system localhost, -t nosuchtag: {gen} test '
        f'case(s) generated, none left after filtering by tags')


def test_a_listing_that_finds_checks_stays_green(tmp_path):
    code, out, _ = session(tmp_path, '-n', 'RightShift', '-l')
    assert code == 0, out[-2000:]
    assert 'nothing selected' not in out


def test_a_system_without_test_cases_names_its_partition(tmp_path):
    # a partition that declares no sweep (a login partition): no check
    # has a case there; the line says which partition lacks what
    cfg = tmp_path / 'config'
    shutil.copytree(os.path.join(ROOT, 'config'), cfg,
                    ignore=shutil.ignore_patterns('__pycache__'))
    (cfg / 'systems' / 'zz_login.py').write_text(
        'site_configuration = {"systems": [{"name": "z", "hostnames": '
        '["^never$"], "partitions": [{"name": "login", "scheduler": "local",'
        ' "launcher": "local", "environs": ["builtin"]}]}]}\n')
    code, out, gen = session(tmp_path, '--system', 'z', '-c',
                             os.path.join(ROOT, 'checks'), '-R', '-l',
                             config=cfg / 'settings.py')
    assert code == 1, out[-2000:]
    assert gen == 0
    checks = os.path.join(ROOT, 'checks')
    assert last_line(out) == (f'nothing selected: system z, -c {checks}: no '
                              f'check has a test case on z: z:login '
                              f'declares no extras.sweep')


# -- the pieces -------------------------------------------------------------

LOG = '''\
[2026-11-23T22:57:45.557545] verbose: reframe: Loaded 397 test(s)
[2026-11-23T22:57:46.015204] verbose: reframe: Generated 331 test case(s)
[2026-11-23T22:57:46.017781] verbose: reframe: Filtering test cases(s) by name: 12 remaining
[2026-11-23T22:57:46.017957] verbose: reframe: Filtering test cases(s) by tags: 0 remaining
[2026-11-23T22:57:46.018066] verbose: reframe: Filtering test cases(s) by other attributes: 0 remaining
[2026-11-23T22:57:46.060708] verbose: reframe: Final number of test cases: 0
'''


def test_stages_and_the_filter_that_emptied_the_selection(tmp_path):
    log = tmp_path / 'rf.log'
    log.write_text(LOG)
    counts = selection.stages(str(log))
    assert counts == [('generated', 331), ('by name', 12), ('by tags', 0),
                      ('by other attributes', 0), ('final', 0)]
    argv = ['reframe', '-C', 'config/settings.py', '--mode=nightly', '-n',
            'Npb', '-x', 'NpbFT', '--dry-run']
    assert selection.nothing_selected(counts, 'mysite', argv) == (
        'nothing selected: system mysite, mode nightly, -n Npb, -x NpbFT: '
        '331 test case(s) generated, none left after filtering by tags')


def test_a_selection_with_cases_is_not_reported(tmp_path):
    log = tmp_path / 'rf.log'
    log.write_text(LOG.replace('cases: 0', 'cases: 3'))
    counts = selection.stages(str(log))
    assert selection.nothing_selected(counts, 's', ['reframe', '-r']) is None
    # a session that stopped before selecting says nothing either
    assert selection.nothing_selected([], 's', ['reframe', '-r']) is None


def test_only_selecting_actions_count():
    assert selection.is_selecting(['reframe', '--mode', 'ci', '-r'])
    assert selection.is_selecting(['reframe', '--list=C'])
    assert not selection.is_selecting(['reframe', '--show-config'])


@pytest.mark.parametrize('action', ['-r', '-l'])
def test_a_session_whose_check_files_all_fail_to_import_is_red(tmp_path,
                                                                action):
    # no clustergate check loads (a broken base module does this to every
    # check file), so nothing in the checks can arm the end of the
    # session: ReFrame itself says 'Ran 0/0 ... PASSED' and exits 0
    checks = tmp_path / 'checks'
    checks.mkdir()
    (checks / 'broken.py').write_text('import clustergate.no_such_module\n')
    code, out, gen = session(tmp_path, '-c', str(checks), action)
    assert code == 1, out[-2000:]
    assert last_line(out).startswith(
        f'nothing selected: system localhost, -c {checks}: '), out[-2000:]
