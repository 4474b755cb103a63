"""``clustergate cost --system NAME``: the size of the ci and nightly
modes of a configured system before a run, per partition and in all,
with the figures of the size line a ``-l`` listing prints
(clustergate.commands.cost_cmd, clustergate.planning.modesize)."""

import argparse
import io
import json
import os
import subprocess

import pytest

from conftest import BINDIR, ROOT, isolated_env, reframe_cmd

from clustergate.commands import cost_cmd as cost
from clustergate.planning import costmodel, modesize

PARTS = json.dumps([
    {'name': 'emu', 'extras': {'rotation': {'budget_min': 2}}},
    {'name': 'debug', 'extras': {}}])

LISTING = {
    'ci': ['- AllToAll %num_nodes=2 %ppn=1 /0a1b2c3d @site:emu+ompi',
           '- MemoryStrided %ppn=1 /1a1b2c3d @site:emu+ompi',
           '    ^CgProgramsBuild ~site:emu+ompi /2a1b2c3d',
           '- AllToAll %num_nodes=2 %ppn=1 /3a1b2c3d @site:debug+ompi'],
    'nightly': [
        f'- AllToAll %num_nodes=8 %ppn={p} /4a1b2c3d{p} @site:emu+{e}'
        for p in (1, 2) for e in ('ompi', 'mpich', 'impi')] + [
        '- LinkMatrix %num_nodes=12 /5a1b2c3d @site:emu+ompi',
        '- AllToAll %num_nodes=2 %ppn=1 /6a1b2c3d @site:debug+ompi'],
}


def fake_reframe(calls):
    def run(argv, **kw):
        calls.append(argv)
        if '--show-config=systems/0/partitions' in argv:
            out = 'some banner\n' + PARTS + '\n'
        else:
            out = '\n'.join(LISTING[argv[argv.index('--mode') + 1]]) + '\n'
        return subprocess.CompletedProcess(argv, 0, out, '')
    return run


def test_sizes_per_partition_against_their_budgets():
    calls = []
    lines = cost.mode_size_lines('site', 'settings.py', fake_reframe(calls))
    by = {ln.split(':', 1)[0] if 'all partitions' not in ln else
          ln.split()[0] + ' all': ln for ln in lines[1:]}
    # ci: two cases on emu, one on debug, fixtures apart
    ci_emu = modesize.listed_size(LISTING['ci'][:2], 'ci')
    assert ci_emu.cases == 2
    assert by['ci       site'].startswith('ci       site:')
    emu = [ln for ln in lines if ln.startswith('ci       site:emu:')][0]
    assert f'2 test case(s), about {ci_emu.minutes:.0f} min' in emu
    assert "mode ci's budget: 30 cases, 15 min" in emu
    assert 'OVER' not in emu
    # nightly: emu's budget is its rotation's 2 min, which 6 AllToAll
    # 8-node cases (27 s each) and a 12-node link matrix (37 s) are over;
    # debug declares no rotation: the nightly's 240 min
    night_emu = [ln for ln in lines
                 if ln.startswith('nightly  site:emu:')][0]
    assert '7 test case(s)' in night_emu
    assert ("about 3 min by the cost model (one after the other); mode "
            "nightly's budget: 2 min: OVER") in night_emu
    night_debug = [ln for ln in lines
                   if ln.startswith('nightly  site:debug:')][0]
    assert "budget: 240 min" in night_debug and 'OVER' not in night_debug
    # in all: the -l line's figures for the whole listing
    whole = modesize.listed_size(LISTING['nightly'], 'nightly')
    assert by['nightly all'].endswith(modesize.size_text(
        whole, 'test case(s)', 'nightly', modesize.BUDGETS['nightly']))
    assert [c[c.index('--mode') + 1] for c in calls if '--mode' in c] == \
        ['ci', 'nightly']


def test_sizes_use_the_cost_model_defaults():
    sizes = modesize.listed_sizes(LISTING['ci'], 'ci')
    assert set(sizes) == {'site:emu', 'site:debug'}
    assert sizes['site:debug'].minutes * 60 == pytest.approx(
        costmodel.default_case_seconds('contention', 2, 'ci'))


def _args(**kw):
    base = dict(site=None, system=None, measured=None, overhead=None,
                config='settings.py')
    base.update(kw)
    return argparse.Namespace(**base)


def test_reframe_failing_is_one_line_and_exit_2(monkeypatch):
    def run(argv, **kw):
        return subprocess.CompletedProcess(
            # ReFrame colours its error on a terminal (measured: 4.10)
            argv, 1, '', '\x1b[31mERROR: could not find a configuration '
                         'entry for the requested system: nosuch\x1b[0m\n')
    monkeypatch.setattr(cost.subprocess, 'run', run)
    out, err = io.StringIO(), io.StringIO()
    assert cost.run(_args(system='nosuch'), out, err) == 2
    assert err.getvalue().count('\n') == 1
    assert 'requested system: nosuch' in err.getvalue()
    assert '\x1b' not in err.getvalue()
    assert out.getvalue() == ''


def test_neither_a_site_nor_a_system_is_exit_2():
    err = io.StringIO()
    assert cost.run(_args(), io.StringIO(), err) == 2
    assert '--system' in err.getvalue()


def test_localhost_agrees_with_its_listing_line(tmp_path):
    """The real command on localhost: its ci line in all is the line a
    ``-lC`` listing of the ci prints."""
    env = isolated_env(os.path.join(ROOT, 'config', 'references'), tmp_path)
    res = subprocess.run([os.path.join(BINDIR, 'clustergate'), 'cost',
                          '--system', 'localhost'], capture_output=True,
                         text=True, env=env, timeout=600, cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    listing = subprocess.run(reframe_cmd() + [
        '-C', os.path.join(ROOT, 'config', 'settings.py'), '--system',
        'localhost', '--mode', 'ci', '-lC'], capture_output=True,
        text=True, env=env, timeout=300, cwd=tmp_path).stdout
    said = next(ln for ln in listing.splitlines()
                if ln.startswith('clustergate: ') and 'cost model' in ln)
    ci = next(ln for ln in res.stdout.splitlines()
              if ln.startswith('ci       all partitions: '))
    assert ci[len('ci       all partitions: '):] == \
        said[len('clustergate: '):]
    assert any(ln.startswith('nightly  localhost:local: ')
               for ln in res.stdout.splitlines())
