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
