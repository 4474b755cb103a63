"""Which partitions and environments can run a sweep point.

A point that none can run is not a test case at all: its
``valid_systems`` is emptied at init (as the EESSI test-suite does), so
``-l`` lists what will run. ``clustergate sweep`` shows why the other
points cannot run. What only the run can tell (a missing binary, too
little memory) stays a skip with the reason.
"""

from clustergate.site import sweep
from clustergate import adapter
from clustergate.site.partition import environment_model, partition_model


def point_reason(test, partition, mpi_family):
    """Why ``test``'s point cannot run on ``partition`` (a ReFrame
    partition) with ``mpi_family``, or None (what
    :meth:`~clustergate.rfm.point.base.PointTest.point_reason` asks first)."""
    return sweep.why_not(partition_model(partition), test.sweep_point(),
                         test.sweep_requirements, mpi_family=mpi_family)


def keep_capable_points(test):
    """Narrow ``valid_systems`` and ``valid_prog_environs`` of ``test`` to
    the partitions and environments that can run its point (its
    ``point_reason`` is None); set ``capable_partitions`` (full names)."""
    if adapter.current_system() is None:
        return

    parts, envs = [], []
    combos = adapter.valid_combinations(test.valid_systems,
                                        test.valid_prog_environs)
    for part, environs in combos.items():
        able = [e.name for e in environs if test.point_reason(
            part, environment_model(e).mpi_family) is None]
        if able:
            parts.append(part.fullname)
            envs += [e for e in able if e not in envs]

    test.capable_partitions = parts
    test.valid_systems = parts
    if envs:
        test.valid_prog_environs = envs
