"""MPI settings shared by system configurations: how each MPI family is
told to use one interconnect, and the programming environments of the
Debian MPI packages. Systems import what they need from here.
"""

import os
import re

from clustergate.siteinit import mpiprobe
from clustergate.site import environment as cgenv

#: Run-as-root switches OpenMPI needs in containers and CI (harmless for
#: ordinary users).
OMPI_ROOT_OK = {
    'OMPI_ALLOW_RUN_AS_ROOT': '1',
    'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1',
}


def openmpi_shm():
    """OpenMPI over shared memory only (one node)."""
    return {'OMPI_MCA_pml': 'ob1', 'OMPI_MCA_btl': 'self,vader'}


def openmpi_tcp(iface):
    """OpenMPI over TCP on ``iface``, also between ranks of one node."""
    return {
        'OMPI_MCA_pml': 'ob1',
        'OMPI_MCA_btl': 'self,tcp',
        'OMPI_MCA_btl_tcp_if_include': iface,
        'OMPI_MCA_oob_tcp_if_include': iface,
    }


def openmpi_ucx_tcp(iface):
    """OpenMPI's UCX PML (the path of InfiniBand sites) over UCX's tcp
    transport on ``iface``.

    Without InfiniBand devices OpenMPI 4.1's UCX PML disables itself ("init
    returned failure for component ucx") unless told that any UCX transport
    and device will do; ``UCX_TLS=tcp,self`` then keeps UCX off shared
    memory, also between ranks of one node.
    """
    return {
        'OMPI_MCA_pml': 'ucx',
        'OMPI_MCA_pml_ucx_tls': 'any',
        'OMPI_MCA_pml_ucx_devices': 'any',
        'UCX_TLS': 'tcp,self',
        'UCX_NET_DEVICES': iface,
        'OMPI_MCA_oob_tcp_if_include': iface,
    }


def ucx_tcp_verification(iface, other_interfaces=True):
    """How an MPI over UCX (OpenMPI's UCX PML, MPICH ch4:ucx) shows that its
    endpoints to peers use tcp on ``iface`` and no shared memory: UCX's
    endpoint configurations at ``UCX_LOG_LEVEL=info`` ("ep_cfg[1]:
    tag(tcp/fab0)"; real runs in tests/fixtures/transport/).
    ``other_interfaces``: also reject an endpoint over another interface."""
    reject = {
        'a UCX endpoint over shared memory':
            r'ep_cfg\[\d+\]:.*\b(sysv|posix|cma|xpmem|knem)/.*',
    }
    if other_interfaces:
        reject['a UCX endpoint over another interface'] = (
            rf'ep_cfg\[\d+\]: tag\([^)]*tcp/(?!{re.escape(iface)}\))\S+')

    return {
        'env': {'UCX_LOG_LEVEL': 'info'},
        'expect': {
            f'a UCX endpoint over tcp/{iface}':
                rf'ep_cfg\[\d+\]: tag\(tcp/{re.escape(iface)}\)',
        },
        'reject': reject,
    }


def mpich_shm():
    """MPICH (ch4) with its shared-memory path (one node)."""
    return {'MPIR_CVAR_CH4_NOLOCAL': '0'}


def mpich_tcp(iface):
    """MPICH forced through the network on ``iface``, also within a node.

    Debian's MPICH is ch4:ucx, so the transport is chosen with UCX's
    variables (a ch4:ofi build would use FI_PROVIDER=tcp instead).
    """
    return {
        'MPIR_CVAR_CH4_NOLOCAL': '1',
        'UCX_TLS': 'tcp,self',
        'UCX_NET_DEVICES': iface,
    }


def intelmpi_shm():
    """Intel MPI over shared memory only (one node)."""
    return {'I_MPI_FABRICS': 'shm'}


def shm_env():
    """Every MPI family over shared memory only, by family: the ``env``
    of a partition's ``shm`` interconnect."""
    return {'openmpi': openmpi_shm(), 'mpich': mpich_shm(),
            'intelmpi': intelmpi_shm()}


def intelmpi_tcp(iface):
    """Intel MPI through libfabric's tcp provider on ``iface``, also between
    ranks of one node.

    ``I_MPI_FABRICS=ofi`` moves point-to-point traffic off shared memory,
    but Intel MPI still runs collectives among the ranks of a node in
    shared memory unless ``I_MPI_COLL_INTRANODE=pt2pt`` (measured on 2
    ranks of one node, loaded machine: IMB Barrier 0.33 us without it,
    37.7 us with it; PingPong 8 B is over tcp either way).
    """
    return {
        'I_MPI_FABRICS': 'ofi',
        'FI_PROVIDER': 'tcp',
        'FI_TCP_IFACE': iface,
        'I_MPI_HYDRA_IFACE': iface,
        'I_MPI_COLL_INTRANODE': 'pt2pt',
    }


