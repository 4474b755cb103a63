"""The keys clustergate reads from ReFrame's ``extras``: of a partition and
of a programming environment. One name per key, one place that knows them
all, checked when the configuration loads.

ReFrame accepts any ``extras``: a misspelt key (``core_per_node``) would be
silently ignored and the check would run with a default. So every key is
declared here with what it means, :func:`check_partition` and
:func:`check_environment` reject an unknown one naming it, and the checks'
base classes read the keys through these constants (``from clustergate
import extras as keys``). docs/guide/site-guide.md lists the same keys;
``tests/test_extras_schema.py`` keeps both in step.
"""

import os
import re
from typing import Mapping, Optional

from clustergate import PROJECT_ROOT
# raised here; named from here by the callers that catch it
from clustergate.site.errors import ExtrasError  # noqa: F401

# -- partition extras -------------------------------------------------------

#: node counts and ppn the partition can run, and the ci/nightly subsets
SWEEP = 'sweep'
#: interconnect name -> {'scope': 'node'|'network', 'env': {family: vars}}
INTERCONNECTS = 'interconnects'
#: cores of one node (STREAM threads; ppn may not exceed it)
CORES_PER_NODE = 'cores_per_node'
#: memory of one node in GiB (NPB skips a class that does not fit)
MEMORY_PER_NODE_GIB = 'memory_per_node_gib'
#: NUMA domains of one node (STREAM threads per domain)
NUMA_DOMAINS_PER_NODE = 'numa_domains_per_node'
#: NUMA domain counts STREAM runs on (0 or absent: the whole node)
STREAM_NUMA_COUNTS = 'stream_numa_counts'
#: benchmark family -> source of its binaries (see clustergate.site.benchmarks)
BENCHMARKS = 'benchmarks'
#: HPC Challenge sizing: memory_fraction, nb, max_n (clustergate.rfm.families.hpcc)
HPCC = 'hpcc'
#: check families (folders of checks/) this partition must run: a session
#: that selects one of them and runs none of its cases exits non-zero
EXPECTED_FAMILIES = 'expected_families'
#: the declared switch tree of the partition's fabrics, for the link
#: matrix: {'source': 'scontrol'} or {'file': PATH}, optional node_rate,
#: uplink_rate, dragonfly (the top switch's children are groups joined by
#: global links), interconnects (clustergate.rfm.families.linkmatrix)
TOPOLOGY = 'topology'
#: the nightly rotation: {'budget_min': minutes, 'pin_subset': bool};
#: --mode nightly runs the night's share of the acceptance space
#: (clustergate.planning.rotation)
ROTATION = 'rotation'
#: which jobs may run at once: {'policy': 'serial'|'async',
#: 'fabric_licenses': {interconnect: Slurm license}}
#: (clustergate.planning.concurrency)
CONCURRENCY = 'concurrency'
#: keys of ``extras['concurrency']`` and the policies it may name
CONCURRENCY_POLICY = 'policy'
CONCURRENCY_LICENSES = 'fabric_licenses'
CONCURRENCY_KEYS = (CONCURRENCY_POLICY, CONCURRENCY_LICENSES)
CONCURRENCY_POLICIES = ('serial', 'async')
#: seconds the link matrix may spend retesting suspect and borderline node
#: links in its job (clustergate.links.retest_driver, its decisions in
#: clustergate.links.retest_rules; 0: no retest)
LINK_RETEST_BUDGET = 'link_retest_budget_s'
#: a value beyond its reference on the better side (faster than the
#: reference allows): 'report' it (default; the run passes, the perflog
#: and ``clustergate report`` show it as better than reference) or 'fail'
#: the run (clustergate.refs.references)
IMPROVEMENTS = 'improvements'
IMPROVEMENT_POLICIES = ('report', 'fail')
#: what the nightly rotation runs every night, whatever the night:
#: {'checks': [check names], 'canaries': bool}; absent: the link matrix
#: and one canary per family (clustergate.rfm.point.nightly)
SENTINELS = 'sentinels'
#: which reference file of the system judges this partition: NAME reads
#: ``config/references/<system>.NAME.yaml`` instead of ``<system>.yaml``
#: (a partition whose layout differs, e.g. the same nodes cabled as a
#: tree, must not be judged by the other layout's references)
REFERENCE_SET = 'reference_set'
#: the GPUs' launch settings and affinity, beside ReFrame's ``devices``
#: (clustergate.site.gpus)
GPUS = 'gpus'
#: the longest job the partition takes, in minutes (Slurm's MaxTime): a
#: check's own job limit above it is lowered to it, since Slurm never
#: starts a job that asks for more (PartitionTimeLimit)
MAX_JOB_MINUTES = 'max_job_min'

