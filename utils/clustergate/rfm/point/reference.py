"""The reference of a test instance, from ``config/references/<system>.yaml``
(see :mod:`clustergate.refs.references`): :func:`apply`, after setup
(:class:`clustergate.rfm.point.base.PointTest`)."""

from typing import Dict

from clustergate.refs import directions
from clustergate.refs.refcheck import check_axes
from clustergate.refs.references import (NO_REFERENCE, ReferenceFileError,
                                         _rel, load_cached, reference_file)
from clustergate.site import environment as cgenv
from clustergate.site.partition import partition_model


def test_axes(test) -> Dict[str, object]:
    """The parameters of a test instance and its programming environment:
    its point of the sweep."""
    if hasattr(test, 'reference_axes'):
        # a check whose point is its fixture's (HPCC kernels)
        axes = dict(test.reference_axes())
    else:
        names = [n for n in type(test).param_space.params if not
                 n.startswith('_')]
        axes = {n: getattr(test, n) for n in names}
    # the programming environment (MPI) is an axis too: references are
    # per MPI; a key that does not name it covers every environment
    env = getattr(test, 'current_environ', None)
    if env is not None and getattr(env, 'name', None):
        axes.setdefault('environ', env.name)

    return axes


def sweep_values(test) -> Dict[str, set]:
    """``{axis: {str(value), ...}}`` of the test's class on this system
    (every point of its parameter space) and of its environments."""
    space = getattr(type(test), 'param_space', None)
    out = {}
    for name in getattr(space, 'params', {}):
        if not name.startswith('_'):
            out[name] = {str(v) for v in space.params[name].values}

    envs = [e.name for e in getattr(test.current_partition, 'environs', [])]
    if envs:
        out['environ'] = set(envs)

    return out


_told_missing = set()


def apply(test) -> str:
    """Set ``test.reference`` from its system's file; return and record the
    status (``reference_status``): where the reference came from, or
    ``'no reference'``. A malformed file raises ReFrame's ConfigError."""
    from reframe.core.exceptions import ConfigError

    system = test.current_system.name
    part = test.current_partition.name
    path = reference_file(cgenv.references_dir(), system,
                          partition_model(test.current_partition).reference_set)
    check = type(test).__name__
    axes = test_axes(test)
    try:
        refs = load_cached(path, system)
        if refs is not None:
            # a key naming an axis the check has not is never matched
            check_axes(refs, check, part, axes,
                                sweep_values(test))
    except ReferenceFileError as err:
        raise ConfigError(str(err)) from None

    found = refs.lookup(check, part, axes) if refs else None
    if found is None:
        status = NO_REFERENCE
        if test.reference:
            status = 'inline reference'
        elif refs is None:
            if path not in _told_missing:
                _told_missing.add(path)
                test.logger.info(f'no reference file {_rel(path)}: checks '
                                 f'on {system} run and log, unchecked')
        else:
            test.logger.info(
                f'{test.display_name}: no reference for '
                f'{system}:{part} in {_rel(path)} (runs and logs, not '
                f'checked against a reference)'
            )
    else:
        key, metrics = found
        test.reference = {f'{system}:{part}': judged_bounds(test, check,
                                                           metrics)}
        status = f'{_rel(path)}#{check}.{part}.{key}'
        # the metrics are known once the test computed them: checked
        # before its performance stage (clustergate.rfm.point.refmetrics)
        test._cg_reference_entry = (path, f'references.{check}.{part}.'
                                    f'{key}', sorted(metrics))

    test.reference_status = status
    return status


def judged_bounds(test, check, metrics) -> Dict[str, tuple]:
    """The reference tuples ReFrame judges ``test`` with. With the
    partition's ``improvements: report`` (the default) the better side of
    a metric with a declared direction is open, so a run far better than
    its reference passes; the file's bound is kept in
    ``test._cg_better_bounds`` and put back in the perflog after the
    performance stage (:mod:`clustergate.rfm.point.refmetrics`), where the
    report shows the value as better than reference."""
    policy = partition_model(test.current_partition).improvements
    judged, kept = {}, {}
    for metric, (value, lower, upper, unit) in metrics.items():
        side = directions.better_side(directions.of(check, metric))
        if policy == 'report' and side == 'lower' and lower is not None:
            kept[metric] = (lower, upper)
            lower = None
        elif policy == 'report' and side == 'upper' and upper is not None:
            kept[metric] = (lower, upper)
            upper = None

        judged[metric] = (value, lower, upper, unit)

    test._cg_better_bounds = kept
    return judged


# -- bounds of a family's own ---------------------------------------------

def add_bounds(test, bounds):
    """Documented bounds of performance variables that compare two
    measured values (a ratio, an ordering): a judgement on measured
    numbers is a performance variable, so that noise on a busy machine
    shows as a number against a bound, not as a broken program.

    Add ``bounds`` (``{variable: (value, lower, upper, unit)}``, ReFrame's
    reference tuples) to ``test.reference`` at the global scope, for each
    variable that has no reference for the test's partition yet."""
    part = test.current_partition
    scope = part.fullname if part else '*'
    for name, ref in bounds.items():
        try:
            test.reference[f'{scope}:{name}']
        except KeyError:
            test.reference[f'*:{name}'] = ref
