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
:func:`clustergate.site.extras.check_partition`). The functions here read
the parsed partition (:class:`~clustergate.site.partition.PartitionModel`).
"""

from typing import Iterable, List, Mapping, Optional

# the keys of ``extras['concurrency']``, declared with the other keys
from clustergate.site.extras import (  # noqa: F401
    CONCURRENCY_KEYS as KEYS, CONCURRENCY_LICENSES as FABRIC_LICENSES,
    CONCURRENCY_POLICIES as POLICIES, CONCURRENCY_POLICY as POLICY,
)


def policy(model) -> str:
    """The partition's exec policy: 'serial' without a declared rule."""
    return model.concurrency.policy if model.concurrency else 'serial'


def job_options(model, fabric: Optional[str],
                access: Iterable[str] = ()) -> List[str]:
    """Scheduler options of one job on the partition ``model``: ``fabric``
    is the network interconnect its ranks use (None for a node-local
    job). Nothing without a declared rule."""
    conc = model.concurrency
    if conc is None:
        return []

    opts = [] if '--exclusive' in access else ['--exclusive']
    lic = conc.fabric_licenses.get(fabric) if fabric else None
    if lic:
        opts.append(f'--licenses={lic}:1')

    return opts


def uses_fabric(model, interconnect: Optional[str],
                ranks: int) -> Optional[str]:
    """The interconnect if it is a network one and more than one rank
    talk over it, else None (the job is node-local)."""
    ic = model.interconnects.get(interconnect or '')
    if ranks > 1 and ic is not None and ic.network:
        return interconnect

    return None


def async_systems(models: Iterable) -> List[str]:
    """Names of the systems (in the order of ``models``, the parsed
    partitions) with a partition whose rule is ``policy: 'async'``."""
    out = []
    for model in models:
        system = model.name.rpartition(':')[0]
        if policy(model) == 'async' and system not in out:
            out.append(system)

    return out


def system_modes(modes: Iterable[Mapping], models: Iterable,
                 scoped: Iterable[Mapping] = ()) -> List[Mapping]:
    """Mode entries for the systems that run async: each of ``modes``, or
    the system's own entry of it among ``scoped`` (a system module's
    ``mode_options``), with ``--exec-policy=async`` instead of ``serial``,
    targeted at that system. Put after the others: ReFrame takes the last
    entry of a name scoped to the system. ``models``: the parsed
    partitions of the configuration."""
    scoped = list(scoped)
    out = []
    for name in async_systems(models):
        for mode in modes:
            own = [m for m in scoped if m['name'] == mode['name'] and
                   name in m.get('target_systems', [])]
            base = own[-1] if own else mode
            out.append({'name': mode['name'], 'target_systems': [name],
                        'options': ['--exec-policy=async'
                                    if o == '--exec-policy=serial' else o
                                    for o in base['options']]})

    return out
