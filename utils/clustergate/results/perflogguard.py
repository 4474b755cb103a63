"""A dry run writes no perflog line.

``reframe --dry-run`` runs no job and evaluates no performance function,
yet ReFrame logs every test case of it to the perflog handlers: one line
per performance variable, result ``pass``, value ``None``. In a site's
perflog directory those lines would read as passed nightly runs with no
figures. :func:`install` puts a filter on ReFrame's perflog logger that
drops the records of dry-run test cases; every test of clustergate
installs it when it is created in a dry-run session (modes.guard_dry_run).
"""

import logging

from clustergate import adapter


def is_dry_run_record(record) -> bool:
    """Is ``record`` about a test case of a dry run?"""
    check = getattr(record, '__rfm_check__', None)
    return bool(check is not None and check.is_dry_run())


class DropDryRuns(logging.Filter):
    """Drops the perflog records of dry-run test cases."""

    def filter(self, record):
        return not is_dry_run_record(record)


def install():
    """Filter ReFrame's current perflog logger (once); a no-op when
    logging is not configured (the checks loaded by a unit test)."""
    logger = adapter.perf_logger()
    if logger is None:
        return

    if not any(isinstance(f, DropDryRuns) for f in logger.filters):
        logger.addFilter(DropDryRuns())
