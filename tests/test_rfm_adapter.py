"""The ReFrame internals clustergate uses (clustergate.adapter) exist and
behave as used: a ReFrame upgrade that changes one fails here, by name."""

import reframe as rfm
from reframe.core.builtins import parameter, run_after, run_before, variable
from reframe.core.exceptions import ReframeFatalError

from clustergate import adapter
from rfm_loader import load_checks, system_runtime


def test_no_runtime_covers_reframes_fatal_error():
    # raised by runtime() before a configuration is loaded; a BaseException
    assert not issubclass(ReframeFatalError, Exception)
    assert issubclass(ReframeFatalError, adapter.NO_RUNTIME)


def test_runtime_system_run_and_options():
    with system_runtime('localhost'):
        assert adapter.current_system().name == 'localhost'
        assert adapter.current_run() == 0
        db = adapter.option('storage/0/sqlite_db_file')
        assert isinstance(db, str) and db.endswith('.db')
        log = adapter.logger()
        assert callable(log.info) and callable(log.error)


def test_valid_combinations_match_features_and_environments():
    with system_runtime('localhost'):
        combos = adapter.valid_combinations(['+mpi'], ['+mpi'])
        names = {p.fullname: [e.name for e in envs]
                 for p, envs in combos.items()}
        assert 'localhost:local' in names
        assert 'openmpi' in names['localhost:local']
        assert adapter.valid_combinations(['+nosuchfeature'], ['+mpi']) == {}


class _Declaring(rfm.RegressionTestPlugin):
    """Declares in its subclasses what the adapter declares for PointTest."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        adapter.declare_parameter(cls, 'axis', parameter([1, 2, 3],
                                                         loggable=True))
        if not adapter.inherits_variable(cls, 'status'):
            adapter.declare_variable(cls, 'status',
                                     variable(str, value='x', loggable=True))


class _Own(_Declaring, rfm.RunOnlyRegressionTest):
    axis = parameter([7])


class _Sub(_Own):
    pass


def test_declared_parameters_and_variables_join_the_class():
    # a parameter declared from __init_subclass__ is in the class's space,
    # with its values; one the body declared is kept
    assert list(_Sub.param_space['axis']) == [1, 2, 3]
    assert list(_Own.param_space['axis']) == [7]
    assert _Sub.param_space.params['axis'].is_loggable()
    # a variable is declared once, by the first class, and inherited
    assert 'status' in _Own.var_space and 'status' in _Sub.var_space
    assert adapter.inherits_variable(_Sub, 'status')
    assert not adapter.inherits_variable(_Declaring, 'status')


def test_fresh_fixture_is_a_new_class_of_the_same_name():
    from clustergate.rfm.families.build import CgProgramsBuild
    fix = adapter.fresh_fixture(CgProgramsBuild, {'scope': 'environment'})
    assert fix.cls is not CgProgramsBuild
    assert issubclass(fix.cls, CgProgramsBuild)
    assert fix.cls.__qualname__ == 'CgProgramsBuild'
    assert fix.scope == 'environment'


class _Hooked(rfm.RunOnlyRegressionTest):
    @run_after('init', always_last=True)
    def last(self):
        pass

    @run_after('init')
    def base_first(self):
        pass

    @run_before('run')
    def before_run(self):
        pass


class _HookedSub(_Hooked):
    @run_after('init')
    def sub_second(self):
        pass


def test_pipeline_hooks_names_and_order():
    # a base's hooks run before its subclass's, always_last ones after all
    hooks = adapter.pipeline_hooks(_HookedSub)
    assert hooks['post___init__'] == ['base_first', 'sub_second', 'last']
    assert hooks['pre_run'] == ['before_run']


def test_perf_records_are_what_reframe_reports():
    check = load_checks('checks/npb/npb_checks.py', 'localhost')[0]
    records = adapter.perf_records(check)
    assert records == {}
    records['localhost:local:mops_total'] = [1.0, 0, None, None, 'Mop/s',
                                             'pass']
    try:
        # ReFrame's own view of the records (the perflog's source)
        assert check.perfvalues['localhost:local:mops_total'][0] == 1.0
    finally:
        records.clear()


def test_launchers_by_name():
    import clustergate.rfm.point.launchers  # noqa: F401  (registers cg-mpirun)
    for name in ('local', 'srun', 'mpirun', 'cg-mpirun'):
        assert adapter.launcher_name(adapter.launcher(name)) == name


def test_storage_logging_and_expansion_internals(tmp_path, monkeypatch):
    # the results database reader, the perflog guard and the session's
    # end use these, through the adapter only
    monkeypatch.setenv('CG_ADAPTER_PROBE', 'x1')
    assert adapter.expanded('a-$CG_ADAPTER_PROBE') == 'a-x1'
    with system_runtime('localhost'):
        assert adapter.runtime_or_builtin() is adapter.runtime()
        logger = adapter.perf_logger()
        assert logger is None or callable(logger.addFilter)
    import sqlite3
    db = tmp_path / 'empty.db'
    sqlite3.connect(db).close()
    # an SQLite file without ReFrame's tables: the storage API's own error
    try:
        sessions = adapter.stored_sessions(str(db),
                                           'storage/sqlite_db_file')
    except sqlite3.Error:
        sessions = None
    assert sessions in (None, [])
    assert callable(adapter.shutdown_logging)


def test_no_package_module_imports_reframe_internals_but_the_adapter():
    # ReFrame's public API (the test classes' builtins, sanity, exceptions,
    # documented launchers and logging) is used by the test classes; its
    # internals (runtime, configuration, storage, utilities) only here
    import os
    import re

    root = os.path.join(os.path.dirname(adapter.__file__))
    internal = re.compile(r'^\s*(from|import) reframe\.(core\.runtime|'
                          r'core\.config|frontend|utility\.osext)', re.M)
    found = []
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            if not name.endswith('.py') or path == adapter.__file__:
                continue
            with open(path) as fp:
                if internal.search(fp.read()):
                    found.append(os.path.relpath(path, root))
    assert found == []
