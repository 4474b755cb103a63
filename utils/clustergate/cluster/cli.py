"""``clustergate cluster``: the emulated multi-node Slurm cluster.

::

    clustergate cluster up [--nodes 4] [--rate 1gbit] [--timeout 30]
    clustergate cluster status
    clustergate cluster env            # export SLURM_CONF=...
    clustergate cluster degrade --node n2 --fabric fab0 --rate 250mbit
    clustergate cluster restore
    clustergate cluster down

All but ``status`` and ``env`` need root.
"""

import sys

from . import lifecycle, state as st
from .layout import FABRICS, MAX_NODES
from .procs import ClusterError


def _guard(fn):
    def handler(args):
        try:
            return fn(args)
        except (ClusterError, ValueError) as err:
            print(f'clustergate cluster {args.action}: error: {err}',
                  file=sys.stderr)
            return 1

    return handler


@_guard
def _up(args):
    lifecycle.up(nodes=args.nodes, rate=args.rate, timeout=args.timeout)
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
                      delay=args.delay, loss=args.loss)
    return 0


@_guard
def _restore(args):
    lifecycle.restore()
    return 0


@_guard
def _env(args):
    state = st.load()
    if state is None or state.get('phase') != 'up':
        print('clustergate cluster env: the emulated cluster is not up',
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


def add_parser(subparsers):
    p = subparsers.add_parser(
        'cluster', help='emulated multi-node Slurm cluster (namespaces)',
        description=__doc__.split('::')[0].strip()
    )
    sub = p.add_subparsers(dest='action', metavar='ACTION')
    sub.required = True

    up = sub.add_parser('up', help='create nodes, fabrics and Slurm')
    up.add_argument('--nodes', type=_nodes, default=4,
                    help='number of nodes n1..nN (default: 4)')
    up.add_argument('--rate', default='1gbit',
                    help='nominal rate of every link (default: 1gbit)')
    up.add_argument('--timeout', type=float, default=30.0,
                    help='seconds to wait for each start-up step '
                         '(default: 30)')
    up.set_defaults(func=_up)

    down = sub.add_parser('down', help='stop everything, remove all traces')
    down.set_defaults(func=_down)

    status = sub.add_parser('status', help='nodes, Slurm state, shaping')
    status.set_defaults(func=_status)

    deg = sub.add_parser('degrade', help="lower a node's link rate")
    deg.add_argument('--node', required=True, help='node, e.g. n2')
    deg.add_argument('--fabric', default=FABRICS[0],
                     choices=[*FABRICS, 'all'],
                     help='fabric (default: fab0)')
    deg.add_argument('--rate', required=True, help='e.g. 250mbit')
    deg.add_argument('--delay', help='refused: this kernel has no netem')
    deg.add_argument('--loss', help='refused: this kernel has no netem')
    deg.set_defaults(func=_degrade)

    restore = sub.add_parser('restore', help='all links back to nominal')
    restore.set_defaults(func=_restore)

    env = sub.add_parser('env', help='print export SLURM_CONF=...')
    env.set_defaults(func=_env)
    return p
