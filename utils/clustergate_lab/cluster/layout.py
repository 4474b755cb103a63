"""Names and addresses of the emulated cluster (pure, no side effects).

Fabric ``fabF`` (F = 0, 1) is the host bridge ``cgfabF`` on
``10.77.F.0/24``; the host (the ``head`` node, where slurmctld runs) owns
``10.77.F.1`` and node ``nK`` has ``10.77.F.(10+K)``. The host end of node
``nK``'s veth on fabric F is ``cgnKfF``; the namespace end is called like
the fabric (``fab0``, ``fab1``), so interface names are the same on every
node.
"""

from dataclasses import dataclass

FABRICS = ('fab0', 'fab1')
NET_PREFIX = '10.77'
MAX_NODES = 64
HEAD = 'head'
CLUSTER_NAME = 'cgemu'
PARTITION = 'emu'


def node_name(index):
    """Name of node number ``index`` (1-based)."""
    return f'n{index}'


def node_index(name):
    """Inverse of :func:`node_name`; ``ValueError`` for foreign names."""
    if not name.startswith('n') or not name[1:].isdigit():
        raise ValueError(f'not a node name: {name!r}')

    return int(name[1:])


def fabric_index(fabric):
    if fabric not in FABRICS:
        raise ValueError(f'unknown fabric {fabric!r} '
                         f'(choose from {", ".join(FABRICS)})')

    return FABRICS.index(fabric)


@dataclass(frozen=True)
class Layout:
    """The static shape of a cluster of ``nodes`` nodes."""

    nodes: int

    def __post_init__(self):
        if not 1 <= self.nodes <= MAX_NODES:
            raise ValueError(f'number of nodes must be 1..{MAX_NODES}, '
                             f'not {self.nodes}')

    @property
    def node_names(self):
        return [node_name(i) for i in range(1, self.nodes + 1)]

    @property
    def nodelist(self):
        """Slurm hostlist expression of all nodes (``n[1-4]``)."""
        if self.nodes == 1:
            return 'n1'

        return f'n[1-{self.nodes}]'

    @staticmethod
    def bridge(fabric):
        return f'cg{fabric}'

    @staticmethod
    def host_addr(fabric):
        return f'{NET_PREFIX}.{fabric_index(fabric)}.1'

    @staticmethod
    def node_addr(node, fabric):
        return f'{NET_PREFIX}.{fabric_index(fabric)}.{10 + node_index(node)}'

    @staticmethod
    def host_veth(node, fabric):
        return f'cg{node}f{fabric_index(fabric)}'

    @staticmethod
    def hostname(node, fabric):
        """Resolvable name of ``node`` on ``fabric`` (``n1``, ``n1-fab1``)."""
        return node if fabric == FABRICS[0] else f'{node}-{fabric}'

    def links(self):
        """All ``(node, fabric)`` pairs."""
        return [(n, f) for n in self.node_names for f in FABRICS]

    def hosts_entries(self):
        """``(address, names)`` lines for /etc/hosts."""
        entries = [(self.host_addr(FABRICS[0]), f'{HEAD} {HEAD}-fab0')]
        entries += [(self.host_addr(f), f'{HEAD}-{f}') for f in FABRICS[1:]]
        for n in self.node_names:
            entries.append((self.node_addr(n, FABRICS[0]), f'{n} {n}-fab0'))
            for f in FABRICS[1:]:
                entries.append((self.node_addr(n, f), self.hostname(n, f)))

        return entries
