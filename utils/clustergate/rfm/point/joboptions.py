"""The partition's concurrency rule made into job options
(clustergate.planning.concurrency): whole nodes for every job, the fabric's Slurm
license for a job whose ranks talk over a network interconnect; and the
job's limit within the partition's longest job."""

from clustergate.planning import concurrency
from clustergate.site.partition import partition_model, point_of


def job_fabric(test):
    """The network interconnect ``test``'s ranks use, or None for a
    node-local job (no interconnect, one rank, shared memory)."""
    point = point_of(test)
    return concurrency.uses_fabric(partition_model(test.current_partition),
                                   point.interconnect, point.ranks)


def cap_time_limit(test):
    """Lower ``test``'s job limit to the partition's ``max_job_min``
    (Slurm's MaxTime): Slurm never starts a job that asks for more, it
    pends with PartitionTimeLimit. Logs and returns the note, or None.
    (A family that sets its limit later, at run, calls it then.)"""
    most = partition_model(test.current_partition).max_job_min
    if most is None or test.time_limit is None:
        return None
    if test.time_limit <= most * 60:
        return None
    note = (f'job limit {test.time_limit / 60:g} min lowered to the '
            f'partition\'s longest job, {most:g} min (extras.max_job_min)')
    test.time_limit = f'{most * 60:g}s'
    test.logger.info(note)
    return note


def apply(test):
    """Add the options of the partition's ``extras['concurrency']`` to the
    job of ``test`` (none without it)."""
    part = test.current_partition
    test.job.options += concurrency.job_options(
        partition_model(part), test.job_fabric(), part.access)
    cap_time_limit(test)
