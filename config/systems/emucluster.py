"""The emulated cluster: network namespaces n1..nN as nodes under a real
Slurm, started with ``clustergate-lab cluster up`` (see docs/reports/emulated-cluster.md).

Active (put before ``localhost`` and matching any host) when ``SLURM_CONF``
points at the emulated cluster's slurm.conf (``ClusterName=cgemu``);
otherwise it matches no host but can still be chosen with ``--system
emucluster``. Two network fabrics, ``fab0`` and ``fab1`` (every link TBF
shaped to a known rate, by default 1 Gbit/s), plus ``shm`` within a node.
Jobs run through the ``squeue`` backend (there is no accounting, so the
``slurm`` backend, which polls sacct, does not work).
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _mpi  # noqa: E402
from clustergate.site import environment as cgenv
from clustergate.site import slurmreasons

_NAME = 'emucluster'
_STATE_DIR = cgenv.get(cgenv.EMU_STATE_DIR, '/run/clustergate-emu')


def _slurm_conf():
    return os.environ.get('SLURM_CONF', '')


#: what the session's first line says when active() chose this system
ACTIVE_NOTE = "SLURM_CONF is the emulated cluster's slurm.conf"


def active():
    """True when SLURM_CONF is the emulated cluster's slurm.conf."""
    try:
        with open(_slurm_conf()) as fp:
            return any(line.strip() == 'ClusterName=cgemu' for line in fp)
    except OSError:
        return False


def _node_facts():
    """(nodes, cores per node, memory per node in MiB) from slurm.conf when
    active, otherwise what ``clustergate-lab cluster up`` would configure."""
    cores = os.cpu_count() or 1
    mem_mib = (os.sysconf('SC_PAGE_SIZE') *
               os.sysconf('SC_PHYS_PAGES')) // 2**20
    nodes, real_mem = 4, int(mem_mib * 0.8) // 4
    if active():
        with open(_slurm_conf()) as fp:
            for line in fp:
                kv = dict(w.split('=', 1) for w in line.split() if '=' in w)
                if kv.get('NodeName') == 'DEFAULT':
                    cores = int(kv.get('CPUs', cores))
                    real_mem = int(kv.get('RealMemory', real_mem))
                elif kv.get('PartitionName') == 'emu':
                    nodelist = kv.get('Nodes', '')
                    if nodelist.startswith('n[1-'):
                        nodes = int(nodelist[4:-1])
                    elif nodelist == 'n1':
                        nodes = 1

    return nodes, cores, real_mem


def _state():
    try:
        with open(os.path.join(_STATE_DIR, 'state.json')) as fp:
            return json.load(fp)
    except (OSError, ValueError):
        return {}


def _topology():
    """The partition's declared switch tree: when the cluster is up as a
    leaf/spine tree (``clustergate-lab cluster up --topology leafspine``) or
    a three-level one (``--topology fattree3``: leaves, spines, a core) or
    a dragonfly (``--topology dragonfly``: groups of leaves), the
    topology.conf that Slurm reads beside its slurm.conf (the switches as
    they were meant to be cabled), as a site would configure it; the flat
    fabric has none. The file, not ``scontrol show topology`` (the same
    tree): the ci mode chooses the link matrix's nodes from it when the
    checks load, and a listing needs no running slurmctld."""
    tree = _state().get('tree') if active() else None
    if tree:
        # a dragonfly (--topology dragonfly): topology.conf's groups are
        # switches of leaves under one top switch, joined pairwise by
        # global links, which Slurm's topology/tree cannot say: the
        # partition declares it
        spec = {'file': os.path.join(_STATE_DIR, 'topology.conf')}
        return {'topology': {**spec, 'dragonfly': True}
                if tree.get('dragonfly') else spec}

    return {}


