"""Every use of ReFrame's internals by clustergate, in one place.

ReFrame's public API (``reframe.core.builtins``, the pipeline stages, the
test attributes its documentation lists) has no way to do a few things
clustergate needs: know the system being loaded while a check class is
created, add a parameter to a class from a hook of its base, read the
performance records after the performance stage, know which run of the
session this is, read the results database through ReFrame's storage,
filter its perflog, end a red session from an exit handler. Every module
of the package that needs one of these calls this one (the test classes,
the session's end, the results database reader, the perflog guard). What is done here relies on ReFrame's private names;
``tests/test_rfm_adapter.py`` asserts each of them exists and behaves as
used, so that an upgrade of ReFrame that changes one fails there, with
the name, rather than deep in a check.
"""

import types

from reframe.core.builtins import fixture
from reframe.core.exceptions import ReframeFatalError

#: What ReFrame raises when no runtime is configured (a plain import, e.g.
#: ``clustergate npb``): ReframeFatalError is a BaseException
NO_RUNTIME = (Exception, ReframeFatalError)


def runtime():
    """ReFrame's runtime context, or None without one."""
    try:
        from reframe.core.runtime import runtime as _runtime
        return _runtime()
    except NO_RUNTIME:
        return None


def current_system():
    """ReFrame's current system, or None without a runtime."""
    ctx = runtime()
    return ctx.system if ctx is not None else None


def current_run():
    """Which run of the ReFrame session this is (0: the first; retries
    and reruns count on; 0 outside a session): ReFrame tells a test
    nothing else about them."""
    rt = runtime()
    return rt.current_run if rt is not None else 0


def option(name):
    """A configuration option of the current runtime (e.g.
    ``storage/0/sqlite_db_file``)."""
    return runtime().get_option(name)


def logger():
    """ReFrame's session logger (what it prints goes to the terminal and
    the session log)."""
    from reframe.core.logging import getlogger
    return getlogger()


def valid_combinations(valid_systems, valid_prog_environs):
    """``{partition: [environment, ...]}`` that a test with these
    ``valid_systems`` and ``valid_prog_environs`` runs on (ReFrame's own
    matching, features and extras included)."""
    from reframe.core.runtime import valid_sysenv_comb
    return valid_sysenv_comb(valid_systems, valid_prog_environs)


def declare_parameter(cls, name, param):
    """Put ``param`` (a ``parameter()``) in the class body of ``cls`` as
    ``name``, from ``__init_subclass__`` (after the body ran, before
    ReFrame builds the parameter space). A name the body declared itself
    is kept; returns whether it was added."""
    return _declare(cls, '_rfm_local_param_space', name, param,
                    cls.__qualname__)


def declare_fixture(cls, name, fix):
    """As :func:`declare_parameter`, for a ``fixture()``."""
    return _declare(cls, '_rfm_local_fixture_space', name, fix,
                    cls.__qualname__)


def declare_variable(cls, name, var):
    """As :func:`declare_parameter`, for a ``variable()``."""
    return _declare(cls, '_rfm_local_var_space', name, var,
                    cls.__qualname__)


def inherits_variable(cls, name):
    """Does a base of ``cls`` (being created) declare the variable
    ``name``?"""
    return any(name in getattr(base, '_rfm_var_space', {})
               for base in cls.__bases__)


def fresh_fixture(base, kwargs):
    """``fixture()`` of a new subclass of ``base`` (same module and
    name), so that its parameters are computed again for the system
    being loaded."""
    fresh = types.new_class(base.__name__, (base,), exec_body=lambda
                            ns: ns.update(__module__=base.__module__,
                                          __qualname__=base.__qualname__))
    return fixture(fresh, **kwargs)


def _declare(cls, space, name, value, owner):
    local = cls.__dict__[space]
    if name in local:
        return False

    value.__set_name__(None, name)
    value.__rfm_set_owner__(owner)
    local[name] = value
    return True


def perf_records(test):
    """The test's performance records after its performance stage,
    ``{'<system>:<partition>:<variable>': [value, ref, lower, upper, unit,
    result]}``, writable: what the perflog and the run report get."""
    return test._perfvalues


def pipeline_hooks(cls):
    """``{stage: [hook names in the order they run]}`` of a test class
    (stages as ReFrame names them: ``post___init__``, ``post_setup``,
    ``pre_run``, ``post_run_wait``, ``pre_sanity``, ...)."""
    return {stage: [h.__name__ for h in hooks]
            for stage, hooks in cls._process_hook_registry().items()}


def launcher(name):
    """A new parallel launcher registered under ``name``."""
    from reframe.core.backends import getlauncher
    return getlauncher(name)()


def launcher_name(job_launcher):
    """The name a launcher is registered under (srun, mpirun, ...)."""
    return type(job_launcher).registered_name


def runtime_or_builtin():
    """ReFrame's runtime; outside a ReFrame session (``clustergate
    baseline --db``, ``report``, ``timing``) one made from ReFrame's
    built-in configuration."""
    import reframe.core.config as config
    import reframe.core.runtime as rt

    try:
        return rt.runtime()
    except ReframeFatalError:
        site = config.load_config()
        site.select_subconfig('generic')
        rt.init_runtime(site)
        return rt.runtime()


def stored_sessions(db_path, db_option):
    """Every session ReFrame's storage API reads from the SQLite results
    database ``db_path`` (its file lock taken), the file set as the
    runtime's option ``db_option`` for the duration of the call; raises
    sqlite3.Error as the storage does."""
    import os

    from reframe.frontend.reporting.storage import StorageBackend
    from reframe.frontend.reporting.utility import QuerySelectorTestcase

    site = runtime_or_builtin().site_config
    site.add_sticky_option(db_option, os.path.abspath(db_path))
    try:
        backend = StorageBackend.create('sqlite')
    finally:
        site.remove_sticky_option(db_option)

    return backend.fetch_sessions(QuerySelectorTestcase(sess_filter='True'))


def perf_logger():
    """The Python logger behind ReFrame's perflog handlers, or None when
    logging is not configured (checks loaded by a unit test)."""
    from reframe.core import logging as rfm_logging
    return rfm_logging.getperflogger(None).logger


def expanded(text):
    """``text`` with environment variables expanded as ReFrame expands
    its options' values."""
    from reframe.utility import osext
    return osext.expandvars(text)


def shutdown_logging():
    """Flush and close ReFrame's log handlers (an exit handler that ends
    the process itself must)."""
    from reframe.core import logging as rlog
    rlog.shutdown()