PARTITION_KEYS = {
    SWEEP: 'node counts, ppn and the ci/nightly subsets',
    INTERCONNECTS: 'interconnects and the variables selecting each',
    CORES_PER_NODE: 'cores of one node',
    MEMORY_PER_NODE_GIB: 'memory of one node in GiB',
    NUMA_DOMAINS_PER_NODE: 'NUMA domains of one node',
    STREAM_NUMA_COUNTS: 'NUMA domain counts STREAM runs on',
    BENCHMARKS: 'source of each third-party benchmark family',
    HPCC: 'HPC Challenge sizing (memory_fraction, nb, max_n)',
    EXPECTED_FAMILIES: 'check families that must run in a session',
    TOPOLOGY: 'declared switch tree of the fabrics (link matrix)',
    ROTATION: 'nightly budget in minutes: the acceptance space rotates',
    CONCURRENCY: 'jobs at once: exec policy and a license per fabric',
    LINK_RETEST_BUDGET: 'seconds of link-matrix retests per job (0: none)',
    IMPROVEMENTS: "better than the reference: 'report' (default) or 'fail'",
    SENTINELS: 'what the nightly rotation runs every night',
    REFERENCE_SET: 'reference file <system>.NAME.yaml instead of '
                   '<system>.yaml',
    GPUS: "GPU request (gpus-per-node or gres), each GPU's NUMA node and NIC",
    MAX_JOB_MINUTES: "the longest job in minutes (Slurm's MaxTime)",
}

#: keys of ``extras['rotation']``
ROTATION_BUDGET = 'budget_min'
ROTATION_PIN = 'pin_subset'
ROTATION_KEYS = (ROTATION_BUDGET, ROTATION_PIN)

#: keys of ``extras['sentinels']``: every point of these checks (class
#: names) on the partition, and one small point per check family
SENTINEL_CHECKS = 'checks'
SENTINEL_CANARIES = 'canaries'
#: the environment the nightly's fabric check (the link matrix) runs under,
#: once per fabric (default: the first of the partition's environments
#: that can run it); the others run it in acceptance
SENTINEL_ENVIRON = 'environ'
SENTINEL_KEYS = (SENTINEL_CHECKS, SENTINEL_CANARIES, SENTINEL_ENVIRON)
#: the sentinels of a partition that does not declare them: the link
#: matrix (every fabric, the whole partition) and a canary per family
DEFAULT_SENTINELS = {SENTINEL_CHECKS: ('LinkMatrix',),
                     SENTINEL_CANARIES: True}

#: which file declared each system (config/assemble.py notes it), so that
#: an error found after the configuration loaded still names the file
_SOURCES = {}

#: keys of ``extras['sweep']``
SWEEP_NODES = 'nodes'
SWEEP_PPN = 'ppn'
#: mode subsets of the sweep: each names some of the declared values
SUBSETS = ('ci', 'nightly')
#: keys of a subset, and the axis of the sweep each one narrows
SUBSET_KEYS = ('nodes', 'ppn', 'interconnects')
SWEEP_KEYS = (SWEEP_NODES, SWEEP_PPN) + SUBSETS

#: keys of one interconnect
IC_SCOPE = 'scope'
IC_ENV = 'env'
#: per MPI family, how a run shows it used this interconnect
#: (clustergate.site.transport)
IC_VERIFY = 'verify'
#: the network device (e.g. ``ib0``, ``hsn0``) of a network interconnect,
#: for programs that are not MPI (NetPIPE's NPtcp, iperf3); without it,
#: the device the interconnect's MPI variables name
IC_NETDEV = 'netdev'
INTERCONNECT_KEYS = (IC_SCOPE, IC_ENV, IC_VERIFY, IC_NETDEV)

