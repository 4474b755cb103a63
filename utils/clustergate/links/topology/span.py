"""A small node set of a declared switch tree that still exercises every
leaf switch and every uplink: the link matrix of the ci mode.

The whole-partition matrix costs one round per node (N - 1 rounds); a
merge request's gate cannot wait for it on a big tree, and a subset of
the sweep's node counts (4 nodes of a 9-node tree) may leave whole leaves
and their uplinks out. :func:`span_nodes` takes ``per_leaf`` nodes of
every leaf (the first ones, in the tree's order; fewer where a leaf has
fewer): with 2 per leaf the matrix has pairs inside every leaf (the leaf
switch and both node links of each) and pairs across every leaf (every
uplink, both ways, and every trunk above it), at ``per_leaf x leaves``
nodes whatever the size of the leaves. :func:`restricted` is the tree the
analysis judges that matrix against: the same switches and rates, only
the chosen nodes.
"""

from typing import List, Sequence

from .model import Topology

#: nodes per leaf: 2 is the fewest that gives pairs inside every leaf
PER_LEAF = 2


def span_nodes(topo: Topology, per_leaf: int = PER_LEAF) -> List[str]:
    """The first ``per_leaf`` nodes of every leaf of ``topo``."""
    if per_leaf < 1:
        raise ValueError(f'per_leaf must be at least 1, not {per_leaf}')

    out = []
    for leaf in topo.leaves:
        out += topo.nodes_of(leaf)[:per_leaf]

    return out


def restricted(topo: Topology, nodes: Sequence[str]) -> Topology:
    """``topo`` with only ``nodes`` on its leaves (switches, trunks and
    their rates kept)."""
    keep = set(nodes)
    return Topology(
        {n: s for n, s in topo.leaf_of.items() if n in keep},
        dict(topo.parent),
        {n: r for n, r in topo.node_rate.items() if n in keep},
        dict(topo.uplink_rate),
        {link: r for link, r in topo.link_rate.items()
         if link[0] != 'node' or link[1] in keep},
        topo.source, topo.dragonfly)
