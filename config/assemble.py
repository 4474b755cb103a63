"""How clustergate's ReFrame configuration is assembled (loaded by
``config/settings.py``, the file ReFrame reads): the common part
(``config/common.py``: logging, perflogs, modes, results storage) and one
module per system under ``config/systems/``, each checked as it loads.

Each system module defines ``site_configuration`` with ``systems`` and
``environments`` lists, may define ``mode_options`` (``{mode: [options]}``:
options a mode of ``config/common.py`` adds on this module's systems
only), and may define ``active()``: a system whose ``active()`` is true is
put first (and ``ACTIVE_NOTE``, what the session's first line says about
it then), so that, for instance, the emulated cluster wins over the
catch-all ``localhost`` when ``SLURM_CONF`` points at it. ``localhost`` is
always last; it matches any host only while no site system is configured,
otherwise it runs only when named (``--system localhost``), see
clustergate.rfm.syschoice.

An error here is raised as it comes: ``config/settings.py`` turns it into
ReFrame's one line naming the file and the cause. Errors found in a
system module or on the command line are ReFrame ConfigErrors whose
message names the file and the key already.
"""

import importlib.util
import os
import sys

import common

# Registers the launchers our partitions use
import clustergate.rfm.point.launchers  # noqa: F401
from clustergate.planning import concurrency
from reframe.core.exceptions import ConfigError

_here = os.path.dirname(os.path.abspath(__file__))
#: the file ReFrame reads, named in the errors of the command line
SETTINGS = os.path.join(_here, 'settings.py')


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
    try:
        refcheck.check_all({s['name']: [p['name'] for p in s['partitions']]
                            for s in systems}, cgenv.references_dir())
    except ReferenceFileError as err:
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
        raise ConfigError(f'{SETTINGS}: {why}')


_check_names(_systems, common.site_configuration['modes'] + _modes,
             sys.argv, os.environ)


def _choose_system(systems, notes):
    """A site system is chosen by name or by its hostname pattern;
    ``localhost`` matches any host only while no site system is
    configured (clustergate.rfm.syschoice)."""
    from clustergate.rfm import syschoice

    syschoice.apply(systems, SETTINGS, notes)


_choose_system(_systems, _notes)


def _partition_models(systems):
    """The parsed partitions (validated above, so cached)."""
    from clustergate.site.partition import config_partition_model
    return [config_partition_model(s, p)
            for s in systems for p in s['partitions']]


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
