"""The site model: a partition's clustergate knobs, parsed and validated
once, as frozen objects.

A partition describes what clustergate may do on it in ReFrame's
``extras`` (the keys are declared in :mod:`clustergate.site.extras`).
This module is the one place that reads that dictionary: everything else
asks for the model and reads named attributes. It also hands out the
sweep's axes over a system's partitions (:func:`axes_union`, the values
of the tests' ``num_nodes``, ``ppn`` and ``interconnect`` parameters) and
the one value of a point of the sweep (:class:`SweepPoint`: nodes, ppn,
interconnect, and its ranks, computed there only)::

    from clustergate.site.partition import partition_model

    model = partition_model(self.current_partition)
    model.sweep.nodes                 # (1, 2, 4)
    model.sweep.subset('ci')          # Subset(nodes=(2,), ...) or None
    model.interconnects['fab0'].scope # 'network'
    model.rotation.budget_s           # or None: no rotation declared

:func:`partition_model` accepts a ReFrame partition object (its
``extras`` and ``fullname``) or an extras mapping and a name, and caches
the model by content: the first call validates and parses, the next ones
return the same object. A wrong key or value raises the one-line error
that names the partition and the key, always a
:class:`~clustergate.site.errors.ExtrasError` (the sweep and its
interconnects are read only when a check asks for the sweep, so a
login partition without one parses).
The shapes are a JSON schema (:data:`SCHEMA`, checked with
``jsonschema``) where a schema says it; the rules that relate keys to
each other (a ppn above the cores, a subset naming an undeclared node
count, a license for a node-local interconnect) are code.

:mod:`~clustergate.site.sweep`, :mod:`~clustergate.site.transport` and
:mod:`~clustergate.planning.concurrency` are functions over this model: they
parse nothing themselves.
"""

import copy
import json
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Dict, Iterable, Mapping, Optional, Tuple

from clustergate.site import extras as keys
from clustergate.site import transport
from clustergate.site.errors import ExtrasError

#: the scopes of an interconnect: 'node' joins ranks of one node only
#: (shared memory), 'network' crosses nodes
SCOPES = ('node', 'network')


