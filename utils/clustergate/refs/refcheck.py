"""A reference file names only what exists: its system, the system's
partitions, the checks, each check's axes and metrics.

A key that names nothing real is never looked up, so the point it meant
runs unchecked while the file looks as if it checked it (a typo in a
check name, an axis renamed, a metric a check does not report). Checked
in three places, each where the facts are known:

- when the configuration loads (``config/settings.py``) and in
  ``clustergate baseline --validate``: the file's system, its partitions,
  its check names (:func:`check_names` reads the ``@simple_test`` classes
  of ``checks/`` without importing them), the metric names each check
  declares (:mod:`clustergate.refs.directions`), and in each point key the
  axis names and the values of the axes whose values the code lists
  (:func:`parameter_values`: ``scale=smal`` is refused here);
- when a test looks its reference up (:func:`check_axes`, setup, before
  its job): the axes of every key of its check and partition, and their
  values against the check's sweep on this system;
- before its performance stage (:func:`check_metrics`): the metrics of
  its entry against what it reports.

Each raises :class:`clustergate.refs.references.ReferenceFileError`: one line
naming the file and the key.
"""

import ast
import os
from typing import Iterable, Mapping

from clustergate import PROJECT_ROOT
from clustergate.refs.references import ReferenceFileError, ReferenceSet

_DECORATORS = ('simple_test',)

#: axes whose values come from the configuration (the partitions' sweep,
#: interconnects, NUMA counts, environments), not from the code: their
#: values are checked when a test looks its reference up (GPUs per node:
#: from the partitions' ReFrame devices)
CONFIGURED_AXES = ('num_nodes', 'ppn', 'interconnect', 'numa_domains',
                   'environ', 'gpus_per_node')


def _decorated(node):
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = getattr(target, 'attr', getattr(target, 'id', ''))
        if name in _DECORATORS:
            return True

    return False


def check_names(checks_dir=None) -> set:
    """Names of the ``@simple_test`` classes under ``checks_dir``."""
    checks_dir = checks_dir or os.path.join(PROJECT_ROOT, 'checks')
    names = set()
    for root, _, files in os.walk(checks_dir):
        for fname in files:
            if not fname.endswith('.py'):
                continue

            with open(os.path.join(root, fname)) as fp:
                tree = ast.parse(fp.read(), fname)

            names.update(n.name for n in ast.walk(tree)
                         if isinstance(n, ast.ClassDef) and _decorated(n))

    return names


def _literal(node, consts):
    """The values of ``parameter(<node>)``: a literal list or a module
    constant; None when the code computes them."""
    if isinstance(node, ast.Name):
        return consts.get(node.id)

    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def _module_parameters(tree):
    consts, params = {}, []
    # module constants and class attributes (not a function's locals)
    body = list(tree.body) + [n for c in tree.body
                              if isinstance(c, ast.ClassDef) for n in c.body]
    for node in body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1 or \
                not isinstance(node.targets[0], ast.Name):
            continue

        call, name = node.value, node.targets[0].id
        if isinstance(call, ast.Call) and getattr(
                call.func, 'id', '') == 'parameter' and call.args:
            params.append((name, call.args[0]))
        elif isinstance(node, ast.Assign) and node in tree.body:
            try:
                consts[name] = ast.literal_eval(call)
            except ValueError:
                pass

    return [(name, _literal(arg, consts)) for name, arg in params]


def parameter_values(dirs=None) -> dict:
    """``{axis: {str(value), ...} or None}`` of every ``parameter(...)``
    of the checks and their base classes, read without importing them
    (None: values computed by the code or the configuration)."""
    dirs = dirs or [os.path.join(PROJECT_ROOT, 'checks'),
                    os.path.join(PROJECT_ROOT, 'utils', 'clustergate',
                                 'rfm')]
    out = dict.fromkeys(CONFIGURED_AXES)
    for d in dirs:
        for root, _, files in os.walk(d):
            for fname in (f for f in files if f.endswith('.py')):
                with open(os.path.join(root, fname)) as fp:
                    tree = ast.parse(fp.read(), fname)

                for name, values in _module_parameters(tree):
                    if name in out and (out[name] is None or
                                        name in CONFIGURED_AXES):
                        continue

                    if not isinstance(values, (list, tuple)):
                        out[name] = None
                        continue

                    out.setdefault(name, set()).update(map(str, values))

    return out


