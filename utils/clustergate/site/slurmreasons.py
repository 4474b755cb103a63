"""Why a pending Slurm job will never start: the reasons ReFrame's Slurm
backends cancel a job on (``sched_options.slurm_job_cancel_reasons``).

ReFrame cancels a pending job only for ``ReqNodeNotAvail`` by default. A
job that asks for more than its partition allows waits for ever with
another reason (``PartitionConfig``: 8 nodes on a 2-node partition), and
the session with it. With these reasons the ``squeue`` and ``slurm``
backends cancel such a job at their next poll (seconds) and the test
case fails with ReFrame's ``job cancelled because it was blocked due to
reason: PartitionConfig``. Only reasons that an administrator's change,
not time, clears: not ``Resources``, ``Priority``, ``Dependency`` or a
down node that may come back.
"""

from typing import Iterable, List

#: Slurm's pending reasons (squeue %r) that never clear by waiting
NEVER_CLEAR = (
    # nodes named that are unavailable or do not exist
    'ReqNodeNotAvail',
    # the request exceeds the partition: nodes, CPUs, memory, time
    'PartitionConfig', 'PartitionNodeLimit', 'PartitionTimeLimit',
    # a feature (--constraint) no node has
    'BadConstraints',
    'InvalidAccount', 'InvalidQOS',
    'DependencyNeverSatisfied',
    # per-job limits of the QOS or the association: the job itself is too
    # big, no other job has to end first
    'QOSMaxNodePerJobLimit', 'QOSMaxCpuPerJobLimit',
    'QOSMaxWallDurationPerJobLimit', 'QOSMaxMemoryPerJob',
    'AssocMaxNodesPerJobLimit', 'AssocMaxCpuPerJobLimit',
    'AssocMaxWallDurationPerJobLimit',
)


def cancel_reasons(extra: Iterable[str] = ()) -> List[str]:
    """The value of a partition's ``slurm_job_cancel_reasons``:
    :data:`NEVER_CLEAR` and ``extra``."""
    return list(NEVER_CLEAR) + [r for r in extra if r not in NEVER_CLEAR]