def _frozen(value):
    """A read-only copy of a nested mapping (lists become tuples)."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


@dataclass(frozen=True)
class Interconnect:
    """One interconnect: its scope, the variables that select it per MPI
    family, and how a run shows it used it (``verify``, see
    :mod:`clustergate.site.transport`)."""

    name: str
    scope: str
    env: Mapping = field(default_factory=dict)
    verify: Optional[Mapping] = None
    netdev: Optional[str] = None

    @property
    def network(self) -> bool:
        return self.scope == 'network'

    def report_env(self, family: Optional[str]) -> Dict[str, str]:
        """Variables that make ``family``'s MPI report its transport
        (``verify.<family>.env``; empty where nothing is declared)."""
        rules = (self.verify or {}).get(family) if family else None
        return dict(rules.get('env', {})) if rules else {}

    def device(self) -> Optional[str]:
        """The network device of this interconnect: ``netdev``, else the
        one device its MPI variables name for TCP (OpenMPI's TCP BTL,
        libfabric's tcp provider), else None. Not UCX_NET_DEVICES: it
        names InfiniBand ports (``mlx5_0:1``), which have no IP address."""
        if self.netdev:
            return self.netdev
        named = {v for vars_ in self.env.values()
                 for k, v in vars_.items() if k in _DEVICE_VARIABLES}
        # a list ("eth0,eth1") is no one device
        one = named.pop() if len(named) == 1 else ''
        return one if one and ',' not in one else None


#: MPI variables that name the network device an interconnect uses
_DEVICE_VARIABLES = ('OMPI_MCA_btl_tcp_if_include', 'FI_TCP_IFACE')


@dataclass(frozen=True)
class Subset:
    """A mode's share of the sweep: None on an axis leaves it whole."""

    nodes: Optional[Tuple[int, ...]] = None
    ppn: Optional[Tuple[int, ...]] = None
    interconnects: Optional[Tuple[str, ...]] = None

    def axis(self, name: str):
        return getattr(self, name)


@dataclass(frozen=True)
class Sweep:
    """The node counts and ppn a partition offers (sorted, unique) and
    the ci/nightly subsets it declares."""

    nodes: Tuple[int, ...]
    ppn: Tuple[int, ...]
    subsets: Mapping = field(default_factory=dict)

    def subset(self, mode: str) -> Optional[Subset]:
        return self.subsets.get(mode)


@dataclass(frozen=True)
class Topology:
    """The declared switch tree for the link matrix: ``source``
    ('scontrol') or ``file``, the optional rates, the interconnects it
    describes (None: all). ``spec`` is the declaration itself, for
    :func:`clustergate.links.matrixjob.declared_topology`."""

    spec: Mapping
    source: Optional[str] = None
    file: Optional[str] = None
    node_rate: Optional[float] = None
    uplink_rate: Optional[float] = None
    interconnects: Optional[Tuple[str, ...]] = None

    def describes(self, interconnect: str) -> bool:
        return self.interconnects is None or \
            interconnect in self.interconnects


@dataclass(frozen=True)
class Rotation:
    """The nightly rotation: the night's budget and whether the nightly
    subset stays pinned."""

    budget_min: float
    pin_subset: bool = False

    @property
    def budget_s(self) -> float:
        return float(self.budget_min) * 60


@dataclass(frozen=True)
class Sentinels:
    """What the nightly rotation runs every night."""

    checks: Tuple[str, ...] = ('LinkMatrix',)
    canaries: bool = True
    #: the partition declared them (else these are the defaults)
    declared: bool = False
    #: the environment of the nightly's fabric check (None: the first of
    #: the partition's environments that can run it)
    environ: Optional[str] = None


@dataclass(frozen=True)
class Concurrency:
    """Which jobs may run at once (None on the partition model: no rule
    declared, ReFrame's default)."""

    policy: str = 'serial'
    fabric_licenses: Mapping = field(default_factory=dict)


@dataclass(frozen=True)
class Hpcc:
    """HPC Challenge sizing; None: the defaults of
    :mod:`clustergate.parsers.hpccinf`."""

    memory_fraction: Optional[float] = None
    nb: Optional[int] = None
    max_n: Optional[int] = None


@dataclass(frozen=True)
class PartitionModel:
    """A partition's clustergate knobs (see the module docstring)."""

    name: str
    declares_sweep: bool
    interconnects: Mapping
    cores_per_node: Optional[int] = None
    memory_per_node_gib: Optional[float] = None
    numa_domains_per_node: int = 1
    stream_numa_counts: Tuple[int, ...] = (0,)
    benchmarks: Mapping = field(default_factory=dict)
    hpcc: Hpcc = Hpcc()
    expected_families: Tuple[str, ...] = ()
    topology: Optional[Topology] = None
    rotation: Optional[Rotation] = None
    sentinels: Sentinels = Sentinels()
    concurrency: Optional[Concurrency] = None
    link_retest_budget_s: Optional[float] = None
    #: Slurm's MaxTime of the partition, in minutes (None: unlimited)
    max_job_min: Optional[float] = None
    improvements: str = keys.IMPROVEMENT_POLICIES[0]
    #: the partition's reference file is ``<system>.<reference_set>.yaml``
    reference_set: Optional[str] = None
    #: the sweep, parsed when first asked (:attr:`sweep`)
    _sweep_source: Mapping = field(default_factory=dict, repr=False)

    def interconnect_settings(self) -> Dict[str, Mapping]:
        """The declared interconnects as the site declared them (name ->
        scope, env, verify), after :attr:`sweep` validated them."""
        self.sweep
        return dict(self._sweep_source[keys.INTERCONNECTS])

    @property
    def sweep(self) -> Sweep:
        """The sweep; raises ExtrasError naming what is wrong or
        missing (a partition without a sweep runs no check)."""
        return _sweep_of(self)

    def network_interconnects(self) -> Tuple[str, ...]:
        return tuple(n for n, ic in self.interconnects.items() if ic.network)


# -- the shapes, as a JSON schema ------------------------------------------

_NUMBER = {'type': 'number'}
_POSITIVE_INT = {'type': 'integer', 'minimum': 1}
_RATE = {'type': ['number', 'string']}

#: the shapes of the keys whose rules are shapes only (the others are
#: checked by clustergate.site.extras.check_partition, whose messages
#: name the key in the partition's terms)
SCHEMA = {
    'type': 'object',
    'properties': {
        keys.CORES_PER_NODE: _POSITIVE_INT,
        keys.MEMORY_PER_NODE_GIB: _NUMBER,
        keys.NUMA_DOMAINS_PER_NODE: _POSITIVE_INT,
        keys.MAX_JOB_MINUTES: {'type': 'number', 'exclusiveMinimum': 0},
        keys.STREAM_NUMA_COUNTS: {
            'type': 'array',
            'items': {'type': 'integer', 'minimum': 0}},
        keys.HPCC: {
            'type': 'object', 'additionalProperties': False,
            'properties': {
                'memory_fraction': _NUMBER,
                'nb': _POSITIVE_INT, 'max_n': _POSITIVE_INT}},
        # a topology that is not a mapping is the link matrix's error
        # (clustergate.links.matrixjob.declared_topology), at run time
        keys.TOPOLOGY: {
            'properties': {
                'source': {'type': 'string'}, 'file': {'type': 'string'},
                # a number or a rate with its unit ('250mbit', '100gbit')
                'node_rate': _RATE, 'uplink_rate': _RATE,
                'dragonfly': {'type': 'boolean'},
                'interconnects': {'type': 'array',
                                  'items': {'type': 'string'}}}},
    },
}


def _check_schema(extras: Mapping, where: str):
    """One line naming the key a shape error is at."""
    import jsonschema

    validator = jsonschema.Draft7Validator(SCHEMA)
    err = next(iter(sorted(validator.iter_errors(_plain(extras)),
                           key=lambda e: list(e.absolute_path))), None)
    if err is not None:
        path = '.'.join(str(p) for p in err.absolute_path)
        raise ExtrasError(f'{where}.{path}: {err.message}')


def _plain(value):
    """Tuples as lists (a JSON array for the schema)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# -- the sweep and its interconnects --------------------------------------

def _int_list(value, what, partition):
    if (not isinstance(value, (list, tuple)) or not value or
            not all(isinstance(v, int) and v > 0 for v in value)):
        raise ExtrasError(
            f'partition {partition!r}: extras.sweep.{what} must be a '
            f'non-empty list of positive integers, got {value!r}')
    return tuple(sorted(set(value)))


def _check_interconnect(name, ic, partition):
    if not isinstance(ic, Mapping):
        raise ExtrasError(f'partition {partition!r}: interconnect {name!r} '
                           f'must be a mapping with "scope" and "env"')
    if ic.get('scope') not in SCOPES:
        raise ExtrasError(
            f'partition {partition!r}: interconnect {name!r} has scope '
            f'{ic.get("scope")!r}; expected one of {SCOPES}')
    env = ic.get('env')
    if not isinstance(env, Mapping) or not env:
        raise ExtrasError(
            f'partition {partition!r}: interconnect {name!r} needs "env":'
            f' a mapping from MPI family to environment variables')
    for family, vars_ in env.items():
        if not isinstance(vars_, Mapping) or not all(
                isinstance(v, str) for v in vars_.values()):
            raise ExtrasError(
                f'partition {partition!r}: interconnect {name!r}, MPI '
                f'family {family!r}: variables must be a str->str map')
    if 'verify' in ic:
        try:
            transport.validate(ic['verify'], f'partition {partition!r}: '
                                             f'interconnect {name!r}')
        except ValueError as err:
            raise ExtrasError(str(err)) from None


def _sweep_of(model: PartitionModel) -> Sweep:
    cached = _SWEEPS.get(id(model))
    if cached is not None and cached[0] is model:
        return cached[1]

    src, partition = model._sweep_source, model.name
    sweep = src.get(keys.SWEEP)
    if not isinstance(sweep, Mapping):
        raise ExtrasError(
            f'partition {partition!r}: extras.sweep is missing '
            f'(it must declare the node counts and ppn values it can run)')
    ics = src.get(keys.INTERCONNECTS)
    if not isinstance(ics, Mapping) or not ics:
        raise ExtrasError(
            f'partition {partition!r}: extras.interconnects must map at '
            f'least one interconnect name to its settings')
    for name, ic in ics.items():
        _check_interconnect(name, ic, partition)

    subsets = {m: Subset(**{k: tuple(v) for k, v in sweep[m].items()})
               for m in keys.SUBSETS if isinstance(sweep.get(m), Mapping)}
    out = Sweep(_int_list(sweep.get(keys.SWEEP_NODES), 'nodes', partition),
                _int_list(sweep.get(keys.SWEEP_PPN), 'ppn', partition),
                MappingProxyType(subsets))
    _SWEEPS[id(model)] = (model, out)
    return out


_SWEEPS: Dict[int, tuple] = {}


# -- the partition ----------------------------------------------------------

def _interconnects(ics) -> Mapping:
    out = {}
    for name, ic in (ics if isinstance(ics, Mapping) else {}).items():
        if isinstance(ic, Mapping):
            out[name] = Interconnect(
                name, ic.get(keys.IC_SCOPE), _frozen(ic.get(keys.IC_ENV) or {}),
                _frozen(ic.get(keys.IC_VERIFY)), ic.get(keys.IC_NETDEV))
    return MappingProxyType(out)


def _topology(spec) -> Optional[Topology]:
    if not spec:
        return None
    if not isinstance(spec, Mapping):
        return Topology(spec)
    ics = spec.get('interconnects')
    # the declaration as written (a dict): the link matrix reads it
    return Topology(copy.deepcopy(spec), spec.get('source'), spec.get('file'),
                    spec.get('node_rate'), spec.get('uplink_rate'),
                    tuple(ics) if ics is not None else None)


def _optional(extras, key, make):
    return make(extras[key]) if extras.get(key) is not None else None


def _parse(extras: Mapping, name: str, processor: Mapping) -> PartitionModel:
    where = f'partition {name}: extras'
    system, _, pname = name.rpartition(':')
    keys.check_partition({'name': pname, 'extras': extras,
                          'processor': processor}, system or '?')
    _check_schema(extras, where)
    sent = keys.sentinels(extras)
    return PartitionModel(
        name=name, declares_sweep=keys.SWEEP in extras,
        interconnects=_interconnects(extras.get(keys.INTERCONNECTS)),
        cores_per_node=extras.get(keys.CORES_PER_NODE),
        memory_per_node_gib=extras.get(keys.MEMORY_PER_NODE_GIB),
        numa_domains_per_node=extras.get(keys.NUMA_DOMAINS_PER_NODE, 1),
        stream_numa_counts=tuple(extras.get(keys.STREAM_NUMA_COUNTS, [0])),
        benchmarks=copy.deepcopy(extras.get(keys.BENCHMARKS) or {}),
        hpcc=Hpcc(**extras.get(keys.HPCC, {})),
        expected_families=tuple(extras.get(keys.EXPECTED_FAMILIES) or ()),
        topology=_topology(extras.get(keys.TOPOLOGY)),
        rotation=_optional(extras, keys.ROTATION, lambda r: Rotation(
            r[keys.ROTATION_BUDGET], r.get(keys.ROTATION_PIN, False))),
        sentinels=Sentinels(tuple(sent[keys.SENTINEL_CHECKS]),
                            sent[keys.SENTINEL_CANARIES],
                            keys.SENTINELS in extras,
                            sent.get(keys.SENTINEL_ENVIRON)),
        concurrency=_optional(extras, keys.CONCURRENCY, lambda c: Concurrency(
            c.get('policy', 'serial'), _frozen(c.get('fabric_licenses', {})))),
        link_retest_budget_s=extras.get(keys.LINK_RETEST_BUDGET),
        max_job_min=extras.get(keys.MAX_JOB_MINUTES),
        improvements=extras.get(keys.IMPROVEMENTS,
                                keys.IMPROVEMENT_POLICIES[0]),
        reference_set=extras.get(keys.REFERENCE_SET),
        _sweep_source=copy.deepcopy({k: extras[k] for k in
                                     (keys.SWEEP, keys.INTERCONNECTS)
                                     if k in extras}))


_MODELS: Dict[str, PartitionModel] = {}
#: keys ReFrame adds to a partition object's extras (its scheduler's and
#: launcher's names), not the site's
REFRAME_EXTRAS = ('scheduler', 'launcher')


def _key(name, extras, processor) -> str:
    # not sorted: the order of the interconnects is the site's (a single
    # rank runs over the first)
    return json.dumps([name, _plain(extras), _plain(processor)],
                      default=repr)


def partition_model(partition, name: Optional[str] = None,
                    processor: Optional[Mapping] = None) -> PartitionModel:
    """The model of ``partition``: a ReFrame partition object (None or
    an object without extras: a partition that declares nothing), or its
    extras mapping with ``name`` (``system:partition``) and optionally its
    ``processor`` (``num_cpus`` stands in for ``cores_per_node``); a
    model is returned as it is. Validated and parsed once per content;
    raises ExtrasError naming the partition and the key. The keys ReFrame
    adds to a partition's extras (:data:`REFRAME_EXTRAS`) are not read."""
    if isinstance(partition, PartitionModel):
        return partition
    if isinstance(partition, Mapping):
        extras = partition
    else:
        extras = getattr(partition, 'extras', None) or {}
        name = name or getattr(partition, 'fullname', None) or \
            getattr(partition, 'name', None)
    return _model({k: v for k, v in extras.items()
                   if k not in REFRAME_EXTRAS}, name or '?', processor or {})


def _model(extras: Mapping, name: str, processor: Mapping) -> PartitionModel:
    key = _key(name, extras, processor)
    if key not in _MODELS:
        _MODELS[key] = _parse(extras, name, processor)
    return _MODELS[key]


# -- the axes of a system's partitions ----------------------------------------

@dataclass(frozen=True)
class SweepPoint:
    """One point of the sweep: a node count, processes per node and an
    interconnect; its rank count is computed here and nowhere else."""

    nodes: int
    ppn: int
    interconnect: Optional[str]

    @property
    def ranks(self) -> int:
        return self.nodes * self.ppn


def point_of(test) -> SweepPoint:
    """The point of a test instance (or any object with ``num_nodes``,
    ``ppn`` and ``interconnect``): 1 node, 1 ppn and no interconnect for
    what it lacks (a family without the axes)."""
    return SweepPoint(getattr(test, 'num_nodes', None) or 1,
                      getattr(test, 'ppn', None) or 1,
                      getattr(test, 'interconnect', None))


def axes_union(models: Iterable[PartitionModel]) -> Tuple[list, list, list]:
    """Union of the axes of the given partitions.

    Partitions without a sweep description (e.g. a login partition) are
    ignored. Returns ``(nodes, ppn, interconnects)`` as sorted lists; lists
    are empty when no partition declares a sweep.
    """
    nodes, ppn, ics = set(), set(), []
    for model in models:
        if not model.declares_sweep:
            continue

        nodes.update(model.sweep.nodes)
        ppn.update(model.sweep.ppn)
        for ic in model.interconnect_settings():
            if ic not in ics:
                ics.append(ic)

    return sorted(nodes), sorted(ppn), ics


def interconnect_env(model: PartitionModel, interconnect: str,
                     mpi_family: str,
                     report_transport: bool = False) -> Dict[str, str]:
    """Environment variables that select ``interconnect`` for
    ``mpi_family``, with ``report_transport`` those that make the MPI
    report the transport it used (:meth:`Interconnect.report_env`).

    Raises :class:`ExtrasError` naming what is missing.
    """
    partition = model.name
    settings = model.interconnect_settings()
    try:
        ic = settings[interconnect]
    except KeyError:
        raise ExtrasError(
            f'unknown interconnect {interconnect!r} on partition '
            f'{partition!r} (known: {sorted(settings)})'
        ) from None

    try:
        env = dict(ic['env'][mpi_family])
    except KeyError:
        raise ExtrasError(
            f'interconnect {interconnect!r} on partition {partition!r} has '
            f'no settings for MPI family {mpi_family!r}'
        ) from None
    if report_transport:
        env.update(model.interconnects[interconnect].report_env(mpi_family))
    return env


# -- a programming environment ---------------------------------------------

@dataclass(frozen=True)
class EnvironmentModel:
    """A programming environment's clustergate knobs: its MPI family,
    the srun options of that MPI, a launcher instead of the
    partition's."""

    name: str
    mpi_family: Optional[str] = None
    srun_options: Tuple[str, ...] = ()
    launcher: Optional[str] = None


_ENVIRONS: Dict[str, EnvironmentModel] = {}


def environment_model(environ) -> EnvironmentModel:
    """The model of a ReFrame environment object (or None: an
    environment that declares nothing); validated as
    :func:`clustergate.site.extras.check_environment` does at load."""
    name = getattr(environ, 'name', None) or '?'
    extras = getattr(environ, 'extras', None) or {}
    key = _key(name, extras, {})
    if key not in _ENVIRONS:
        keys.check_environment({'name': name, 'extras': extras})
        _ENVIRONS[key] = EnvironmentModel(
            name, extras.get(keys.MPI_FAMILY),
            tuple(extras.get(keys.SRUN_OPTIONS, ())),
            extras.get(keys.LAUNCHER))
    return _ENVIRONS[key]


def config_partition_model(system: Mapping, part: Mapping) -> PartitionModel:
    """The model of partition ``part`` (a dictionary of ReFrame's
    configuration) of ``system``: what config/assemble.py validates when
    the configuration loads."""
    name = f'{system.get("name", "?")}:{part.get("name", "?")}'
    extras = part.get('extras', {})
    if not isinstance(extras, Mapping):
        raise ExtrasError(f'partition {name}: extras: must be a mapping')
    # as written: a 'launcher' among the site's extras is an unknown key
    return _model(extras, name, part.get('processor', {}))