def _reference_set():
    """The leaf/spine tree's own references: its node links run at a
    quarter of the flat cluster's rate and 4 nodes cross a shared uplink,
    so a point of the same key measures another fabric there
    (config/references/emucluster.leafspine.yaml, learnt on the tree).
    The three-level tree (spines in its state) is another fabric again
    (100 Mbit/s node links, 4 nodes on one leaf): its own set,
    emucluster.fattree3.yaml. The dragonfly (groups joined by global
    links) another: emucluster.dragonfly.yaml."""
    tree = _state().get('tree') if active() else None
    if tree:
        return {'reference_set': 'dragonfly' if tree.get('dragonfly')
                else 'fattree3' if tree.get('spines') else 'leafspine'}

    return {}


def _fabric_licenses():
    """fabric -> its Slurm license (``Licenses=fab0:1,fab1:1`` in the
    slurm.conf of ``clustergate-lab cluster up``); without the fabrics a running
    cluster's slurm.conf does not declare (one started by an older
    clustergate): sbatch would refuse a job asking for them."""
    fabrics = ('fab0', 'fab1')
    if not active():
        return {f: f for f in fabrics}

    declared = set()
    with open(_slurm_conf()) as fp:
        for line in fp:
            if line.startswith('Licenses='):
                declared |= {w.split(':')[0] for w in
                             line.strip()[len('Licenses='):].split(',')}

    return {f: f for f in fabrics if f in declared}


_nodes, _cores, _mem_mib = _node_facts()
_environments = (_mpi.debian_environments([_NAME]) +
                 _mpi.intelmpi_environments([_NAME], slurm=True))
for _env in _environments:
    # The base tests add these to the srun launcher. Debian's OpenMPI has
    # no built-in PMI1/2: it needs Slurm's PMIx plugin.
    if _env['name'] == 'openmpi':
        # mpirun inside the allocation (its daemons started by srun), not
        # srun --mpi=pmix: under load 18 of 100 srun-started OpenMPI 4.1.4
        # jobs crashed in MPI_Init, 0 of 200 mpirun-started ones
        # (docs/reports/emulated-cluster.md); srun_options stay for srun steps
        _env['extras'] = {**_env['extras'], 'launcher': 'cg-mpirun',
                          'srun_options': ['--mpi=pmix']}
        # 4 "nodes" share 2 cores: a rank waiting in MPI must give its core
        # to the rank that computes (8 B latency went from ms to us)
        _env['env_vars'] = _env['env_vars'] + [
            ['OMPI_MCA_mpi_yield_when_idle', '1']
        ]
    elif _env['name'] == 'mpich':
        _env['extras'] = {**_env['extras'], 'srun_options': ['--mpi=pmi2']}
    elif _env['name'] == 'intelmpi':
        # the same for Intel MPI: 8 ranks polling on 2 cores made IMB
        # Allreduce take 30 ms at 4 B and give up at 2 KiB; waiting
        # blocked: 52 us
        _env['env_vars'] = _env['env_vars'] + [['I_MPI_WAIT_MODE', '1']]

# Debian's MPICH is ch4:ucx: between namespaces of one machine UCX takes
# shared memory (or fails with UCX_TLS=tcp), so its "network" figures
# would be meaningless here. Only OpenMPI measures the emulated fabrics.
_partition_environs = [e['name'] for e in _environments
                       if e['name'] != 'mpich']


def _fabric(iface):
    return {
        'scope': 'network',
        'env': {
            'openmpi': _mpi.openmpi_tcp(iface),
            'mpich': _mpi.mpich_tcp(iface),
            'intelmpi': _mpi.intelmpi_tcp(iface),
        },
        # a run of 2+ ranks must show, in the MPI's own report, TCP on this
        # fabric's interface: OpenMPI the tcp btl on it to its peers;
        # Intel MPI (srun --mpi=pmi2, I_MPI_DEBUG=5) libfabric provider tcp
        # and rank 0 pinned to it (real runs on this cluster:
        # tests/fixtures/transport/*-fab0, *-fab1)
        'verify': _mpi.tcp_verification(iface),
    }


