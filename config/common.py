"""Site-independent part of the configuration: logging, perflogs, modes and
results storage. Paths can be moved with environment variables so that CI
and sites keep perflogs and the results database where they want them.
"""

import os

from clustergate.rfm import session
from clustergate.site import environment as cgenv

_project = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: Where perflogs and the results database go (override for CI, sites)
PERFLOG_DIR = cgenv.get(cgenv.PERFLOG_DIR,
                             os.path.join(_project, 'perflogs'))
RESULTS_DB = cgenv.get(cgenv.RESULTS_DB,
                            os.path.join(_project, 'output', 'results.db'))
#: ReFrame's debug log of the session (its SKIP lines carry the reasons)
SESSION_LOG = cgenv.get(cgenv.DEBUG_LOG,
                             os.path.join(_project, 'output', 'reframe.log'))

#: The full performance table of the last session (clustergate.results.verdict):
#: the terminal ends with the verdict; ``--performance-report`` prints
#: ReFrame's table there too
PERF_TABLE = cgenv.get(cgenv.PERF_TABLE,
                            os.path.join(os.path.dirname(SESSION_LOG),
                                         'performance.txt'))

# (each may be moved by its own variable: CG_RESULTS_DB elsewhere left
# output/ uncreated and the session log's handler failed to open)
for _d in (PERFLOG_DIR, os.path.dirname(RESULTS_DB),
           os.path.dirname(SESSION_LOG)):
    os.makedirs(_d, exist_ok=True)

#: ReFrame's log of its start, before it reads this configuration
STARTUP_LOG = os.path.join(os.path.dirname(SESSION_LOG), 'reframe-startup.log')


def _adopt_startup_log(dest):
    """Move the log ReFrame opens before it reads a configuration (its
    built-in settings: a file handler with no name, i.e. a new
    ``$TMPDIR/rfm-*.log`` each session, never removed) to ``dest``, and
    keep its handler writing there until ReFrame reconfigures its logging
    from this file: a session leaves nothing outside its directories.
    Never fails the configuration: at worst the file stays where it is."""
    import shutil
    import tempfile

    try:
        from reframe.core import logging as rlog
        handlers = list(getattr(rlog._logger, 'handlers', None) or [])
    except Exception:   # not loaded by ReFrame's command line
        return

    tmp = os.path.realpath(tempfile.gettempdir())
    for h in handlers:
        path = getattr(h, 'baseFilename', '')
        if not (os.path.basename(path).startswith('rfm-') and
                os.path.dirname(os.path.realpath(path)) == tmp):
            continue

        try:
            h.acquire()
            try:
                h.close()
                shutil.move(path, dest)
                h.baseFilename, h.mode = dest, 'a'
                h.stream = h._open()
            finally:
                h.release()
        except OSError:
            pass


_adopt_startup_log(STARTUP_LOG)

# At the end of a run session: what did not run, per family, a red exit
# when a family a partition expects ran not at all or nothing was selected
# (clustergate.rfm.session, clustergate.planning.selection), and the verdict block
# (clustergate.results.verdict). Here only the files it reads are named:
# the handler is armed only in a reframe run or listing (session.configure)
session.configure(SESSION_LOG, PERF_TABLE)

# Benchmarks must not disturb each other: one job after the other, unless
# a system's partitions declare a concurrency rule with policy 'async'
# (config/settings.py gives that system async modes; clustergate.planning.concurrency)
# (no --performance-report: its table of every metric buried the verdict;
# it goes to PERF_TABLE, and --performance-report still prints it)
_common_opts = ['--exec-policy=serial']

site_configuration = {
    'general': [
        {
            'check_search_path': [os.path.join(_project, 'checks')],
            'check_search_recursive': True,
            'report_junit': cgenv.get(cgenv.JUNIT_REPORT) or None,
            # the performance report names the job and its nodes, so a
            # regression points at a Slurm job id and a node list
            'perf_report_spec': 'now-1d:now/last:/+job_nodelist+jobid+result',
        }
    ],
    'modes': [
        {
            # minutes: smallest sizes and scales, for merge requests and CI
            'name': 'ci',
            # HPC Challenge at N <= 768: seconds, not hours
            'options': _common_opts + ['--tag=ci',
                                       '-S', 'HpccRun.max_problem_size=768'],
        },
        {
            # what a site runs every night; a partition with a nightly
            # budget (extras 'rotation') runs tonight's share of its
            # acceptance space (clustergate.rfm.point.nightly): the expression
            # is evaluated once every test is loaded. A -E of the command
            # line replaces it (ReFrame keeps the last -E).
            'name': 'nightly',
            'options': _common_opts + ['--tag=nightly', '-E', 'cg_tonight()'],
        },
        {
            # the full sweep, for site acceptance
            'name': 'acceptance',
            # the link matrix of every pair, not only the topology's rounds
            'options': _common_opts + [
                '--tag=acceptance', '-S', 'LinkMatrix.link_schedule=all-pairs'],
        },
    ],
    'storage': [
        {
            'enable': True,
            'sqlite_db_file': RESULTS_DB,
        }
    ],
    'logging': [
        {
            'level': 'debug',
            'handlers': [
                {
                    'type': 'stream',
                    'name': 'stdout',
                    'level': 'info',
                    'format': '%(message)s',
                },
                {
                    'type': 'file',
                    'name': SESSION_LOG,
                    'level': 'debug',
                    'format': '[%(asctime)s] %(levelname)s: '
                              '%(check_info)s: %(message)s',
                    'append': False,
                },
            ],
            'handlers_perflog': [
                {
                    # One CSV line per performance variable; every loggable
                    # parameter (nodes, ppn, interconnect, size...) is in
                    # check_#ALL, so the perflog carries the sweep axes.
                    'type': 'filelog',
                    'prefix': '%(check_system)s/%(check_partition)s',
                    'basedir': PERFLOG_DIR,
                    'level': 'info',
                    'format': (
                        '%(check_job_completion_time)s|'
                        'reframe %(version)s|'
                        '%(check_name)s|'
                        '%(check_environ)s|'
                        '%(check_job_nodelist)s|'
                        '%(check_jobid)s|'
                        '%(check_result)s|'
                        '%(check_#ALL)s|'
                        '%(check_perfvalues)s'
                    ),
                    'format_perfvars': (
                        '%(check_perf_var)s=%(check_perf_value)s|'
                        'ref=%(check_perf_ref)s|'
                        'lower=%(check_perf_lower_thres)s|'
                        'upper=%(check_perf_upper_thres)s|'
                        'unit=%(check_perf_unit)s|'
                    ),
                    'append': True,
                },
            ],
        }
    ],
}
