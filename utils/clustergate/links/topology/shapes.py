"""Trees of a given shape, made rather than read: a two-level fat tree,
a three-level one (leaves, spines, a core) and a dragonfly (groups of
leaves joined pairwise by global links), for the lab's simulation, the
tests and the emulated cluster's layouts; and the Slurm
``topology.conf`` text of any tree. Each maker takes the class to build
(:class:`clustergate.links.topology.model.Topology`) as ``make``."""

from clustergate.links.topology.hostlist import compress


def fat_tree(make, leaves: int, per_leaf: int, node_rate: float = 1.0,
             oversubscription: float = 1.0, prefix: str = 'n',
             width: int = 0) :
    """``leaves`` leaf switches of ``per_leaf`` nodes under one spine
    (the spine layer taken as one non-blocking switch); each leaf's
    trunk carries ``per_leaf * node_rate / oversubscription``."""
    leaf_of, parent, rates = {}, {'spine': None}, {}
    w = width or 0
    k = 0
    for i in range(1, leaves + 1):
        leaf = f'leaf{i}'
        parent[leaf] = 'spine'
        rates[leaf] = per_leaf * node_rate / oversubscription
        for _ in range(per_leaf):
            k += 1
            leaf_of[f'{prefix}{str(k).zfill(w)}'] = leaf
    return make(leaf_of, parent, {n: node_rate for n in leaf_of}, rates,
               source=f'fat tree {leaves}x{per_leaf}')

def fat_tree3(make, spines: int, leaves_per_spine: int, per_leaf: int,
              node_rate: float = 1.0, oversubscription: float = 1.0,
              spine_oversubscription: float = 1.0, prefix: str = 'n',
              width: int = 0) :
    """A three-level fat tree: ``spines`` spine switches (each a pod
    of ``leaves_per_spine`` leaves of ``per_leaf`` nodes) under one
    core. A leaf's trunk carries ``per_leaf * node_rate /
    oversubscription``, a spine's trunk to the core the sum of its
    leaves' trunks / ``spine_oversubscription``. In Slurm's
    topology.conf: switches of switches (:func:`topology_conf`)."""
    leaf_of, parent, rates = {}, {'core': None}, {}
    k = 0
    leaf_rate = per_leaf * node_rate / oversubscription
    for p in range(1, spines + 1):
        spine = f'spine{p}'
        parent[spine] = 'core'
        rates[spine] = leaves_per_spine * leaf_rate / \
            spine_oversubscription
        for q in range(1, leaves_per_spine + 1):
            leaf = f'leaf{(p - 1) * leaves_per_spine + q}'
            parent[leaf] = spine
            rates[leaf] = leaf_rate
            for _ in range(per_leaf):
                k += 1
                leaf_of[f'{prefix}{str(k).zfill(width)}'] = leaf
    return make(leaf_of, parent, {n: node_rate for n in leaf_of}, rates,
               source=f'fat tree {spines}x{leaves_per_spine}x'
                      f'{per_leaf}')

def dragonfly_of(make, groups: int, leaves_per_group: int, per_leaf: int,
                 node_rate: float = 1.0, oversubscription: float = 1.0,
                 global_taper: float = 2.0, prefix: str = 'n',
                 width: int = 0) :
    """A dragonfly: ``groups`` groups of ``leaves_per_group`` leaves
    of ``per_leaf`` nodes, each leaf's trunk into its group at
    ``per_leaf * node_rate / oversubscription``, every pair of groups
    joined by one global link of ``group nodes * node_rate /
    global_taper / (groups - 1)`` (each group's global bandwidth: its
    nodes' injection / ``global_taper``, spread over the other
    groups). Minimal routing: a flow between groups takes their
    global link. In Slurm's topology.conf a group is a switch over
    its leaves and the groups hang under one top switch; the
    partition declares the dragonfly."""
    leaf_of, parent, rates = {}, {'fabric': None}, {}
    k = 0
    group_nodes = leaves_per_group * per_leaf
    for g in range(1, groups + 1):
        group = f'group{g}'
        parent[group] = 'fabric'
        rates[group] = group_nodes * node_rate    # unused: no root
        for q in range(1, leaves_per_group + 1):
            leaf = f'leaf{(g - 1) * leaves_per_group + q}'
            parent[leaf] = group
            rates[leaf] = per_leaf * node_rate / oversubscription
            for _ in range(per_leaf):
                k += 1
                leaf_of[f'{prefix}{str(k).zfill(width)}'] = leaf
    glob = group_nodes * node_rate / global_taper / max(1, groups - 1)
    for a in range(1, groups + 1):
        for b in range(a + 1, groups + 1):
            rates[f'group{a}~group{b}'] = glob
    return make(leaf_of, parent, {n: node_rate for n in leaf_of}, rates,
               source=f'dragonfly {groups}x{leaves_per_group}x'
                      f'{per_leaf}', dragonfly=True)

def topology_conf(tree) -> str:
    """Slurm ``topology.conf`` text of ``tree`` (no rates: Slurm's
    LinkSpeed is informational)."""
    lines = []
    by_level = sorted(tree.parent, key=lambda s: len(tree.chain(s)),
                      reverse=True)
    for s in by_level:
        nodes = tree.nodes_of(s)
        kids = [c for c, p in tree.parent.items() if p == s]
        words = [f'SwitchName={s}']
        if kids:
            words.append(f'Switches={compress(kids)}')
        if nodes:
            words.append(f'Nodes={compress(nodes)}')
        lines.append(' '.join(words))
    return '\n'.join(lines) + '\n'
