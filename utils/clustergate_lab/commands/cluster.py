"""``clustergate-lab cluster``: the emulated multi-node Slurm cluster.

::

    clustergate-lab cluster up [--nodes 4] [--rate 1gbit] [--timeout 30]
    clustergate-lab cluster up --topology leafspine [--nodes 9] [--leaves 3]
        [--rate 250mbit] [--oversubscription 2 | --uplink-rate 375mbit]
    clustergate-lab cluster up --topology fattree3 [--nodes 24] [--leaves 6]
        [--spines 3] [--rate 100mbit] [--oversubscription 2]
    clustergate-lab cluster up --topology dragonfly [--nodes 24] [--leaves 6]
        [--groups 3] [--rate 100mbit] [--oversubscription 2]
    clustergate-lab cluster status
    clustergate-lab cluster env            # export SLURM_CONF=...
    clustergate-lab cluster degrade --node n2 --fabric fab0 --rate 250mbit
    clustergate-lab cluster degrade --uplink leaf1 --fabric fab0 --rate 25%
    clustergate-lab cluster degrade --uplink spine1 --rate 25%  # fattree3
    clustergate-lab cluster degrade --global group1-group2 --rate 25%
    clustergate-lab cluster miscable --node n3 --leaf leaf2 [--fabric fab0]
    clustergate-lab cluster restore
    clustergate-lab cluster down

All but ``status`` and ``env`` need root.
"""

import argparse
import sys

from clustergate.commands.sources import EXIT_CODES

from clustergate_lab.cluster import lifecycle, state as cluster_state
from clustergate_lab.cluster.layout import FABRICS, MAX_NODES
from clustergate_lab.cluster.procs import ClusterError
from clustergate_lab.cluster.tree import DEFAULT_GROUPS, DEFAULT_SPINES

FLAT_NODES, FLAT_RATE = 4, '1gbit'
#: Defaults of ``--topology leafspine``: 9 nodes under 3 leaves (with two
#: leaves, the two uplinks carry exactly the same node-to-node flows: a cut
#: one could not be named); node links at 250 Mbit/s so that 9 concurrent
#: flows are limited by the links, not by the 2 CPUs
#: (docs/reports/emulated-cluster.md has the measurements)
TREE_NODES, TREE_LEAVES, TREE_RATE = 9, 3, '250mbit'
#: Defaults of ``--topology fattree3``: 24 nodes, 6 leaves of 4 under 3
#: spines (tree.DEFAULT_SPINES: why not 2) under a core. Node links at
#: 100 Mbit/s: 24 concurrent flows then move 2.4 Gbit/s in all, about what
#: the 9 flows at 250 Mbit/s of the leaf/spine tree move (2.25 Gbit/s,
#: link-bound on 2 cores); uplinks 2:1 (200 Mbit/s), spine-core trunks
#: 2:1 over their 2 uplinks (200 Mbit/s)
FAT3_NODES, FAT3_LEAVES, FAT3_RATE = 24, 6, '100mbit'
FAT3_SPINES = DEFAULT_SPINES
#: ``--topology dragonfly`` has the same size and rates: 24 nodes, 6 leaves
#: of 4 in 3 groups (tree.DEFAULT_GROUPS), uplinks 2:1; every pair of
#: groups joined by a global link of 2 x 200 / 2 = 200 Mbit/s


def _guard(fn):
    def handler(args):
        try:
            return fn(args)
        except (ClusterError, ValueError) as err:
            print(f'clustergate-lab cluster {args.action}: error: {err}',
                  file=sys.stderr)
            return 1

    return handler


@_guard
def _up(args):
    tree = args.topology not in (None, 'flat')
    fat3 = args.topology in ('fattree3', 'dragonfly')
    nodes = args.nodes or (FAT3_NODES if fat3 else
                           TREE_NODES if tree else FLAT_NODES)
    rate = args.rate or (FAT3_RATE if fat3 else
                         TREE_RATE if tree else FLAT_RATE)
    leaves = args.leaves or (FAT3_LEAVES if fat3 else TREE_LEAVES)
    spines = args.spines or (FAT3_SPINES if args.topology == 'fattree3'
                             else None)
    groups = args.groups or (DEFAULT_GROUPS if args.topology == 'dragonfly'
                             else None)
    lifecycle.up(nodes=nodes, rate=rate, timeout=args.timeout,
                 topology=args.topology, leaves=leaves,
                 oversubscription=args.oversubscription,
                 uplink_rate=args.uplink_rate, spines=spines, groups=groups)
    for line in lifecycle.env_lines():
        print(line)

    return 0


@_guard
def _down(args):
    lifecycle.down()
    return 0


@_guard
def _status(args):
    return 0 if lifecycle.status() else 1


@_guard
def _degrade(args):
    lifecycle.degrade(args.node, args.fabric, args.rate,
                      delay=args.delay, loss=args.loss, uplink=args.uplink,
                      global_link=args.global_link)
    return 0


@_guard
def _miscable(args):
    lifecycle.miscable(args.node, args.leaf, args.fabric)
    return 0


@_guard
def _restore(args):
    lifecycle.restore()
    return 0