def tcp_verification(iface):
    """How each MPI family shows, in the run's own output, that it used TCP
    on ``iface`` and no shared memory (interconnect ``verify``, see
    clustergate.site.transport). The patterns match what these MPIs print (real
    outputs in tests/fixtures/transport/)."""
    return {
        'openmpi': {
            # per peer: "mca: bml: Using tcp btl for send to [[..],1] on
            # node vm"; level 20 is the lowest that also names the
            # interface (10 does not); 30 adds a third more lines (socket
            # binds, "would block" during the measured rounds) that no
            # rule reads
            'env': {'OMPI_MCA_btl_base_verbose': '20'},
            'expect': {
                'the tcp btl to a peer':
                    r'mca: bml: Using tcp btl for send to',
                f'the tcp btl on {iface}':
                    rf'btl: tcp: Using interface: {re.escape(iface)}\s*$',
            },
            'reject': {
                'a peer reached by a btl other than tcp':
                    r'mca: bml: Using (?!tcp |self )\w+ btl for send to.*',
            },
        },
        'intelmpi': {
            # "[0] MPI startup(): libfabric provider: tcp", the NIC of each
            # rank of rank 0's node, and the I_MPI_* settings it took; the
            # same at this level under srun --mpi=pmi2 (emucluster)
            'env': {'I_MPI_DEBUG': '5'},
            'expect': {
                'libfabric provider tcp':
                    r'MPI startup\(\): libfabric provider: tcp\s*$',
                f'rank 0 on NIC {iface}':
                    rf'MPI startup\(\): 0\s+\d+\s+{re.escape(iface)}\s*$',
                'intra-node collectives over the fabric':
                    r'MPI startup\(\): I_MPI_COLL_INTRANODE=pt2pt\s*$',
            },
        },
        # UCX's endpoint configurations: "ep_cfg[1]: tag(tcp/lo) ..."
        'mpich': ucx_tcp_verification(iface, other_interfaces=False),
    }


def debian_environments(target_systems):
    """Programming environments of Debian's OpenMPI and MPICH, both at
    /usr, each only if it works here (:mod:`clustergate.siteinit.mpiprobe`: its
    wrapper compiles, links and runs a two-rank hello; otherwise it is left
    out with the reason)."""
    envs = [
        {
            'name': 'openmpi',
            'target_systems': target_systems,
            # primary: the MPI of node-level checks that need just one
            'features': ['mpi', 'openmpi', 'primary'],
            'cc': 'mpicc.openmpi',
            'cxx': 'mpicxx.openmpi',
            'ftn': 'mpifort.openmpi',
            'cflags': ['-O2'],
            'env_vars': [['CG_MPIRUN', 'mpirun.openmpi'],
                         *[[k, v] for k, v in OMPI_ROOT_OK.items()]],
            'extras': {'mpi_family': 'openmpi'},
        },
    ]
    envs.append({
        'name': 'mpich',
        'target_systems': target_systems,
        'features': ['mpi', 'mpich'],
        'cc': 'mpicc.mpich',
        'cxx': 'mpicxx.mpich',
        'ftn': 'mpifort.mpich',
        'cflags': ['-O2'],
        'env_vars': [['CG_MPIRUN', 'mpirun.mpich']],
        'extras': {'mpi_family': 'mpich'},
    })

    return mpiprobe.working(envs)


def impi_prefix():
    """Prefix of Intel MPI from PyPI's impi-rt (+ impi-devel), or None.

    ``CG_IMPI_ROOT`` wins; otherwise the Python prefix running ReFrame (the
    project venv, ``pip install -e .[intelmpi]``). Recognised by
    ``bin/mpirun`` and ``lib/libmpi.so.12`` being there.
    """
    import sys
    for prefix in (cgenv.get(cgenv.IMPI_ROOT), sys.prefix):
        if (prefix and os.path.isfile(os.path.join(prefix, 'bin', 'mpirun'))
                and os.path.exists(os.path.join(prefix, 'lib',
                                                'libmpi.so.12'))):
            return os.path.abspath(prefix)

    return None


#: Slurm's PMI2 library (Debian's libpmi2-0 package): Intel MPI's ranks
#: started by ``srun --mpi=pmi2`` find each other through it
SLURM_PMI2_LIBRARY = '/usr/lib/x86_64-linux-gnu/libpmi2.so.0'


