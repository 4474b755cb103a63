"""Environment modules of the emulated cluster, as a site has them: Lmod
modulefiles for its MPIs under the state directory, written by ``up``.

- ``openmpi/<version>`` and ``mpich/<version>``: Debian's packages. Debian
  installs them side by side with suffixed names (``mpicc.openmpi``,
  ``mpirun.mpich``); the module puts a directory first on PATH whose
  ``mpicc``, ``mpicxx``, ``mpifort``, ``mpirun`` and ``mpiexec`` are that
  MPI's (links to the suffixed commands), as a site's MPI module does.
- ``intel-oneapi-mpi/<version>``: Intel MPI from PyPI (impi-rt, with
  impi-devel's ``mpigcc``) in the Python environment that runs
  ``clustergate-lab``, with Slurm's PMI2 library for ``srun --mpi=pmi2``.

``lmod.sh`` beside them sets MODULEPATH to these modulefiles and defines
``module`` (Lmod's bash init, which also exports BASH_ENV so that batch
scripts started by Slurm have ``module``).
"""

import os
import re
import subprocess
import sys

#: Lmod's bash initialisation (Debian's ``lmod`` package)
LMOD_INIT = '/usr/share/lmod/lmod/init/bash'
#: Slurm's PMI2 library (``libpmi2-0``): Intel MPI under ``srun --mpi=pmi2``
SLURM_PMI2 = '/usr/lib/x86_64-linux-gnu/libpmi2.so.0'
#: generic command -> Debian's suffixed one, per family
_COMMANDS = ('mpicc', 'mpicxx', 'mpifort', 'mpirun', 'mpiexec')


def modulepath(root):
    return os.path.join(root, 'modulefiles')


def profile(root):
    return os.path.join(root, 'lmod.sh')


def _version(argv, pattern):
    try:
        out = subprocess.run(argv, capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None

    m = re.search(pattern, out, re.M)
    return m.group(1) if m else None


def debian_mpis():
    """``[(family, version)]`` of Debian's MPIs installed here."""
    found = []
    for fam, pat in (('openmpi', r'\(Open(?: MPI|RTE)\)\s+(\d[\w.]*)'),
                     ('mpich', r'^\s*Version:\s+(\d[\w.]*)')):
        ver = _version([f'mpirun.{fam}', '--version'], pat)
        if ver:
            found.append((fam, ver))

    return found


def impi():
    """``(prefix, version)`` of Intel MPI from PyPI beside this Python, or
    None."""
    prefix = sys.prefix
    if not (os.path.isfile(os.path.join(prefix, 'bin', 'mpirun')) and
            os.path.exists(os.path.join(prefix, 'lib', 'libmpi.so.12'))):
        return None

    try:
        from importlib.metadata import version
        return prefix, version('impi-rt')
    except Exception:  # noqa: BLE001 - no metadata: not pip's impi-rt
        return None


def debian_module(root, fam, ver):
    """Text of Debian ``fam``'s modulefile; makes its command directory."""
    bindir = os.path.join(root, 'mpi', f'{fam}-{ver}', 'bin')
    os.makedirs(bindir, exist_ok=True)
    for cmd in _COMMANDS:
        link = os.path.join(bindir, cmd)
        if not os.path.lexists(link):
            os.symlink(f'/usr/bin/{cmd}.{fam}', link)

    return (f'whatis("{fam} {ver} (Debian package)")\n'
            f'family("mpi")\n'
            f'prepend_path("PATH", "{bindir}")\n')


def impi_module(prefix, ver):
    lib = os.path.join(prefix, 'lib')
    return (f'whatis("Intel MPI {ver} (PyPI impi-rt)")\n'
            f'family("mpi")\n'
            f'setenv("I_MPI_ROOT", "{prefix}")\n'
            f'prepend_path("PATH", "{prefix}/bin")\n'
            f'prepend_path("LD_LIBRARY_PATH", "{lib}")\n'
            f'setenv("FI_PROVIDER_PATH", "{lib}")\n'
            f'setenv("I_MPI_PMI_LIBRARY", "{SLURM_PMI2}")\n')


def write(root, mpis=None, intel=None):
    """Write the modulefiles (and ``lmod.sh``) under ``root``; returns the
    module names. ``mpis``/``intel`` default to what is installed here."""
    mpis = debian_mpis() if mpis is None else mpis
    intel = impi() if intel is None else intel
    files = {f'{fam}/{ver}': debian_module(root, fam, ver)
             for fam, ver in mpis}
    if intel:
        files[f'intel-oneapi-mpi/{intel[1]}'] = impi_module(*intel)
    for name, text in files.items():
        path = os.path.join(modulepath(root), name + '.lua')
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as fp:
            fp.write(text)

    with open(profile(root), 'w') as fp:
        fp.write(f'# Lmod with the emulated cluster\'s modules (source it)\n'
                 f'export MODULEPATH={modulepath(root)}\n'
                 f'. {LMOD_INIT}\n'
                 f'# batch scripts are non-interactive shells: bash reads '
                 f'BASH_ENV\n'
                 f'export BASH_ENV={LMOD_INIT}\n')

    return sorted(files)
