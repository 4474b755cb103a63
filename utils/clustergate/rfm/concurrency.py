"""The partition's concurrency rule made into job options
(clustergate.site.concurrency): whole nodes for every job, the fabric's Slurm
license for a job whose ranks talk over a network interconnect."""

import reframe as rfm
from reframe.core.builtins import run_after

from clustergate.site import concurrency
from clustergate.site.model import partition_model


class JobConcurrency(rfm.RegressionTestPlugin):
    """Mixin: after setup, the job carries the options of the partition's
    ``extras['concurrency']`` (none without it)."""

    def job_fabric(self):
        """The network interconnect this job's ranks use, or None for a
        node-local job (no interconnect, one rank, shared memory)."""
        ranks = (getattr(self, 'num_nodes', 1) or 1) * \
            (getattr(self, 'ppn', 1) or 1)
        return concurrency.uses_fabric(partition_model(self.current_partition),
                                       getattr(self, 'interconnect', None),
                                       ranks)

    @run_after('setup')
    def apply_concurrency(self):
        part = self.current_partition
        self.job.options += concurrency.job_options(
            partition_model(part), self.job_fabric(), part.access)
