"""Build fixture of our own C programs (checks/src): built once per
programming environment and shared by every test that runs them."""

import os

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_before, sanity_function

from clustergate import PROJECT_ROOT

SOURCES = os.path.join(PROJECT_ROOT, 'checks', 'src')


class CgProgramsBuild(rfm.CompileOnlyRegressionTest):
    """Compiles cg_contention and the other harness programs with the MPI
    compiler wrapper of the environment."""

    build_system = 'Make'
    sourcesdir = SOURCES
    build_locally = True
    maintainers = ['clustergate']

    @run_before('compile')
    def set_compiler(self):
        # Make gets the wrapper as CC; -j2: two cores is the norm here
        self.build_system.flags_from_environ = True
        self.build_system.max_concurrency = 2

    @sanity_function
    def programs_built(self):
        return sn.all([
            sn.assert_true(os.path.exists(os.path.join(self.stagedir, p)),
                           msg=f'{p} was not built (see the build log)')
            for p in self.programs()
        ])

    def programs(self):
        return ['cg_contention', 'cg_stats_cli', 'cg_linkmatrix',
                'cg_memory', 'cg_memlat', 'cg_noise', 'cg_nic']

    def path(self, program):
        """Absolute path of a built program."""
        return os.path.join(self.stagedir, program)
