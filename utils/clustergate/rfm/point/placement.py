"""A sweep point made into a job: ranks, ranks per node, the
interconnect's environment variables, the launcher and its placement
flags; and the check, before sanity, that the job ran over the
interconnect it is labelled with."""

import os

from reframe.core.exceptions import SanityError

from clustergate.site import transport
from clustergate import adapter
from clustergate.site.partition import (environment_model, interconnect_env,
                                        partition_model)


def apply_sweep_point(test):
    """After setup: ``num_tasks``, ``num_tasks_per_node``, the
    interconnect's environment variables and the launcher's placement
    flags of ``test``. A point the partition cannot run after all
    (another partition of the system could) is skipped with the
    reason."""
    part = test.current_partition
    family = test.mpi_family()
    reason = test.point_reason(part, family)
    test.skip_if(reason is not None, reason)
    point = test.sweep_point()
    test.num_tasks = point.ranks
    test.num_tasks_per_node = point.ppn
    # with 2+ ranks the MPI reports its transport, checked before sanity
    test.env_vars.update(interconnect_env(
        partition_model(part), test.interconnect, family,
        report_transport=point.ranks > 1))
    launcher = environment_model(test.current_environ).launcher
    if launcher:
        # this MPI starts its jobs otherwise than the partition does
        # (emucluster: OpenMPI's mpirun inside the allocation, see
        # docs/reports/emulated-cluster.md)
        test.job.launcher = adapter.launcher(launcher)

    test.job.launcher.options += placement_options(test, family)


def verify_transport(test):
    """A point labelled with an interconnect must have run over it: the
    MPI's own report in the job's output is checked against the
    interconnect's ``verify`` rules (:mod:`clustergate.site.transport`)."""
    rules = transport.rules(partition_model(test.current_partition),
                            test.interconnect, test.mpi_family())
    # --dry-run runs the hooks of sanity but not the job
    if not rules or test.num_tasks < 2 or test.is_dry_run():
        return

    text = ''
    for name in (test.job.stdout, test.job.stderr):
        try:
            with open(os.path.join(test.stagedir, name),
                      errors='replace') as fp:
                text += fp.read()
        except OSError:
            pass

    reason = transport.mismatch(rules, text, test.interconnect)
    if reason:
        raise SanityError(reason)


def placement_options(test, family):
    """Launcher flags that put ``ppn`` ranks on each node, block-wise
    (ranks 0..ppn-1 on the first node), so that "rank 0 to rank j" is
    predictable."""
    launcher = adapter.launcher_name(test.job.launcher)
    env_model = environment_model(test.current_environ)
    if launcher == 'srun':
        return list(env_model.srun_options) + [
            '--distribution=block'
        ]

    if launcher in ('cg-mpirun', 'mpirun', 'mpiexec'):
        if family == 'openmpi':
            # --bind-to none: ranks of different emulated nodes must not
            # be pinned to the same core
            return ['--map-by', f'ppr:{test.ppn}:node', '--bind-to',
                    'none']

        if family in ('mpich', 'intelmpi'):
            return ['-ppn', str(test.ppn)]

    return []
