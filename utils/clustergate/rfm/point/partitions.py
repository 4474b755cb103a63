"""The partitions of the system ReFrame is loading checks for.

ReFrame parameters are fixed when a class is created. The sweep axes come
from the partitions of the current system, so a base class imported once
would keep the axes of the first system loaded in the process (loading
``localhost`` after ``emucluster`` gave fab0/fab1 and 4 nodes).
:class:`clustergate.rfm.point.base.PointTest` computes them again for every
class created, i.e. every time ReFrame's loader loads a check file.
"""

from clustergate.rfm.adapter import current_system
from clustergate.site.partition import partition_model


def current_partitions():
    """``(name, extras)`` of each partition of the current system; empty
    without a runtime."""
    system = current_system()
    return [(p.name, partition_model(p, p.name))
            for p in system.partitions] if system else []
