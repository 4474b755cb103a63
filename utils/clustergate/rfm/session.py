"""What did not run in a ReFrame session, said at its end, and a red exit
when a family the partition must run did not run at all.

ReFrame's verdict counts a skipped case as a pass: a nightly whose NPB
build silently stopped (``spack`` gone from PATH) stays green with all of
NPB skipped. So at the end of every run session this module prints a
``NOT RUN`` block, one line per family and reason::

    ==== NOT RUN ====
    npb: 72 of 72 case(s): NPB source is spack environment ... but spack is not on PATH

and makes the session exit non-zero when a family that a partition lists
in ``extras['expected_families']`` had cases selected in the session on
that partition and none of them ran. A family filtered out with
``-n``/``-x``/``-t`` has no selected case, so it is never held against
the session.

How, since ReFrame has no session-end hook: ``config/common.py`` names
the session's files with :func:`configure` while ReFrame loads the
configuration, and arms the end of the session there only when the
``reframe`` command line asks for a run or a listing (so that a session
whose check files all fail to import still ends red); the base of every clustergate test
(:mod:`clustergate.rfm.point.base`) calls :func:`arm` too when ReFrame loads
the checks. Arming registers an ``atexit`` handler, only in the
``reframe`` command; a listing, pytest or a tool that loads the settings
registers nothing. After ReFrame's ``main()`` has written its JSON
report, JUnit file and log, the handler reads them:

- the JSON report (``general/report_file``) gives every selected case and
  its result, family (the folder of ``checks/`` its file is in) and
  dependencies; it has no skip reason (ReFrame 4.10 fills ``fail_reason``
  only for failures), so
- the reasons come from the ``SKIP`` lines ReFrame writes to the session
  log (``<name> /<hash> @<partition>+<environ> [<reason>]``); a case
  skipped "due to skipped dependencies" inherits the reason of the
  dependency (the build fixture), which is the one worth reading;
- the JUnit file gets a ``<skipped message=...>`` per skipped case:
  ReFrame writes skipped cases without it, so CI tools count them as
  passed.

An ``atexit`` handler cannot change the exit status with ``sys.exit``
(Python ignores it there); when the verdict is red the handler flushes
the logs itself and ends the process with ``os._exit(1)``.
"""

import atexit
import json
import os
import re
import shlex
import sys
import time
import xml.etree.ElementTree as ET
from collections import OrderedDict, defaultdict

from clustergate import adapter
from clustergate.results import score
from clustergate.results import timing
from clustergate.results import verdict
from clustergate.site import environment as cgenv

_DEP_REASONS = ('skipped due to skipped dependencies', 'dependencies failed')
_ANSI = re.compile(r'\x1b\[[0-9;]*m')
_SKIP_LINE = re.compile(
    r'\[\s*SKIP\s*\]\s*\(\s*\d+/\d+\)\s+(?P<name>.*?) /(?P<hash>[0-9a-f]+) '
    r'@(?P<part>\S+?)\+(?P<env>\S+) \[(?P<reason>.*)\]\s*$'
)

_state = {}


def started():
    """Unix time the session started (its settings were loaded), None
    outside a session."""
    return _state.get('start')


def in_reframe_command():
    """True in the ``reframe`` command (not in pytest or a tool that
    loads the settings)."""
    argv0 = sys.argv[0] if sys.argv else ''
    return (os.path.basename(argv0) == 'reframe' or
            argv0.endswith(os.path.join('reframe', '__main__.py')))


def configure(session_log, perf_table=None):
    """Name the files the end of the session reads: ``session_log``, the
    log file that receives ReFrame's status lines (``config/common.py``'s
    file handler); ``perf_table``, where the full performance table goes
    (clustergate.results.verdict). The session starts now (a log or report
    older than this is another session's). Registers nothing: see
    :func:`arm`. The settings file may be loaded more than once; the first
    call counts."""
    if 'log' not in _state:
        _state.update(log=session_log, start=time.time(), table=perf_table)

    # A session is armed here too, not only when its checks load: if no
    # check file imports (a broken base module, an empty check path),
    # ReFrame selects 0 cases and exits 0; the handler is what makes that
    # session red ("nothing selected"). Tools and pytest load without it.
    if _run_session(sys.argv[1:]):
        arm()


