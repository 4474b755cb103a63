"""Mixin: the metrics a test's reference entry names are metrics it
reports.

ReFrame ignores a reference for a performance variable the test does not
have, so a misspelt metric in config/references/<system>.yaml would leave
the real one unchecked while the file looks complete. The metrics of a
test are known only once its hooks set ``perf_variables`` (just before
the performance stage), hence this hook, run after them.
"""

import reframe as rfm
from reframe.core.builtins import run_before
from reframe.core.exceptions import ConfigError

from clustergate import refcheck
from clustergate.references import ReferenceFileError


class ReferenceMetrics(rfm.RegressionTestPlugin):
    """Fails a test (one line naming file and key) whose reference entry
    names a metric it does not report."""

    @run_before('performance', always_last=True)
    def reference_names_reported_metrics(self):
        entry = getattr(self, '_cg_reference_entry', None)
        if entry is None:
            return

        path, where, named = entry
        try:
            refcheck.check_metrics(path, where, type(self).__name__,
                                   dict.fromkeys(named),
                                   self.perf_variables)
        except ReferenceFileError as err:
            raise ConfigError(str(err)) from None
