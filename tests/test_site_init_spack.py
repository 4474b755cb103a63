"""``clustergate site init`` reads the site's Spack: the MPI providers of
``spack find --json`` (recorded from a real Spack, see the fixture's
source line) become environments that load them and entries of the
written Spack environment, never twice what a module or a system wrapper
offers already."""

import ast
import json
import runpy

import pytest

from test_site_init import init, project_copy, recorded, runner_for

from clustergate.commands import site_cmd as site
from clustergate.siteinit import discover
from clustergate.siteinit import siteconfig, spackenv

#: the flat site of Debian's system MPIs (test_site_init)
FLAT = 'no-topology'


def spack_text():
    """The recorded Spack database (tests/fixtures/site-init/spack):
    Debian's OpenMPI registered as an external at /usr."""
    return recorded('spack', 'spack-find')[1]


def record(name):
    return next(r for r in json.loads(spack_text()) if r['name'] == name)


def with_spack(kind, text):
    """The recordings of ``kind``, with ``text`` as what its
    ``spack find --json`` printed."""
    base = runner_for(kind)

    def run(name, argv):
        return (0, text) if name == 'spack-find' else base(name, argv)

    return run


def test_spack_find_json_gives_the_mpi_providers():
    found = discover.spack_mpis(spack_text())
    assert found == [{'package': 'openmpi', 'family': 'openmpi',
                      'version': '4.1.4', 'hash': record('openmpi')['hash'],
                      'external': True, 'prefix': '/usr', 'modules': []}]
    # a record of another package is no MPI
    other = dict(record('openmpi'), name='hwloc')
    assert discover.spack_mpis(json.dumps([other])) == []
    assert discover.spack_mpis('[]') == []


@pytest.mark.parametrize('text', ['==> Error: no such command', '{"a": 1}',
                                  '["openmpi"]'])
def test_output_that_is_not_spack_json_is_a_note(text):
    out = {'spack-find': discover.ProbeOutput(0, text)}
    desc = discover.describe('x', out)
    assert desc['mpis'] == []
    assert len(desc['notes']) == 1
    assert desc['notes'][0].startswith(
        'spack-find: not spack find --json output')


def test_a_spack_external_is_an_environment_and_an_external(tmp_path):
    # the InfiniBand site offers its MPIs as modules, none as OpenMPI 4.1.4
    root = project_copy(tmp_path)
    init(root, 'ib-ucx-tree', 'ibspack',
         runner=with_spack('ib-ucx-tree', spack_text()))
    path = root / 'config' / 'systems' / 'ibspack.py'
    envs = {e['name']: e for e in runpy.run_path(str(path))[
        'site_configuration']['environments']}
    ompi = record('openmpi')['hash']
    env = envs['spack-openmpi-4_1_4']
    assert env['prepare_cmds'] == [f'eval "$(spack load --sh /{ompi})"']
    assert env['extras']['mpi_family'] == 'openmpi'
    assert 'mpi' in env['features'] and 'modules' not in env
    src = f'# spack find --json: openmpi@4.1.4 /{ompi[:7]}, external at /usr'
    assert src in path.read_text()
    spack = (root / 'spack-env' / 'ibspack' / 'spack.yaml').read_text()
    assert f'      {src}\n      - spec: openmpi@4.1.4\n        prefix: /usr' \
        in spack


def test_what_a_wrapper_or_module_offers_is_not_offered_twice(tmp_path):
    # the flat site has Debian's OpenMPI at /usr as its system wrapper
    root = project_copy(tmp_path)
    init(root, FLAT, 'flat', runner=with_spack(FLAT, spack_text()))
    text = (root / 'config' / 'systems' / 'flat.py').read_text()
    assert 'spack-openmpi' not in text and 'which: /usr/bin/mpicc.openmpi' \
        in text
    # a module of the same package and version
    mods = [{'module': 'openmpi/4.1.4', 'family': 'openmpi',
             'version': '4.1.4'}]
    found = discover.spack_mpis(spack_text())
    assert discover.spack_mpi_entries(found, mods, []) == []
    assert len(discover.spack_mpi_entries(found, [], [])) == 1


def test_a_mpi_built_by_spack_is_loaded_and_not_an_external():
    # the parsed record of an MPI the site's Spack built (no external)
    built = [{'package': 'mpich', 'family': 'mpich', 'version': '4.2.1',
              'hash': 'abcdefghijklmnopqrstuvwxyz234567', 'external': False,
              'prefix': None, 'modules': []}]
    mpis = discover.spack_mpi_entries(built, [], [], '/apps/spack/bin/spack')
    desc = {'name': 's', 'mpis': mpis, 'notes': [], 'partitions': [],
            'interconnects': [], 'modules_system': 'nomod'}
    text = siteconfig.system_module(desc)
    start = text.index('_environments.append(') + len('_environments.append(')
    env = ast.literal_eval(text[start:text.index(')\n', start)])
    assert env['prepare_cmds'] == [
        'eval "$(/apps/spack/bin/spack load --sh '
        '/abcdefghijklmnopqrstuvwxyz234567)"']
    assert env['name'] == 'spack-mpich-4_2_1'
    assert env['extras']['mpi_family'] == 'mpich'
    spack = spackenv.spack_env(desc)
    assert '    # spack find --json: mpich@4.2.1 /abcdefg, installed by ' \
        'Spack: built by this Spack, not an external' in spack
    assert '- spec: mpich' not in spack and 'prefix: None' not in spack
    assert 'no MPI found' not in spack
    # Cray MPICH is its own package (not mpich) with its own srun plugin
    cray = discover.spack_mpi_entries([dict(built[0], package='cray-mpich')],
                                      [], [])[0]
    assert spackenv.spack_package(cray) == 'cray-mpich'
    assert "'srun_options': ['--mpi=cray_shasta']" in \
        siteconfig.system_module(dict(desc, mpis=[cray]))


def test_the_probe_asks_the_site_spack(tmp_path):
    assert site.spack_command({}, which=lambda n: '/usr/bin/spack') == 'spack'
    assert site.spack_command({'SPACK_ROOT': '/apps/spack'},
                              which=lambda n: None) == '/apps/spack/bin/spack'
    assert site.spack_command({}, which=lambda n: None) == 'spack'

    calls = []
    root = project_copy(tmp_path)
    init(root, FLAT, 'asked', runner=runner_for(FLAT, calls))
    assert [c for c in calls if c[1:] == ['find', '--json']]
