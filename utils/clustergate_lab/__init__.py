"""clustergate's lab: what the project is tested and measured with, apart
from the product a site runs. The emulated multi-node Slurm cluster
(network namespaces, bridges as switches, ``tc`` shaping), the fault and
sensitivity campaigns on it, and the simulation of large fat trees.

The product (:mod:`clustergate`) never imports this package; the test
suite, CI and the measurement reports in docs/ do. Its command is
``clustergate-lab``.
"""
