"""``clustergate sweep``: which points of the sweep each partition of a
system runs, and why the others are skipped, straight from the config."""

import os
import runpy

from clustergate import PROJECT_ROOT, mpiprobe, sweep


def add_parser(subparsers):
    p = subparsers.add_parser(
        'sweep', help='show the sweep points of each partition',
        description='Prints nodes x ppn x interconnect per partition with '
                    'the verdict (run, or skip with the reason).'
    )
    p.add_argument('-C', '--config', default=os.path.join(
        PROJECT_ROOT, 'config', 'settings.py'), help='ReFrame settings file')
    p.add_argument('--system', help='system name (default: every system)')
    p.add_argument('--min-ranks', type=int, default=2,
                   help='requirement of the check (default 2, as the '
                        'point-to-point patterns)')
    p.set_defaults(func=run)


def run(args):
    # the probe's reasons are printed here, on stdout, with the sweep
    quiet = os.environ.get('CG_MPI_PROBE_QUIET')
    os.environ['CG_MPI_PROBE_QUIET'] = '1'
    try:
        conf = runpy.run_path(args.config)['site_configuration']
    finally:
        if quiet is None:
            del os.environ['CG_MPI_PROBE_QUIET']
        else:
            os.environ['CG_MPI_PROBE_QUIET'] = quiet

    for name, reason in sorted(mpiprobe.left_out().items()):
        print(f'{name} left out: {reason}')

    if mpiprobe.left_out():
        print()

    req = sweep.Requirements(min_ranks=args.min_ranks)
    found = False
    for system in conf['systems']:
        if args.system and system['name'] != args.system:
            continue

        for part in system['partitions']:
            name = f'{system["name"]}:{part["name"]}'
            extras = part.get('extras', {})
            if 'sweep' not in extras:
                print(f'{name}: no sweep declared\n')
                continue

            found = True
            print(f'{name}')
            print(f'environments: {", ".join(part["environs"]) or "none"}')
            print(sweep.format_points(sweep.points(extras, name, req)))
            print()

    if args.system and not found:
        print(f'clustergate sweep: no system {args.system!r} with a sweep '
              f'in {args.config}')
        return 1

    return 0