def _run_session(args):
    """True when the ``reframe`` command line asks for a session that
    selects cases: a run (``-r``, ``--run``, ``--dry-run``) or a listing
    (``-l``, ``-L``, ``--list``, ``--list-detailed``), short flags also
    in a cluster (``-Rr``)."""
    if not in_reframe_command():
        return False

    return any(a in ('--run', '--dry-run', '--list', '--list-detailed') or
               (a.startswith('-') and not a.startswith('--') and
                a[1:].isalpha() and set(a[1:]) & set('rlL')) for a in args)


def _listing(args):
    """True for a listing (``-l``, ``-L``, ``-lC``...)."""
    return any(a in ('--list', '--list-detailed') or
               a.startswith(('--list=', '--list-detailed=')) or
               (a.startswith('-') and not a.startswith('--') and
                a[1:2] in ('l', 'L')) for a in args[1:])


def _print_listing_size(log_path):
    """The size of what was listed, before a run
    (clustergate.planning.modesize)."""
    from clustergate.planning import modesize
    line = modesize.listing_line(log_path, modesize.session_mode(sys.argv))
    if line:
        print(line)


def arm():
    """Arrange for the NOT RUN block and the verdict at the end of this
    ``reframe`` session (called when its checks load). Does nothing
    outside the ``reframe`` command, before :func:`configure` and when
    called again."""
    if not in_reframe_command() or 'log' not in _state or \
            _state.get('armed'):
        return

    _state['armed'] = True
    atexit.register(_at_exit)


# -- reading the session ----------------------------------------------------

def skip_reasons(log_path):
    """``{(hashcode, partition fullname, environ): reason}`` from the SKIP
    status lines of a ReFrame log."""
    out = {}
    try:
        with open(log_path, errors='replace') as fp:
            for line in fp:
                if 'SKIP' not in line:
                    continue

                m = _SKIP_LINE.search(_ANSI.sub('', line.rstrip('\n')))
                if m:
                    out[(m['hash'], m['part'], m['env'])] = m['reason']
    except OSError:
        pass

    return out


def _key(tc):
    return (tc['hashcode'], f'{tc["system"]}:{tc["partition"]}',
            tc['environ'])


def family_of(filename):
    """The check family of a test file: its folder under ``checks/``."""
    return os.path.basename(os.path.dirname(filename or '')) or '?'


def final_cases(report):
    """Each case's last result (a retry replaces the first run's)."""
    cases = OrderedDict()
    for run in report.get('runs', []):
        for tc in run.get('testcases', []):
            cases[_key(tc)] = tc

    return list(cases.values())


def _first_line(text):
    return str(text or '').strip().splitlines()[0] if text else ''


def why(tc, by_name, reasons, seen=None):
    """The reason a case did not run, following dependencies to the one
    that did not run or failed."""
    seen = seen or set()
    # a rotating point its night's budget kept from starting says so in
    # its own loggable variable (clustergate.rfm.point.base)
    reason = reasons.get(_key(tc)) or tc.get('night_not_started') or None
    if tc['result'] in ('fail', 'abort') and not reason:
        return (f'{tc["name"]} failed in {tc.get("fail_phase")}: '
                f'{_first_line(tc.get("fail_reason"))}')

    if reason in _DEP_REASONS or reason is None:
        for dep_name, dep_part, dep_env in tc.get('dependencies_actual', []):
            dep = by_name.get((dep_name, dep_part, dep_env))
            if dep is None or id(dep) in seen:
                continue

            seen.add(id(dep))
            if dep['result'] in ('skip', 'fail', 'abort'):
                return why(dep, by_name, reasons, seen)

    return reason or f'result {tc["result"]!r} (no reason logged)'


