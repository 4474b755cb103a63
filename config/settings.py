"""ReFrame configuration of clustergate.

Assembled from the common part (``config/common.py``: logging, perflogs,
modes, results storage) and one module per system under
``config/systems/``. Each system module defines ``site_configuration`` with
``systems`` and ``environments`` lists, may define ``mode_options``
(``{mode: [options]}``: options a mode of ``config/common.py`` adds on this
module's systems only), and may define ``active()``: a system whose
``active()`` is true is put first (and ``ACTIVE_NOTE``, what the session's
first line says about it then), so that, for instance, the
emulated cluster wins over the catch-all ``localhost`` when ``SLURM_CONF``
points at it. ``localhost`` is always last; it matches any host only
while no site system is configured, otherwise it runs only when named
(``--system localhost``), see clustergate.rfm.syschoice.
"""

import importlib.util
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))

# ReFrame loads this file inside a context that appends to sys.path and
# pops by position afterwards: whatever we add must be gone when we return,
# or it pops the wrong entry (it once took lib-dynload, and ctypes with it).
_saved_sys_path = list(sys.path)
sys.path.insert(0, _here)


def _one_line(err):
    """ReFrame's ConfigError with one line naming the file (and line) and
    the cause of ``err``, raised importing what this file is assembled
    from: ReFrame turns only a ConfigError or OSError into its one line
    ``failed to load configuration: ...``; anything else was a
    traceback (and an ImportError its "could not load Python
    configuration file", without the cause)."""
    from reframe.core.exceptions import ConfigError

    sys.path[:] = _saved_sys_path
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


try:
    import common  # noqa: E402

    # Registers the launchers our partitions use
    import clustergate.rfm.point.launchers  # noqa: E402,F401
    from clustergate.planning import concurrency  # noqa: E402
except Exception as _err:
    raise _one_line(_err) from None


def _check_systems(systems, environments):
    """The parts of a system description our checks rely on, checked here
    so that the error names the file (ReFrame's schema errors do not)."""
    from clustergate.site import extras, gpus
    from clustergate.site.partition import config_partition_model

    if not isinstance(systems, list) or not systems:
        raise ValueError("'systems' must be a non-empty list")

    for sys_ in systems:
        name = sys_.get('name', '?')
        for key, typ in (('name', str), ('hostnames', list),
                         ('partitions', list)):
            if not isinstance(sys_.get(key), typ):
                raise ValueError(f'system {name!r}: {key!r} must be a '
                                 f'{typ.__name__}')

        if not sys_['partitions']:
            raise ValueError(f"system {name!r}: 'partitions' is empty")

        for part in sys_['partitions']:
            pname = f'{name}:{part.get("name", "?")}'
            for key in ('name', 'scheduler', 'launcher', 'environs'):
                if key not in part:
                    raise ValueError(f'partition {pname!r}: {key!r} missing')

            # parsed and validated once: the checks read this model
            model = config_partition_model(sys_, part)
            # its GPUs: ReFrame's devices and extras.gpus together
            gpus.check_partition(part, name)
            if model.declares_sweep:
                model.sweep

    for env in environments:
        extras.check_environment(env)

    # last: a partition whose checks find no MPI environment or no
    # interconnect for it runs nothing, silently (extras.check_mpi_wiring)
    for sys_ in systems:
        extras.check_mpi_wiring(sys_, environments)


def _load_system_modules():
    sysdir = os.path.join(_here, 'systems')
    mods = []
    for fname in sorted(os.listdir(sysdir)):
        if not fname.endswith('.py') or fname.startswith('_'):
            continue

        path = os.path.join(sysdir, fname)
        spec = importlib.util.spec_from_file_location(
            f'clustergate_system_{fname[:-3]}', path
        )
        mod = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(mod)
            _check_systems(mod.site_configuration['systems'],
                           mod.site_configuration.get('environments', []))
            # an error found once the checks load (the rotation's
            # sentinels) names the file too
            from clustergate.site import extras
            for sys_ in mod.site_configuration['systems']:
                extras.note_source(sys_['name'], path)
        except Exception as err:
            # one line naming the file and the key, no traceback: ReFrame
            # prints a ConfigError as "failed to load configuration: ..."
            from clustergate.site.errors import ExtrasError
            from reframe.core.exceptions import ConfigError

            sys.path[:] = _saved_sys_path
            what = ('' if isinstance(err, ExtrasError)
                    else f'{type(err).__name__}: ')
            raise ConfigError(f'{path}: {what}{err}') from None

        mods.append(mod)

    def rank(mod):
        names = [s['name'] for s in mod.site_configuration['systems']]
        if 'localhost' in names:
            return 2

        active = getattr(mod, 'active', lambda: False)()
        return 0 if active else 1

    return sorted(mods, key=rank)


