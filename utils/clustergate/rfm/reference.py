"""The reference of a test instance, from ``config/references/<system>.yaml``
(see :mod:`clustergate.references`)."""

import reframe as rfm
from reframe.core.builtins import run_after, variable

from clustergate.rfm.refmetrics import ReferenceMetrics


class ReferenceLoader(ReferenceMetrics, rfm.RegressionTestPlugin):
    """Mixin: sets ``self.reference`` after setup, and logs where it came
    from (``reference_status``); the metrics the reference names must be
    reported ones (:class:`~clustergate.rfm.refmetrics.ReferenceMetrics`)."""

    #: Where this point's reference came from, or 'no reference' (logged)
    reference_status = variable(str, value='', loggable=True)

    @run_after('setup')
    def load_reference(self):
        # after the placement hooks, which may skip
        from clustergate import references
        references.apply(self)