# -- environment extras ---------------------------------------------------

#: which MPI the environment is: 'openmpi', 'mpich' or 'intelmpi'; selects
#: the interconnect's variables and the launcher's placement flags
MPI_FAMILY = 'mpi_family'
#: options added to ``srun`` for this MPI (e.g. ``--mpi=pmix``)
SRUN_OPTIONS = 'srun_options'

#: launcher of this environment's jobs instead of the partition's (e.g.
#: 'cg-mpirun': OpenMPI's mpirun inside the allocation on emucluster)
LAUNCHER = 'launcher'

ENVIRONMENT_KEYS = {
    MPI_FAMILY: 'openmpi, mpich or intelmpi',
    SRUN_OPTIONS: 'srun options for this MPI (e.g. --mpi=pmix)',
    LAUNCHER: "launcher instead of the partition's (e.g. cg-mpirun)",
}
MPI_FAMILIES = ('openmpi', 'mpich', 'intelmpi')


def note_source(system: str, path: str):
    """Remember that ``path`` declares ``system``."""
    _SOURCES[system] = path


def source_of(system: str) -> str:
    """The file that declared ``system`` (or a phrase saying it is
    unknown)."""
    return _SOURCES.get(system, f'the configuration of system {system}')


def sentinels(extras: Mapping) -> Mapping:
    """A partition's sentinels (:data:`DEFAULT_SENTINELS` where it
    declares none; a key it leaves out takes the default's value)."""
    return {**DEFAULT_SENTINELS, **extras.get(SENTINELS, {})}


def check_families():
    """The check families: the folders of ``checks/`` (``src`` holds the C
    programs, not checks)."""
    root = os.path.join(PROJECT_ROOT, 'checks')
    return sorted(d for d in os.listdir(root)
                  if os.path.isdir(os.path.join(root, d)) and
                  d != 'src' and not d.startswith(('.', '_')))


def _unknown(given, known, where):
    extra = sorted(set(given) - set(known))
    if extra:
        raise ExtrasError(f'{where}.{extra[0]}: unknown key (known: '
                          f'{", ".join(sorted(known))})')


def _no_stray(given, allowed, error):
    """Raise ``ExtrasError(error(g))`` for the first ``g`` of ``given`` (in
    the file's order) that is not in ``allowed``."""
    for g in given:
        if g not in allowed:
            raise ExtrasError(error(g))


def _cores(part: Mapping) -> Optional[int]:
    cores = part.get('extras', {}).get(CORES_PER_NODE)
    if cores is None:
        cores = part.get('processor', {}).get('num_cpus')

    return cores


def _check_subsets(sweep, ics, where):
    declared = {'nodes': sweep.get(SWEEP_NODES) or [],
                'ppn': sweep.get(SWEEP_PPN) or [],
                'interconnects': list(ics or {})}
    for mode in SUBSETS:
        sub = sweep.get(mode)
        if sub is None:
            continue

        swhere = f'{where}.{SWEEP}.{mode}'
        if not isinstance(sub, Mapping):
            raise ExtrasError(f'{swhere}: must map {", ".join(SUBSET_KEYS)} '
                              f'to lists')

        _unknown(sub, SUBSET_KEYS, swhere)
        for key in SUBSET_KEYS:
            if key not in sub:
                continue

            values = sub[key]
            if not isinstance(values, (list, tuple)) or not values:
                raise ExtrasError(f'{swhere}.{key}: must be a non-empty '
                                  f'list, got {values!r}')

            _no_stray(values, declared[key], lambda v: (
                f'{swhere}.{key}: {v!r} is not declared by the '
                f'partition ({key}: {declared[key]})'))


def _mapping(value, known, where, hint=''):
    """``value``, a mapping of none but the ``known`` keys; else the
    :class:`ExtrasError` naming ``where`` (``hint``: what it should hold)."""
    if not isinstance(value, Mapping):
        raise ExtrasError(f'{where}: must be a mapping{hint}')

    _unknown(value, known, where)
    return value


def _flag(section, key, default, where):
    value = section.get(key, default)
    if not isinstance(value, bool):
        raise ExtrasError(f'{where}.{key}: must be true or false, '
                          f'got {value!r}')


