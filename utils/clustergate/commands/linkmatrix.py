"""clustergate linkmatrix: the verdicts of a saved link matrix (CSV of the
LinkMatrix check) and, given a PNG path, its heat map.

Run by the check (``python -m clustergate.cli linkmatrix``), which draws
the heat map in a separate process, away from ReFrame's import state.
"""

from clustergate.links import matrix as linkmatrix

HELP = 'verdicts and heat map of a saved link matrix (CSV)'


def configure(p):
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


def add_parser(subparsers):
    configure(subparsers.add_parser('linkmatrix', help=HELP,
                                    description=HELP))


def run(args):
    """Prints the summary; exit status 0 when the matrix is healthy."""
    matrix = linkmatrix.read_csv(args.csv)
    analysis = linkmatrix.analyse(matrix, args.fraction, args.fabric)
    print(analysis.summary())
    if args.png:
        linkmatrix.heatmap(matrix, args.png, args.title, args.fraction,
                           analysis)

    return 0 if analysis.healthy else 1
