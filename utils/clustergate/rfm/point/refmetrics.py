"""The metrics a test's reference entry names are metrics it
reports; a value better than its reference is reported, not failed
(unless the partition says ``improvements: fail``).

ReFrame ignores a reference for a performance variable the test does not
have, so a misspelt metric in config/references/<system>.yaml would leave
the real one unchecked while the file looks complete. The metrics of a
test are known only once its hooks set ``perf_variables`` (just before
the performance stage), hence this hook, run after them.
"""

from reframe.core.exceptions import ConfigError

from clustergate.refs import refcheck
from clustergate.refs.references import ReferenceFileError
from clustergate import adapter


def reference_names_reported_metrics(test):
    """Fails the test (one line naming file and key) whose reference
    entry names a metric it does not report."""
    entry = getattr(test, '_cg_reference_entry', None)
    if entry is None:
        return

    path, where, named = entry
    try:
        refcheck.check_metrics(path, where, type(test).__name__,
                               dict.fromkeys(named),
                               test.perf_variables)
    except ReferenceFileError as err:
        raise ConfigError(str(err)) from None


def report_improvements(test):
    """Puts the reference file's better-side bounds (opened for the
    judgement, :func:`clustergate.rfm.point.reference.judged_bounds`) back
    into the performance record, so that the perflog and the run
    report carry the reference's band, and names each value beyond
    it in the log: passed, reported as better than reference."""
    kept = getattr(test, '_cg_better_bounds', None) or {}
    for key, record in adapter.perf_records(test).items():
        tag = key.split(':')[-1]
        if tag not in kept:
            continue

        record[2], record[3] = kept[tag]
        beyond = _beyond(record)
        if beyond:
            test.logger.warning(f'{test.display_name}: {tag} {beyond}: '
                                f'better than reference (reported, not '
                                f'failed: improvements: report)')


def _beyond(record):
    """'= 4180 MB/s, +318 % of reference 1000 (bound +150 %)' of a
    ``[value, ref, lower, upper, unit, result]`` record beyond its band,
    else ''."""
    value, ref, lower, upper, unit = record[:5]
    if not ref or value is None:
        return ''

    dev = value / ref - 1
    for bound in (lower, upper):
        if bound is not None and (dev < bound if bound < 0 else dev > bound):
            return (f'= {value:g} {unit or ""}, {100 * dev:+.1f} % of '
                    f'reference {ref:g} (bound {100 * bound:+.0f} %)')

    return ''
