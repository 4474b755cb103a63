"""Why did a job die before its program reported anything?

Reads a job's stderr (Slurm's srun/slurmstepd, OpenMPI, MPICH's hydra) and
names the cause in one line: the node that failed, the rank that crashed
and where, the connection that could not be made, the limit that was hit.
Used by the sanity checks when a program's output is missing or cut short,
so that a failed nightly run says "a rank on n3 died of Segmentation fault"
rather than only "the program did not finish".
"""

import re
from typing import List, Optional

#: (regex, message template); the first match of each rule is reported, in
#: this order (most specific cause first)
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
    # OpenMPI's own crash report: [host:pid] Signal: Segmentation fault (11)
    (re.compile(r'^\[([^:\]\s]+):\d+\] Signal: ([^(\n]+?) \((\d+)\)', re.M),
     'a rank on {0} died of {1} (signal {2})'),
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
    # MPICH / Intel MPI hydra
    (re.compile(r'BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES.*?'
                r'RUNNING AT (\S+).*?EXIT CODE:\s+(\d+)', re.S),
     'a rank on {0} ended with exit code {1} (hydra)'),
    (re.compile(r'YOUR APPLICATION TERMINATED WITH THE EXIT STRING: (.+)'),
     'hydra: {0}'),
]


def diagnose(stderr: str, limit: int = 3) -> Optional[str]:
    """The causes found in ``stderr``, most specific first, joined by
    '; ' (at most ``limit``); None when nothing is recognised."""
    if not stderr:
        return None

    found: List[str] = []
    for regex, template in _RULES:
        match = regex.search(stderr)
        if match:
            text = template.format(*(g.strip() for g in match.groups()))
            if text not in found:
                found.append(text)

        if len(found) == limit:
            break

    return '; '.join(found) or None
