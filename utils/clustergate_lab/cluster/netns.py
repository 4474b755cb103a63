"""Network of the emulated cluster: bridges, namespaces, veths, /etc/hosts.

Commands are generated as ``ip -batch`` / ``tc -batch`` lines (pure
functions, unit-tested) and applied with one ``ip``/``tc`` process for the
host plus one per namespace, which keeps bring-up well under a second.
"""

import os
import re
import subprocess
import sys

from . import dragonfly, procs, shaping
from .layout import FABRICS
from .procs import ClusterError, run

NETNS_DIR = '/run/netns'
HOSTS_FILE = '/etc/hosts'
HOSTS_BEGIN = '# BEGIN clustergate-emu (managed by `clustergate-lab cluster`)'
HOSTS_END = '# END clustergate-emu'


def _bridge_lines(br):
    return [f'link add {br} type bridge stp_state 0 forward_delay 0',
            f'link set {br} addrgenmode none']


def _link_lines(lower, upper, lower_bridge, upper_bridge):
    """A shaped link between two bridges: a veth pair, one end on each."""
    return [f'link add {lower} type veth peer name {upper}',
            f'link set {lower} addrgenmode none',
            f'link set {upper} addrgenmode none',
            f'link set {lower} master {lower_bridge} up',
            f'link set {upper} master {upper_bridge} up']


def host_batch(layout, tree=None):
    """ip batch on the host: bridges with their addresses, namespaces, veth
    pairs (the peer created directly inside the namespace, named after the
    fabric), host ends enslaved to the bridges and up.

    With a leaf/spine ``tree`` (:mod:`clustergate_lab.cluster.tree`) the
    fabric's bridge is the spine (it keeps the head's address), each leaf
    is a bridge joined to the spine by an uplink veth pair, and each node's
    veth goes on the bridge of the leaf the tree puts it under. On three
    levels the fabric's bridge is the core, each spine a bridge joined to
    it by a trunk veth pair, and each leaf's uplink ends on its spine. A
    dragonfly's groups are bridges like spines, joined pairwise by global
    links instead of trunks, the head's bridge hanging on group1
    (:mod:`clustergate_lab.cluster.dragonfly`)."""
    lines = []
    for f in FABRICS:
        br = layout.bridge(f)
        lines += _bridge_lines(br) + [
            f'addr add {layout.host_addr(f)}/24 dev {br}',
            f'link set {br} up']
        for spine in (tree.spine_names if tree else []):
            sb = tree.spine_bridge(spine, f)
            lines += _bridge_lines(sb) + [f'link set {sb} up']
            if not tree.dragonfly:
                lines += _link_lines(*tree.link_ends(spine, f), sb, br)
        if tree is not None and tree.dragonfly:
            lines += _link_lines(*tree.head_link_ends(f), tree.spine_bridge(
                tree.spine_names[0], f), br)
            for glob in tree.global_links:
                a, b = glob.split('~')
                # no flooding over it from the first frame: the groups'
                # bridges form a loop
                lines += _link_lines(*tree.link_ends(glob, f),
                                     tree.spine_bridge(a, f),
                                     tree.spine_bridge(b, f))
                lines += dragonfly.global_port_lines(tree, glob, f)
        for leaf in (tree.leaf_names if tree else []):
            lb = tree.leaf_bridge(leaf, f)
            lines += _bridge_lines(lb) + [f'link set {lb} up']
            lines += _link_lines(*tree.link_ends(leaf, f), lb,
                                 tree.parent_bridge(leaf, f, br))

    for n in layout.node_names:
        lines.append(f'netns add {n}')
        for f in FABRICS:
            veth = layout.host_veth(n, f)
            master = (tree.leaf_bridge(tree.leaf_of(n), f) if tree
                      else layout.bridge(f))
            lines += [f'link add {veth} type veth peer name {f} netns {n}',
                      f'link set {veth} addrgenmode none',
                      f'link set {veth} master {master} up']

    if tree is not None and tree.dragonfly:
        lines += dragonfly.host_lines(layout, tree)
    return lines


