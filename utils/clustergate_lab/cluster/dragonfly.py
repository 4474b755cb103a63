"""Forwarding of the emulated dragonfly (``up --topology dragonfly``).

The groups' bridges are joined pairwise by global links, so on three
groups or more they form loops, and a bridge left to itself floods a
broadcast around them for ever (and learns a node's address on whichever
global link the flood came in by, so its frames would not take their own
group pair's link). A dragonfly routes minimally: a flow between two
groups takes the global link between them. Here that is done as a fabric
manager does it, from the cabling:

- every node's interface (and the head's bridge) has a fixed MAC address
  (:func:`node_mac`, :func:`head_mac`), and every node and the head know
  every other address statically (permanent neighbour entries): no ARP
  broadcast has to cross a group;
- a global link's ends flood nothing (no broadcast, multicast or unknown
  unicast) and learn nothing: no loop;
- every group's bridge has a static forwarding entry for every node and
  the head: towards the leaf the node is really cabled to when it is in
  that group, else over the global link to the node's group
  (:func:`fdb_lines`, rewritten when ``miscable`` or ``restore`` moves a
  cable: a node cabled into another group is reached there, the way a
  fabric manager reroutes after discovery; topology.conf still says
  where it was meant to be).

The leaves' bridges stay learning bridges (each is a tree under its
group). Pure functions but :func:`apply_fdb`.
"""

from . import procs
from .layout import FABRICS, fabric_index, node_index
from .tree import real_cabling

#: options of a global link's ends on the groups' bridges
GLOBAL_PORT = 'type bridge_slave learning off flood off mcast_flood off ' \
              'bcast_flood off'


def node_mac(node, fabric):
    """The fixed MAC address of ``node``'s interface on ``fabric``
    (locally administered: 02:77:<fabric>:00:00:<node>)."""
    return f'02:77:{fabric_index(fabric):02x}:00:00:{node_index(node):02x}'


def head_mac(fabric):
    """The fixed MAC address of the head's bridge on ``fabric``."""
    return f'02:77:{fabric_index(fabric):02x}:00:00:00'


def global_port_lines(tree, glob, fabric):
    """ip batch: both ends of the global link ``glob`` on ``fabric``
    flood nothing and learn nothing."""
    return [f'link set {end} {GLOBAL_PORT}'
            for end in tree.link_ends(glob, fabric)]


def host_lines(layout, tree):
    """ip batch on the host after the bridges and veths exist: the head
    bridge's fixed MAC and the head's permanent neighbours (every
    node)."""
    lines = []
    for f in FABRICS:
        lines.append(f'link set {layout.bridge(f)} address {head_mac(f)}')
        lines += [f'neigh replace {layout.node_addr(n, f)} lladdr '
                  f'{node_mac(n, f)} dev {layout.bridge(f)} nud permanent'
                  for n in layout.node_names]

    return lines


def node_lines(layout, node):
    """ip batch inside ``node`` before its interfaces come up: their
    fixed MACs, and permanent neighbours for the head and every other
    node."""
    lines = []
    for f in FABRICS:
        lines.append(f'link set {f} address {node_mac(node, f)}')
        lines.append(f'neigh replace {layout.host_addr(f)} lladdr '
                     f'{head_mac(f)} dev {f} nud permanent')
        lines += [f'neigh replace {layout.node_addr(n, f)} lladdr '
                  f'{node_mac(n, f)} dev {f} nud permanent'
                  for n in layout.node_names if n != node]

    return lines


def ports(layout, tree, cabling=None):
    """``{(group bridge, MAC): port}`` of every static forwarding entry:
    ``cabling`` is the state's ``{fabric: {node: leaf}}`` overrides (the
    real cabling where it differs from topology.conf)."""
    cabling = cabling or {}
    out = {}
    groups = tree.spine_names
    for f in FABRICS:
        real = real_cabling(tree, cabling.get(f, {}))
        for g in groups:
            bridge = tree.spine_bridge(g, f)
            for n in layout.node_names:
                leaf = real[n]
                home = tree.parent_of(leaf)
                out[(bridge, node_mac(n, f))] = (
                    tree.uplink_spine_end(leaf, f) if home == g
                    else tree.global_end(g, home, f))
            out[(bridge, head_mac(f))] = (
                tree.head_link_ends(f)[0] if g == groups[0]
                else tree.global_end(g, groups[0], f))

    return out


def fdb_lines(layout, tree, cabling=None):
    """bridge batch of every static forwarding entry (``replace``: also
    what moves an entry after a cable moved)."""
    return [f'fdb replace {mac} dev {port} master static'
            for (_, mac), port in sorted(ports(layout, tree,
                                               cabling).items())]


def apply_fdb(layout, tree, cabling=None):
    """Write the groups' forwarding entries into the kernel."""
    procs.run_batch(['bridge'], fdb_lines(layout, tree, cabling))


def route(layout, tree, src, dst, fabric='fab0', cabling=None):
    """The shaped links a frame from node ``src`` to node ``dst`` crosses
    above the leaves, as the static entries send it (what the unit tests
    hold against the analysis's minimal route): ``['uplink leaf1',
    'global group1-group2', 'uplink leaf3']``."""
    real = real_cabling(tree, (cabling or {}).get(fabric, {}))
    table = ports(layout, tree, cabling)
    owner, peer = {}, {}
    for glob in tree.global_links:
        a, b = tree.link_ends(glob, fabric)
        ga, gb = glob.split('~')
        owner.update({a: ga, b: gb})
        peer.update({a: (b, glob), b: (a, glob)})
    if real[src] == real[dst]:
        return []
    hops, group = [f'uplink {real[src]}'], tree.parent_of(real[src])
    for _ in range(len(tree.spine_names)):     # a loop would not end
        port = table[(tree.spine_bridge(group, fabric), node_mac(dst, fabric))]
        if port not in peer:
            break
        end, glob = peer[port]
        hops.append(f'global {glob.replace("~", "-")}')
        group = owner[end]
    return hops + [f'uplink {real[dst]}']
