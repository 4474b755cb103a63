"""ReFrame configuration of clustergate: the file ``reframe -C`` reads.

Nothing here to edit: a site's systems are ``config/systems/<name>.py``
(``clustergate site init`` writes one), the modes, logging and results
storage ``config/common.py``, and how they are put together and checked
``config/assemble.py``. ReFrame parses this file before it runs any of
it, so an error here would be ReFrame's traceback; an error in any file
it loads is one line naming that file, its line and the cause.
"""

import importlib.util
import os
import sys

from reframe.core.exceptions import ConfigError

_here = os.path.dirname(os.path.abspath(__file__))


def _one_line(err):
    """ReFrame's ConfigError with one line naming the file (and line) and
    the cause of ``err``: ReFrame turns only a ConfigError or OSError
    into its one line ``failed to load configuration: ...``; anything
    else is a traceback (and an ImportError its "could not load Python
    configuration file", without the cause)."""
    if isinstance(err, SyntaxError):
        where = f'{err.filename}:{err.lineno}'
        why = f'{type(err).__name__}: {err.msg}'
    else:
        tb = err.__traceback__
        while tb.tb_next is not None:
            tb = tb.tb_next
        where = f'{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}'
        why = f'{type(err).__name__}: {err}'
    return ConfigError(f'{where}: {why} (loading {__file__})')


def _assemble():
    """``site_configuration`` of ``config/assemble.py``, run afresh (a
    process may load the settings more than once)."""
    # ReFrame loads this file inside a context that appends to sys.path
    # and pops by position afterwards: whatever we add must be gone when
    # we return, or it pops the wrong entry (it once took lib-dynload, and
    # ctypes with it).
    saved = list(sys.path)
    sys.path.insert(0, _here)
    try:
        spec = importlib.util.spec_from_file_location(
            'clustergate_settings_assembly',
            os.path.join(_here, 'assemble.py'))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod.site_configuration
    except ConfigError:
        raise
    except Exception as err:
        raise _one_line(err) from None
    finally:
        sys.path[:] = saved


site_configuration = _assemble()
