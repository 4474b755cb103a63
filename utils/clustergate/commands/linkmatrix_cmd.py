"""clustergate linkmatrix: the verdicts of a saved link matrix (CSV of the
LinkMatrix check) and, given a PNG path, its heat map.

Run by the check (``python -m clustergate.cli linkmatrix``), which draws
the heat map in a separate process, away from ReFrame's import state.
Exit status 1 when a link is slow.
"""

import sys

from clustergate.commands import sources
from clustergate.links import matrix as linkmatrix

HELP = 'verdicts and heat map of a saved link matrix (CSV)'
EXAMPLES = (
    'clustergate linkmatrix output/linkmatrix_fab0.csv',
    'clustergate linkmatrix linkmatrix_fab0.csv heat.png --fabric fab0',
)


def add_parser(subparsers):
    p = sources.add_subcommand(subparsers, 'linkmatrix', HELP, __doc__,
                               examples=EXAMPLES)
    p.add_argument('csv', help='matrix saved by the LinkMatrix check '
                               '(rows: source, columns: destination, MB/s)')
    p.add_argument('png', nargs='?', help='draw the heat map here')
    p.add_argument('--fraction', type=float,
                   default=linkmatrix.DEFAULT_FRACTION,
                   help='a pair is slow below this fraction of the median '
                        '(default %(default)s)')
    p.add_argument('--fabric', default='?', help='fabric named in verdicts')
    p.add_argument('--title', default='', help='title of the heat map')
    p.set_defaults(func=run)
    return p


def run(args, out=None, err=None):
    """Prints the summary; exit status 0 when the matrix is healthy."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        matrix = linkmatrix.read_csv(args.csv)
    except OSError as e:
        print(f'clustergate linkmatrix: error: {args.csv}: {e.strerror}',
              file=err)
        return 2
    except (ValueError, IndexError) as e:
        print(f'clustergate linkmatrix: error: {args.csv}: not a link '
              f'matrix CSV ({e})', file=err)
        return 2

    analysis = linkmatrix.analyse(matrix, args.fraction, args.fabric)
    print(analysis.summary(), file=out)
    if args.png:
        linkmatrix.heatmap(matrix, args.png, args.title, args.fraction,
                           analysis)

    return 0 if analysis.healthy else 1
