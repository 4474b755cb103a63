"""A session that selects no test case is red, and says why in one line.

ReFrame runs zero test cases, prints ``PASSED`` and exits 0 when a filter
or a mode matches nothing (``--mode ci -n LinkMatrix`` on a system where
the link matrix is not a ci test), and lists ``Found 0 check(s)`` when no
check can run on the system at all. A gate that selected nothing checked
nothing: :func:`nothing_selected` makes the line that the end of the
session prints (``clustergate.rfm.session``) before it exits 1::

    nothing selected: system localhost, mode ci, -n NoSuchTest: 331 test case(s) generated, none left after filtering by name

Where the cases went comes from ReFrame's own counts, which it writes to
the session log at its ``verbose`` level (``Generated 331 test case(s)``,
``Filtering test cases(s) by name: 0 remaining``, ``Final number of test
cases: 0``).
"""

import re
from typing import List, Optional, Sequence, Tuple

_COUNT = re.compile(
    r'verbose: reframe: (?:Generated (?P<gen>\d+) test case\(s\)'
    r'|Filtering test cases?\(s\) (?P<by>.+?): (?P<left>\d+) remaining'
    r'|Final number of test cases: (?P<final>\d+))\s*$')

#: options that decide what is selected: (short, long, takes a value)
_FILTERS = (('-n', '--name', True), ('-x', '--exclude', True),
            ('-t', '--tag', True), ('-T', '--exclude-tag', True),
            ('-E', '--filter-expr', True), ('-p', '--prgenv', True),
            ('-c', '--checkpath', True), (None, '--mode', True),
            (None, '--failed', False), (None, '--cpu-only', False),
            (None, '--gpu-only', False), ('-m', '--maintainer', True))

#: the actions whose empty selection is red
RUN_ACTIONS = ('-r', '--run', '--dry-run', '-l', '-L', '--list',
               '--list-detailed', '--ci-generate')


def is_selecting(argv: Sequence[str]) -> bool:
    """True when the command runs, lists or generates test cases."""
    return any(a in RUN_ACTIONS or a.startswith(('--list=', '--ci-generate='))
               for a in argv[1:])


def stages(log_path: str) -> List[Tuple[str, int]]:
    """ReFrame's counts of a session, in order: ``('generated', n)``,
    ``('by name', n)``, ..., ``('final', n)``; empty when the log has none
    (the session stopped before selecting)."""
    out = []
    try:
        with open(log_path, errors='replace') as fp:
            for line in fp:
                m = _COUNT.search(line.rstrip('\n'))
                if not m:
                    continue

                if m['gen'] is not None:
                    out = [('generated', int(m['gen']))]
                elif m['by'] is not None:
                    out.append((m['by'], int(m['left'])))
                else:
                    out.append(('final', int(m['final'])))
    except OSError:
        pass

    return out


def filters(argv: Sequence[str]) -> List[str]:
    """The selecting options of a command line, as typed (``mode ci`` for
    ``--mode ci``)."""
    out = []
    args = list(argv[1:])
    i = 0
    while i < len(args):
        arg = args[i]
        opt, _, val = arg.partition('=')
        spec = next((f for f in _FILTERS if opt in f[:2]), None)
        i += 1
        if spec is None:
            continue

        if spec[2] and not val and i < len(args):
            val = args[i]
            i += 1

        out.append(f'mode {val}' if spec[1] == '--mode' else
                   (f'{opt} {val}' if spec[2] else opt))

    return out


def _where_lost(counts):
    gen = counts[0][1]
    for label, n in counts[1:]:
        if n == 0 and label != 'final':
            return (f'{gen} test case(s) generated, none left after '
                    f'filtering {label}')

    return f'{gen} test case(s) generated, none left to run'


def nothing_selected(counts: Sequence[Tuple[str, int]], system: str,
                     argv: Sequence[str],
                     system_cause: str = '') -> Optional[str]:
    """The one line of a session that selected no test case, or None.
    ``counts``: :func:`stages`; ``system_cause``: why the system has no
    test case at all (:func:`system_cause`), used when none was
    generated."""
    if not counts or counts[-1] != ('final', 0):
        return None

    what = ', '.join([f'system {system}'] + filters(argv))
    if counts[0] == ('generated', 0):
        why = f'no check has a test case on {system}'
        if system_cause:
            why += f': {system_cause}'
    else:
        why = _where_lost(counts)

    return f'nothing selected: {what}: {why}'


def system_cause(partitions, left_out=None) -> str:
    """Why no check can run on any of ``partitions`` (ReFrame partitions):
    the first partition's missing piece, and the MPI environments left out
    by the probe (``left_out``: ``{name: reason}``)."""
    from clustergate.site.extras import MPI_FAMILY, MPI_FEATURE, SWEEP
    from clustergate.site.partition import environment_model, partition_model

    causes = []
    for part in partitions:
        if not partition_model(part).declares_sweep:
            causes.append(f'{part.fullname} declares no extras.{SWEEP}')
        elif MPI_FEATURE not in part.features:
            causes.append(f"{part.fullname} has no '{MPI_FEATURE}' feature")
        elif not [e for e in part.environs if MPI_FEATURE in e.features
                  and environment_model(e).mpi_family]:
            causes.append(f"{part.fullname} offers no environment with the "
                          f"'{MPI_FEATURE}' feature and an {MPI_FAMILY}")

    for name, reason in sorted((left_out or {}).items()):
        causes.append(f'{name} left out: {reason}')

    return '; '.join(causes)
