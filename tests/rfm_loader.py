"""Loads clustergate checks into a ReFrame runtime inside pytest, so that
their sanity and performance functions can be fed given outputs."""

import contextlib
import os
import sys

import reframe.core.config as config
import reframe.core.runtime as rt
import reframe.frontend.loader as loader

from conftest import ROOT

_loaded = {}
_runtimes = {}


@contextlib.contextmanager
def system_runtime(system):
    """ReFrame's runtime of ``system`` for the duration of the block.
    ReFrame keeps one runtime per process; this swaps it, so that tests
    can load checks for several systems in one process."""
    if system not in _runtimes:
        site = config.load_config(os.path.join(ROOT, 'config',
                                               'settings.py'))
        site.select_subconfig(system)
        _runtimes[system] = rt.RuntimeContext(site)

    saved = rt._runtime_context
    rt._runtime_context = _runtimes[system]
    try:
        yield _runtimes[system]
    finally:
        rt._runtime_context = saved if saved is not None else \
            _runtimes[system]


def load_checks(relpath, system='localhost'):
    """All test instances of a check file on ``system``."""
    key = (relpath, system)
    if key not in _loaded:
        path = os.path.join(ROOT, relpath)
        # the check file is executed again, so that its classes (and their
        # sweep axes) are those of this system: ReFrame's loader returns a
        # module it loaded before, even with force=True
        for name, mod in list(sys.modules.items()):
            if getattr(mod, '__file__', None) == path:
                del sys.modules[name]

        with system_runtime(system):
            _loaded[key] = loader.RegressionCheckLoader([path]).load_all()

    return _loaded[key]


def pick(checks, cls_name, **params):
    """The first instance of ``cls_name`` whose attributes match."""
    for c in checks:
        if type(c).__name__ == cls_name and all(
                getattr(c, k) == v for k, v in params.items()):
            return c

    raise LookupError(f'no {cls_name} with {params}')


def fed(check, text, num_tasks=None):
    """The check reading ``text`` as its job's stdout, at ``num_tasks``
    ranks when given."""
    if num_tasks is not None:
        check.num_tasks = num_tasks
    check.stdout_text = lambda: text
    return check


def perf_values(check):
    """The check's performance variables, evaluated: name -> value."""
    import reframe.utility.sanity as sn

    check.set_perf_variables()
    return {k: sn.evaluate(v) for k, v in check.perf_variables.items()}


def sanity_failure(check):
    """The one-line message the check's sanity fails with."""
    import pytest
    from reframe.core.exceptions import SanityError

    with pytest.raises(SanityError) as err:
        check.check_output(check.output_text())
    msg = str(err.value)
    assert '\n' not in msg
    return msg


#: the check file of each benchmark family
FAMILY_FILES = {
    'contention': 'checks/contention/contention_checks.py',
    'imb': 'checks/imb/imb_checks.py',
    'npb': 'checks/npb/npb_checks.py',
    'osu': 'checks/osu/osu_checks.py',
    'stream': 'checks/stream/stream_checks.py',
}


def family_checks(family, system='localhost'):
    """All test instances of a family's check file on ``system``."""
    return load_checks(FAMILY_FILES[family], system)


def checks_fixture(relpath, system='localhost'):
    """A module-scoped pytest fixture: the test instances of a check file
    (``imb = checks_fixture('checks/imb/imb_checks.py')``)."""
    import pytest

    @pytest.fixture(scope='module')
    def checks():
        return load_checks(relpath, system)

    return checks
