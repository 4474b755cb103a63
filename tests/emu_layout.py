"""The declared layout of the emulated cluster, written as ``clustergate
cluster up`` writes it before it starts a daemon (slurm.conf, the state
file with the tree, topology.conf), so that the ``emucluster`` system can
be loaded as on a running 4-node flat, 9-node leaf/spine or 24-node
three-level cluster without one. Only the layout: no measurement, no daemon."""

import os

from clustergate_lab.cluster import slurm
from clustergate_lab.cluster import state as cluster_state
from clustergate_lab.cluster.layout import Layout
from clustergate_lab.cluster.tree import dragonfly, fattree3, leafspine, \
    topology_conf_of_state

RATE = 250e6


def write_layout(root, nodes=9, leaves=3, spines=None, rate=RATE,
                 groups=None):
    """Writes the layout under ``root`` (a state directory); ``leaves``
    None: flat; ``spines``: a three-level tree (``--topology fattree3``);
    ``groups``: a dragonfly (``--topology dragonfly``).
    Returns the environment that selects it (SLURM_CONF,
    CG_EMU_STATE_DIR) and the tree (None when flat)."""
    paths = cluster_state.Paths(str(root))
    layout = Layout(nodes)
    tree = None
    if leaves:
        tree = (fattree3(layout.node_names, leaves, spines) if spines else
                dragonfly(layout.node_names, leaves, groups) if groups else
                leafspine(layout.node_names, leaves))
    uplink = tree.uplink_rate(rate, 2.0) if tree else None
    trunk = tree.trunk_rate(uplink, 2.0) if tree else None
    state = cluster_state.new_state(nodes, rate, tree, uplink, trunk)
    cluster_state.save(state, paths)
    if tree is not None:
        with open(paths.topology_conf, 'w') as fp:
            fp.write(topology_conf_of_state(tree, state))

    with open(paths.slurm_conf, 'w') as fp:
        fp.write(slurm.render_conf(layout, paths, 2, 1024,
                                   tree=tree is not None))

    env = {'SLURM_CONF': paths.slurm_conf, 'CG_EMU_STATE_DIR': str(root)}
    return env, tree


def environment(root, **kwargs):
    """``os.environ`` with the layout of :func:`write_layout`."""
    env, _ = write_layout(root, **kwargs)
    return dict(os.environ, **env)


_PROBE = r'''
import json, runpy, sys
conf = runpy.run_path(sys.argv[1])['site_configuration']
part = conf['systems'][0]['partitions'][0]
print(json.dumps({k: part['extras'].get(k) for k in ('topology',
      'reference_set', 'sweep')}))
'''


def emucluster_extras(env):
    """The extras (topology, reference_set, sweep) of the first partition
    of config/systems/emucluster.py loaded, in a fresh interpreter, with
    the environment ``env`` of :func:`write_layout`."""
    import json
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run(
        [sys.executable, '-c', _PROBE,
         os.path.join(root, 'config', 'systems', 'emucluster.py')],
        env=dict(os.environ, **env), capture_output=True, text=True,
        cwd=root, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def simulated_verdicts(topo, fault, seed, sigma=0.05):
    """The fabric verdict's lines on ``topo``'s rounds, measured by the
    lab's simulator with ``fault`` (None: healthy) at noise ``sigma``."""
    import random
    from clustergate.links.topology import diagnose, schedule
    from clustergate.links.topology.flowfit import Prepared
    from clustergate_lab import simulate as sim
    rounds = schedule(topo, topo.nodes)
    prepared = Prepared(topo, [r.flows for r in rounds])
    measured = sim.measure(topo, prepared.models, [fault] if fault else [],
                           random.Random(seed), sigma, 0.9)
    return diagnose(topo, measured, 'fab0', sigma=sigma,
                    prepared=prepared).messages()
