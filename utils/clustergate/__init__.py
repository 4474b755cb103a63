"""clustergate: ReFrame regression tests for HPC cluster performance.

The importable helper package of the project: sweep axes, ReFrame base
classes, benchmark output parsers and the command line tools.
"""

import os

__version__ = '0.1.0'

#: Root of the source tree (checks/, config/, ...), for an editable install.
PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