def _known_extras(entry: Mapping, where: str, known) -> Mapping:
    return _mapping(entry.get('extras', {}), known, where)


def _check_rotation(rot, where):
    where = f'{where}.{ROTATION}'
    _mapping(rot, ROTATION_KEYS, where, f' with {ROTATION_BUDGET} (minutes)')
    budget = rot.get(ROTATION_BUDGET)
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) \
            or budget <= 0:
        raise ExtrasError(f'{where}.{ROTATION_BUDGET}: must be a number of '
                          f'minutes above 0, got {budget!r}')

    _flag(rot, ROTATION_PIN, False, where)


def _check_sentinels(sent, where):
    where = f'{where}.{SENTINELS}'
    _mapping(sent, SENTINEL_KEYS, where,
             f' with {", ".join(SENTINEL_KEYS)}')
    checks = sent.get(SENTINEL_CHECKS, [])
    if not isinstance(checks, (list, tuple)) or not all(
            isinstance(c, str) and c for c in checks):
        raise ExtrasError(f'{where}.{SENTINEL_CHECKS}: must be a list of '
                          f'check names, got {checks!r}')

    _flag(sent, SENTINEL_CANARIES, True, where)
    env = sent.get(SENTINEL_ENVIRON)
    if env is not None and not (isinstance(env, str) and env):
        raise ExtrasError(f'{where}.{SENTINEL_ENVIRON}: must be an '
                          f'environment name, got {env!r}')


def _check_concurrency(conc, ics, where):
    where = f'{where}.{CONCURRENCY}'
    _mapping(conc, CONCURRENCY_KEYS, where,
             f' ({", ".join(CONCURRENCY_KEYS)})')
    pol = conc.get(CONCURRENCY_POLICY, 'serial')
    if pol not in CONCURRENCY_POLICIES:
        raise ExtrasError(f'{where}.{CONCURRENCY_POLICY}: {pol!r} is not '
                          f'one of {", ".join(CONCURRENCY_POLICIES)}')

    lic = conc.get(CONCURRENCY_LICENSES, {})
    if not isinstance(lic, Mapping) or not all(
            isinstance(v, str) and v for v in lic.values()):
        raise ExtrasError(f'{where}.{CONCURRENCY_LICENSES}: must map '
                          f'interconnects to Slurm license names')

    ics = ics if isinstance(ics, Mapping) else {}
    fabrics = [n for n, ic in ics.items()
               if isinstance(ic, Mapping) and ic.get(IC_SCOPE) == 'network']
    _no_stray(lic, fabrics, lambda n: (
        f'{where}.{CONCURRENCY_LICENSES}.{n}: not a network interconnect '
        f'of the partition ({", ".join(fabrics) or "none"})'))
    if pol == 'async':
        _no_stray(fabrics, lic, lambda n: (
            f'{where}.{CONCURRENCY_LICENSES}: no license for {n!r}: with '
            f'policy async its jobs could share the fabric'))


def _check_improvements(extras, where):
    policy = extras.get(IMPROVEMENTS, IMPROVEMENT_POLICIES[0])
    if policy not in IMPROVEMENT_POLICIES:
        raise ExtrasError(f'{where}.{IMPROVEMENTS}: {policy!r} is not one '
                          f'of {", ".join(IMPROVEMENT_POLICIES)}')


def _check_reference_set(name, where, system):
    # a declared set whose file is missing would leave every point of the
    # partition unchecked ('no reference'): refused when the config loads
    from clustergate.refs import references
    from clustergate.site import environment as cgenv

    if not isinstance(name, str) or not re.fullmatch(r'[A-Za-z0-9_-]+',
                                                     name):
        raise ExtrasError(f'{where}.{REFERENCE_SET}: must be a name of '
                          f'letters, digits, - and _, got {name!r}')

    path = references.reference_file(cgenv.references_dir(), system, name)
    if system != '?' and not os.path.isfile(path):
        raise ExtrasError(f'{where}.{REFERENCE_SET}: {name!r}: no reference '
                          f'file {path}')


