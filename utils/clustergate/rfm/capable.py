"""Which partitions and environments can run a sweep point.

A point that none can run is not a test case at all: its
``valid_systems`` is emptied at init (as the EESSI test-suite does), so
``-l`` lists what will run. ``clustergate sweep`` shows why the other
points cannot run. What only the run can tell (a missing binary, too
little memory) stays a skip with the reason.
"""

import reframe as rfm
from reframe.core.builtins import run_after

from clustergate.site import sweep
from clustergate.rfm.partitions import current_system
from clustergate.site.model import environment_model, partition_model


class CapablePartitions(rfm.RegressionTestPlugin):
    """Mixin: narrows ``valid_systems`` and ``valid_prog_environs`` to the
    partitions and environments that can run this point; sets
    ``capable_partitions`` (full names). The test has ``sweep_point()`` and
    ``sweep_requirements`` (see :class:`~clustergate.rfm.axes.SweepAxes`).

    With :class:`~clustergate.rfm.modes.ModeTags`, list this class first
    among the bases: its hook must run before the mode tags' (ReFrame runs
    the ``always_last`` hooks of the later bases last).
    """

    def point_reason(self, partition, mpi_family):
        """Why this point cannot run on ``partition`` (a ReFrame partition)
        with ``mpi_family``, or None. Families with more structural needs
        extend it (call ``super()``)."""
        return sweep.why_not(partition_model(partition), self.sweep_point(),
                             self.sweep_requirements, mpi_family=mpi_family,
                             partition=partition.fullname)

    # always_last: after the families' own init hooks, which may narrow
    # the environments (e.g. to those a benchmark source is built for)
    @run_after('init', always_last=True)
    def keep_capable_points(self):
        if current_system() is None:
            return

        from reframe.core.runtime import valid_sysenv_comb
        parts, envs = [], []
        combos = valid_sysenv_comb(self.valid_systems,
                                   self.valid_prog_environs)
        for part, environs in combos.items():
            able = [e.name for e in environs if self.point_reason(
                part, environment_model(e).mpi_family) is None]
            if able:
                parts.append(part.fullname)
                envs += [e for e in able if e not in envs]

        self.capable_partitions = parts
        self.valid_systems = parts
        if envs:
            self.valid_prog_environs = envs
