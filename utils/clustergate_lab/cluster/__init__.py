"""An emulated multi-node Slurm cluster on one machine.

Network namespaces play the nodes ``n1..nN``; each has two interfaces,
``fab0`` and ``fab1``, on two host bridges (two fabrics on private /24
subnets). Every link is rate-limited with TBF on both ends of its veth so
that the link, not the CPU, is the bottleneck. A real Slurm (munged,
slurmctld in the host namespace as ``head``, one slurmd per namespace)
runs jobs across the nodes. ``clustergate-lab cluster up|down|status|degrade|
restore|env`` drives it (see :mod:`clustergate_lab.commands.cluster`).

Modules:

- :mod:`~clustergate_lab.cluster.layout`: names and addresses (pure).
- :mod:`~clustergate_lab.cluster.shaping`: rates, ``tc`` commands and parsing.
- :mod:`~clustergate_lab.cluster.netns`: namespaces, bridges, veths, /etc/hosts.
- :mod:`~clustergate_lab.cluster.slurm`: slurm.conf, daemons, waiting for idle.
- :mod:`~clustergate_lab.cluster.state`: the state directory and its JSON file.
- :mod:`~clustergate_lab.cluster.procs`: running commands, starting and
  stopping the daemons by PID.
- :mod:`~clustergate_lab.cluster.lifecycle`: up, down, degrade, restore, status.
"""
