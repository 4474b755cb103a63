"""MPI settings shared by system configurations: how each MPI family is
told to use one interconnect, and the programming environments of the
Debian MPI packages. Systems import what they need from here.
"""

import os
import shutil

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


def mpich_shm():
    """MPICH (ch4) with its shared-memory path (one node)."""
    return {'MPIR_CVAR_CH4_NOLOCAL': '0'}


def mpich_tcp(iface):
    """MPICH (ch4:ofi) forced through the network provider on ``iface``."""
    return {
        'MPIR_CVAR_CH4_NOLOCAL': '1',
        'FI_PROVIDER': 'tcp',
        'FI_TCP_IFACE': iface,
    }


def intelmpi_shm():
    """Intel MPI over shared memory only (one node)."""
    return {'I_MPI_FABRICS': 'shm'}


def intelmpi_tcp(iface):
    """Intel MPI through libfabric's tcp provider on ``iface``."""
    return {
        'I_MPI_FABRICS': 'ofi',
        'FI_PROVIDER': 'tcp',
        'FI_TCP_IFACE': iface,
        'I_MPI_HYDRA_IFACE': iface,
    }


def debian_environments(target_systems):
    """Programming environments of Debian's OpenMPI and (if installed)
    MPICH, both at /usr."""
    envs = [
        {
            'name': 'openmpi',
            'target_systems': target_systems,
            'features': ['mpi', 'openmpi'],
            'cc': 'mpicc.openmpi',
            'cxx': 'mpicxx.openmpi',
            'ftn': 'mpifort.openmpi',
            'cflags': ['-O2'],
            'env_vars': [['CG_MPIRUN', 'mpirun.openmpi'],
                         *[[k, v] for k, v in OMPI_ROOT_OK.items()]],
            'extras': {'mpi_family': 'openmpi', 'mpi_prefix': '/usr'},
        },
    ]
    if shutil.which('mpicc.mpich') or os.environ.get('CG_FORCE_MPICH'):
        envs.append({
            'name': 'mpich',
            'target_systems': target_systems,
            'features': ['mpi', 'mpich'],
            'cc': 'mpicc.mpich',
            'cxx': 'mpicxx.mpich',
            'ftn': 'mpifort.mpich',
            'cflags': ['-O2'],
            'env_vars': [['CG_MPIRUN', 'mpirun.mpich']],
            'extras': {'mpi_family': 'mpich', 'mpi_prefix': '/usr'},
        })

    return envs