def not_run(report, reasons):
    """``{family: {partition: [case, ...]}}`` and the cases that did not
    run, each with its reason: ``{family: {reason: count}}``."""
    cases = final_cases(report)
    by_name = {(tc['unique_name'], f'{tc["system"]}:{tc["partition"]}',
                tc['environ']): tc for tc in cases}
    selected = defaultdict(lambda: defaultdict(int))
    ran = defaultdict(lambda: defaultdict(int))
    missed = defaultdict(lambda: defaultdict(int))
    for tc in cases:
        if tc.get('fixture'):
            continue

        fam = family_of(tc.get('filename'))
        part = f'{tc["system"]}:{tc["partition"]}'
        selected[fam][part] += 1
        if tc['result'] in ('pass', 'fail', 'xfail', 'xpass'):
            ran[fam][part] += 1
        else:
            missed[fam][why(tc, by_name, reasons)] += 1

    return selected, ran, missed


def expected_failures(selected, ran, expected):
    """``[(family, partition, selected count)]`` of families a partition
    expects (``expected``: ``{partition fullname: [family, ...]}``) that
    were selected there and of which no case ran."""
    out = []
    for part, fams in expected.items():
        for fam in fams:
            n = selected.get(fam, {}).get(part, 0)
            if n and not ran.get(fam, {}).get(part, 0):
                out.append((fam, part, n))

    return out


def format_block(selected, ran, missed, failures, expected):
    """The NOT RUN block (a list of lines; empty when everything ran)."""
    if not missed and not failures:
        return []

    lines = [' NOT RUN '.center(80, '=')]
    for fam in sorted(missed):
        total = sum(selected[fam].values())
        for reason, n in sorted(missed[fam].items(), key=lambda x: -x[1]):
            lines.append(f'{fam}: {n} of {total} case(s): {reason}')

    for fam in sorted(missed):
        if sum(ran[fam].values()):
            continue

        parts = sorted(selected[fam])
        exp = [p for p in parts if fam in expected.get(p, ())]
        if not exp:
            lines.append(f'{fam}: nothing ran; not in expected_families of '
                         f'{", ".join(parts)}: the session stays green')

    for fam, part, n in failures:
        lines.append(f'FAILED: {fam} is expected on {part} '
                     f'(extras.expected_families) but none of its {n} '
                     f'selected case(s) ran')

    lines.append('=' * 80)
    return lines


# -- JUnit ------------------------------------------------------------------

def mark_junit_skips(path, report, reasons):
    """Add ``<skipped message=...>`` to the skipped cases of ReFrame's JUnit
    file (it writes them like passes) and a ``skipped`` count per suite."""
    try:
        tree = ET.parse(path)
    except (OSError, ET.ParseError):
        return 0

    marked = 0
    for run_id, run in enumerate(report.get('runs', [])):
        cases = {}
        by_name = {(tc['unique_name'], f'{tc["system"]}:{tc["partition"]}',
                    tc['environ']): tc for tc in run.get('testcases', [])}
        for tc in run.get('testcases', []):
            name = (f'{tc["display_name"]} @{tc["system"]}:'
                    f'{tc["partition"]}+{tc["environ"]}')
            cases[name] = tc

        suite = tree.getroot().find(f"testsuite[@id='{run_id}']")
        if suite is None:
            continue

        skipped = 0
        for el in suite.findall('testcase'):
            tc = cases.get(el.get('name'))
            if tc is None or tc['result'] not in ('skip', 'abort'):
                continue

            skipped += 1
            if el.find('skipped') is None:
                ET.SubElement(el, 'skipped', message=why(tc, by_name,
                                                         reasons))
                marked += 1

        suite.set('skipped', str(skipped))

    tree.write(path, encoding='utf-8', xml_declaration=True)
    return marked


# -- the handler ----------------------------------------------------------

def _report_path(pattern):
    """The report ReFrame wrote for ``pattern`` (``{sessionid}`` is the
    highest number present, as ReFrame numbers them)."""
    if '{sessionid}' not in pattern:
        return pattern

    base = os.path.dirname(pattern) or '.'
    rx = re.compile(re.escape(os.path.basename(pattern)).replace(
        re.escape('{sessionid}'), r'(\d+)') + '$')
    best = None
    try:
        for fname in os.listdir(base):
            m = rx.match(fname)
            if m and (best is None or int(m[1]) > best[0]):
                best = (int(m[1]), os.path.join(base, fname))
    except OSError:
        return None

    return best and best[1]


