"""The sweep axes as ReFrame parameters, shared by every clustergate check.

The values of the axes come from the partitions of the system ReFrame is
loading the checks for (their ``extras``, see :mod:`clustergate.site.sweep`),
never from the checks, and follow that system (see
:mod:`clustergate.rfm.point.partitions`). Each test instance is one point
(nodes, ppn, interconnect). What is done with the point lives next door:
which partitions can run it (:mod:`~clustergate.rfm.point.capable`), its modes
(:mod:`~clustergate.rfm.point.modes`), its launcher placement
(:mod:`~clustergate.rfm.point.placement`) and its reference
(:mod:`~clustergate.rfm.point.reference`), called in a written order by
:class:`clustergate.rfm.point.base.PointTest`.
"""

from clustergate.site import sweep
from clustergate.site.partition import partition_model
from clustergate.rfm.point.partitions import current_partitions

#: Axes used when no ReFrame runtime is available (e.g. plain imports)
FALLBACK = ([1], [1], ['shm'])


def axes_of(partitions):
    """``(nodes, ppn, interconnects)``: the union of the axes of the given
    ``(name, extras)`` partitions, or :data:`FALLBACK`."""
    nodes, ppn, ics = sweep.axes_union(partition_model(extras, name)
                                       for name, extras in partitions)
    return (nodes, ppn, ics) if nodes else FALLBACK


def current_axes():
    """``(nodes, ppn, interconnects)`` of the current system."""
    return axes_of(current_partitions())
