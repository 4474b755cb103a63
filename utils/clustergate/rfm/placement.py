"""A sweep point made into a job: ranks, ranks per node, the
interconnect's environment variables, the launcher and its placement
flags; and the check, before sanity, that the job ran over the
interconnect it is labelled with."""

import os

from reframe.core.backends import getlauncher
from reframe.core.builtins import run_after, run_before
from reframe.core.exceptions import SanityError

from clustergate.site import sweep
from clustergate.site import transport
from clustergate.rfm.capable import CapablePartitions
from clustergate.site.model import environment_model, partition_model


class LauncherPlacement(CapablePartitions):
    """Mixin: after setup the test has ``num_tasks``,
    ``num_tasks_per_node``, the interconnect's environment variables and
    the launcher's placement flags. A point the partition cannot run after
    all (another partition of the system could) is skipped with the
    reason."""

    @run_after('setup')
    def apply_sweep_point(self):
        part = self.current_partition
        family = self.mpi_family()
        reason = self.point_reason(part, family)
        self.skip_if(reason is not None, reason)
        self.num_tasks = self.num_nodes * self.ppn
        self.num_tasks_per_node = self.ppn
        self.env_vars.update(sweep.interconnect_env(
            partition_model(part), self.interconnect, family, part.fullname
        ))
        if self.num_tasks > 1:
            # the MPI reports its transport; checked before sanity
            self.env_vars.update(transport.env(partition_model(part),
                                               self.interconnect, family))
        launcher = environment_model(self.current_environ).launcher
        if launcher:
            # this MPI starts its jobs otherwise than the partition does
            # (emucluster: OpenMPI's mpirun inside the allocation, see
            # docs/reports/emulated-cluster.md)
            self.job.launcher = getlauncher(launcher)()

        self.job.launcher.options += self.placement_options(family)

    @run_before('sanity')
    def verify_transport(self):
        """A point labelled with an interconnect must have run over it: the
        MPI's own report in the job's output is checked against the
        interconnect's ``verify`` rules (:mod:`clustergate.site.transport`)."""
        rules = transport.rules(partition_model(self.current_partition),
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

    def placement_options(self, family):
        """Launcher flags that put ``ppn`` ranks on each node, block-wise
        (ranks 0..ppn-1 on the first node), so that "rank 0 to rank j" is
        predictable."""
        launcher = type(self.job.launcher).registered_name
        env_model = environment_model(self.current_environ)
        if launcher == 'srun':
            return list(env_model.srun_options) + [
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