site_configuration = {
    'systems': [
        {
            'name': _NAME,
            'descr': 'Emulated Slurm cluster (network namespaces, '
                     'clustergate-lab cluster up)',
            'hostnames': ['.*'] if active() else ['^cgemu-never$'],
            'modules_system': 'nomod',
            'partitions': [
                {
                    'name': 'emu',
                    'descr': f'{_nodes} emulated nodes, fabrics fab0/fab1',
                    'scheduler': 'squeue',
                    'launcher': 'srun',
                    # whole nodes: link tests must not share a node's link
                    # --no-requeue: a node that dies fails its job (and
                    # the test, with the reason) instead of requeueing it
                    'access': ['--partition=emu', '--exclusive',
                               '--no-requeue'],
                    'sched_options': {
                        'use_nodes_option': True,
                        # a job that waits for a dead node is cancelled
                        # (the test fails saying so) instead of waiting
                        # forever: slurm 22.05 gives the second reason when
                        # a node of the partition is down
                        # (and those that never clear: slurmreasons)
                        'slurm_job_cancel_reasons':
                            slurmreasons.cancel_reasons([
                                'Nodes required for job are DOWN']),
                        'job_submit_timeout': 30,
                    },
                    'environs': _partition_environs,
                    'features': ['mpi', 'slurm'],
                    'max_jobs': 1,
                    'processor': {'num_cpus': _cores},
                    'extras': {
                        'sweep': {
                            # and all nodes (the link matrix runs there)
                            'nodes': sorted({n for n in (1, 2, 4)
                                             if n <= _nodes} | {_nodes}),
                            'ppn': [p for p in (1, 2) if p <= _cores],
                            # ci mode: the whole cluster, one rank per node,
                            # both fabrics (the link is the bottleneck)
                            'ci': {'nodes': [min(4, _nodes)], 'ppn': [1],
                                   'interconnects': ['fab0', 'fab1']},
                            # nightly: across nodes (2 and 4 nodes, 1 and 2
                            # ppn, both fabrics); 1 node and shm only in
                            # acceptance
                            'nightly': {'nodes': [n for n in (2, 4)
                                                  if n <= _nodes],
                                        'interconnects': ['fab0', 'fab1']},
                        },
                        'interconnects': {
                            'fab0': _fabric('fab0'),
                            'fab1': _fabric('fab1'),
                            'shm': {
                                'scope': 'node',
                                'env': _mpi.shm_env(),
                            },
                        },
                        # the nightly: tonight's share of the acceptance
                        # space that fits this many minutes (rotation,
                        # docs/reports/cost-model.md); measured in
                        # docs/reports/nightly-budget.md
                        'rotation': {'budget_min': 25},
                        # jobs one after the other: the 4 "nodes" share
                        # this machine's 2 cores, so a second job, even on
                        # other nodes and another fabric, takes CPU from the
                        # one measuring (docs/reports/cost-model.md); fabric checks
                        # still ask for their fabric's license, as a real
                        # site's would with policy 'async'
                        'concurrency': {
                            'policy': 'serial',
                            'fabric_licenses': _fabric_licenses(),
                        },
                        'cores_per_node': _cores,
                        'memory_per_node_gib': _mem_mib // 1024,
                        **_topology(),
                        **_reference_set(),
                        # HPC Challenge: HPL's matrix in half the memory,
                        # but N <= 768 (the ci mode's cap): at N = 3072 one
                        # HPCC run took 2-7 min on the 2 shared cores (3
                        # runs: 10.5 min of a 19-min nightly) and measures
                        # those cores, not the emulated fabrics
                        'hpcc': {'memory_fraction': 0.5, 'max_n': 768},
                        'benchmarks': _mpi.benchmark_sources(_NAME),
                        # a session that selects these and runs none of
                        # their cases exits non-zero
                        'expected_families': ['contention', 'linkmatrix'],
                    },
                },
            ],
        },
    ],
    'environments': _environments,
}
