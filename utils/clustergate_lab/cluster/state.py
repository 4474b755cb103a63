"""The state directory of the emulated cluster and its JSON state file.

Everything the cluster writes lives under one directory (default
``/run/clustergate-emu``, overridable with ``CG_EMU_STATE_DIR``): the
``slurm.conf``, munge's key and socket, slurmctld's state and log, and per
node (``nodes/nK/``) slurmd's spool, pid file, log and TmpFS. The file
``state.json`` records what ``up`` created, step by step (so a failed or
interrupted ``up`` can be undone), every daemon's PID with its start time
(so ``down`` never signals a recycled PID), and the current link rates.
"""

import json
import os
from clustergate.site import environment as cgenv

DEFAULT_DIR = '/run/clustergate-emu'
STATE_VERSION = 1


def state_dir():
    return cgenv.get(cgenv.EMU_STATE_DIR, DEFAULT_DIR)


#: Paths's file locations, relative to the state directory
BELOW_ROOT = {
    'state_file': 'state.json', 'slurm_conf': 'slurm.conf',
    # Slurm reads topology.conf from slurm.conf's directory
    'topology_conf': 'topology.conf',
    'munge_dir': 'munge', 'munge_key': 'munge/munge.key',
    'munge_log': 'munge/munged.log', 'munge_pid': 'munge/munged.pid',
    'munge_seed': 'munge/munged.seed',
    'socket_dir': 'munge-socket', 'munge_socket': 'munge-socket/munge.socket',
    'ctld_dir': 'ctld', 'ctld_log': 'ctld/slurmctld.log',
    'ctld_pid': 'ctld/slurmctld.pid', 'nodes_dir': 'nodes',
}


class Paths:
    """File locations below a state directory ``root``: the attributes
    named in :data:`BELOW_ROOT`, and per node or daemon below."""

    def __init__(self, root=None):
        self.root = root or state_dir()

    def __getattr__(self, name):
        if name not in BELOW_ROOT:
            raise AttributeError(name)
        return os.path.join(self.root, BELOW_ROOT[name])

    def node_dir(self, node):
        return os.path.join(self.nodes_dir, node)

    def slurmd_log(self, node):
        return os.path.join(self.node_dir(node), 'slurmd.log')

    def daemon_log(self, name):
        """Log file of the daemon recorded as ``name`` in the state."""
        if name == 'munged':
            return self.munge_log

        if name == 'slurmctld':
            return self.ctld_log

        if name.startswith('slurmd@'):
            return self.slurmd_log(name.split('@', 1)[1])

        return None


def new_state(nodes, rate, tree=None, uplink_rate=None, trunk_rate=None):
    """The state of a cluster about to be brought up (``tree``: a
    :class:`clustergate_lab.cluster.tree.Tree` for a leaf/spine fabric;
    ``trunk_rate``: its spine-core trunks' on three levels)."""
    extra = {}
    if tree is not None:
        extra = {'tree': tree.to_json(), 'uplink_rate': uplink_rate,
                 'cabling': {}}
        if tree.spines:
            extra['trunk_rate'] = trunk_rate

    return {
        **extra,
        'version': STATE_VERSION,
        'nodes': nodes,
        'rate': rate,
        'phase': 'starting',
        'created': [],
        'procs': {},
        'rates': {},
    }


def load(paths=None):
    """The recorded state, or None if there is none."""
    paths = paths or Paths()
    try:
        with open(paths.state_file) as fp:
            state = json.load(fp)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise RuntimeError(f'unreadable state file {paths.state_file}: '
                           f'{err}') from err

    if not isinstance(state, dict) or state.get('version') != STATE_VERSION:
        raise RuntimeError(f'state file {paths.state_file} has an unknown '
                           f'format; remove it by hand')

    return state


def save(state, paths=None):
    """Write ``state`` atomically (write to a temporary file, rename)."""
    paths = paths or Paths()
    os.makedirs(paths.root, mode=0o755, exist_ok=True)
    tmp = paths.state_file + '.tmp'
    with open(tmp, 'w') as fp:
        json.dump(state, fp, indent=1, sort_keys=True)
        fp.write('\n')

    os.replace(tmp, paths.state_file)


def remove(paths=None):
    paths = paths or Paths()
    for f in (paths.state_file, paths.state_file + '.tmp'):
        try:
            os.unlink(f)
        except FileNotFoundError:
            pass


def rate_key(node, fabric):
    """Key of a link in ``state['rates']`` (JSON keys must be strings)."""
    return f'{node}/{fabric}'


def link_rates(state, layout):
    """``{(node, fabric): bits}`` of all links, nominal where unrecorded."""
    recorded = state.get('rates', {})
    return {(n, f): recorded.get(rate_key(n, f), state['rate'])
            for n, f in layout.links()}


def mark_created(state, what, paths=None):
    """Record that resource ``what`` (e.g. ``'netns:n1'``) now exists."""
    if what not in state['created']:
        state['created'].append(what)
        save(state, paths)


def tree_of(state):
    """The declared leaf/spine tree of the cluster, None when flat."""
    from .tree import Tree
    return Tree.from_json(state['tree']) if state.get('tree') else None


def nominal_uplink(state, tree, switch):
    """Nominal rate of the link from ``switch`` to its parent: a spine's
    trunk or a leaf's uplink; of a dragonfly's global link (``trunk_rate``
    holds the upper level's rate)."""
    upper = tree.is_spine(switch) or tree.is_global(switch)
    return state['trunk_rate'] if upper else state['uplink_rate']


def uplink_rates(state, tree):
    """``{(leaf or spine, fabric): bits}`` of all uplinks (and the spines'
    trunks, or a dragonfly's global links), nominal where unrecorded."""
    from .layout import FABRICS
    from .tree import uplink_key
    recorded = state.get('rates', {})
    return {(sw, f): recorded.get(uplink_key(sw, f),
                                  nominal_uplink(state, tree, sw))
            for sw in tree.trunked for f in FABRICS}
