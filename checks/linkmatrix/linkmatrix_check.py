"""Link-fault localisation: the node-to-node bandwidth matrix of all nodes
of a partition, per interconnect; names a slow node/NIC or link (see
:mod:`clustergate.rfm.families.linkmatrix`)."""

import reframe as rfm

from clustergate.rfm.families.linkmatrix import (LeafSpanLinkMatrixTest,
                                                 LinkMatrixTest)


@rfm.simple_test
class LinkMatrix(LinkMatrixTest):
    """N x N bandwidth matrix of all nodes, one rank per node, in N-1 shift
    rounds; names slow nodes and links."""


@rfm.simple_test
class LeafSpanLinkMatrix(LeafSpanLinkMatrixTest):
    """The ci mode's link matrix on a switch tree: 2 nodes of every leaf,
    so that every leaf switch and every uplink carries pairs."""
