"""Structure checks for the Spack environments under spack-env/.

Spack itself cannot run in CI (no registry serves it), so these tests
load the YAML with PyYAML and check what the build depends on: the specs,
the external OpenMPI and gcc, the target requirement and the includes.
"""

import os
import re
from pathlib import Path

import pytest
import yaml

from clustergate.siteinit import spackenv

ROOT = Path(__file__).resolve().parent.parent / 'spack-env'
COMMON = ROOT / 'common'
ENVS = sorted(ROOT.glob('*/spack.yaml'))

EXPECTED_SPECS = {
    'npb': 'npb@3.4.1 implementation=mpi names=bt,cg,ep,ft,is,lu,mg,sp '
           'classes=A,B,C',
    'intel-mpi-benchmarks': 'intel-mpi-benchmarks@2021.7',
    'osu-micro-benchmarks': 'osu-micro-benchmarks@7.5.1',
}
LLC_BYTES = 32 * 1024 ** 2


def load(path):
    with open(path) as f:
        return yaml.safe_load(f)


def merged_common():
    """Merge every YAML file of spack-env/common into one dict by section."""
    data = {}
    for path in sorted(COMMON.glob('*.yaml')):
        for section, body in load(path).items():
            data.setdefault(section, {}).update(body)
    return data


def include_paths(env_file):
    """Return (path, optional) of each include entry of an environment."""
    out = []
    for entry in load(env_file)['spack'].get('include', []):
        if isinstance(entry, str):
            out.append((entry, False))
        else:
            out.append((entry['path'], bool(entry.get('optional', False))))
    return out


def test_systems_present():
    assert {p.parent.name for p in ENVS} >= {'localhost', 'emucluster'}


@pytest.mark.parametrize('env_file', ENVS, ids=lambda p: p.parent.name)
def test_specs(env_file):
    spack = load(env_file)['spack']
    specs = spack['specs']
    by_name = {s.split('@')[0].split()[0]: s for s in specs}
    for name, spec in EXPECTED_SPECS.items():
        assert by_name[name] == spec
    stream = by_name['stream']
    assert '+openmp' in stream
    size = int(re.search(r'stream_array_size=(\d+)', stream).group(1))
    # Three arrays of doubles, each well above the last-level cache.
    assert size * 8 >= 4 * LLC_BYTES


@pytest.mark.parametrize('env_file', ENVS, ids=lambda p: p.parent.name)
def test_view_and_unify(env_file):
    spack = load(env_file)['spack']
    assert spack['view'] is True
    assert spack['concretizer']['unify'] is True


@pytest.mark.parametrize('env_file', ENVS, ids=lambda p: p.parent.name)
def test_includes_exist(env_file):
    paths = include_paths(env_file)
    assert ('../common', False) in paths
    for path, optional in paths:
        if optional:
            # Site overrides come from the environment; they must stay
            # optional so an unset variable does not break the build.
            assert path.startswith('$')
            continue
        target = (env_file.parent / path).resolve()
        assert target.exists(), f'{env_file}: include {path} does not exist'


def test_common_openmpi_external():
    packages = merged_common()['packages']
    openmpi = packages['openmpi']
    assert openmpi['buildable'] is False
    assert openmpi['externals'] == [{'spec': 'openmpi@4.1.4',
                                     'prefix': '/usr'}]
    assert packages['mpi']['require'] == 'openmpi'


def test_common_gcc_external_compiler():
    gcc = merged_common()['packages']['gcc']
    (ext,) = gcc['externals']
    assert ext['spec'].startswith('gcc@12.2')
    assert ext['prefix'] == '/usr'
    compilers = ext['extra_attributes']['compilers']
    assert compilers == {'c': '/usr/bin/gcc', 'cxx': '/usr/bin/g++',
                         'fortran': '/usr/bin/gfortran'}


def test_common_target_requirement():
    require = merged_common()['packages']['all']['require']
    require = [require] if isinstance(require, str) else require
    assert 'target=x86_64' in require


def test_common_install_tree_outside_env():
    tree = merged_common()['config']['install_tree']
    assert tree['root'] and not tree['root'].startswith('.')
    assert '{hash' in tree['projections']['all']


def test_no_inline_externals_in_envs():
    # Externals live in common/ (or a site scope) only: two copies drift.
    for env_file in ENVS:
        assert 'packages' not in load(env_file)['spack'], env_file


def test_all_yaml_files_load():
    for path in ROOT.rglob('*.yaml'):
        assert isinstance(load(path), dict), path
    assert os.path.isdir(COMMON)


@pytest.mark.parametrize('mpis', [
    [{'family': 'openmpi', 'version': '4.1.4', 'prefix': '/usr',
      'source': 'which: /usr/bin/mpicc.openmpi'}],
    [{'family': 'mpich', 'module': 'mpich/4.2.1', 'version': '4.2.1',
      'source': 'module -t avail: mpich/4.2.1'}],
], ids=['openmpi-wrapper', 'mpich-module'])
def test_site_init_writes_the_specs_of_the_tracked_environments(mpis):
    # Concretized --fresh with Spack 1.1, unpinned specs built NPB classes
    # S,W,A-F and STREAM with stream_array_size=none (10M elements).
    desc = {'name': 'newsite', 'mpis': mpis}
    written = yaml.safe_load(spackenv.spack_env(desc))['spack']
    tracked = load(ROOT / 'localhost' / 'spack.yaml')['spack']
    assert written['specs'] == tracked['specs']
    assert ('../common', False) in [
        (e, False) if isinstance(e, str) else (e['path'], e['optional'])
        for e in written['include']]