def node_batch(layout, node, tree=None):
    """ip batch inside ``node``: lo and the fabric interfaces up, with
    their addresses (the /24 routes come with the addresses; no default
    route: nothing leaves the emulated fabrics; no IPv6 link-local
    addresses either: ``addrgenmode none``); on a dragonfly first their
    fixed MACs and permanent neighbours."""
    lines = ['link set lo up']
    if tree is not None and tree.dragonfly:
        lines += dragonfly.node_lines(layout, node)
    for f in FABRICS:
        lines += [f'link set {f} addrgenmode none',
                  f'addr add {layout.node_addr(node, f)}/24 dev {f}',
                  f'link set {f} up']

    return lines


def tree_devices(tree):
    """Names of the host devices a tree adds: leaf (and spine) bridges and
    the lower ends of the uplinks (and trunks); deleting one end of a veth
    deletes both."""
    if tree is None:
        return []

    out = []
    for f in FABRICS:
        for leaf in tree.leaf_names:
            out += [f'bridge:{tree.leaf_bridge(leaf, f)}',
                    f'link:{tree.uplink_leaf_end(leaf, f)}']
        for spine in tree.spine_names:
            out.append(f'bridge:{tree.spine_bridge(spine, f)}')
            if not tree.dragonfly:
                out.append(f'link:{tree.trunk_spine_end(spine, f)}')
        if tree.dragonfly:
            out += [f'link:{tree.link_ends(g, f)[0]}'
                    for g in tree.global_links]
            out.append(f'link:{tree.head_link_ends(f)[0]}')

    return out


