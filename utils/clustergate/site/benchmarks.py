"""Where the third-party benchmarks (NPB, IMB, OSU, STREAM, HPCC) come from.

Chosen per partition in the configuration, never in the checks. A
partition's ``extras`` name a source per benchmark family::

    'benchmarks': {
        'npb': {'source': 'spack', 'spack_env': '<project>/spack-env/localhost'},
        'imb': [
            # first entry whose 'environs' contains the test's environment
            {'source': 'prebuilt', 'prefix': sys.prefix,
             'environs': ['intelmpi']},
            {'source': 'spack', 'spack_env': '...', 'environs': ['openmpi']},
        ],
        'osu': {'source': 'prebuilt', 'modules': ['osu-micro-benchmarks/7.5']},
        'stream': {'source': 'prebuilt', 'prefix': '/apps/stream'},
    }

``spack``: the benchmarks are installed from the Spack environment
``spack_env`` (a directory with ``spack.yaml``) by a ReFrame build fixture
(``spack -e <env> install``; the environment's own ``config:install_tree``
keeps the installation outside the stage, so a second run installs
nothing) and found under the environment's view
(``<env>/.spack-env/view``). Optional ``specs`` are ``spack add``-ed to
the environment first (idempotent when the manifest lists them already),
``install_opts`` go to ``spack install``.

``prebuilt``: the binaries are already installed under ``prefix`` (and/or
put on ``PATH`` by ``modules``).

Binaries are found by their standard names: ``<bench>.<CLASS>.x`` (NPB),
``IMB-MPI1``, ``osu_latency`` and friends, ``stream_c.exe``, ``hpcc``
(Debian's package: ``{'source': 'prebuilt', 'prefix': '/usr'}``).

Pure Python (no ReFrame import): the ReFrame fixture
(:mod:`clustergate.rfm.families.thirdparty`) and the unit tests use it alike.
"""

import os
import shutil
from dataclasses import dataclass
from typing import List, Mapping, Optional, Sequence, Tuple


FAMILIES = ('npb', 'imb', 'osu', 'stream', 'hpcc')
#: the GPU families (clustergate.rfm.families.gpu): BabelStream, nvbandwidth,
#: nccl-tests, gpu-burn and OSU built with device buffers (+cuda/+rocm)
GPU_FAMILIES = ('babelstream', 'nvbandwidth', 'nccl', 'gpuburn', 'osu_gpu')
FAMILIES += GPU_FAMILIES
KINDS = ('spack', 'prebuilt')

#: OSU 7.x installs its binaries here (below the prefix or the view)
OSU_SUBDIRS = ('pt2pt', 'collective', 'startup', 'one-sided',
               'pt2pt/persistent', 'congestion')
#: OSU programs installed under mpi/collective (blocking and non-blocking)
OSU_COLLECTIVES = frozenset(
    f'osu_{p}{s}' for p in ('barrier', 'bcast', 'allreduce', 'alltoall',
                            'allgather', 'allgatherv', 'alltoallv', 'gather',
                            'gatherv', 'reduce', 'reduce_scatter', 'scatter',
                            'scatterv')
    for s in ('', '_persistent')) | frozenset(
    f'osu_i{p}' for p in ('barrier', 'bcast', 'allreduce', 'alltoall',
                          'allgather', 'gather', 'reduce', 'scatter'))


class BenchmarkConfigError(ValueError):
    """The ``benchmarks`` extras of a partition are malformed."""


