"""Loads clustergate checks into a ReFrame runtime inside pytest, so that
their sanity and performance functions can be fed given outputs."""

import os

import reframe.core.config as config
import reframe.core.runtime as rt
import reframe.frontend.loader as loader

from conftest import ROOT

_loaded = {}


def load_checks(relpath, system='localhost'):
    """All test instances of a check file on ``system``."""
    key = (relpath, system)
    if key not in _loaded:
        site = config.load_config(os.path.join(ROOT, 'config', 'settings.py'))
        site.select_subconfig(system)
        rt.init_runtime(site)
        ld = loader.RegressionCheckLoader([os.path.join(ROOT, relpath)])
        _loaded[key] = ld.load_all()

    return _loaded[key]


def pick(checks, cls_name, **params):
    """The first instance of ``cls_name`` whose attributes match."""
    for c in checks:
        if type(c).__name__ == cls_name and all(
                getattr(c, k) == v for k, v in params.items()):
            return c

    raise LookupError(f'no {cls_name} with {params}')
