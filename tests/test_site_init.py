"""``clustergate site init`` on outputs recorded from three kinds of site
(tests/fixtures/site-init/<kind>/<probe>.txt, each opening with a line
naming its source): InfiniBand with UCX and a switch tree, libfabric, and
no topology. The generated system must load in ReFrame and sweep points."""

import argparse
import os
import shutil
import subprocess

import pytest

from conftest import BINDIR, FIXTURES, ROOT, isolated_env, reframe_cmd

from clustergate.cli import build_parser
from clustergate.commands import site_cmd as site
from clustergate.siteinit import discover

SITES = os.path.join(FIXTURES, 'site-init')
#: Debian's Lmod (package lmod): ReFrame's lmod modules system needs it
LMOD_CMD = '/usr/share/lmod/lmod/libexec/lmod'


def recorded(kind, name):
    """A recorded output without its source line, and its exit status
    (``<probe>.rc`` beside it, else 0); None when not recorded."""
    path = os.path.join(SITES, kind, f'{name}.txt')
    if not os.path.exists(path):
        return None

    with open(path) as fp:
        first, text = fp.read().split('\n', 1)
    assert first.startswith('# source: '), path
    rc_path = path[:-len('.txt')] + '.rc'
    rc = int(open(rc_path).read()) if os.path.exists(rc_path) else 0
    return rc, text


def runner_for(kind, calls=None):
    """A runner answering each probe from the recordings of ``kind``, and
    as an absent command where nothing was recorded."""
    def run(name, argv):
        if calls is not None:
            calls.append(argv)
        got = recorded(kind, name)
        return got if got is not None else (127, f'{argv[0]}: not found')

    return run


def project_copy(tmp_path):
    """A project directory to write into: config/ copied, spack-env/."""
    root = tmp_path / 'proj'
    shutil.copytree(os.path.join(ROOT, 'config'), root / 'config')
    (root / 'spack-env').mkdir()
    return root


def init(root, kind, name, **kw):
    args = argparse.Namespace(name=name, force=kw.get('force', False),
                              check=kw.get('check', False), partition=None,
                              root=str(root))
    return site.init(args, kw.get('runner') or runner_for(kind))


