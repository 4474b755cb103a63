"""What the report's figures share: matplotlib on the Agg backend, the
markers and line styles cycled with the colours, and the file each figure
is saved as."""

import os
import re
from typing import Dict


def pyplot():
    """matplotlib.pyplot on the Agg backend (no display); imported on
    first use: the report extra is optional."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    return plt


def slug(text):
    """``text`` as a file name part."""
    return re.sub(r'[^A-Za-z0-9_.-]+', '_', text).strip('_')[:120]


#: line styles cycled with the colours: with many lines (MPI x fabric x
#: scale) colours repeat and some cannot be told apart without colour vision
MARKERS = 'os^vD<>px*'
DASHES = ('-', '--', ':', '-.')


def saved(plt, fig, outdir, name_parts, title) -> Dict:
    """Writes ``fig`` as ``<kind>_<system>_<partition>_<check>.png``
    (``name_parts``) in ``outdir``: its entry in the page."""
    fig.tight_layout()
    name = '_'.join([name_parts[0]] + [slug(p) for p in name_parts[1:]])
    name += '.png'
    fig.savefig(os.path.join(outdir, name), dpi=100)
    plt.close(fig)
    return {'file': name, 'title': title}
