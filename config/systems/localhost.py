"""The embedded default system: this machine as a one-node cluster.

Matches any host while no site system is configured; with one, it runs
only when named (``--system localhost``; clustergate.rfm.syschoice). Local
scheduler, mpirun launcher, 1 node, ppn the powers of two up to the
cores of the machine, half and all of them in acceptance (a handful in ci
and nightly: clustergate.planning.modesize), interconnects ``shm``
and ``tcp`` (loopback). ``CG_LOCALHOST_CORES`` stands in for the cores
(what the modes would be on a bigger node: ``-l`` lists them here).
"""

import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _mpi  # noqa: E402
from clustergate.site import gpus  # noqa: E402
from clustergate.site import environment as cgenv  # noqa: E402
from clustergate.planning import modesize  # noqa: E402


def _machine_cores():
    """The cores of this machine, or ``$CG_LOCALHOST_CORES``; one line
    naming the variable when it is not a positive integer."""
    value = cgenv.get(cgenv.LOCALHOST_CORES)
    if value is None:
        return os.cpu_count() or 1

    if not value.strip().isdigit() or int(value) < 1:
        raise ValueError(f'{cgenv.LOCALHOST_CORES}={value!r}: not a '
                         f'positive number of cores')
    return int(value)


_cores = _machine_cores()
_environments = (_mpi.debian_environments(['localhost']) +
                 _mpi.intelmpi_environments(['localhost']))
_mem_gib = (os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES')) // 2**30
#: this machine's GPUs (nvidia-smi -L, asked once and cached; none
#: without nvidia-smi): the GPU checks run on them, one node, no Slurm
_gpus = gpus.local_gpus()


def _mode_ppn(mode):
    """The ppn of a mode: a handful of the sweep's (the acceptance keeps
    every value)."""
    return modesize.mode_ppn(modesize.ppn_axis(_cores), mode)


def _expected_families():
    """The families a session here must run when it selects them (one
    that runs not at all makes the session exit non-zero). NPB, OSU and
    STREAM, and IMB for OpenMPI, are built by Spack: without ``spack`` on
    PATH they cannot run here, so they are expected only with it; the
    session still lists them as NOT RUN, and stays green. IMB also comes
    prebuilt with Intel MPI (impi-rt). The GPU checks, on a machine with a
    GPU whose benchmarks $CG_GPU_BENCHMARKS names. One node: no link matrix, no
    shared-NIC test."""
    families = ['contention', 'node']
    if _gpus and _mpi.gpu_benchmark_sources():
        # a GPU and its benchmarks (CG_GPU_BENCHMARKS): they must run
        families.append('gpu')
    if shutil.which('spack'):
        families += ['imb', 'npb', 'osu', 'stream']
    elif any(e['name'] == 'intelmpi' for e in _environments):
        # offered only when its probe passed (_mpi): then IMB runs
        families.append('imb')

    return families


#: HPL's N in the nightly mode here (ci: 768, config/common.py). HPCC
#: sizes RandomAccess's table from N too, and with 2 ranks over tcp and a
#: busy core the MPI RandomAccess kernels ran into their 60 s time bound
#: twice per run: at N=3072 each of the 4 nightly HPCC runs took 244 s
#: (16.5 min of a nightly), at N=1024 21-56 s (4.5 min).
NIGHTLY_HPCC_MAX_N = 1024

#: options a mode of config/common.py adds here (config/settings.py)
mode_options = {
    'nightly': ['-S', f'HpccRun.max_problem_size={NIGHTLY_HPCC_MAX_N}'],
}

site_configuration = {
    'systems': [
        {
            'name': 'localhost',
            'descr': 'This machine as a one-node cluster',
            'hostnames': ['.*'],
            'modules_system': 'nomod',
            'partitions': [
                {
                    'name': 'local',
                    'descr': 'All cores of this machine',
                    'scheduler': 'local',
                    'launcher': 'cg-mpirun',
                    'environs': [e['name'] for e in _environments],
                    'features': ['mpi'],
                    'max_jobs': 1,
                    'processor': {'num_cpus': _cores},
                    'devices': gpus.local_devices(_gpus),
                    'extras': {
                        'sweep': {
                            'nodes': [1],
                            'ppn': modesize.ppn_axis(_cores),
                            'ci': {'ppn': _mode_ppn('ci')},
                            'nightly': {'ppn': _mode_ppn('nightly')},
                        },
                        'interconnects': {
                            'shm': {
                                'scope': 'node',
                                'env': _mpi.shm_env(),
                            },
                            'tcp': {
                                'scope': 'network',
                                # No MPICH here: Debian's MPICH 4.0.2 forced
                                # through UCX 1.13's tcp within one node
                                # (MPIR_CVAR_CH4_NOLOCAL=1) hangs in
                                # MPI_Finalize after its last output, 7 of 30
                                # 2-rank runs with one core busy (0 of 15
                                # over shm): such a point would time out, not
                                # measure. MPICH runs over shm.
                                'env': {
                                    'openmpi': _mpi.openmpi_tcp('lo'),
                                    'intelmpi': _mpi.intelmpi_tcp('lo'),
                                },
                                # each run shows it used TCP on lo
                                'verify': _mpi.tcp_verification('lo'),
                            },
                        },
                        'cores_per_node': _cores,
                        'memory_per_node_gib': _mem_gib,
                        # HPC Challenge: HPL's matrix in half the memory,
                        # but N <= 3072: the 2 cores would need hours
                        'hpcc': {'memory_fraction': 0.5, 'max_n': 3072},
                        'benchmarks': {
                            **_mpi.benchmark_sources('localhost'),
                            **_mpi.gpu_benchmark_sources(
                                [e['name'] for e in _environments][:1])},
                        'expected_families': _expected_families(),
                    },
                },
            ],
        },
    ],
    'environments': _environments,
}
