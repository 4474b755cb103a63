"""The system ReFrame is loading checks for, and parameters that follow it.

ReFrame parameters are fixed when a class is created. The sweep axes come
from the partitions of the current system, so a base class imported once
would keep the axes of the first system loaded in the process (loading
``localhost`` after ``emucluster`` gave fab0/fab1 and 4 nodes).
:class:`SystemParameters` computes them again for every class created,
i.e. every time ReFrame's loader loads a check file.
"""

import types

import reframe as rfm
from reframe.core.builtins import fixture, parameter
from reframe.core.exceptions import ReframeFatalError
from clustergate.site.model import partition_model

#: What ReFrame raises when no runtime is configured (a plain import, e.g.
#: ``clustergate npb``): ReframeFatalError is a BaseException
NO_RUNTIME = (Exception, ReframeFatalError)


def current_system():
    """ReFrame's current system, or None without a runtime."""
    try:
        from reframe.core.runtime import runtime
        return runtime().system
    except NO_RUNTIME:
        return None


def current_partitions():
    """``(name, extras)`` of each partition of the current system; empty
    without a runtime."""
    system = current_system()
    return [(p.name, partition_model(p, p.name))
            for p in system.partitions] if system else []


class SystemParameters(rfm.RegressionTestPlugin):
    """Mixin: parameters whose values come from the current system.

    A class names them and their values in :meth:`system_parameters`; they
    are declared again, with fresh values, in every subclass created (a
    check file loaded for another system gets that system's values). A
    class that declares one of them in its own body keeps its own.
    """

    @classmethod
    def system_parameters(cls, partitions):
        """``{parameter name: values}`` for the given ``(name, extras)``
        partitions (subclasses)."""
        return {}

    @classmethod
    def system_fixtures(cls):
        """``{fixture name: (test class, fixture() keywords)}`` of fixtures
        whose own parameters follow the system (subclasses): a class of a
        library module is created once per process, so each subclass
        gets a fresh subclass of it."""
        return {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # The class body has run, the parameter space is not built yet
        # (RegressionTestMeta.__init__ does that next): a parameter put in
        # the class's own space replaces the inherited one, in its place.
        local = cls.__dict__['_rfm_local_param_space']
        for name, values in cls.system_parameters(
                current_partitions()).items():
            if name in local:
                continue

            param = parameter(values, loggable=True)
            param.__set_name__(None, name)
            param.__rfm_set_owner__(cls.__qualname__)
            local[name] = param

        local = cls.__dict__['_rfm_local_fixture_space']
        for name, (base, kwargs) in cls.system_fixtures().items():
            if name in local:
                continue

            fresh = types.new_class(base.__name__, (base,), exec_body=lambda
                                    ns, base=base: ns.update(
                                        __module__=base.__module__,
                                        __qualname__=base.__qualname__))
            fix = fixture(fresh, **kwargs)
            fix.__set_name__(None, name)
            fix.__rfm_set_owner__(cls.__qualname__)
            local[name] = fix
