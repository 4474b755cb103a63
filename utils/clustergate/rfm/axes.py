"""The sweep axes as ReFrame parameters, shared by every clustergate check.

The values of the axes come from the partitions of the system ReFrame runs
on (their ``extras``, see :mod:`clustergate.sweep`), never from the checks.
Each test instance is one point (nodes, ppn, interconnect); a point that a
partition cannot run is skipped with the reason, visibly.
"""

import os

import reframe as rfm
from reframe.core.backends import getlauncher
from reframe.core.builtins import parameter, run_after, run_before, variable
from reframe.core.exceptions import ReframeFatalError, SanityError

from clustergate import sweep, transport
from clustergate.rfm.refmetrics import ReferenceMetrics

#: Axes used when no ReFrame runtime is available (e.g. plain imports)
_FALLBACK = ([1], [1], ['shm'])


#: What ReFrame raises when no runtime is configured (a plain import, e.g.
#: ``python -m clustergate.rfm.npb``): ReframeFatalError is a BaseException
_NO_RUNTIME = (Exception, ReframeFatalError)


def _current_partitions():
    try:
        from reframe.core.runtime import runtime
        return [(p.name, p.extras) for p in runtime().system.partitions]
    except _NO_RUNTIME:
        return []


def current_axes():
    """``(nodes, ppn, interconnects)`` of the current system (union of its
    partitions)."""
    nodes, ppn, ics = sweep.axes_union(_current_partitions())
    if not nodes:
        return _FALLBACK

    return nodes, ppn, ics


_NODES, _PPN, _ICS = current_axes()


class SweepAxes(ReferenceMetrics, rfm.RegressionTestPlugin):
    """Mixin: node count, processes per node and interconnect.

    Subclasses describe what they need with :attr:`sweep_requirements`
    (min ranks, power-of-two counts, ...). After setup the test has
    ``num_tasks``, ``num_tasks_per_node``, the interconnect's environment
    variables and the launcher's placement flags.
    """

    #: Number of nodes of this point
    num_nodes = parameter(_NODES, loggable=True)

    #: Processes (MPI ranks) per node
    ppn = parameter(_PPN, loggable=True)

    #: Interconnect name, as declared by the partition
    interconnect = parameter(_ICS, loggable=True)

    #: What this check needs from a point of the sweep
    sweep_requirements = variable(sweep.Requirements,
                                  value=sweep.Requirements())

    #: Partitions (fullname) of the current system able to run this point,
    #: filled at init; used to choose the tags and valid systems.
    def sweep_point(self):
        return sweep.SweepPoint(self.num_nodes, self.ppn, self.interconnect)

    def mpi_family(self):
        env = getattr(self, 'current_environ', None)
        return env.extras.get('mpi_family') if env else None

    @run_after('init')
    def restrict_to_capable_partitions(self):
        # Run a point only on partitions that offer it; a point that none
        # offers is not a test case at all (-l lists what will run); the
        # reasons are listed by `clustergate sweep`.
        names, capable = [], []
        try:
            from reframe.core.runtime import runtime
            system = runtime().system
        except _NO_RUNTIME:
            return

        for part in system.partitions:
            if 'sweep' not in part.extras:
                continue

            names.append(part.fullname)
            if sweep.why_not(part.extras, self.sweep_point(),
                             self.sweep_requirements,
                             partition=part.fullname) is None:
                capable.append(part.fullname)

        self.capable_partitions = capable
        if names and len(capable) < len(names):
            self.valid_systems = capable

    @run_after('setup')
    def apply_sweep_point(self):
        part = self.current_partition
        family = self.mpi_family()
        reason = sweep.why_not(part.extras, self.sweep_point(),
                               self.sweep_requirements, mpi_family=family,
                               partition=part.fullname)
        self.skip_if(reason is not None, reason)
        self.num_tasks = self.num_nodes * self.ppn
        self.num_tasks_per_node = self.ppn
        self.env_vars.update(sweep.interconnect_env(
            part.extras, self.interconnect, family, part.fullname
        ))
        if self.num_tasks > 1:
            # the MPI reports its transport; checked before sanity
            self.env_vars.update(transport.env(part.extras,
                                               self.interconnect, family))
        launcher = self.current_environ.extras.get('launcher')
        if launcher:
            # this MPI starts its jobs otherwise than the partition does
            # (emucluster: OpenMPI's mpirun inside the allocation, see
            # docs/emulated-cluster.md)
            self.job.launcher = getlauncher(launcher)()

        self.job.launcher.options += self.placement_options(family)

    @run_before('sanity')
    def verify_transport(self):
        """A point labelled with an interconnect must have run over it: the
        MPI's own report in the job's output is checked against the
        interconnect's ``verify`` rules (:mod:`clustergate.transport`)."""
        rules = transport.rules(self.current_partition.extras,
                                self.interconnect, self.mpi_family())
        # --dry-run runs the hooks of sanity but not the job
        if not rules or self.num_tasks < 2 or self.is_dry_run():
            return

        text = ''
        for name in (self.job.stdout, self.job.stderr):
            try:
                with open(os.path.join(self.stagedir, name),
                          errors='replace') as fp:
                    text += fp.read()
            except OSError:
                pass

        reason = transport.mismatch(rules, text, self.interconnect)
        if reason:
            raise SanityError(reason)

    #: Where this point's reference came from, or 'no reference' (logged)
    reference_status = variable(str, value='', loggable=True)

    @run_after('setup')
    def load_reference(self):
        # config/references/<system>.yaml -> self.reference (see
        # clustergate.references); after apply_sweep_point, which may skip
        from clustergate import references
        references.apply(self)

    def placement_options(self, family):
        """Launcher flags that put ``ppn`` ranks on each node, block-wise
        (ranks 0..ppn-1 on the first node), so that "rank 0 to rank j" is
        predictable."""
        launcher = type(self.job.launcher).registered_name
        env_extras = self.current_environ.extras
        if launcher == 'srun':
            return list(env_extras.get('srun_options', [])) + [
                '--distribution=block'
            ]

        if launcher in ('cg-mpirun', 'mpirun', 'mpiexec'):
            if family == 'openmpi':
                # --bind-to none: ranks of different emulated nodes must not
                # be pinned to the same core
                return ['--map-by', f'ppr:{self.ppn}:node', '--bind-to',
                        'none']

            if family in ('mpich', 'intelmpi'):
                return ['-ppn', str(self.ppn)]

        return []