def intelmpi_environments(target_systems, slurm=False):
    """The ``intelmpi`` programming environment (Intel MPI from PyPI's
    impi-rt/impi-devel), as a list: empty when it is not installed.

    impi-rt's binaries (IMB-MPI1, mpirun) have no RPATH: LD_LIBRARY_PATH
    must name <prefix>/lib, and FI_PROVIDER_PATH the libfabric providers
    that impi-rt ships in the same directory. ``mpigcc`` (impi-devel)
    compiles our C programs against this MPI with the system gcc.
    """
    prefix = impi_prefix()
    if prefix is None:
        mpiprobe.not_installed(
            'intelmpi', 'Intel MPI not installed (pip install -e '
            "'.[intelmpi]', or CG_IMPI_ROOT)")
        return []

    lib = os.path.join(prefix, 'lib')
    env_vars = [
        ['I_MPI_ROOT', prefix],
        ['PATH', f'{prefix}/bin:$PATH'],
        ['LD_LIBRARY_PATH', f'{lib}:$LD_LIBRARY_PATH'],
        ['FI_PROVIDER_PATH', lib],
        ['CG_MPIRUN', os.path.join(prefix, 'bin', 'mpirun')],
    ]
    extras = {'mpi_family': 'intelmpi'}
    env = {
        'name': 'intelmpi',
        'target_systems': target_systems,
        'features': ['mpi', 'intelmpi'],
        'cc': 'mpigcc',
        'cxx': 'mpigxx',
        'ftn': 'mpif90',
        'cflags': ['-O2'],
        'env_vars': env_vars,
        'extras': extras,
    }
    # probed as installed, with its own mpirun: Slurm's PMI library only
    # works under srun
    envs = mpiprobe.working([env])
    if envs and slurm:
        env_vars.append(['I_MPI_PMI_LIBRARY', SLURM_PMI2_LIBRARY])
        extras['srun_options'] = ['--mpi=pmi2']

    return envs


_PROJECT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def benchmark_sources(system):
    """Where a system built on these MPI packages gets the third-party
    benchmarks (partition ``extras['benchmarks']``, see
    clustergate.site.benchmarks and docs/guide/benchmarks.md): NPB, OSU, STREAM and
    IMB from the system's Spack environment, built against Debian's
    OpenMPI; IMB also prebuilt from impi-rt for the ``intelmpi``
    environment, when that is installed; HPCC from Debian's ``hpcc``
    package (/usr/bin/hpcc, OpenMPI).
    """
    spack = {'source': 'spack',
             'spack_env': os.path.join(_PROJECT, 'spack-env', system),
             'environs': ['openmpi']}
    imb = [dict(spack)]
    prefix = impi_prefix()
    if prefix:
        imb.insert(0, {'source': 'prebuilt', 'prefix': prefix,
                       'environs': ['intelmpi']})

    # HPC Challenge: Debian's hpcc package, built against its OpenMPI
    hpcc = {'source': 'prebuilt', 'prefix': '/usr', 'environs': ['openmpi']}
    return {'npb': dict(spack), 'osu': dict(spack),
            'stream': dict(spack), 'imb': imb, 'hpcc': hpcc}


#: the folder of each GPU family's prebuilt binaries below
#: $CG_GPU_BENCHMARKS, as their own builds leave them (the binaries are
#: found in bin/, build/ or the folder itself: clustergate.site.benchmarks)
GPU_BENCHMARK_FOLDERS = {
    'babelstream': 'babelstream',
    'nvbandwidth': 'nvbandwidth',
    'nccl': 'nccl-tests',
    'gpuburn': 'gpu-burn',
    'osu_gpu': 'osu-micro-benchmarks',
}


def gpu_benchmark_sources(environs=None):
    """Where the embedded system gets the GPU benchmarks: prebuilt, below
    ``$CG_GPU_BENCHMARKS`` (one folder per benchmark,
    :data:`GPU_BENCHMARK_FOLDERS`), run in ``environs`` (nccl-tests built
    without MPI within one node needs no MPI: one run, not one per MPI);
    none without it (the GPU checks then say so as NOT RUN). Each family
    names its prefix on the command line too:
    ``-S BabelStreamBinaries.use_prefix=DIR``."""
    root = cgenv.get(cgenv.GPU_BENCHMARKS)
    if not root:
        return {}

    only = {'environs': list(environs)} if environs else {}
    return {fam: {'source': 'prebuilt', 'prefix': os.path.join(root, sub),
                  **only}
            for fam, sub in GPU_BENCHMARK_FOLDERS.items()}