@dataclass(frozen=True)
class Source:
    """Where one family's binaries come from, for one partition/environment."""

    family: str
    kind: Optional[str]             # 'spack', 'prebuilt' or None (none set)
    spack_env: Optional[str] = None
    prefix: Optional[str] = None
    modules: Tuple[str, ...] = ()
    specs: Tuple[str, ...] = ()
    install_opts: Tuple[str, ...] = ()
    environs: Optional[Tuple[str, ...]] = None
    origin: str = 'config'          # 'config' or 'command line (-S)'

    @property
    def root(self) -> Optional[str]:
        """The prefix the binaries are under (the view for spack)."""
        if self.kind == 'spack' and self.spack_env:
            return view_prefix(self.spack_env)

        return self.prefix

    def describe(self) -> str:
        if self.kind == 'spack':
            return f'spack environment {self.spack_env}'

        if self.kind == 'prebuilt':
            what = []
            if self.prefix:
                what.append(f'prefix {self.prefix}')
            if self.modules:
                what.append(f'modules {" ".join(self.modules)}')
            return 'prebuilt ' + (', '.join(what) or '(nothing)')

        return 'no source'


def view_prefix(spack_env: str) -> str:
    """The view of a Spack environment directory (``view: true``)."""
    return os.path.join(spack_env, '.spack-env', 'view')


def _entries(extras: Mapping, family: str, partition: str) -> List[Mapping]:
    from clustergate.site.partition import partition_model

    bench = partition_model(extras, partition).benchmarks
    if not isinstance(bench, Mapping):
        raise BenchmarkConfigError(
            f'partition {partition!r}: extras.benchmarks must be a mapping '
            f'from benchmark family ({", ".join(FAMILIES)}) to its source'
        )

    entries = bench.get(family)
    if entries is None:
        return []

    if isinstance(entries, Mapping):
        entries = [entries]

    for e in entries:
        if not isinstance(e, Mapping) or e.get('source') not in KINDS:
            raise BenchmarkConfigError(
                f'partition {partition!r}: extras.benchmarks.{family}: each '
                f'source must be a mapping with "source" one of {KINDS}, '
                f'got {e!r}'
            )

        if e['source'] == 'spack' and not e.get('spack_env'):
            raise BenchmarkConfigError(
                f'partition {partition!r}: extras.benchmarks.{family}: a '
                f'spack source needs "spack_env" (the environment directory)'
            )

        if (e['source'] == 'prebuilt' and not e.get('prefix') and
                not e.get('modules')):
            raise BenchmarkConfigError(
                f'partition {partition!r}: extras.benchmarks.{family}: a '
                f'prebuilt source needs "prefix" and/or "modules"'
            )

    return list(entries)


def configured_environs(extras: Mapping, family: str,
                        partition: str = '?') -> Optional[List[str]]:
    """Environments the family's sources are limited to on this partition
    (None: at least one source accepts any environment)."""
    names = []
    for e in _entries(extras, family, partition):
        if e.get('environs') is None:
            return None

        names += [n for n in e['environs'] if n not in names]

    return names


def _serves(entry: Mapping, environ: Optional[str]) -> bool:
    """Whether a configured source serves the environment ``environ``
    (an entry without ``environs`` serves every one)."""
    envs = entry.get('environs')
    return envs is None or environ is None or environ in envs


def _environs(entry: Mapping) -> Optional[Tuple[str, ...]]:
    envs = entry.get('environs')
    return tuple(envs) if envs is not None else None


def _overridden(extras, family, environ, partition, kind, prefix,
                spack_env, modules) -> Optional[Source]:
    """The source the command line (``-S``) gives, or None when the
    configured source of that kind serves other environments only: a
    Spack environment built with the site's OpenMPI is not run under
    Intel MPI's launcher because ``-S ...use_spack_env`` named it (the
    environment keeps its own configured source)."""
    if kind not in KINDS:
        raise BenchmarkConfigError(
            f'source {kind!r} given on the command line is not one of '
            f'{KINDS}'
        )

    # start from the configured entry of that kind for this environment
    of_kind = [e for e in _entries(extras, family, partition)
               if e['source'] == kind]
    base = next((e for e in of_kind if _serves(e, environ)), None)
    if base is None and of_kind:
        return None
    base = base or {}
    return Source(
        family=family, kind=kind,
        spack_env=spack_env or base.get('spack_env'),
        prefix=prefix or base.get('prefix'),
        modules=tuple(modules or base.get('modules', ())),
        specs=tuple(base.get('specs', ())),
        install_opts=tuple(base.get('install_opts', ())),
        environs=_environs(base),
        origin='command line (-S)',
    )


