"""Parallel launchers that ReFrame does not ship.

``cg-mpirun`` runs the mpirun of the programming environment rather than
whatever ``mpirun`` is first on PATH: Debian installs OpenMPI's and MPICH's
side by side, and Intel MPI's comes from a Python venv. The environment sets
``CG_MPIRUN`` (e.g. ``mpirun.openmpi``); placement flags (ppn) are added by
the tests because their syntax depends on the MPI family.
"""

from reframe.core.backends import register_launcher
from reframe.core.launchers import JobLauncher


@register_launcher('cg-mpirun')
class EnvMpirunLauncher(JobLauncher):
    """``$CG_MPIRUN -np N`` (defaults to ``mpirun``)."""

    def command(self, job):
        return ['${CG_MPIRUN:-mpirun}', '-np', str(job.num_tasks)]
