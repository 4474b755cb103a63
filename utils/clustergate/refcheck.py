"""A reference file names only what exists: its system, the system's
partitions, the checks, each check's axes and metrics.

A key that names nothing real is never looked up, so the point it meant
runs unchecked while the file looks as if it checked it (a typo in a
check name, an axis renamed, a metric a check does not report). Checked
in three places, each where the facts are known:

- when the configuration loads (``config/settings.py``) and in
  ``clustergate baseline --validate``: the file's system, its partitions,
  its check names (:func:`check_names` reads the ``@simple_test`` classes
  of ``checks/`` without importing them);
- when a test looks its reference up (:func:`check_axes`, setup): the axes
  of every key of its check and partition;
- before its performance stage (:func:`check_metrics`): the metrics of
  its entry against what it reports.

Each raises :class:`clustergate.references.ReferenceFileError`: one line
naming the file and the key.
"""

import ast
import os
from typing import Iterable, Mapping

from clustergate import PROJECT_ROOT
from clustergate.references import ReferenceFileError, ReferenceSet

_DECORATORS = ('simple_test',)


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


def check_file(refs: ReferenceSet, partitions: Iterable[str],
               checks: Iterable[str]):
    """Every check and partition the file names exists."""
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


def check_axes(refs: ReferenceSet, check: str, partition: str,
               axes: Iterable[str]):
    """Every axis named by the keys of ``check`` on ``partition`` is one of
    the check's ``axes`` (its parameters and ``environ``)."""
    axes = set(axes)
    for key_axes, key, _ in refs.entries.get(check, {}).get(partition, []):
        unknown = sorted(set(key_axes) - axes)
        if unknown:
            raise ReferenceFileError(
                refs.path, f'references.{check}.{partition}.{key}',
                f'{check} has no axis {unknown[0]!r} (axes: '
                f'{", ".join(sorted(axes))})')


def check_metrics(path: str, where: str, check: str, named: Mapping,
                  reported: Iterable[str]):
    """Every metric of the entry ``where`` is one ``check`` reports."""
    reported = set(reported)
    unknown = sorted(set(named) - reported)
    if unknown:
        raise ReferenceFileError(
            path, f'{where}.{unknown[0]}', f'{check} reports no metric '
            f'{unknown[0]!r} (metrics: {", ".join(sorted(reported))})')


def check_all(systems: Mapping[str, Iterable[str]], refs_dir=None):
    """Every ``<system>.yaml`` of the references directory: for a
    configured system (``systems``: name -> partition names), of that
    system, naming its partitions and existing checks."""
    from clustergate import references

    refs_dir = refs_dir or references.references_dir()
    try:
        files = sorted(f for f in os.listdir(refs_dir)
                       if f.endswith('.yaml'))
    except FileNotFoundError:
        return

    for fname in files:
        validate_file(os.path.join(refs_dir, fname), systems)


def configured_partitions(settings=None) -> Mapping[str, list]:
    """``{system: [partition, ...]}`` of the ReFrame configuration."""
    import runpy

    settings = settings or os.path.join(PROJECT_ROOT, 'config',
                                        'settings.py')
    conf = runpy.run_path(settings)['site_configuration']
    return {s['name']: [p['name'] for p in s['partitions']]
            for s in conf['systems']}


def validate_file(path, systems: Mapping[str, Iterable[str]]):
    """A reference file of a configured system (named by the file), naming
    its partitions and existing checks; returns the loaded file."""
    from clustergate import references

    system = os.path.basename(path)[:-len('.yaml')]
    if system not in systems:
        raise ReferenceFileError(
            path, '', f'no system {system!r} is configured (systems: '
            f'{", ".join(sorted(systems))})')

    refs = references.load(path, system)
    if refs is not None:
        check_file(refs, systems[system], check_names())

    return refs