def resolve(extras: Mapping, family: str, environ: Optional[str] = None,
            partition: str = '?', override_source: str = '',
            override_prefix: str = '', override_spack_env: str = '',
            override_modules: Sequence[str] = ()) -> Source:
    """The source of ``family`` on a partition for an environment.

    The ``override_*`` arguments come from test variables set on the
    command line (``-S``); a prefix or modules alone imply ``prebuilt``, a
    Spack environment alone implies ``spack``. They apply to the
    environments the configured source of that kind serves (all of them
    when none of that kind is configured).
    """
    if family not in FAMILIES:
        raise BenchmarkConfigError(f'unknown benchmark family {family!r}')

    kind = override_source or None
    if not kind:
        if override_prefix or override_modules:
            kind = 'prebuilt'
        elif override_spack_env:
            kind = 'spack'

    if kind:
        got = _overridden(extras, family, environ, partition, kind,
                          override_prefix, override_spack_env,
                          override_modules)
        if got is not None:
            return got

    for e in _entries(extras, family, partition):
        if not _serves(e, environ):
            continue

        return Source(
            family=family, kind=e['source'],
            spack_env=e.get('spack_env'), prefix=e.get('prefix'),
            modules=tuple(e.get('modules', ())),
            specs=tuple(e.get('specs', ())),
            install_opts=tuple(e.get('install_opts', ())),
            environs=_environs(e),
        )

    return Source(family=family, kind=None)


# -- binaries ---------------------------------------------------------------

def binary_relpaths(family: str, name: str) -> List[str]:
    """Where the standard binary ``name`` may be below a prefix."""
    if family in ('osu', 'osu_gpu'):
        # the program's own folder first: that is the path --dry-run shows
        first = 'collective' if name in OSU_COLLECTIVES else 'pt2pt'
        dirs = [first] + [d for d in OSU_SUBDIRS if d != first]
        return ([os.path.join('libexec', 'osu-micro-benchmarks', 'mpi', d,
                              name) for d in dirs] +
                [os.path.join('bin', name)])

    if family in GPU_FAMILIES:
        # installed (Spack's view), or a source tree as its own build
        # leaves it: BabelStream, nvbandwidth and nccl-tests in build/,
        # gpu-burn in its top folder (it reads compare.* beside it)
        return [os.path.join('bin', name), os.path.join('build', name),
                name]

    return [os.path.join('bin', name)]


def find_binary(root: str, family: str, name: str) -> Optional[str]:
    """Absolute path of an existing executable ``name`` below ``root``."""
    for rel in binary_relpaths(family, name):
        path = os.path.join(root, rel)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path

    return None


def expected_binary(source: Source, name: str) -> str:
    """The path (or bare name) a test runs: an existing binary if there is
    one, else the first standard location (what --dry-run shows), else the
    bare name (a module puts it on PATH)."""
    root = source.root
    if not root:
        return name

    found = find_binary(root, source.family, name)
    if found:
        return found

    if source.kind == 'prebuilt' and source.modules and not source.prefix:
        return name

    return os.path.join(root, binary_relpaths(source.family, name)[0])


def why_unavailable(source: Source, environ: Optional[str] = None,
                    which=shutil.which) -> Optional[str]:
    """Why this source cannot provide binaries here (None if it can, as far
    as can be told before building)."""
    fam = source.family.upper()
    if source.kind is None:
        where = f' for environment {environ!r}' if environ else ''
        return (f'no {fam} source configured{where} (extras.benchmarks.'
                f'{source.family} of the partition, or -S)')

    if source.kind == 'spack':
        if which('spack') is None:
            return (f'{fam} source is {source.describe()} but spack is not '
                    f'on PATH')

        if not os.path.isfile(os.path.join(source.spack_env, 'spack.yaml')):
            return (f'{fam} source: Spack environment {source.spack_env} '
                    f'has no spack.yaml')

        return None

    if source.prefix and not os.path.isdir(source.prefix):
        return f'{fam} prebuilt prefix {source.prefix} does not exist'

    return None


