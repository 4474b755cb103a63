"""Everything a test at one sweep point gets, put together:
:class:`SweepTest`."""

from clustergate.rfm.axes import SweepAxes
from clustergate.rfm.concurrency import JobConcurrency
from clustergate.rfm.modes import ModeTags
from clustergate.rfm.placement import LauncherPlacement
from clustergate.rfm.reference import ReferenceLoader


# The order of the bases is the order of the hooks (ReFrame runs a base's
# hooks before those of the classes listed before it): setup places the
# point, then loads its reference; at the end of init the capable
# partitions are chosen, then the mode tags (always_last hooks run in the
# reverse order). tests/test_modes.py checks the order of init.
class SweepTest(JobConcurrency, ReferenceLoader, LauncherPlacement, ModeTags,
                SweepAxes):
    """Mixin of every test at one sweep point (nodes, ppn, interconnect):
    the axes as parameters that follow the system loaded, the partitions
    and environments that can run the point (no test case otherwise), its
    mode tags, its job placement, its reference and the options of the
    partition's concurrency rule."""
