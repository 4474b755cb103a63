"""The sweep axes as ReFrame parameters, shared by every clustergate check.

The values of the axes come from the partitions of the system ReFrame is
loading the checks for (their ``extras``, see :mod:`clustergate.site.sweep`),
never from the checks, and follow that system (see
:mod:`clustergate.rfm.partitions`). Each test instance is one point
(nodes, ppn, interconnect). What is done with the point lives next door:
which partitions can run it (:mod:`~clustergate.rfm.capable`), its modes
(:mod:`~clustergate.rfm.modes`), its launcher placement
(:mod:`~clustergate.rfm.placement`) and its reference
(:mod:`~clustergate.rfm.reference`), put together in
:class:`clustergate.rfm.sweeptest.SweepTest`.
"""

from reframe.core.builtins import parameter, variable

from clustergate.site import sweep
from clustergate.rfm.partitions import SystemParameters, current_partitions
from clustergate.site.model import environment_model

#: Axes used when no ReFrame runtime is available (e.g. plain imports)
FALLBACK = ([1], [1], ['shm'])


def axes_of(partitions):
    """``(nodes, ppn, interconnects)``: the union of the axes of the given
    ``(name, extras)`` partitions, or :data:`FALLBACK`."""
    nodes, ppn, ics = sweep.axes_union(partitions)
    return (nodes, ppn, ics) if nodes else FALLBACK


def current_axes():
    """``(nodes, ppn, interconnects)`` of the current system."""
    return axes_of(current_partitions())


class SweepAxes(SystemParameters):
    """Mixin: node count, processes per node and interconnect.

    Subclasses describe what they need with :attr:`sweep_requirements`
    (min ranks, power-of-two counts, ...) and may narrow an axis by
    overriding :meth:`system_parameters`.
    """

    #: Number of nodes of this point
    num_nodes = parameter(FALLBACK[0], loggable=True)

    #: Processes (MPI ranks) per node
    ppn = parameter(FALLBACK[1], loggable=True)

    #: Interconnect name, as declared by the partition
    interconnect = parameter(FALLBACK[2], loggable=True)

    #: What this check needs from a point of the sweep
    sweep_requirements = variable(sweep.Requirements,
                                  value=sweep.Requirements())

    @classmethod
    def system_parameters(cls, partitions):
        nodes, ppn, ics = axes_of(partitions)
        return {**super().system_parameters(partitions),
                'num_nodes': nodes, 'ppn': ppn, 'interconnect': ics}

    def sweep_point(self):
        return sweep.SweepPoint(self.num_nodes, self.ppn, self.interconnect)

    def mpi_family(self):
        env = getattr(self, 'current_environ', None)
        return environment_model(env).mpi_family if env else None