def check_partition(part: Mapping, system: str = '?'):
    """Validate the clustergate keys of one partition description (the
    dictionary of ReFrame's configuration). Raises :class:`ExtrasError`."""
    where = f'partition {system}:{part.get("name", "?")}: extras'
    extras = _known_extras(part, where, PARTITION_KEYS)
    sweep = extras.get(SWEEP)
    if sweep is not None:
        _mapping(sweep, SWEEP_KEYS, f'{where}.{SWEEP}')
        cores = _cores(part)
        ppn = sweep.get(SWEEP_PPN)
        if cores and isinstance(ppn, (list, tuple)):
            over = [p for p in ppn if isinstance(p, int) and p > cores]
            if over:
                raise ExtrasError(
                    f'{where}.{SWEEP}.{SWEEP_PPN}: {over[0]} is above the '
                    f"partition's {cores} cores per node"
                )

        _check_subsets(sweep, extras.get(INTERCONNECTS), where)

    ics = extras.get(INTERCONNECTS)
    if isinstance(ics, Mapping):
        _check_ic_env_keys(ics, where)

    if ROTATION in extras:
        _check_rotation(extras[ROTATION], where)

    if SENTINELS in extras:
        _check_sentinels(extras[SENTINELS], where)

    if CONCURRENCY in extras:
        _check_concurrency(extras[CONCURRENCY], ics, where)

    budget = extras.get(LINK_RETEST_BUDGET)
    if budget is not None and (isinstance(budget, bool) or not isinstance(
            budget, (int, float)) or budget < 0):
        raise ExtrasError(f'{where}.{LINK_RETEST_BUDGET}: must be a number '
                          f'of seconds >= 0, got {budget!r}')

    _check_improvements(extras, where)
    if REFERENCE_SET in extras:
        _check_reference_set(extras[REFERENCE_SET], where, system)

    if extras.get(EXPECTED_FAMILIES) is not None:
        _check_expected_families(extras[EXPECTED_FAMILIES], where)


def _check_expected_families(fams, where):
    known = check_families()
    if not isinstance(fams, (list, tuple)):
        raise ExtrasError(f'{where}.{EXPECTED_FAMILIES}: must be a list '
                          f'of check families ({", ".join(known)})')

    _no_stray(fams, known, lambda f: (
        f'{where}.{EXPECTED_FAMILIES}: {f!r} is not a check family '
        f'(known: {", ".join(known)})'))


def check_environment(env: Mapping):
    """Validate the clustergate keys of one environment's extras."""
    where = f'environment {env.get("name", "?")}: extras'
    extras = _known_extras(env, where, ENVIRONMENT_KEYS)
    fam = extras.get(MPI_FAMILY)
    if fam is not None and fam not in MPI_FAMILIES:
        raise ExtrasError(f'{where}.{MPI_FAMILY}: {fam!r} is not one of '
                          f'{", ".join(MPI_FAMILIES)}')

    opts = extras.get(SRUN_OPTIONS)
    if opts is not None and (not isinstance(opts, (list, tuple)) or
                             not all(isinstance(o, str) for o in opts)):
        raise ExtrasError(f'{where}.{SRUN_OPTIONS}: must be a list of '
                          f'strings, got {opts!r}')

    launcher = extras.get(LAUNCHER)
    if launcher is not None and (not isinstance(launcher, str) or
                                 not launcher):
        raise ExtrasError(f'{where}.{LAUNCHER}: must be a launcher name, '
                          f'got {launcher!r}')


# -- what makes a partition run checks at all --------------------------------

#: the feature every clustergate check asks of a partition and of a
#: programming environment (``valid_systems = ['+mpi']``,
#: ``valid_prog_environs = ['+mpi']``): without it a partition or an
#: environment runs nothing, and ReFrame says only "Found 0 check(s)"
MPI_FEATURE = 'mpi'


def _check_netdev(netdev, where):
    if netdev is not None and not (isinstance(netdev, str) and netdev and
                                   not any(c.isspace() for c in netdev)):
        raise ExtrasError(f'{where}.{IC_NETDEV}: must be a network device '
                          f'name (e.g. "ib0"), got {netdev!r}')


