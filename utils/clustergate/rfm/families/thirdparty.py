"""What every third-party benchmark check (NPB, IMB, OSU, STREAM) shares:
a build fixture that provides the binaries from the source the partition
configures (see :mod:`clustergate.site.benchmarks`), and a base test that runs
one of them over the sweep axes.

Source override for one run, without editing the configuration (``-S``
on the fixture of one family; a prefix or modules alone mean
``prebuilt``)::

    reframe ... -S NpbBinaries.use_prefix=/apps/npb/3.4.1
    reframe ... -S OsuBinaries.use_modules=osu-micro-benchmarks/7.5
    reframe ... -S ImbBinaries.use_source=spack -S ImbBinaries.use_spack_env=/site/env
"""

import os

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import (run_after, run_before, sanity_function,
                                   variable)

from clustergate.site import benchmarks, sweep
from clustergate.rfm.point.base import PointTest, current_partitions
from clustergate.site.partition import partition_model


class BenchmarkBinaries(rfm.CompileOnlyRegressionTest):
    """Provides one family's binaries for one partition and environment.

    ``spack`` source: ``spack -e <env> install`` through ReFrame's Spack
    build system. The environment directory is used in place (not copied
    into the stage) so that its view and lock file, and the install tree
    its ``config.yaml`` names, persist between runs: the nightly run finds
    everything installed and ``spack install`` returns at once.
    ``prebuilt`` source: nothing to build; the prefix is checked.

    Skipped with the reason when the source is unavailable (no ``spack``
    on PATH, missing prefix), except under ``--dry-run``, which must still
    write the build script.
    """

    #: Benchmark family (npb, imb, osu, stream); set by the subclasses
    family = variable(str)

    #: Command-line overrides of the configured source (-S)
    use_source = variable(str, value='')
    use_prefix = variable(str, value='')
    use_spack_env = variable(str, value='')
    use_modules = variable(typ.List[str], value=[])

    sourcesdir = None
    build_locally = True
    maintainers = ['clustergate']

    @run_after('setup')
    def choose_source(self):
        part, env = self.current_partition, self.current_environ
        self.bench_source = benchmarks.resolve(
            partition_model(part), self.family, env.name, part.fullname,
            override_source=self.use_source, override_prefix=self.use_prefix,
            override_spack_env=self.use_spack_env,
            override_modules=self.use_modules
        )
        self.descr = (f'{self.family.upper()} binaries: '
                      f'{self.bench_source.describe()}')
        reason = benchmarks.why_unavailable(self.bench_source, env.name)
        if reason and not self.is_dry_run():
            self.skip(reason)

        src = self.bench_source
        if src.kind == 'spack':
            self.build_system = 'Spack'
            self.build_system.environment = src.spack_env
            self.build_system.specs = list(src.specs)
            self.build_system.install_opts = list(src.install_opts)
            # the runs find the binaries by path in the view
            self.build_system.emit_load_cmds = False
        else:
            self.build_system = 'CustomBuild'
            self.build_system.commands = [
                f'echo "{self.family}: {src.describe()}"'
            ]
            self.modules = list(src.modules)

    @sanity_function
    def binaries_available(self):
        src = self.bench_source
        root = src.root
        if root is None:
            return True     # modules only: the run finds them on PATH

        return sn.assert_true(
            os.path.isdir(root),
            msg=f'{root} does not exist after the build of '
                f'{src.describe()} (does the environment have "view: true"?)'
        )


class NpbBinaries(BenchmarkBinaries):
    family = 'npb'


class ImbBinaries(BenchmarkBinaries):
    family = 'imb'


class OsuBinaries(BenchmarkBinaries):
    family = 'osu'


class StreamBinaries(BenchmarkBinaries):
    family = 'stream'


def environs_for(family):
    """Environments that may run ``family`` on the current system: the
    union of the environments its sources are limited to (``['+mpi']``
    when a source accepts any)."""
    names = []
    for pname, extras in current_partitions():
        envs = benchmarks.configured_environs(extras, family, pname)
        if envs is None:
            if benchmarks._entries(extras, family, pname):
                return None

            continue

        names += [n for n in envs if n not in names]

    return names or None


#: The environments a benchmark run declares before knowing its sources
ANY_MPI = ['+mpi']


def pair_or_more(pair):
    """The requirements of a program that runs between exactly 2 ranks
    (``pair``) or on 2 or more."""
    return sweep.Requirements(min_ranks=2, max_ranks=2 if pair else None)


def restrict_environs(test):
    """Narrow "any MPI" to the environments the family of ``test`` has a
    source for; anything else was chosen on purpose (-S
    valid_prog_environs=..., or a subclass) and is kept: a chosen
    environment without a source is skipped at setup saying so."""
    if list(test.valid_prog_environs) != ANY_MPI:
        return

    envs = environs_for(test.family)
    if envs:
        test.valid_prog_environs = envs


def set_binary(test):
    """The executable of ``test``: its ``binary_name()`` from the source
    its ``binaries`` fixture provides (skipped, saying why, when the
    source has no such binary)."""
    src = test.binaries.bench_source
    name = test.binary_name()
    reason = benchmarks.why_binary_missing(src, name)
    if reason and not test.is_dry_run():
        test.skip(reason)

    test.executable = benchmarks.expected_binary(src, name)
    test.modules = list(src.modules)


class ThirdPartyTest(PointTest, rfm.RunOnlyRegressionTest):
    """A third-party MPI benchmark at one point of the sweep, run from
    the binary the ``binaries`` fixture of the family provides (a
    :class:`BenchmarkBinaries`); nightly and acceptance unless a family or
    check declares otherwise
    (:attr:`~clustergate.rfm.point.base.PointTest.mode_selection`)."""

    #: Benchmark family (npb, imb, osu, stream, hpcc)
    family = variable(str)

    valid_systems = ['+mpi']
    valid_prog_environs = list(ANY_MPI)
    maintainers = ['clustergate']
    time_limit = '20m'

    @run_after('init')
    def choose_environs(self):
        restrict_environs(self)

    @run_before('run')
    def choose_binary(self):
        set_binary(self)

    def binary_name(self):
        raise NotImplementedError

    #: An attribute whose value is a tag too (the program a check runs)
    tag_attribute = None

    def tag_names(self):
        own = {getattr(self, self.tag_attribute)} if self.tag_attribute \
            else set()
        return {'thirdparty', self.family} | own
