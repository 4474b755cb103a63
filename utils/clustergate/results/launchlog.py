"""Why did a job die before its program reported anything?

Reads a job's stderr (Slurm's srun/slurmstepd, OpenMPI, MPICH's hydra) and
names the cause in one line: the node that failed, the rank that crashed
and where, the connection that could not be made, the limit that was hit.
Used by the sanity checks when a program's output is missing or cut short,
so that a failed nightly run says "a rank on n3 died of Segmentation fault"
rather than only "the program did not finish".
"""

import os
import re
from typing import List, Optional


def _program(command):
    """The program of a shell command line ('A=1 /p/prog -x' -> 'prog')."""
    words = [w for w in command.split() if '=' not in w]
    return os.path.basename(words[0]) if words else command.strip()


#: (regex, message template or function of the groups[, group]); the first
#: match of each rule is reported, in this order (most specific cause
#: first). Of the rules sharing a group, only the first that matches is
#: reported (they say the same thing in other words).
_RULES = [
    # Slurm: the whole job or step was cancelled, with the reason
    (re.compile(r'\*\*\* (JOB|STEP) (\S+) ON (\S+) CANCELLED AT \S+ '
                r'DUE TO ([A-Z ]+?)(?:,| \*\*\*)'),
     'Slurm cancelled {0} {1} (on {2}) due to {3}'),
    (re.compile(r'srun: (?:error: )?Node failure on (\S+)'),
     'Slurm lost node {0} (node failure)'),
    (re.compile(r'srun: error: Unable to allocate resources: (.+)'),
     'no allocation: {0}'),
    (re.compile(r'(?:srun|slurmstepd)\S*: error: execve\(\): (\S+): (.+)'),
     'cannot execute {0}: {1}'),
    # The loader could not start the program (an MPI runtime's libraries
    # not on LD_LIBRARY_PATH, e.g. impi-rt's IMB-MPI1)
    (re.compile(r'^(\S+): error while loading shared libraries: (\S+): '
                r'(.+)$', re.M),
     lambda prog, lib, why: f'{os.path.basename(prog)} cannot start: '
                            f'shared library {lib}: {why}'),
    # Our programs' own refusal (wrong rank count, one node, bad option)
    (re.compile(r'^CG_ERROR kind=fatal program=(\S+) rank=\d+: (.+)$',
                re.M),
     '{0} refused to run: {1}'),
    # our harness's watchdog: a rank still running after the last result
    (re.compile(r'^CG_ERROR kind=hang program=(\S+) rank=(\d+): on (\S*), '
                r'still running (\d+) s after', re.M),
     '{0}: rank {1} on {2} hung after its last result (stopped after {3} '
     's)'),
    (re.compile(r'There are not enough slots available in the system to '
                r'satisfy the (\d+)\s+slots? that (?:was|were) requested',
                re.S),
     'OpenMPI has not enough slots for the {0} processes requested (more '
     'ranks than cores: fewer ranks, or --oversubscribe)'),
    # mpirun names the rank a signal killed (SIGKILL leaves no other trace)
    (re.compile(r'noticed that process rank (\d+) with PID \d+ on node '
                r'(\S+) exited on signal (\d+) \(([^)]+)\)'),
     'rank {0} on {1} was killed by signal {2} ({3})', 'signal'),
    # OpenMPI's own crash report: [host:pid] Signal: Segmentation fault (11)
    (re.compile(r'^\[([^:\]\s]+):\d+\] Signal: ([^(\n]+?) \((\d+)\)', re.M),
     'a rank on {0} died of {1} (signal {2})', 'signal'),
    # a program run by the job script itself (no launcher): bash reports
    # "job.sh: line 3: 4242 Segmentation fault      /path/prog args", and
    # with a core file "... Segmentation fault      (core dumped) /path/prog
    # args": the note sits between the padded status and the command
    (re.compile(r'^\S+: line \d+:\s+\d+ ([A-Z][A-Za-z ]+?)'
                r'(?: \(core dumped\))?\s{2,}(?:\(core dumped\)\s+)?'
                r'(\S.*)$', re.M),
     lambda sig, cmd: f'{_program(cmd)} died of {sig}', 'signal'),
    # srun's per-task summary: "srun: error: n2: task 3: Segmentation fault"
    # ("Killed" and "Terminated" are what srun did to the other tasks)
    (re.compile(r'srun: error: (\S+): tasks? ([\d,-]+): '
                r'(?!Killed|Terminated)([A-Z][\w ]+?)'
                r'(?: \(core dumped\))?$', re.M),
     'task {1} on {0}: {2}'),
    # OpenMPI TCP BTL: the connection could not be made (the "Error:" it
    # prints is unreliable in 4.1: often EINPROGRESS)
    (re.compile(r'failed to TCP connect to a peer MPI process.*?'
                r'Local host:\s+(\S+).*?Message:\s+connect\(\) to (\S+) '
                r'failed', re.S),
     'OpenMPI could not open a TCP connection from {0} to {1}'),
    (re.compile(r'mpirun was unable to launch the specified application'
                r'.*?Executable:\s+(\S+)', re.S),
     'mpirun could not launch {0}'),
    (re.compile(r'MPI_ABORT was invoked on rank (\d+) in communicator '
                r'\S+\s+with errorcode (\d+)'),
     'rank {0} called MPI_Abort (error code {1})'),
    # MPICH / Intel MPI hydra
    (re.compile(r'BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES.*?'
                r'RUNNING AT (\S+).*?EXIT CODE:\s+(\d+)', re.S),
     'a rank on {0} ended with exit code {1} (hydra)'),
    (re.compile(r'YOUR APPLICATION TERMINATED WITH THE EXIT STRING: (.+)'),
     'hydra: {0}'),
]


