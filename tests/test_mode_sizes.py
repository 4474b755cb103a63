"""The ci and nightly modes do not grow with the cores of a node: the
``localhost`` system listed (``-lC``) as if it had 2, 16 and 128 cores
(``CG_LOCALHOST_CORES``), and the sweeps ``clustergate site init``
writes for recorded sites, take a handful of ppn values (1, 2, half and
all cores), not every value up to the cores. The listing itself stays
quick: the acceptance axis is the powers of two, half and all cores, not
1..cores (ReFrame loads it in every mode)."""

import os
import runpy
import subprocess

import pytest

from conftest import ROOT, isolated_env, reframe_cmd
from test_site_init import LMOD_CMD, init, project_copy

from clustergate.planning import modesize

#: ci test cases listed on 2, 16 and 128 cores: ppn 1 and 2, one MPI
#: (before the modes were sized, 16 cores generated 2,097: every ppn of
#: 1..16; before ci took one MPI, 27 cases)
CI_CASES_2_CORES = 22


def listed(tmp_path, cores, mode):
    env = dict(isolated_env(os.path.join(ROOT, 'config', 'references'),
                            tmp_path), CG_LOCALHOST_CORES=str(cores))
    res = subprocess.run(reframe_cmd() + [
        '-C', os.path.join(ROOT, 'config', 'settings.py'), '--system',
        'localhost', '--mode', mode, '-lC'], capture_output=True, text=True,
        env=env, timeout=300, cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout.splitlines()


@pytest.fixture(scope='module')
def sizes(tmp_path_factory):
    out = {}
    for cores in (2, 16, 128):
        for mode in ('ci', 'nightly'):
            lines = listed(tmp_path_factory.mktemp(f'l{cores}{mode}'),
                           cores, mode)
            ppn = {int(w.split('=')[1]) for line in lines
                   if line.startswith('- ') for w in line.split()
                   if w.startswith(('%ppn=', '%hpcc.ppn='))}
            out[cores, mode] = (modesize.listed_size(lines, mode), ppn)
            out[cores, mode, 'lines'] = lines
            out[cores, mode, 'said'] = next(
                (line for line in lines if line.startswith('clustergate: ')
                 and 'cost model' in line), '')
    return out


@pytest.mark.parametrize('cores', [2, 16, 128])
def test_localhost_ci_is_the_same_few_cases_on_any_node(sizes, cores):
    size, ppn = sizes[cores, 'ci']
    assert ppn == {1, 2}
    # the listing says its size, against the mode's budget
    assert f'clustergate: {CI_CASES_2_CORES} test case(s), about ' in \
        sizes[cores, 'ci', 'said']
    assert "mode ci's budget: 30 cases, 15 min" in sizes[cores, 'ci', 'said']
    assert 'OVER' not in sizes[cores, 'ci', 'said']
    assert size.cases == CI_CASES_2_CORES <= modesize.BUDGETS['ci'].cases
    assert size.within(modesize.BUDGETS['ci']), size
    # the cost model's minutes do not grow with the cores either
    assert size.minutes == pytest.approx(sizes[2, 'ci'][0].minutes)
    # one MPI a check: the first of localhost's environments, except
    # where a benchmark's source serves another (IMB: Intel MPI's wheel)
    envs = {}
    for line in sizes[cores, 'ci', 'lines']:
        if line.startswith('- '):
            envs.setdefault(line.split()[1], set()).add(
                line.rsplit('+', 1)[1])
    assert all(len(e) == 1 for e in envs.values()), envs
    assert envs['MemoryStrided'] == {'openmpi'}


@pytest.mark.parametrize('cores, ppn', [(2, {1, 2}), (16, {1, 2, 8, 16}),
                                        (128, {1, 2, 64, 128})])
def test_localhost_nightly_takes_a_handful_within_its_budget(sizes, cores,
                                                             ppn):
    size, got = sizes[cores, 'nightly']
    assert got == ppn
    assert size.within(modesize.budget('nightly')), size
    # 16 and 128 cores: the same number of cases
    assert size.cases == sizes[16, 'nightly'][0].cases or cores == 2


def test_handful():
    assert modesize.ppn_axis(2) == [1, 2]
    assert modesize.ppn_axis(16) == [1, 2, 4, 8, 16]
    assert modesize.ppn_axis(6) == [1, 2, 3, 4, 6]
    assert modesize.ppn_axis(1) == [1]
    assert modesize.handful(range(1, 17)) == [1, 2, 16, 8]
    assert modesize.handful([1, 2, 4, 8, 16, 32, 64, 128]) == [1, 2, 128,
                                                               64]
    assert modesize.handful([1, 2, 4, 8, 12]) == [1, 2, 12, 4]
    assert modesize.handful([1]) == [1]
    assert modesize.mode_ppn(range(1, 129), 'ci') == [1, 2]
    assert modesize.mode_ppn(range(1, 5), 'acceptance') == [1, 2, 3, 4]


@pytest.mark.parametrize('kind, cores', [('ib-ucx-tree', 128),
                                         ('libfabric', 128),
                                         ('emusite', 2)])
def test_site_init_nightly_takes_a_handful(tmp_path, kind, cores):
    root = project_copy(tmp_path)
    init(root, kind, 'site')
    mod = runpy.run_path(str(root / 'config' / 'systems' / 'site.py'))
    for part in mod['site_configuration']['systems'][0]['partitions']:
        sweep = part['extras']['sweep']
        top = part['extras']['cores_per_node']
        assert sweep['ci']['ppn'] == [1]
        assert sweep['nightly']['ppn'] == sorted({1, 2, top // 2, top}
                                                 & set(sweep['ppn']) or
                                                 {1})
        assert len(sweep['nightly']['ppn']) <= 4
    assert max(part['extras']['cores_per_node'] for part in
               mod['site_configuration']['systems'][0]['partitions']) == \
        cores


def site_listing(tmp_path, kind, mode, *extra):
    """The ``-lC`` listing of ``mode`` of the system that ``site init``
    writes for the recorded site ``kind``."""
    root = project_copy(tmp_path)
    init(root, kind, 'site')
    os.symlink(os.path.join(ROOT, 'checks'), root / 'checks')
    env = dict(isolated_env(root / 'config' / 'references', root / 'out'),
               LMOD_CMD=LMOD_CMD)
    res = subprocess.run(reframe_cmd() + [
        '-C', str(root / 'config' / 'settings.py'), '--system', 'site',
        '--mode', mode, '-lC', *extra], capture_output=True, text=True,
        env=env, timeout=600, cwd=tmp_path)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return res.stdout.splitlines()


@pytest.mark.parametrize('kind', ['emusite', 'ib-ucx-tree'])
def test_site_init_ci_fits_its_budget(tmp_path, kind):
    # 12 nodes in 4 leaves, 3 MPIs, 2 fabrics, 2 partitions: every MPI
    # made 66 cases; ci takes one per partition
    lines = site_listing(tmp_path, kind, 'ci')
    size = modesize.listed_size(lines, 'ci')
    assert 0 < size.cases and size.within(modesize.BUDGETS['ci']), size
    # each point under one environment per partition: one that can serve
    # it (site init writes Debian's hpcc for OpenMPI only and IMB from
    # the Intel MPI wheel for Intel MPI only, so a partition's ci may use
    # two environments, never two for one point)
    cases = [(line.split(' @', 1)[0], line.split('@', 1)[1].split('+')[0],
              line.rsplit('+', 1)[1]) for line in lines
             if line.startswith('- ')]
    points = {(name, part) for name, part, _ in cases}
    assert len(points) == len(cases), sorted(cases)
    if kind == 'emusite':
        hpcc = {env for name, _, env in cases if name.startswith('- Hpcc')}
        assert hpcc == {'openmpi-4_1_4'}, hpcc
    said = next(line for line in lines if line.startswith('clustergate: '))
    assert 'OVER' not in said, said


@pytest.mark.parametrize('kind', ['emusite', 'ib-ucx-tree'])
def test_site_init_nightly_is_one_rotation_night_within_its_budget(tmp_path,
                                                                   kind):
    # without a rotation the 12-node site's nightly was a fixed subset of
    # 1,188 cases, 21 hours by the cost model; its partitions now share
    # the night's budget in a rotation of the whole acceptance space
    lines = site_listing(tmp_path, kind, 'nightly')
    size = modesize.listed_size(lines, 'nightly')
    assert 0 < size.cases and size.within(modesize.BUDGETS['nightly']), size
    said = next(line for line in lines if line.startswith('clustergate: '))
    assert 'OVER' not in said, said
    mod = runpy.run_path(str(tmp_path / 'proj' / 'config' / 'systems' /
                             'site.py'))
    parts = mod['site_configuration']['systems'][0]['partitions']
    shares = [p['extras']['rotation']['budget_min'] for p in parts]
    assert sum(shares) <= modesize.BUDGETS['nightly'].minutes, shares


def test_site_init_ci_keeps_the_environments_asked_for(tmp_path):
    lines = site_listing(tmp_path, 'emusite', 'ci', '-S',
                         'valid_prog_environs=mpich-4_0_2,openmpi-4_1_4')
    envs = {line.rsplit('+', 1)[1] for line in lines
            if line.startswith('- ')}
    assert envs == {'mpich-4_0_2', 'openmpi-4_1_4'}


@pytest.mark.parametrize('argv, chooses', [
    (['reframe', '--mode', 'ci', '-r'], False),
    (['reframe', '--mode', 'ci', '-S', 'num_tasks=2', '-r'], False),
    (['reframe', '--mode', 'ci', '-p', 'intelmpi', '-r'], True),
    (['reframe', '--mode', 'ci', '-pintelmpi', '-r'], True),
    (['reframe', '--mode', 'ci', '--prgenv=intelmpi', '-r'], True),
    (['reframe', '--mode', 'ci', '-S', 'valid_prog_environs=a', '-r'], True),
    (['reframe', '--mode', 'ci', '-S', 'Imb.valid_prog_environs=a'], True)])
def test_a_command_line_that_chooses_environments_keeps_them(argv, chooses):
    from clustergate.rfm.point import modes
    assert modes._chooses_environs(argv) is chooses
    assert modes.session_mode(argv) == 'ci'