def _check_ic_env_keys(ics, where):
    """Each interconnect has known keys only, and its ``env`` maps an MPI
    family to its variables: a flat ``{'OMPI_MCA_pml': 'ucx'}`` would
    match no environment."""
    for name, ic in (ics or {}).items():
        if isinstance(ic, Mapping):
            _unknown(ic, INTERCONNECT_KEYS, f'{where}.{INTERCONNECTS}.{name}')
            _check_netdev(ic.get(IC_NETDEV), f'{where}.{INTERCONNECTS}.{name}')

        env = ic.get(IC_ENV) if isinstance(ic, Mapping) else None
        if not isinstance(env, Mapping):
            continue

        _no_stray(env, MPI_FAMILIES, lambda k: (
            f'{where}.{INTERCONNECTS}.{name}.{IC_ENV}.{k}: not an MPI '
            f'family: env is keyed by MPI family '
            f'({", ".join(MPI_FAMILIES)}), each mapping to its variables'))


def environment_of(name, system, environments):
    """The definition ReFrame uses for environment ``name`` on ``system``:
    the last one whose ``target_systems`` names it (or all systems)."""
    found = None
    for env in environments:
        targets = env.get('target_systems', ['*'])
        if env.get('name') == name and any(
                t in ('*', system) or t.startswith(f'{system}:')
                for t in targets):
            found = env

    return found


def _check_mpi_environment(env):
    """An environment a sweep partition offers: the ``mpi`` feature and an
    ``mpi_family``, both or neither (a non-MPI environment is allowed, it
    just runs no check)."""
    features = env.get('features', [])
    family = env.get('extras', {}).get(MPI_FAMILY)
    name = env.get('name', '?')
    if MPI_FEATURE in features and family is None:
        raise ExtrasError(
            f'environment {name}: extras.{MPI_FAMILY}: missing: an '
            f"environment with the '{MPI_FEATURE}' feature must say its MPI "
            f'family ({", ".join(MPI_FAMILIES)})')

    if family is not None and MPI_FEATURE not in features:
        raise ExtrasError(
            f"environment {name}: features: no '{MPI_FEATURE}': it has "
            f"{MPI_FAMILY} {family!r}, but checks select environments by the "
            f"'{MPI_FEATURE}' feature, so it would run nothing")

    return family if MPI_FEATURE in features else None


def check_mpi_wiring(system: Mapping, environments) -> None:
    """A partition with a ``sweep`` (one meant to run checks) has the
    ``mpi`` feature; its MPI environments have the ``mpi`` feature and an
    ``mpi_family``; its interconnects' ``env`` is keyed by MPI family and
    covers each of those families. Otherwise the partition, or one of its
    environments, would get zero test cases and nobody would be told.
    A partition that offers no environment at all (every MPI left out by
    clustergate.siteinit.mpiprobe) is let through: the session says so."""
    sname = system.get('name', '?')
    for part in system.get('partitions', []):
        extras = part.get('extras', {})
        if not isinstance(extras, Mapping) or SWEEP not in extras:
            continue

        pname = f'{sname}:{part.get("name", "?")}'
        if MPI_FEATURE not in part.get('features', []):
            raise ExtrasError(
                f"partition {pname}: features: no '{MPI_FEATURE}': every "
                f"clustergate check needs it (valid_systems '+{MPI_FEATURE}'"
                f"); add 'features': ['{MPI_FEATURE}']")

        ics = extras.get(INTERCONNECTS)
        ics = ics if isinstance(ics, Mapping) else {}
        families = {}
        for ename in part.get('environs', []):
            env = environment_of(ename, sname, environments)
            fam = env and _check_mpi_environment(env)
            if fam:
                families.setdefault(fam, ename)

        if part.get('environs') and not families:
            raise ExtrasError(
                f'partition {pname}: environs: none of '
                f'{", ".join(part["environs"])} has the '
                f"'{MPI_FEATURE}' feature and an {MPI_FAMILY}: no check "
                f'would run here')

        covered = {f for ic in ics.values() if isinstance(ic, Mapping)
                   for f in (ic.get(IC_ENV) or {})}
        for fam, ename in families.items():
            if fam not in covered:
                raise ExtrasError(
                    f'partition {pname}: extras.{INTERCONNECTS}: no '
                    f'interconnect has variables for MPI family {fam!r} '
                    f'(environment {ename}): add {fam!r} to an '
                    f"interconnect's env")
