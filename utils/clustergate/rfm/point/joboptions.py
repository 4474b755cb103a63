"""The partition's concurrency rule made into job options
(clustergate.planning.concurrency): whole nodes for every job, the fabric's Slurm
license for a job whose ranks talk over a network interconnect."""

from clustergate.planning import concurrency
from clustergate.site.partition import partition_model, point_of


def job_fabric(test):
    """The network interconnect ``test``'s ranks use, or None for a
    node-local job (no interconnect, one rank, shared memory)."""
    point = point_of(test)
    return concurrency.uses_fabric(partition_model(test.current_partition),
                                   point.interconnect, point.ranks)


def apply(test):
    """Add the options of the partition's ``extras['concurrency']`` to the
    job of ``test`` (none without it)."""
    part = test.current_partition
    test.job.options += concurrency.job_options(
        partition_model(part), test.job_fabric(), part.access)
