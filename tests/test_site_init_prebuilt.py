"""``clustergate site init`` offers the benchmarks the nodes already have:
``hpcc`` and ``IMB-MPI1`` found in each MPI environment on a node of each
partition become ``prebuilt`` sources for the environments whose MPI they
link, and a benchmark without one is a line of the summary. The probe's
outputs are recorded (tests/fixtures/site-init/<kind>/prebuilt-<part>.txt,
each naming its source): Debian's hpcc (OpenMPI) and impi-rt's IMB-MPI1
under the emulated cluster's modules, Debian's wrappers alone, and a
module tree with only MPICH."""

import runpy

from test_site_init import (init, mpich_only_runner, project_copy, recorded,
                            runner_for)

from clustergate.site import benchmarks

INTEL = 'intel-oneapi-mpi-2021_18_1'
#: where the recorded node has impi-rt (the recording's own line)
IMPI_PREFIX = next(
    ln.split()[2].rsplit('/bin/', 1)[0]
    for ln in recorded('emusite', 'prebuilt-emu')[1].splitlines()
    if ln.startswith('found IMB-MPI1 '))


def written(root, name):
    """``{partition: extras}`` of the written system, as it loads."""
    conf = runpy.run_path(str(root / 'config' / 'systems' / f'{name}.py'))
    return {p['name']: p['extras'] for p in
            conf['site_configuration']['systems'][0]['partitions']}


def kinds(extras, family, part, envs):
    """The source kind of ``family`` for each environment, as the checks
    resolve it (which validates the entries as the loader does)."""
    return {e: benchmarks.resolve(extras, family, e, part).kind
            for e in envs}


EMU_ENVS = (INTEL, 'mpich-4_0_2', 'openmpi-4_1_4')


def test_hpcc_is_prebuilt_for_the_mpi_it_links_only(tmp_path, capsys):
    root = project_copy(tmp_path)
    calls = []
    assert init(root, 'emusite', 'emusite',
                runner=runner_for('emusite', calls)) == 0
    out = capsys.readouterr().out
    for part, extras in written(root, 'emusite').items():
        assert extras['benchmarks']['hpcc'] == [
            {'source': 'prebuilt', 'prefix': '/usr',
             'environs': ['openmpi-4_1_4']}]
        # Debian's hpcc links OpenMPI: not run under Intel MPI or MPICH
        assert kinds(extras, 'hpcc', part, EMU_ENVS) == {
            INTEL: None, 'mpich-4_0_2': None, 'openmpi-4_1_4': 'prebuilt'}
        src = benchmarks.resolve(extras, 'hpcc', 'openmpi-4_1_4', part)
        assert benchmarks.expected_binary(src, 'hpcc') == '/usr/bin/hpcc'
        # the others stay unsourced, with the checks' own reason
        for fam in ('npb', 'osu', 'stream'):
            src = benchmarks.resolve(extras, fam, 'openmpi-4_1_4', part)
            assert benchmarks.why_unavailable(src, 'openmpi-4_1_4') == (
                f"no {fam.upper()} source configured for environment "
                f"'openmpi-4_1_4' (extras.benchmarks.{fam} of the "
                f"partition, or -S)")
    assert ('benchmark: HPCC on partition emu: prebuilt /usr/bin/hpcc for '
            'openmpi-4_1_4; not for intel-oneapi-mpi-2021_18_1: '
            '/usr/bin/hpcc links libmpi.so.40 (openmpi), not intelmpi; '
            'mpich-4_0_2: /usr/bin/hpcc links libmpi.so.40 (openmpi), not '
            'mpich\n') in out
    # asked on a node of each partition, in each environment's module
    probes = [c for c in calls if c[-2:-1] == ['-lc'] and c[0] == 'srun']
    assert [c[:4] for c in probes] == [['srun', '-N1', '-p', 'emu'],
                                       ['srun', '-N1', '-p', 'debug']]
    assert 'module load openmpi/4.1.4' in probes[0][-1]
    assert f'module load {"intel-oneapi-mpi/2021.18.1"}' in probes[0][-1]


def test_imb_of_intel_mpi_is_prebuilt_for_intel_mpi_only(tmp_path, capsys):
    root = project_copy(tmp_path)
    init(root, 'emusite', 'emusite')
    out = capsys.readouterr().out
    text = (root / 'config' / 'systems' / 'emusite.py').read_text()
    for part, extras in written(root, 'emusite').items():
        assert extras['benchmarks']['imb'] == [
            {'source': 'prebuilt', 'prefix': IMPI_PREFIX,
             'environs': [INTEL]}]
        assert kinds(extras, 'imb', part, EMU_ENVS) == {
            INTEL: 'prebuilt', 'mpich-4_0_2': None, 'openmpi-4_1_4': None}
    # the evidence beside the entry
    assert (f'#   {INTEL}: {IMPI_PREFIX}/bin/IMB-MPI1 links libmpi.so.12 '
            f'=> {IMPI_PREFIX}/lib/libmpi.so.12') in text
    assert (f'benchmark: IMB on partition debug: prebuilt {IMPI_PREFIX}/bin/'
            f'IMB-MPI1 for {INTEL}; not for mpich-4_0_2: IMB-MPI1 not on '
            f'PATH; openmpi-4_1_4: IMB-MPI1 not on PATH\n') in out


