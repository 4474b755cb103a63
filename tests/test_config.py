"""The configuration loads, validates, orders its systems and names the
file of a broken system description."""

import os
import shutil
import subprocess

import pytest

from conftest import ROOT, reframe_cmd


def run_reframe(*args, config=None, env=None):
    cfg = config or os.path.join(ROOT, 'config', 'settings.py')
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run(reframe_cmd() + ['-C', cfg, *args],
                          capture_output=True, text=True, env=full_env,
                          timeout=300)


def load_settings(env=None):
    """site_configuration of config/settings.py, imported afresh."""
    code = ('import runpy, json; c = runpy.run_path("config/settings.py")'
            '["site_configuration"]; print(json.dumps([s["name"] for s in '
            'c["systems"]])); print(json.dumps(sorted(m["name"] for m in '
            'c["modes"])))')
    out = subprocess.run([os.path.join(os.path.dirname(reframe_cmd()[0]),
                                       'python'), '-c', code],
                         cwd=ROOT, capture_output=True, text=True,
                         env=dict(os.environ, **(env or {})), check=True)
    return [__import__('json').loads(x) for x in out.stdout.splitlines()]


def test_validates_and_shows_localhost():
    res = run_reframe('--show-config=systems/0/name',
                      env={'SLURM_CONF': ''})
    assert res.returncode == 0, res.stderr
    assert '"localhost"' in res.stdout


def test_modes_and_localhost_last():
    systems, modes = load_settings({'SLURM_CONF': ''})
    assert systems[-1] == 'localhost'
    # localhost adds options to nightly: a second entry, for it alone
    assert sorted(set(modes)) == ['acceptance', 'ci', 'nightly']


def _mode_options(mode, *args, config=None):
    import json
    res = run_reframe(*args, '--show-config=modes', config=config,
                      env={'SLURM_CONF': ''})
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout
    return next(m['options'] for m in json.loads(out[out.index('['):])
                if m['name'] == mode)


def test_a_system_adds_options_to_a_mode_on_itself_only():
    # localhost's nightly caps HPL's N (config/systems/localhost.py); the
    # emulated cluster's nightly is common.py's
    local = _mode_options('nightly')
    emu = _mode_options('nightly', '--system', 'emucluster')
    assert local == emu + ['-S', 'HpccRun.max_problem_size=1024']
    assert '--tag=nightly' in emu


def test_mode_options_naming_an_unknown_mode_is_one_line(tmp_path):
    code, out = _load_copy(tmp_path, lambda systems: (
        systems / 'zz_modes.py').write_text(
            'site_configuration = {"systems": [{"name": "z", "hostnames": '
            '["^never$"], "partitions": [{"name": "p", "scheduler": "local",'
            ' "launcher": "local", "environs": ["builtin"]}]}]}\n'
            'mode_options = {"nighly": ["-S", "x=1"]}\n'))
    assert code != 0
    line = next(ln for ln in out.splitlines() if 'zz_modes.py' in ln)
    assert line.endswith("zz_modes.py: mode_options: unknown mode 'nighly' "
                         "(config/common.py has ci, nightly, acceptance)"
                         "\x1b[0m")
    assert 'Traceback' not in out


def test_emulated_cluster_selected_when_slurm_conf_points_at_it(tmp_path):
    conf = tmp_path / 'slurm.conf'
    conf.write_text('ClusterName=cgemu\nNodeName=DEFAULT CPUs=2\n')
    systems, _ = load_settings({'SLURM_CONF': str(conf)})
    if 'emucluster' not in systems:
        pytest.skip('no emulated cluster system configured')

    assert systems[0] == 'emucluster'
    res = run_reframe('--show-config=systems/0/name',
                      env={'SLURM_CONF': str(conf)})
    assert '"emucluster"' in res.stdout, res.stdout + res.stderr


def _load_copy(tmp_path, write):
    """Loads a copy of config/ in which ``write(systems_dir)`` changed or
    added a system file: ReFrame's exit status and its output."""
    cfg = tmp_path / 'config'
    shutil.copytree(os.path.join(ROOT, 'config'), cfg)
    write(cfg / 'systems')
    res = run_reframe('--show-config=systems/0/name',
                      config=str(cfg / 'settings.py'))
    return res.returncode, res.stdout + res.stderr


def test_broken_system_file_is_named(tmp_path):
    code, out = _load_copy(tmp_path, lambda systems: (
        systems / 'zz_broken.py').write_text(
            'site_configuration = {"systems": [{"name": "x"}]\n'))
    assert code != 0
    assert 'zz_broken.py' in out and 'SyntaxError' in out


def test_invalid_system_entry_fails_validation(tmp_path):
    code, out = _load_copy(tmp_path, lambda systems: (
        systems / 'zz_invalid.py').write_text(
            'site_configuration = {"systems": [{"name": "bad", '
            '"hostnames": "not-a-list", "partitions": []}]}\n'))
    assert code != 0
    assert 'zz_invalid.py' in out
    assert "'hostnames' must be a list" in out


def test_broken_sweep_description_is_named(tmp_path):
    def nodes_scope(systems):
        local = systems / 'localhost.py'
        local.write_text(local.read_text().replace("'scope': 'node'",
                                                   "'scope': 'nodes'"))

    code, out = _load_copy(tmp_path, nodes_scope)
    assert code != 0
    assert 'localhost.py' in out and "has scope 'nodes'" in out


def test_listing_shows_the_three_axes():
    res = run_reframe('-l', '-n', 'RightShift',
                      env={'SLURM_CONF': ''})
    assert res.returncode == 0, res.stderr
    names = [ln for ln in res.stdout.splitlines()
             if ln.startswith('- RightShift')]
    assert names, res.stdout
    for ln in names:
        for axis in ('%num_nodes=', '%ppn=', '%interconnect=',
                     '%msg_bytes='):
            assert axis in ln

    cores = os.cpu_count()
    # localhost: 1 node, ppn 2..cores (the shift needs 2 ranks: ppn=1 is
    # not a test case), shm and tcp, 3 sizes
    assert len(names) == (cores - 1) * 2 * 3
    assert not [ln for ln in names if '%ppn=1 ' in ln]


def test_loading_leaves_sys_path_intact():
    # ReFrame pops sys.path by position after loading the settings: a
    # leftover entry of ours made it drop lib-dynload (no ctypes, no polars)
    code = ('import sys, reframe.core.config as c; before = list(sys.path);'
            'c.load_config("config/settings.py"); import ctypes;'
            'assert sys.path == before, set(before) ^ set(sys.path)')
    py = os.path.join(os.path.dirname(reframe_cmd()[0]), 'python')
    res = subprocess.run([py, '-c', code], cwd=ROOT, capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stderr