@_guard
def _env(args):
    state = cluster_state.load()
    if state is None or state.get('phase') != 'up':
        print('clustergate-lab cluster env: the emulated cluster is not up',
              file=sys.stderr)
        return 1

    for line in lifecycle.env_lines():
        print(line)

    return 0


def _nodes(text):
    n = int(text)
    if not 1 <= n <= MAX_NODES:
        raise ValueError
    return n


_nodes.__name__ = f'node count (1..{MAX_NODES})'


# long: the argparse declaration of every action (up, down, status,
# degrade, ...), one short block each
def add_parser(subparsers):
    p = subparsers.add_parser(
        'cluster', help='emulated multi-node Slurm cluster (namespaces)',
        description=__doc__.split('::')[0].strip(),
        epilog='examples:\n' + __doc__.split('::')[1].split('\n\n')[1] +
        '\n\n' + EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest='action', metavar='ACTION')
    sub.required = True

    up = sub.add_parser('up', help='create nodes, fabrics and Slurm')
    up.add_argument('--nodes', type=_nodes,
                    help=f'number of nodes n1..nN (default: {FLAT_NODES}, '
                         f'{TREE_NODES} with --topology leafspine, '
                         f'{FAT3_NODES} with fattree3)')
    up.add_argument('--rate',
                    help=f'nominal rate of every node link (default: '
                         f'{FLAT_RATE}, {TREE_RATE} with --topology '
                         f'leafspine, {FAT3_RATE} with fattree3)')
    up.add_argument('--topology',
                    choices=['flat', 'leafspine', 'fattree3', 'dragonfly'],
                    help='flat: one bridge per fabric (default); '
                         'leafspine: leaf switches under a spine; '
                         'fattree3: leaves under spines under a core; '
                         'dragonfly: groups of leaves, every pair of groups '
                         'joined by a global link; the switches described '
                         'to Slurm in topology.conf')
    up.add_argument('--leaves', type=int,
                    help=f'leaf switches of --topology leafspine or '
                         f'fattree3 (default: {TREE_LEAVES}, '
                         f'{FAT3_LEAVES} with fattree3)')
    up.add_argument('--spines', type=int,
                    help=f'spine switches of --topology fattree3, the '
                         f'leaves split evenly under them (default: '
                         f'{FAT3_SPINES})')
    up.add_argument('--groups', type=int,
                    help=f'groups of --topology dragonfly, the leaves split '
                         f'evenly into them (default: {DEFAULT_GROUPS})')
    up.add_argument('--oversubscription', type=float,
                    help='node bandwidth of a leaf over its uplink\'s, and '
                         'on fattree3 the uplinks of a spine over its '
                         'trunk to the core (default: 2)')
    up.add_argument('--uplink-rate',
                    help='uplink rate instead of --oversubscription: '
                         'absolute (1gbit) or a share of the leaf\'s node '
                         'bandwidth (50%%)')
    up.add_argument('--timeout', type=float, default=30.0,
                    help='seconds to wait for each start-up step '
                         '(default: 30)')
    up.set_defaults(func=_up)

    down = sub.add_parser('down', help='stop everything, remove all traces')
    down.set_defaults(func=_down)

    status = sub.add_parser('status', help='nodes, Slurm state, shaping')
    status.set_defaults(func=_status)

    deg = sub.add_parser('degrade',
                         help="lower a node's link or an uplink's rate")
    which = deg.add_mutually_exclusive_group(required=True)
    which.add_argument('--node', help='node, e.g. n2')
    which.add_argument('--uplink', metavar='SWITCH',
                       help='the uplink of a leaf to its spine, e.g. leaf1; '
                            'on fattree3 also the trunk of a spine to the '
                            'core, e.g. spine1')
    which.add_argument('--global', dest='global_link', metavar='GROUPS',
                       help='a global link of a dragonfly, e.g. '
                            'group1-group2')
    deg.add_argument('--fabric', default=FABRICS[0],
                     choices=[*FABRICS, 'all'],
                     help='fabric (default: fab0)')
    deg.add_argument('--rate', required=True,
                     help='absolute (250mbit) or a share of the nominal '
                          'rate (25%%)')
    deg.add_argument('--delay', help='refused: this kernel has no netem')
    deg.add_argument('--loss', help='refused: this kernel has no netem')
    deg.set_defaults(func=_degrade)

    mis = sub.add_parser('miscable',
                         help="move a node's cable to another leaf "
                              "(topology.conf unchanged)")
    mis.add_argument('--node', required=True, help='node, e.g. n3')
    mis.add_argument('--leaf', required=True, help='leaf, e.g. leaf2')
    mis.add_argument('--fabric', default=FABRICS[0],
                     choices=[*FABRICS, 'all'],
                     help='fabric (default: fab0)')
    mis.set_defaults(func=_miscable)

    restore = sub.add_parser('restore',
                             help='all links back to nominal, every node '
                                  'back on its leaf')
    restore.set_defaults(func=_restore)

    env = sub.add_parser('env', help='print export SLURM_CONF=...')
    env.set_defaults(func=_env)
    return p