def check_keys(refs: ReferenceSet, axes=None):
    """Every point key names known axes and values, every metric is one
    its check declares (:mod:`clustergate.refs.directions`)."""
    from clustergate.refs import directions

    axes = parameter_values() if axes is None else axes
    for check, parts in refs.entries.items():
        for part, points in parts.items():
            for key_axes, key, metrics in points:
                where = f'references.{check}.{part}.{key}'
                _check_key_axes(refs.path, where, key_axes, axes)
                for metric in metrics:
                    if directions.declared(check, metric) is None:
                        raise ReferenceFileError(
                            refs.path, f'{where}.{metric}', f'{check} '
                            f'reports no metric {metric!r} (metrics: '
                            f'{directions.names(check)})')


def _check_key_axes(path, where, key_axes, axes):
    for name, value in key_axes.items():
        if name not in axes:
            raise ReferenceFileError(path, where, f'no check has an axis '
                                     f'{name!r} (axes: '
                                     f'{", ".join(sorted(axes))})')

        known = axes[name]
        if known is not None and value not in known:
            raise ReferenceFileError(path, where, f'axis {name!r} has no '
                                     f'value {value!r} (values: '
                                     f'{", ".join(sorted(known))})')


def check_file(refs: ReferenceSet, partitions: Iterable[str],
               checks: Iterable[str]):
    """Every check and partition the file names exists, and every key
    and metric (:func:`check_keys`)."""
    partitions, checks = set(partitions), set(checks)
    for check, parts in refs.entries.items():
        if check not in checks:
            raise ReferenceFileError(
                refs.path, f'references.{check}', f'no check {check!r} '
                f'(a class decorated with @simple_test under checks/)')

        for part in parts:
            if part not in partitions:
                raise ReferenceFileError(
                    refs.path, f'references.{check}.{part}',
                    f'system {refs.system!r} has no partition {part!r} '
                    f'(partitions: {", ".join(sorted(partitions))})')

    check_keys(refs)


def check_axes(refs: ReferenceSet, check: str, partition: str,
               axes: Iterable[str], values: Mapping = None):
    """Every axis named by the keys of ``check`` on ``partition`` is one of
    the check's ``axes`` (its parameters and ``environ``), and each value
    one of ``values[axis]`` (the check's sweep on this system) where
    given: a key that matches no point leaves it unchecked."""
    axes, values = set(axes), values or {}
    for key_axes, key, _ in refs.entries.get(check, {}).get(partition, []):
        where = f'references.{check}.{partition}.{key}'
        unknown = sorted(set(key_axes) - axes)
        if unknown:
            raise ReferenceFileError(
                refs.path, where, f'{check} has no axis {unknown[0]!r} '
                f'(axes: {", ".join(sorted(axes))})')

        for name, value in key_axes.items():
            known = values.get(name)
            if known is not None and value not in known:
                raise ReferenceFileError(
                    refs.path, where, f'{check} has no point with {name}='
                    f'{value} on {partition} ({name}: '
                    f'{", ".join(sorted(known))})')


def check_metrics(path: str, where: str, check: str, named: Mapping,
                  reported: Iterable[str]):
    """Every metric of the entry ``where`` is one ``check`` reports."""
    reported = set(reported)
    unknown = sorted(set(named) - reported)
    if unknown:
        raise ReferenceFileError(
            path, f'{where}.{unknown[0]}', f'{check} reports no metric '
            f'{unknown[0]!r} (metrics: {", ".join(sorted(reported))})')


def check_all(systems: Mapping[str, Iterable[str]], refs_dir: str):
    """Every ``<system>.yaml`` of the references directory ``refs_dir``:
    for a configured system (``systems``: name -> partition names), of
    that system, naming its partitions and existing checks."""
    try:
        files = sorted(f for f in os.listdir(refs_dir)
                       if f.endswith('.yaml'))
    except FileNotFoundError:
        return

    for fname in files:
        validate_file(os.path.join(refs_dir, fname), systems)


def configured_systems(settings=None) -> list:
    """The ``systems`` of the ReFrame configuration, as loaded (and
    validated) by ``config/assemble.py``."""
    import runpy

    settings = settings or os.path.join(PROJECT_ROOT, 'config',
                                        'settings.py')
    return runpy.run_path(settings)['site_configuration']['systems']


def configured_partitions(settings=None) -> Mapping[str, list]:
    """``{system: [partition, ...]}`` of the ReFrame configuration."""
    return {s['name']: [p['name'] for p in s['partitions']]
            for s in configured_systems(settings)}


def validate_file(path, systems: Mapping[str, Iterable[str]]):
    """A reference file of a configured system (named by the file), naming
    its partitions and existing checks; returns the loaded file."""
    from clustergate.refs import references

    system = references.system_of_file(path)
    if system not in systems:
        raise ReferenceFileError(
            path, '', f'no system {system!r} is configured (systems: '
            f'{", ".join(sorted(systems))})')

    refs = references.load(path, system)
    if refs is not None:
        check_file(refs, systems[system], check_names())

    return refs