def _system_modes(mod, modes):
    """The modes of ``modes`` (config/common.py) that the system module
    ``mod`` extends with its ``mode_options``, as ReFrame modes scoped to
    its systems (``target_systems``: ReFrame prefers them over the
    unscoped ones there); one line naming the file and the mode if the
    mode is not one of common.py's or its options are not a list of
    strings."""
    from reframe.core.exceptions import ConfigError

    extra = getattr(mod, 'mode_options', {})
    names = [s['name'] for s in mod.site_configuration['systems']]
    out = []
    for name, opts in extra.items():
        base = next((m for m in modes if m['name'] == name), None)
        why = (f'unknown mode {name!r} (config/common.py has '
               f'{", ".join(m["name"] for m in modes)})' if base is None
               else None)
        if why is None and not (isinstance(opts, list) and
                                all(isinstance(o, str) for o in opts)):
            why = f'mode {name!r}: the options must be a list of strings'

        if why:
            sys.path[:] = _saved_sys_path
            raise ConfigError(f'{mod.__file__}: mode_options: {why}')

        out.append({**base, 'target_systems': names,
                    'options': list(base['options']) + opts})

    return out


def _check_references(systems):
    """The reference files name configured systems, their partitions and
    existing checks (clustergate.refs.refcheck); one line if not."""
    from clustergate.refs import refcheck
    from clustergate.refs.references import ReferenceFileError
    from clustergate.site import environment as cgenv
    from reframe.core.exceptions import ConfigError

    try:
        refcheck.check_all({s['name']: [p['name'] for p in s['partitions']]
                            for s in systems}, cgenv.references_dir())
    except ReferenceFileError as err:
        sys.path[:] = _saved_sys_path
        raise ConfigError(str(err)) from None


_systems, _environs, _modes, _notes = [], [], [], {}
for _mod in _load_system_modules():
    _systems += _mod.site_configuration['systems']
    if getattr(_mod, 'active', lambda: False)():
        # said with the system chosen: why its pattern matches this host
        _why = getattr(_mod, 'ACTIVE_NOTE', 'its active() is true')
        _notes.update({s['name']: _why
                       for s in _mod.site_configuration['systems']})
    _environs += _mod.site_configuration.get('environments', [])
    _modes += _system_modes(_mod, common.site_configuration['modes'])

_check_references(_systems)


def _option(argv, flag):
    """The value of ``flag`` on a command line (``--flag V``,
    ``--flag=V``; the last one, as argparse takes it), or None."""
    value = None
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith(flag + '='):
            value = arg.split('=', 1)[1]
    return value


def _check_names(systems, modes, argv, environ):
    """In a ``reframe`` command, the system, partition and mode it names
    exist here; else ReFrame's one line (a ConfigError) naming the ones
    that do (ReFrame's own says "invalid mode: 'x'" or "could not find a
    configuration entry", without them)."""
    from clustergate.rfm import session
    from reframe.core.exceptions import ConfigError

    if not session.in_reframe_command():
        return

    why = None
    named = _option(argv, '--system') or environ.get('RFM_SYSTEM')
    if named:
        name, _, part = named.partition(':')
        found = next((s for s in systems if s['name'] == name), None)
        if found is None:
            why = (f'--system {named}: no such system (systems: '
                   f'{", ".join(s["name"] for s in systems)})')
        elif part and part not in [p['name'] for p in found['partitions']]:
            why = (f'--system {named}: system {name} has no partition '
                   f'{part} (partitions: '
                   f'{", ".join(p["name"] for p in found["partitions"])})')

    mode = _option(argv, '--mode')
    names = sorted({m['name'] for m in modes})
    if why is None and mode is not None and mode not in names:
        why = f'--mode {mode}: no such mode (modes: {", ".join(names)})'

    if why:
        sys.path[:] = _saved_sys_path
        raise ConfigError(f'{os.path.abspath(__file__)}: {why}')


_check_names(_systems, common.site_configuration['modes'] + _modes,
             sys.argv, os.environ)


def _choose_system(systems, notes):
    """A site system is chosen by name or by its hostname pattern;
    ``localhost`` matches any host only while no site system is
    configured (clustergate.rfm.syschoice)."""
    from clustergate.rfm import syschoice

    try:
        syschoice.apply(systems, os.path.abspath(__file__), notes)
    except Exception:
        sys.path[:] = _saved_sys_path
        raise


_choose_system(_systems, _notes)


def _partition_models(systems):
    """The parsed partitions (validated above, so cached)."""
    from clustergate.site.partition import config_partition_model
    return [config_partition_model(s, p)
            for s in systems for p in s['partitions']]


sys.path[:] = _saved_sys_path

site_configuration = {
    'systems': _systems,
    'environments': _environs,
    **common.site_configuration,
    'modes': common.site_configuration['modes'] + _modes,
}
# a system whose partitions declare concurrency policy 'async' runs its
# modes (with its own mode_options) with ReFrame's async policy
# (clustergate.planning.concurrency)
site_configuration['modes'] += concurrency.system_modes(
    common.site_configuration['modes'], _partition_models(_systems), _modes)
