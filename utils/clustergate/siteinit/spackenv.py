"""The Spack environment of a site's benchmarks
(``spack-env/NAME/spack.yaml``): the pinned specs of the tracked
environments, with the site's MPIs as externals. Pure: text in, text out;
clustergate.siteinit.gpuconfig writes the GPU one from it."""

#: The specs of spack-env/NAME/spack.yaml, the same as the tracked
#: environments' (pinned on purpose: unpinned, a fresh concretization
#: builds every NPB class
#: (S, W, A-F), STREAM with its 10M-element default (76 MiB per array, in
#: the cache of large-L3 nodes) and whatever IMB or OSU version the
#: packages repository calls newest; IMB 2021.8+ does not build against
#: OpenMPI 4.1 with gcc 12)
SPACK_SPECS = [
    '  # the classes the checks run (the default also builds S, W, D, E, F)',
    '  - npb@3.4.1 implementation=mpi names=bt,cg,ep,ft,is,lu,mg,sp '
    'classes=A,B,C',
    '  - intel-mpi-benchmarks@2021.7',
    '  - osu-micro-benchmarks@7.5.1',
    '  # 610 MiB per array: raise it to at least 4x the last-level cache '
    'of a node',
    '  - stream@5.10 +openmp stream_array_size=80000000',
]

#: MPI family -> Spack package of a system wrapper's MPI
SPACK_PACKAGE = {'openmpi': 'openmpi', 'mpich': 'mpich',
                 'intelmpi': 'intel-oneapi-mpi'}
#: module names that are the Spack package of the same name and version
#: (an HPC-X or Intel module's version is not its MPI's: no external)
SPACK_MODULES = ('openmpi', 'mpich', 'cray-mpich', 'mvapich2', 'mvapich',
                 'intel-oneapi-mpi')


def spack_package(mpi):
    """The Spack package an MPI is an external of, or None."""
    if 'spack_package' in mpi:
        return mpi['spack_package']

    if 'module' not in mpi:
        return SPACK_PACKAGE[mpi['family']]

    base = mpi['module'].split('/')[0]
    return base if base in SPACK_MODULES else None


def _external_where(mpi):
    if 'module' in mpi:
        return f'        modules: [{mpi["module"]}]'

    if mpi.get('spack_modules'):
        return f'        modules: [{", ".join(mpi["spack_modules"])}]'

    return f'        prefix: {mpi["prefix"]}'


def _spack_built(built):
    """Lines for MPIs the site's Spack built itself: not externals (the
    same Spack, or one with it as an upstream, reuses installed specs)."""
    return [f'    # {mpi["source"]}: built by this Spack, not an external '
            f'(concretizing reuses installed specs)' for mpi in built]


def _mpi_requirement(packages):
    """The ``mpi`` provider for a site without OpenMPI: ``common/``
    requires ``openmpi`` (Debian's, at /usr), which such a site does not
    have, so its benchmarks would be built against an MPI that is not
    there. Settings of the environment take precedence over its included
    scopes; a string replaces the included string."""
    if not packages or 'openmpi' in packages:
        return []

    others = ', '.join(packages[1:])
    return (['    # common/ requires openmpi as the mpi provider; this site '
             'has no OpenMPI,',
             f'    # so the benchmarks use {packages[0]} (overrides '
             f'common/, which is included)'] +
            ([f'    # (also found: {others}; name one of them here to '
              f'build with it)'] if others else []) +
            ['    mpi:', f'      require: {packages[0]}'])


def spack_env(desc) -> str:
    """``spack-env/NAME/spack.yaml``: the benchmarks of the other systems,
    the site's MPIs as externals (not built)."""
    lines = [f'# clustergate benchmarks for system {desc["name"]} '
             f'(clustergate site init)', 'spack:', '  include:',
             '  - path: $CLUSTERGATE_SPACK_SITE_CONFIG', '    optional: true',
             '  - ../common', '', '  specs:'] + SPACK_SPECS + ['',
             '  packages:']
    byfam, skipped, built = {}, [], []
    for mpi in desc['mpis']:
        pkg = spack_package(mpi)
        if pkg is None:
            skipped.append(mpi)
        elif 'spack_hash' in mpi and not (mpi['prefix'] or
                                          mpi['spack_modules']):
            built.append(mpi)
        else:
            byfam.setdefault(pkg, []).append(mpi)
    for mpi in skipped:
        lines.append(f'    # not an external: {mpi["source"]} (its version '
                     f'is not the MPI\'s)')
    lines += _spack_built(built)
    for pkg, found in byfam.items():
        lines += [f'    {pkg}:', '      buildable: false', '      externals:']
        for mpi in found:
            ver = mpi.get('version') or 'unknown'
            lines.append(f'      # {mpi["source"]}')
            lines.append(f'      - spec: {pkg}@{ver}')
            lines.append(_external_where(mpi))
    lines += _mpi_requirement(list(dict.fromkeys(
        list(byfam) + [spack_package(mpi) for mpi in built])))
    if not byfam and not built:
        lines.append('    {}  # no MPI found by module, spack or which')
    lines += ['', '  concretizer:', '    unify: true', '', '  view: true', '']
    return '\n'.join(lines)