def test_a_benchmark_not_found_has_no_source_and_a_summary_line(
        tmp_path, capsys):
    # Debian's wrappers, no Intel MPI: no IMB-MPI1 on the node
    root = project_copy(tmp_path)
    init(root, 'no-topology', 'flat')
    out = capsys.readouterr().out
    extras = written(root, 'flat')['batch']
    assert 'imb' not in extras['benchmarks']
    assert kinds(extras, 'imb', 'batch', ('openmpi', 'mpich')) == {
        'openmpi': None, 'mpich': None}
    assert ('benchmark: IMB on partition batch: no source (openmpi: '
            'IMB-MPI1 not on PATH; mpich: IMB-MPI1 not on PATH)\n') in out
    text = (root / 'config' / 'systems' / 'flat.py').read_text()
    assert ('# IMB on partition batch: no source (openmpi: IMB-MPI1 not on '
            'PATH; mpich: IMB-MPI1 not on PATH)') in text
    # the system wrapper's own launcher was asked for its installation
    from clustergate.siteinit import prebuilt
    assert "command -v mpirun.openmpi" in prebuilt.script(
        [{'name': 'openmpi', 'family': 'openmpi',
          'wrapper': 'mpicc.openmpi'}])
    assert extras['benchmarks']['hpcc'][0]['environs'] == ['openmpi']


def test_hpcc_of_another_mpi_is_no_source(tmp_path, capsys):
    # a site with MPICH only: hpcc is on PATH, but links OpenMPI's library
    def run(name, argv):
        if name.startswith('prebuilt-'):
            return recorded('mpich-only', name)
        return mpich_only_runner(name, argv)

    root = project_copy(tmp_path)
    init(root, 'mpich-only', 'mpichsite', runner=run)
    out = capsys.readouterr().out
    for part, extras in written(root, 'mpichsite').items():
        assert 'hpcc' not in extras.get('benchmarks', {})
        assert benchmarks.resolve(extras, 'hpcc', 'mpich-4_0_2',
                                  part).kind is None
        assert (f'benchmark: HPCC on partition {part}: no source '
                f'(mpich-4_0_2: /usr/bin/hpcc links libmpi.so.40 (openmpi), '
                f'not mpich)\n') in out


def test_a_library_outside_the_environment_mpi_is_not_its():
    # IMB-MPI1 of impi-rt (libmpi.so.12, the MPICH ABI) seen in an MPICH
    # environment whose launcher is Debian's: the library is Intel's
    from clustergate.siteinit import prebuilt
    seen = prebuilt.parse(recorded('emusite', 'prebuilt-emu')[1])
    intel = seen[INTEL]
    assert intel['binaries']['IMB-MPI1']['libs'] == [
        ('libmpi.so.12', f'{IMPI_PREFIX}/lib/libmpi.so.12')]
    mpich = {'name': 'mpich', 'family': 'mpich'}
    ok, why = prebuilt.verdict(
        mpich, dict(intel, launcher='/usr/bin/mpiexec.hydra'), 'IMB-MPI1')
    assert not ok and why == (f'{IMPI_PREFIX}/bin/IMB-MPI1 links '
                              f'{IMPI_PREFIX}/lib/libmpi.so.12, outside the '
                              f'MPI of /usr/bin/mpiexec.hydra')
    # in Intel MPI's own installation it is
    assert prebuilt.verdict({'name': INTEL, 'family': 'intelmpi'}, intel,
                            'IMB-MPI1')[0]
    # a library the environment does not resolve is no source either
    lost = {'launcher': None, 'unloadable': False, 'binaries': {
        'IMB-MPI1': {'path': '/opt/x/bin/IMB-MPI1',
                     'libs': [('libmpi.so.12', None)]}}}
    assert prebuilt.verdict({'name': INTEL, 'family': 'intelmpi'}, lost,
                            'IMB-MPI1') == (
        False, '/opt/x/bin/IMB-MPI1 needs libmpi.so.12, not found there')


def test_a_failed_probe_is_a_summary_line_and_no_source(tmp_path, capsys):
    # the InfiniBand site's recordings have no prebuilt probe: srun absent
    root = project_copy(tmp_path)
    init(root, 'ib-ucx-tree', 'ibsite')
    out = capsys.readouterr().out
    assert ('benchmark: HPCC on partition compute: no source (the probe '
            'failed: exit 127: srun: not found)\n') in out
    for extras in written(root, 'ibsite').values():
        assert not {'hpcc', 'imb'} & set(extras.get('benchmarks', {}))


def test_an_environment_that_does_not_load_offers_nothing(tmp_path):
    # the probe's own script, run here: a Spack installation whose load
    # fails (eval of nothing would succeed) is said so, not searched
    import subprocess

    from clustergate.siteinit import prebuilt
    mpi = {'name': 'spack-openmpi-4_1_4', 'family': 'openmpi',
           'spack': str(tmp_path / 'no-spack'), 'spack_hash': 'abcdefg'}
    res = subprocess.run(['bash', '-c', prebuilt.script([mpi])],
                         capture_output=True, text=True, timeout=60)
    seen = prebuilt.parse(res.stdout)
    assert seen == {mpi['name']: {'launcher': None, 'unloadable': True,
                                  'binaries': {}}}
    found, lines = prebuilt.sources([mpi], seen, 'batch')
    assert found == {}
    assert lines[0] == ('HPCC on partition batch: no source '
                        '(spack-openmpi-4_1_4: its setup failed on the node)')
