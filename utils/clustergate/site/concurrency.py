"""Which jobs may run at once without disturbing each other's measurement:
the partition's ``extras['concurrency']`` (docs/reports/cost-model.md).

The rule, declared per partition, not coded per check:

* every job gets whole nodes (``--exclusive``), so node-local checks
  (memory, STREAM, shared memory) on different nodes may run at once;
* a job whose ranks talk over a network interconnect (a *fabric check*)
  also requests that fabric's Slurm license (``--licenses=<name>:1``); the
  site's slurm.conf declares one license per fabric (``Licenses=ib0:1``),
  so Slurm never starts two fabric checks on one fabric at once;
* ``policy``: ``'async'`` lets ReFrame keep up to the partition's
  ``max_jobs`` jobs in flight (the system's modes run with
  ``--exec-policy=async``), ``'serial'`` (also without the key) runs one
  job after the other.

A partition with ``policy: 'async'`` must name a license for each of its
network interconnects (checked when the configuration loads,
:func:`clustergate.site.extras.check_partition`).
"""

from typing import Iterable, List, Mapping, Optional

#: keys of ``extras['concurrency']``
POLICY = 'policy'
FABRIC_LICENSES = 'fabric_licenses'
KEYS = (POLICY, FABRIC_LICENSES)
POLICIES = ('serial', 'async')


def rule(extras: Mapping):
    """The partition's declared rule (a
    :class:`~clustergate.site.model.Concurrency`), or None."""
    from clustergate.site.model import partition_model
    return partition_model(extras).concurrency


def policy(extras: Mapping) -> str:
    conc = rule(extras)
    return conc.policy if conc else 'serial'


def job_options(extras: Mapping, fabric: Optional[str],
                access: Iterable[str] = ()) -> List[str]:
    """Scheduler options of one job on a partition with these extras:
    ``fabric`` is the network interconnect its ranks use (None for a
    node-local job). Nothing without a declared rule."""
    conc = rule(extras)
    if conc is None:
        return []

    opts = [] if '--exclusive' in access else ['--exclusive']
    lic = conc.fabric_licenses.get(fabric) if fabric else None
    if lic:
        opts.append(f'--licenses={lic}:1')

    return opts


def uses_fabric(extras: Mapping, interconnect: Optional[str],
                ranks: int) -> Optional[str]:
    """The interconnect if it is a network one and more than one rank
    talk over it, else None (the job is node-local)."""
    from clustergate.site.model import partition_model

    ic = partition_model(extras).interconnects.get(interconnect or '')
    if ranks > 1 and ic is not None and ic.network:
        return interconnect

    return None


def async_systems(systems: Iterable[Mapping]) -> List[str]:
    """Names of the configured systems with a partition whose rule is
    ``policy: 'async'``."""
    return [s['name'] for s in systems
            if any(policy(_model(s, p)) == 'async'
                   for p in s.get('partitions', []))]


def _model(system: Mapping, part: Mapping):
    """The model of a partition of the configuration's dictionary."""
    from clustergate.site.model import config_partition_model
    return config_partition_model(system, part)


def system_modes(modes: Iterable[Mapping], systems: Iterable[Mapping],
                 scoped: Iterable[Mapping] = ()) -> List[Mapping]:
    """Mode entries for the systems that run async: each of ``modes``, or
    the system's own entry of it among ``scoped`` (a system module's
    ``mode_options``), with ``--exec-policy=async`` instead of ``serial``,
    targeted at that system. Put after the others: ReFrame takes the last
    entry of a name scoped to the system."""
    scoped = list(scoped)
    out = []
    for name in async_systems(systems):
        for mode in modes:
            own = [m for m in scoped if m['name'] == mode['name'] and
                   name in m.get('target_systems', [])]
            base = own[-1] if own else mode
            out.append({'name': mode['name'], 'target_systems': [name],
                        'options': ['--exec-policy=async'
                                    if o == '--exec-policy=serial' else o
                                    for o in base['options']]})

    return out