def why_binary_missing(source: Source, name: str) -> Optional[str]:
    """Why binary ``name`` cannot be run from ``source`` (None if it can, or
    if only a module load at run time can tell)."""
    root = source.root
    if not root:
        return None     # modules only: found on PATH at run time

    if find_binary(root, source.family, name):
        return None

    places = ', '.join(binary_relpaths(source.family, name))
    return (f'{name} not found under {root} ({places}) of '
            f'{source.describe()}')


def spack_build_commands(source: Source) -> List[str]:
    """What the Spack build fixture runs (documentation and tests)."""
    cmds = []
    if source.specs:
        cmds.append(f'spack -e {source.spack_env} add {" ".join(source.specs)}')

    cmds.append(' '.join(['spack', '-e', source.spack_env, 'install',
                          *source.install_opts]))
    return cmds


# -- NPB --------------------------------------------------------------------

NPB_CLASSES = ('A', 'B', 'C')

#: Memory of one class C run, all ranks together, in GB (10^9 B), as
#: estimated from the arrays each kernel allocates (NPB 3.4 sources) and
#: checked against the measured FT C (3.6 GiB per rank at 2 ranks). Halo
#: and transpose buffers grow a little with the rank count; the per-rank
#: overhead below covers that and the MPI library.
NPB_C_MEMORY_GB = {
    'bt': 0.8,    # 162^3 grid, 5x5 block matrices
    'sp': 0.8,    # 162^3 grid
    'lu': 0.7,    # 162^3 grid, SSOR arrays
    'mg': 3.5,    # 512^3 doubles for u, v, r plus coarser levels
    'ft': 7.2,    # three 512^3 complex arrays + twiddle factors
    'cg': 1.0,    # na=150000, ~36M non-zeros (value + column index)
    'is': 1.6,    # 2^27 keys, two key buffers, bucket arrays
    'ep': 0.1,    # 2^16 random numbers per batch: tiny
}
#: MPI library, buffers and the program image, per rank, in GB
NPB_RANK_OVERHEAD_GB = 0.25
#: Fraction of a node's memory a benchmark may use (the OS and daemons
#: need the rest)
NPB_MEMORY_FRACTION = 0.8


def npb_memory_per_node_gb(kernel: str, npb_class: str, nodes: int,
                           ppn: int) -> float:
    """Estimated memory one node needs for a run (class C only; A and B
    need well under 1 GB per node)."""
    if npb_class != 'C':
        return NPB_RANK_OVERHEAD_GB * ppn

    return NPB_C_MEMORY_GB[kernel] / nodes + NPB_RANK_OVERHEAD_GB * ppn


def npb_memory_reason(kernel: str, npb_class: str, nodes: int, ppn: int,
                      memory_per_node_gib: Optional[float]) -> Optional[str]:
    """Why the node memory is too small for this run, or None."""
    if npb_class != 'C':
        return None

    need = npb_memory_per_node_gb(kernel, npb_class, nodes, ppn)
    if memory_per_node_gib is None:
        return (f'{kernel.upper()} class C needs ~{need:.1f} GB per node and '
                f'the partition does not declare memory_per_node_gib')

    have_gb = memory_per_node_gib * 2**30 / 1e9
    if need > NPB_MEMORY_FRACTION * have_gb:
        return (f'{kernel.upper()} class C needs ~{need:.1f} GB per node '
                f'({NPB_C_MEMORY_GB[kernel]} GB over {nodes} node(s) + '
                f'{NPB_RANK_OVERHEAD_GB} GB x {ppn} ranks); the partition has '
                f'{memory_per_node_gib} GiB per node, of which '
                f'{NPB_MEMORY_FRACTION:.0%} may be used')

    return None