def _expected_by_partition(system):
    from clustergate.site.partition import partition_model
    return {p.fullname: list(partition_model(p).expected_families)
            for p in system.partitions}


def _nothing_selected(rt, start, log_path):
    """The one line of a session that selected no test case, or None
    (clustergate.planning.selection)."""
    from clustergate.siteinit import mpiprobe
    from clustergate.planning import selection

    if not selection.is_selecting(sys.argv):
        return None

    try:
        if os.path.getmtime(log_path) < start:
            return None     # another session's log
    except OSError:
        return None

    counts = selection.stages(log_path)
    cause = ''
    if counts[:1] == [('generated', 0)]:
        cause = selection.system_cause(rt.system.partitions,
                                       mpiprobe.left_out())

    return selection.nothing_selected(counts, rt.system.name, sys.argv,
                                      cause)


def _acceptance_score(report, report_path):
    """The acceptance session ends with its score
    (clustergate.results.score), written where $CG_SCORE_FILE says and
    compared with $CG_SCORE_BASELINE."""
    score.session_end(report, report_path,
                      score_file=cgenv.get(cgenv.SCORE_FILE),
                      baseline=cgenv.get(cgenv.SCORE_BASELINE))


def session_end(start, log_path, perf_table=None):
    """Print the NOT RUN block, the time breakdown and the verdict of the
    session that started at ``start`` (or the line saying it selected
    nothing); return True when it must exit non-zero."""
    rt = adapter.runtime()
    empty = _nothing_selected(rt, start, log_path)
    if empty:
        print(empty)
        return True

    path = _report_path(adapter.expanded(
        rt.get_option('general/0/report_file')))
    if not path or not os.path.isfile(path) or \
            os.path.getmtime(path) < start:
        return False    # no run session (listing, dry help)

    with open(path) as fp:
        report = json.load(fp)

    info = report.get('session_info', {})
    if info.get('cmdline') != ' '.join(shlex.quote(a) for a in sys.argv) or \
            info.get('time_start_unix', 0) < start:
        return False    # another session's report (same directory)

    if '--dry-run' in sys.argv:
        return False

    reasons = skip_reasons(log_path)
    junit = rt.get_option('general/0/report_junit')
    if junit:
        mark_junit_skips(adapter.expanded(junit), report, reasons)

    expected = _expected_by_partition(rt.system)
    selected, ran, missed = not_run(report, reasons)
    failures = expected_failures(selected, ran, expected)
    for line in format_block(selected, ran, missed, failures, expected):
        print(line)

    # where the time went (clustergate.results.timing): a nightly that grows past
    # its window shows what made it long
    for line in timing.breakdown(report, top=5):
        print(line)

    if score.is_acceptance(sys.argv):
        _acceptance_score(report, path)

    # last, so that it is what the terminal shows (clustergate.results.verdict)
    table = verdict.write_table(report, perf_table) if perf_table else None
    red = [f'{fam} expected on {part} ran not at all'
           for fam, part, _ in failures]
    n_missed = sum(sum(r.values()) for r in missed.values())
    for line in verdict.block(report, n_missed, red, table,
                              verdict.coverage_lines()):
        print(line)

    return bool(failures)


def _at_exit():
    if adapter.runtime() is None:
        return      # the configuration did not load: no session ran

    try:
        red = session_end(_state['start'], _state['log'],
                          _state.get('table'))
        if not red and _listing(sys.argv):
            _print_listing_size(_state['log'])
    except Exception as err:    # never turn a session's end into a crash
        print(f'clustergate: no NOT RUN summary: {type(err).__name__}: '
              f'{err}', file=sys.stderr)
        return

    if red:
        # sys.exit is ignored in an atexit handler: flush what the later
        # handlers would have (ReFrame's and Python's logging) and leave
        import logging
        adapter.shutdown_logging()
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)