def load(root, name):
    """The generated system as ReFrame loads it (--system NAME)."""
    env = dict(isolated_env(root / 'config' / 'references', root / 'out'),
               LMOD_CMD=LMOD_CMD)
    res = subprocess.run(reframe_cmd() + [
        '-C', str(root / 'config' / 'settings.py'), '--system', name,
        '--show-config=systems/0'], capture_output=True, text=True, env=env,
        timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def sweep(root, name):
    env = dict(isolated_env(root / 'config' / 'references', root / 'out'),
               LMOD_CMD=LMOD_CMD)
    res = subprocess.run([os.path.join(BINDIR, 'clustergate'), 'sweep', '-C',
                          str(root / 'config' / 'settings.py'), '--system',
                          name], capture_output=True, text=True, env=env,
                         timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


# -- the parsers, on the recorded outputs ------------------------------------

def test_scontrol_parsers_read_partitions_nodes_and_switches():
    parts = discover.partitions(recorded('ib-ucx-tree',
                                         'scontrol-partition')[1])
    assert [(p['name'], p['total_nodes'], p['default']) for p in parts] == [
        ('compute', 16, True), ('gpu', 4, False), ('debug', 2, False)]
    nodes = discover.nodes(recorded('ib-ucx-tree', 'scontrol-node')[1])
    assert len(nodes) == 20
    assert nodes['gn01']['gres'] == ['gpu:a100:4']
    assert nodes['gn01']['cpus'] == 64
    assert nodes['cn016']['memory_mib'] == 515000
    assert nodes['cn001']['features'] == ['epyc7763', 'ib_hdr']
    assert nodes['cn001']['partitions'] == ['compute', 'debug']
    switches = discover.topology(recorded('ib-ucx-tree',
                                          'scontrol-topology')[1])
    assert [(s['name'], s['level']) for s in switches] == [
        ('leaf1', 0), ('leaf2', 0), ('leaf3', 0), ('spine1', 1)]
    assert discover.topology(recorded('no-topology',
                                      'scontrol-topology')[1]) == []
    threads = discover.nodes(recorded('libfabric', 'scontrol-node')[1])
    assert threads['nid001000']['threads_per_core'] == 2


def test_fabric_parsers_read_ucx_libfabric_and_links():
    ib = discover.ucx_devices(recorded('ib-ucx-tree', 'ucx_info')[1])
    assert ib == [{'md': 'mlx5_0', 'component': 'ib',
                   'transport': 'rc_verbs', 'device': 'mlx5_0:1'}]
    tcp = discover.ucx_devices(recorded('no-topology', 'ucx_info')[1])
    assert [d['device'] for d in tcp if d['transport'] == 'tcp'] == [
        'eth0', 'cgfab0', 'cgfab1', 'lo']
    provs = discover.fi_providers(recorded('libfabric', 'fi_info')[1])
    assert {'provider': 'tcp', 'stack': 'tcp;ofi_rxm', 'fabric':
            '10.77.1.0/24', 'domain': 'cgfab1', 'type': 'FI_EP_RDM'} in provs
    assert {p['provider'] for p in provs} >= {'tcp', 'shm'}
    links = {ln['name']: ln for ln in discover.ip_links(
        recorded('no-topology', 'ip-link')[1])}
    assert links['eth0'] == {'name': 'eth0', 'type': 'ether', 'up': True}
    assert not links['ifb0']['up'] and links['lo']['type'] == 'loopback'


def test_mpi_parsers_read_modules_wrappers_and_versions():
    mods = discover.lmod_modules(recorded('libfabric', 'module-avail')[1])
    assert mods == ['cray-mpich/8.1.28', 'gcc/12.2.0', 'openmpi/5.0.5']
    assert [(m['module'], m['family']) for m in discover.mpi_modules(
        mods)] == [('cray-mpich/8.1.28', 'mpich'),
                   ('openmpi/5.0.5', 'openmpi')]
    wrappers = discover.path_wrappers(recorded('no-topology', 'which')[1])
    assert [(w['family'], w['prefix']) for w in wrappers] == [
        ('openmpi', '/usr'), ('mpich', '/usr')]
    assert discover.mpi_version(recorded('no-topology',
                                         'version-openmpi')[1]) == '4.1.4'
    assert discover.mpi_version(recorded('no-topology',
                                         'version-mpich')[1]) == '4.0.2'


# -- site init on each kind of site ------------------------------------------

#: kind -> (partitions, interconnects, environments, modules system)
EXPECTED = {
    'ib-ucx-tree': (['compute', 'gpu', 'debug'], ['mlx5_0', 'shm'],
                    ['hpcx-2_18', 'mpich-4_2_1', 'openmpi-4_1_6',
                     'openmpi-5_0_3'], 'lmod'),
    'libfabric': (['standard', 'highmem'],
                  ['cgfab1', 'cgfab0', 'eth0', 'shm'],
                  ['cray-mpich-8_1_28', 'openmpi-5_0_5'], 'lmod'),
    # the emulated cluster (clustergate-lab cluster up --topology
    # leafspine): two partitions, Lmod, TCP fabrics that UCX lists
    'emusite': (['emu', 'debug'], ['fab1', 'fab0', 'fab1_ucx', 'fab0_ucx',
                                   'shm'],
                ['intel-oneapi-mpi-2021_18_1', 'mpich-4_0_2',
                 'openmpi-4_1_4'], 'lmod'),
    # ucx_info lists the interfaces: each also through UCX
    'no-topology': (['batch'], ['eth0', 'cgfab0', 'cgfab1', 'eth0_ucx',
                                'cgfab0_ucx', 'cgfab1_ucx', 'shm'],
                    ['openmpi', 'mpich'], 'nomod'),
}


@pytest.mark.parametrize('kind', sorted(EXPECTED))
def test_site_init_writes_a_system_reframe_loads_and_sweeps(tmp_path, kind):
    root = project_copy(tmp_path)
    name = 'site_' + kind.replace('-', '_')
    assert init(root, kind, name) == 0
    parts, ics, envs, modsys = EXPECTED[kind]

    import runpy
    mod = runpy.run_path(str(root / 'config' / 'systems' / f'{name}.py'))
    system = mod['site_configuration']['systems'][0]
    assert [p['name'] for p in system['partitions']] == parts
    assert system['modules_system'] == modsys
    for part in system['partitions']:
        assert list(part['extras']['interconnects']) == ics
        assert part['access'][0] == f'--partition={part["name"]}'
    got_envs = [e['name'] for e in mod['site_configuration']['environments']]
    # the probe may leave out a system MPI that does not run here
    assert set(got_envs) <= set(envs) and got_envs
    if modsys == 'nomod':
        assert len(got_envs) >= 1
    else:
        assert got_envs == envs

    shown = load(root, name)
    assert f'"name": "{name}"' in shown
    for p in parts:
        assert f'"name": "{p}"' in shown

    out = sweep(root, name)
    for p in parts:
        block = out.split(f'{name}:{p}\n', 1)[1].split('\n\n', 1)[0]
        assert any(line.rstrip().endswith(' run')
                   for line in block.splitlines()), out


def test_ib_site_uses_ucx_on_the_hca_and_the_switch_tree(tmp_path):
    root = project_copy(tmp_path)
    init(root, 'ib-ucx-tree', 'ibsite')
    text = (root / 'config' / 'systems' / 'ibsite.py').read_text()
    assert "'OMPI_MCA_pml': 'ucx', 'UCX_NET_DEVICES': 'mlx5_0:1'" in text
    assert '# ucx_info -d: memory domain mlx5_0 (component ib)' in text
    assert text.count("'topology': {'source': 'scontrol'}") == 3
    assert 'gres gpu:a100:4' in text
    assert "'memory_per_node_gib': 502" in text
    spack = (root / 'spack-env' / 'ibsite' / 'spack.yaml').read_text()
    assert '- spec: openmpi@4.1.6\n        modules: [openmpi/4.1.6]' in spack
    assert '- spec: mpich@4.2.1\n        modules: [mpich/4.2.1]' in spack
    # HPC-X 2.18 is not OpenMPI 2.18
    assert 'openmpi@2.18' not in spack
    assert '# not an external: module -t avail: hpcx/2.18' in spack
    refs = (root / 'config' / 'references' / 'ibsite.yaml').read_text()
    assert all(line.startswith('#') for line in refs.splitlines())


def test_libfabric_and_flat_sites(tmp_path):
    root = project_copy(tmp_path)
    init(root, 'libfabric', 'ofisite')
    text = (root / 'config' / 'systems' / 'ofisite.py').read_text()
    assert "_mpi.intelmpi_tcp" not in text  # no Intel MPI on that site
    assert "'cc': 'cc'" in text  # cray-mpich: Cray's compiler wrapper
    assert "'srun_options': ['--mpi=cray_shasta']" in text
    spack = (root / 'spack-env' / 'ofisite' / 'spack.yaml').read_text()
    assert '- spec: cray-mpich@8.1.28\n        modules: [cray-mpich/8.1.28]' \
        in spack
    assert '# fi_info: provider tcp;ofi_rxm, domain cgfab1' in text
    assert "'cores_per_node': 128" in text  # 256 CPUs, 2 threads a core

    init(root, 'no-topology', 'flat')
    flat = (root / 'config' / 'systems' / 'flat.py').read_text()
    assert "'topology'" not in flat
    assert 'no topology: scontrol show topology names no switch' in flat
    spack = (root / 'spack-env' / 'flat' / 'spack.yaml').read_text()
    assert '- spec: openmpi@4.1.4\n        prefix: /usr' in spack
    assert '- spec: mpich@4.0.2\n        prefix: /usr' in spack


def test_absent_probes_are_notes_and_never_overwritten(tmp_path, capsys):
    root = project_copy(tmp_path)
    calls = []
    init(root, 'ib-ucx-tree', 'ibsite',
         runner=runner_for('ib-ucx-tree', calls))
    out = capsys.readouterr().out
    assert 'note: fi_info: exit 127: srun: not found' in out
    # the compute-node probes ran on the default partition
    assert ['srun', '-N1', '-p', 'compute', 'ucx_info', '-d'] in calls
    text = (root / 'config' / 'systems' / 'ibsite.py').read_text()
    assert 'Probe fi_info: exit 127: srun: not found' in text

    path = root / 'config' / 'systems' / 'ibsite.py'
    path.write_text(text + '# edited by hand\n')
    with pytest.raises(SystemExit, match='ibsite.py exists .--force'):
        init(root, 'ib-ucx-tree', 'ibsite')
    assert path.read_text().endswith('# edited by hand\n')
    init(root, 'ib-ucx-tree', 'ibsite', force=True)
    assert not path.read_text().endswith('# edited by hand\n')


def test_no_slurm_is_one_line(tmp_path):
    root = project_copy(tmp_path)
    with pytest.raises(SystemExit, match='no partition from scontrol'):
        init(root, 'absent', 'x', runner=lambda name, argv: (
            127, f'{argv[0]}: not found'))
    assert not (root / 'config' / 'systems' / 'x.py').exists()


def test_check_lists_the_sweep(tmp_path, capsys, monkeypatch):
    root = project_copy(tmp_path)
    for key, val in isolated_env(root / 'config' / 'references',
                                 root / 'out').items():
        monkeypatch.setenv(key, val)
    monkeypatch.setenv('LMOD_CMD', LMOD_CMD)
    assert init(root, 'ib-ucx-tree', 'ibsite', check=True) == 0
    out = capsys.readouterr().out
    assert 'ibsite:debug\n' in out
    assert 'skip: needs at least 2 ranks, point has 1' in out


def test_site_init_is_a_subcommand():
    args = build_parser().parse_args(['site', 'init', 'mysite', '--check'])
    assert args.func is site.init and args.name == 'mysite' and args.check


def test_emulated_site_squeue_modules_first_and_ucx_over_tcp(tmp_path):
    root = project_copy(tmp_path)
    init(root, 'emusite', 'emusite')
    text = (root / 'config' / 'systems' / 'emusite.py').read_text()
    # no accounting (scontrol show config): the squeue backend, not sacct
    assert "'scheduler': 'squeue'" in text
    assert "'scheduler': 'slurm'" not in text
    # Debian's wrappers are on PATH too, but the site offers modules
    assert "'cc': 'mpicc.openmpi'" not in text
    assert "'modules': ['openmpi/4.1.4']" in text
    # both fabrics through UCX, verified from UCX's endpoint report; the
    # ci and the nightly measure each interface once
    for fab in ('fab0', 'fab1'):
        assert f"'openmpi': _mpi.openmpi_ucx_tcp({fab!r})" in text
        assert f"'openmpi': _mpi.ucx_tcp_verification({fab!r})" in text
    assert "'interconnects': ['fab1', 'fab0']" in text


def written_environments(root, name):
    import runpy
    mod = runpy.run_path(str(root / 'config' / 'systems' / f'{name}.py'))
    return {e['name']: e for e in mod['site_configuration']['environments']}


def test_openmpi_4_1_4_is_started_by_its_mpirun_not_srun(tmp_path):
    # OpenMPI 4.1.4 crashed in MPI_Init under srun --mpi=pmix on the
    # emulated site; the written environment starts its ranks by mpirun
    root = project_copy(tmp_path)
    init(root, 'emusite', 'emusite')
    envs = written_environments(root, 'emusite')
    ompi = envs['openmpi-4_1_4']['extras']
    assert ompi['launcher'] == 'cg-mpirun'
    assert ompi['srun_options'] == ['--mpi=pmix']
    for other in ('mpich-4_0_2', 'intel-oneapi-mpi-2021_18_1'):
        assert 'launcher' not in envs[other]['extras'], other
    text = (root / 'config' / 'systems' / 'emusite.py').read_text()
    assert '# launcher cg-mpirun: openmpi 4.1.4 crashes in MPI_Init' in text


def test_other_openmpi_versions_keep_srun(tmp_path):
    root = project_copy(tmp_path)
    init(root, 'ib-ucx-tree', 'ibsite')
    envs = written_environments(root, 'ibsite')
    for name in ('openmpi-4_1_6', 'openmpi-5_0_3'):
        assert 'launcher' not in envs[name]['extras'], name
        assert envs[name]['extras']['srun_options'] == ['--mpi=pmix']


def test_without_ucx_info_the_up_ether_links_are_the_fabrics(tmp_path):
    # the emulated site's probes, but no ucx_info on the node (no
    # ucx-utils) and no fi_info: the fabrics come from ip -j link
    kind = 'emusite'
    base = runner_for(kind)

    def run(name, argv):
        return (127, 'ucx_info: not found') if name == 'ucx_info' else \
            base(name, argv)

    root = project_copy(tmp_path)
    init(root, kind, 'noucx', runner=run)
    text = (root / 'config' / 'systems' / 'noucx.py').read_text()
    assert "# ip -j link: ether link, up in ip -j link" in text
    assert "'verify': _mpi.tcp_verification('fab0')" in text
    assert "'verify': _mpi.tcp_verification('fab1')" in text
    assert "'lo'" not in text and '_ucx' not in text


def test_a_program_behind_an_unsearchable_path_directory_is_not_found(
        monkeypatch):
    # run as the job user with root's PATH, a missing `spack` is EACCES
    # from the PATH walk (Python raises the last error), not ENOENT
    def denied(argv, **kw):
        raise PermissionError(13, 'Permission denied', argv[0])

    monkeypatch.setattr(site.subprocess, 'run', denied)
    monkeypatch.setenv('PATH', '/nonexistent-dir')
    assert site.run_command(['spack', 'find']) == (127,
                                                       'spack: not found')
    # a program that is there but may not run says why
    monkeypatch.setenv('PATH', '/bin:/usr/bin')
    assert site.run_command(['sh', '-c', 'true']) == (
        126, 'sh: Permission denied')


# -- the Spack environment of a site without OpenMPI -------------------------

#: probes answered from the MPICH-only recordings (module tree with only
#: MPICH, no Debian-named wrapper on PATH); the Slurm and fabric probes are
#: the emulated cluster's
MPICH_ONLY_PROBES = ('module-avail', 'which', 'version-openmpi',
                     'version-mpich', 'spack-find')


def mpich_only_runner(name, argv):
    got = recorded('mpich-only' if name in MPICH_ONLY_PROBES else 'emusite',
                   name)
    return got if got is not None else (127, f'{argv[0]}: not found')


def spack_merge(lower, higher):
    """A higher-precedence Spack scope over a lower one, as Spack's
    configuration docs define it: mappings merge key by key, a list is
    prepended to the lower list, any other value replaces the lower one.
    (The environment's own settings rank above the scopes it includes.)"""
    if isinstance(lower, dict) and isinstance(higher, dict):
        return {**lower, **{k: spack_merge(lower[k], v) if k in lower else v
                            for k, v in higher.items()}}
    if isinstance(lower, list) and isinstance(higher, list):
        return higher + lower
    return higher


def effective_packages(root, name):
    """``packages`` as Spack sees them in the generated environment: the
    environment's over the included spack-env/common/."""
    import yaml
    with open(os.path.join(ROOT, 'spack-env', 'common', 'packages.yaml')) \
            as fp:
        common = yaml.safe_load(fp)['packages']
    path = root / 'spack-env' / name / 'spack.yaml'
    env = yaml.safe_load(path.read_text())['spack']['packages']
    return common, env, spack_merge(common, env)


def test_mpich_only_site_requires_its_mpi_over_the_common_openmpi(tmp_path):
    root = project_copy(tmp_path)
    assert init(root, 'mpich-only', 'mpichsite',
                runner=mpich_only_runner) == 0
    import runpy
    conf = runpy.run_path(str(root / 'config' / 'systems' / 'mpichsite.py'))
    assert [e['name'] for e in conf['site_configuration']['environments']] \
        == ['mpich-4_0_2']

    common, env, packages = effective_packages(root, 'mpichsite')
    # what the override is for: common/ requires OpenMPI
    assert common['mpi']['require'] == 'openmpi'
    assert packages['mpi']['require'] == 'mpich'
    assert packages['mpich']['buildable'] is False
    assert packages['mpich']['externals'] == [
        {'spec': 'mpich@4.0.2', 'modules': ['mpich/4.0.2']}]
    text = (root / 'spack-env' / 'mpichsite' / 'spack.yaml').read_text()
    assert '# common/ requires openmpi as the mpi provider; this site has ' \
        'no OpenMPI,' in text


def test_a_site_with_openmpi_keeps_the_common_requirement(tmp_path):
    root = project_copy(tmp_path)
    init(root, 'emusite', 'emusite')
    _, env, packages = effective_packages(root, 'emusite')
    assert 'mpi' not in env
    assert packages['mpi']['require'] == 'openmpi'
    # the site's module first, common/'s Debian OpenMPI after it
    assert packages['openmpi']['externals'][0] == {
        'spec': 'openmpi@4.1.4', 'modules': ['openmpi/4.1.4']}


def test_slurm_times_in_minutes():
    assert discover.slurm_minutes('00:30:00') == 30
    assert discover.slurm_minutes('30') == 30
    assert discover.slurm_minutes('30:00') == 30
    assert discover.slurm_minutes('1-00:00:00') == 1440
    assert discover.slurm_minutes('2-12') == 3600
    assert discover.slurm_minutes('1-02:30') == 1590
    assert discover.slurm_minutes('UNLIMITED') is None
    assert discover.slurm_minutes('INFINITE') is None
    with pytest.raises(ValueError, match='not a Slurm time'):
        discover.slurm_minutes('soon')


def test_a_partition_time_limit_is_written_and_caps_the_jobs(tmp_path):
    # the emulated site's debug partition takes jobs of 30 min at most:
    # HPCC's 60 min job pended there (PartitionTimeLimit) and was
    # cancelled, a red night on a healthy site
    import runpy
    from types import SimpleNamespace
    from clustergate.rfm.point import joboptions
    from clustergate.site.partition import partition_model

    root = project_copy(tmp_path)
    assert init(root, 'emusite', 'capsite') == 0
    mod = runpy.run_path(str(root / 'config' / 'systems' / 'capsite.py'))
    parts = {p['name']: p for p in
             mod['site_configuration']['systems'][0]['partitions']}
    assert parts['debug']['extras']['max_job_min'] == 30
    assert 'max_job_min' not in parts['emu']['extras']

    class Part:
        fullname = 'capsite:debug'
        extras = parts['debug']['extras']
        processor = {}

    logged = []
    log = SimpleNamespace(info=logged.append)
    test = SimpleNamespace(current_partition=Part(), time_limit=3600.0,
                           logger=log)
    assert partition_model(Part()).max_job_min == 30
    note = joboptions.cap_time_limit(test)
    assert test.time_limit == '1800s'
    assert 'job limit 60 min lowered to the partition\'s longest job, ' \
           '30 min' in note
    assert logged == [note]
    # a job within the limit keeps its own
    test = SimpleNamespace(current_partition=Part(), time_limit=600.0,
                           logger=log)
    assert joboptions.cap_time_limit(test) is None
    assert test.time_limit == 600.0


def test_an_unreadable_max_time_is_left_out_not_a_traceback(tmp_path):
    # a MaxTime written in a form the parser does not know: site init
    # still writes the system, without max_job_min
    kind = tmp_path / 'kinds'
    shutil.copytree(os.path.join(SITES, 'emusite'), kind / 'odd')
    path = kind / 'odd' / 'scontrol-partition.txt'
    path.write_text(path.read_text().replace('MaxTime=00:30:00',
                                             'MaxTime=half-an-hour'))
    root = project_copy(tmp_path)

    def run(name, argv):
        p = kind / 'odd' / f'{name}.txt'
        if not p.exists():
            return 127, f'{argv[0]}: not found'
        first, text = p.read_text().split('\n', 1)
        rc = kind / 'odd' / f'{name}.rc'
        return (int(rc.read_text()) if rc.exists() else 0), text

    assert init(root, 'odd', 'oddsite', runner=run) == 0
    text = (root / 'config' / 'systems' / 'oddsite.py').read_text()
    assert 'max_job_min' not in text


def test_a_site_written_outside_the_project_says_where_references_are_read(
        tmp_path, capsys, monkeypatch):
    # the 12-node emulated site, 2026-12-02: site init --root wrote the
    # references beside a copied config/, and the nights read the
    # project's (no reference file ...) without a word
    root = project_copy(tmp_path)
    written = root / 'config' / 'references'
    monkeypatch.delenv('CG_REFERENCES_DIR', raising=False)
    init(root, 'ib-ucx-tree', 'ibsite')
    out = capsys.readouterr().out
    assert f'export CG_REFERENCES_DIR={written}' in out
    # read from where they are written: nothing to say
    monkeypatch.setenv('CG_REFERENCES_DIR', str(written))
    init(root, 'ib-ucx-tree', 'ibsite', force=True)
    assert 'CG_REFERENCES_DIR' not in capsys.readouterr().out