def build(layout, rates, on_created, tree=None, uplink_rates=None):
    """Create the whole network, calling ``on_created(what)`` before each
    resource kind is created so a failure can be undone."""
    for f in FABRICS:
        on_created(f'bridge:{layout.bridge(f)}')

    for what in tree_devices(tree):
        on_created(what)

    for n in layout.node_names:
        on_created(f'netns:{n}')

    procs.run_batch(['ip'], host_batch(layout, tree))
    children = [
        subprocess.Popen(['ip', '-n', n, '-batch', '-'],
                         stdin=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
        for n in layout.node_names
    ]
    errors = []
    for n, p in zip(layout.node_names, children):
        _, err = p.communicate('\n'.join(node_batch(layout, n, tree)) +
                               '\n', timeout=30)
        if p.returncode:
            errors.append(f'{n}: {err.strip()}')

    if errors:
        raise ClusterError('configuring namespaces failed:\n' +
                           '\n'.join(errors))

    apply_rates(layout, rates)
    if tree is not None:
        apply_uplink_rates(tree, uplink_rates)
    if tree is not None and tree.dragonfly:
        dragonfly.apply_fdb(layout, tree)


def uplink_batch(tree, uplink_rates):
    """tc batch: TBF on both ends of the uplinks (and the spines' trunks);
    ``uplink_rates`` maps ``(leaf or spine, fabric)`` to bits/s."""
    return [shaping.tbf_command(dev, bits)
            for (sw, f), bits in sorted(uplink_rates.items())
            for dev in tree.link_ends(sw, f)]


def apply_uplink_rates(tree, uplink_rates):
    if uplink_rates:
        procs.run_batch(['tc'], uplink_batch(tree, uplink_rates))


def recable(node, fabric, bridge, layout):
    """Move ``node``'s veth on ``fabric`` onto ``bridge`` (a miscabled or
    re-cabled node: the link and its shaping stay as they are), then let
    the node announce itself with one broadcast datagram, as a host does
    when its link comes up: every bridge of the fabric learns its new port.
    Without it the spine kept sending the node's frames towards its old
    leaf until the entry aged out (300 s; seen: srun "Communication
    connection failure" right after a restore); flushing the bridges
    instead floods every unicast frame until they relearn."""
    run(['ip', 'link', 'set', layout.host_veth(node, fabric), 'master',
         bridge], timeout=10)
    run(['nsenter', f'--net={NETNS_DIR}/{node}', sys.executable, '-c',
         ANNOUNCE, broadcast_addr(layout, fabric)], timeout=10)


#: One UDP broadcast datagram to the discard port of the fabric's subnet
ANNOUNCE = ('import socket, sys\n'
            's = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n'
            's.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)\n'
            's.sendto(b"clustergate", (sys.argv[1], 9))\n')


def broadcast_addr(layout, fabric):
    return layout.host_addr(fabric).rsplit('.', 1)[0] + '.255'


def bridge_of(dev):
    """Name of the bridge ``dev`` is enslaved to (None if none): the real
    cabling, read from the kernel."""
    try:
        return os.path.basename(os.readlink(f'/sys/class/net/{dev}/master'))
    except OSError:
        return None


def delete_link(name):
    if link_exists(name):
        run(['ip', 'link', 'delete', name], timeout=20)


def apply_rates(layout, rates, nodes=None):
    """Set TBF on both ends of the links of ``nodes`` (default: all)."""
    nodes = nodes or layout.node_names
    host = [shaping.tbf_command(layout.host_veth(n, f), rates[(n, f)])
            for n in nodes for f in FABRICS]
    procs.run_batch(['tc'], host)
    for n in nodes:
        procs.run_batch(['tc', '-n', n], shaping.node_batch(n, FABRICS, rates))


def read_rate(node, fabric, layout, side='host'):
    """Current TBF rate (bits/s) of one end of a link, None if unshaped."""
    if side == 'host':
        cmd = ['tc', 'qdisc', 'show', 'dev', layout.host_veth(node, fabric)]
    else:
        cmd = ['tc', '-n', node, 'qdisc', 'show', 'dev', fabric]

    cp = run(cmd, check=False, timeout=10)
    return shaping.parse_tc_show(cp.stdout) if cp.returncode == 0 else None


def read_dev_rate(dev):
    """TBF rate (bits/s) of a host device, None if unshaped or missing."""
    cp = run(['tc', 'qdisc', 'show', 'dev', dev], check=False, timeout=10)
    return shaping.parse_tc_show(cp.stdout) if cp.returncode == 0 else None


def existing_namespaces():
    try:
        return sorted(os.listdir(NETNS_DIR))
    except FileNotFoundError:
        return []


def link_exists(name):
    return os.path.exists(f'/sys/class/net/{name}')


def namespace_pids(node):
    """PIDs of all processes in namespace ``node``."""
    cp = run(['ip', 'netns', 'pids', node], check=False, timeout=10)
    return [int(p) for p in cp.stdout.split() if p.isdigit()]


def delete_namespace(node):
    """Remove a namespace (its veth ends go with it, taking the host ends
    along)."""
    if os.path.exists(os.path.join(NETNS_DIR, node)):
        run(['ip', 'netns', 'delete', node], timeout=20)


def delete_bridge(name):
    if link_exists(name):
        run(['ip', 'link', 'delete', name, 'type', 'bridge'], timeout=20)


# /etc/hosts ---------------------------------------------------------------

def render_hosts_block(layout):
    lines = [HOSTS_BEGIN]
    lines += [f'{addr}\t{names}' for addr, names in layout.hosts_entries()]
    lines.append(HOSTS_END)
    return '\n'.join(lines) + '\n'


_BLOCK_RE = re.compile(
    r'^' + re.escape(HOSTS_BEGIN) + r'\n.*?^' + re.escape(HOSTS_END) +
    r'\n?', re.M | re.S
)


def strip_hosts_block(text):
    """``text`` without our marked block (unchanged if there is none)."""
    return _BLOCK_RE.sub('', text)


def with_hosts_block(text, layout):
    """``text`` with our block (replacing an old one) at the end."""
    text = strip_hosts_block(text)
    if text and not text.endswith('\n'):
        text += '\n'

    return text + render_hosts_block(layout)


def _rewrite_hosts(transform, path=HOSTS_FILE):
    # Rewritten in place (not renamed over): /etc/hosts is often a bind
    # mount in containers.
    with open(path) as fp:
        old = fp.read()

    new = transform(old)
    if new != old:
        with open(path, 'w') as fp:
            fp.write(new)


def install_hosts(layout, path=HOSTS_FILE):
    _rewrite_hosts(lambda t: with_hosts_block(t, layout), path)


def remove_hosts(path=HOSTS_FILE):
    _rewrite_hosts(strip_hosts_block, path)
