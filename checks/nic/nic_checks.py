"""Shared-interface contention: two streams from one node, over one
interface or over two (the second fabric). See docs/reports/node-tests.md."""

import reframe as rfm

from clustergate.rfm.families.nic import NicContentionTest


@rfm.simple_test
class NicSharedInterface(NicContentionTest):
    """One stream alone vs two at once from the same node; ratio of the
    per-stream bandwidth (0.5 expected on one rate-limited interface, 1.0
    on two)."""