#: OpenMPI's start-up crash under srun's PMIx plugin: srun reports a task
#: dead of a segmentation fault while its peers could not open their TCP
#: connections to it (a fragment reached a rank still in MPI_Init). On the
#: loaded emulated cluster 18 of 100 srun launches of OpenMPI 4.1.4 died
#: so, 0 of 200 started by OpenMPI's own mpirun inside the allocation
#: (docs/reports/emulated-cluster.md)
_SRUN_SEGV = re.compile(r'^srun: error: \S+: tasks? [\d,-]+: Segmentation '
                        r'fault', re.M)
_OMPI_TCP = re.compile(r'Open MPI failed to TCP connect to a peer MPI '
                       r'process')
SRUN_STARTUP_HINT = ("OpenMPI's start-up crash under srun --mpi=pmix; "
                     "if it recurs, the environment extra 'launcher': "
                     "'cg-mpirun' starts the ranks with OpenMPI's mpirun")


def diagnose(stderr: str, limit: int = 3) -> Optional[str]:
    """The causes found in ``stderr``, most specific first, joined by
    '; ' (at most ``limit``), then what avoids a known start-up crash
    (:data:`SRUN_STARTUP_HINT`); None when nothing is recognised."""
    if not stderr:
        return None

    causes = _causes(stderr, limit)
    if causes and _SRUN_SEGV.search(stderr) and _OMPI_TCP.search(stderr):
        return f'{causes} ({SRUN_STARTUP_HINT})'

    return causes


def _causes(stderr, limit):
    """The causes of :data:`_RULES` found in ``stderr``, joined."""
    found: List[str] = []
    groups = set()
    for regex, template, *group in _RULES:
        if group and group[0] in groups:
            continue

        match = regex.search(stderr)
        if match:
            args = [g.strip() for g in match.groups()]
            text = (template(*args) if callable(template)
                    else template.format(*args))
            if text not in found:
                found.append(text)

            groups.update(group)

        if len(found) == limit:
            break

    return '; '.join(found) or None


#: Slurm's line when it ends a job or a step (slurmstepd, in the job's
#: stderr): ``*** JOB 18 ON n1 CANCELLED AT <time> DUE TO TIME LIMIT ***``;
#: without ``DUE TO``: cancelled by scancel or a signal
_ENDED = re.compile(r'\*\*\* (JOB|STEP) (\S+) ON (\S+) CANCELLED AT (\S+)'
                    r'(?: DUE TO ([A-Z ]+?))?(?:,[^*]*)? \*\*\*')
#: the kernel's OOM killer inside the job's cgroup (slurmstepd)
_OOM = re.compile(r'Detected (\d+) oom[-_]kill events? in '
                  r'(StepId=\d+(?:\.\w+)?|step \S+)')


#: how :func:`ended_by_scheduler` ends a cancellation without a reason
NO_REASON = 'by scancel or a signal'


def ended_by_scheduler(stderr: str) -> Optional[str]:
    """Why Slurm ended the job or one of its steps, from its stderr (a
    time limit, a node failure, preemption, scancel or a signal, the
    OOM killer), or None. A job so ended did not finish its work, whatever
    it printed before: a check fails naming this."""
    if not stderr:
        return None

    m = _ENDED.search(stderr)
    if m:
        what, ident, node, _, reason = m.groups()
        why = f'due to {reason.lower()}' if reason else NO_REASON
        return f'Slurm cancelled {what.lower()} {ident} on {node} {why}'

    m = _OOM.search(stderr)
    if m:
        return (f'the OOM killer ended {m.group(1)} process(es) of '
                f'{m.group(2)} (out of memory)')

    return None


_HUNG = re.compile(r'^CG_ERROR kind=hang program=(\S+) rank=(\d+): on '
                   r'(\S*), still running (\d+) s after', re.M)


def hung_ranks(stderr: str) -> Optional[str]:
    """The ranks our harness's watchdog stopped after their last result
    (``CG_ERROR kind=hang``), in one line, or None."""
    found = _HUNG.findall(stderr or '')
    if not found:
        return None

    prog, secs = found[0][0], found[0][3]
    where = ', '.join(f'{rank} on {node or "?"}'
                      for _, rank, node, _ in found[:8])
    more = f' and {len(found) - 8} more' if len(found) > 8 else ''
    return (f'{prog}: {len(found)} rank(s) hung after the last result and '
            f'were stopped after {secs} s (rank {where}{more}); the '
            f'results are complete: the MPI library did not finish')
