"""``clustergate sweep``: which points of the sweep each partition of a
system runs, and why the others are skipped, straight from the config."""

import os
import runpy
import sys

from clustergate import PROJECT_ROOT
from clustergate.siteinit import mpiprobe
from clustergate.site import sweep
from clustergate.site import environment as cgenv
from clustergate.site.partition import config_partition_model


EXAMPLES = (
    'clustergate sweep',
    'clustergate sweep -C config/settings.py --system emucluster',
)


def add_parser(subparsers):
    from clustergate.commands import sources

    p = sources.add_subcommand(
        subparsers, 'sweep', 'show the sweep points of each partition',
        __doc__, examples=EXAMPLES)
    p.add_argument('-C', '--config', default=os.path.join(
        PROJECT_ROOT, 'config', 'settings.py'), help='ReFrame settings file')
    p.add_argument('--system', help='system name (default: every system)')
    p.add_argument('--min-ranks', type=sources.positive_int, default=2,
                   help='requirement of the check (default 2, as the '
                        'point-to-point patterns)')
    p.set_defaults(func=run)


def _load(path):
    """The site configuration of ``path``; SystemExit (status 1) with one
    line naming the cause when the configuration refuses to load."""
    # the probe's reasons are printed here, on stdout, with the sweep
    conf, why = None, None
    try:
        with cgenv.overridden(cgenv.MPI_PROBE_QUIET, '1'):
            conf = runpy.run_path(path)['site_configuration']
    except KeyError:
        why = f'{path}: defines no site_configuration'
    except Exception as err:    # any error of the site's Python file
        why = _why(path, err)

    if why:
        raise SystemExit(f'clustergate sweep: failed to load configuration: '
                         f'{why}')
    return conf


def _why(path, err):
    """One line on what ``err``, raised loading ``path``, says."""
    from reframe.core.exceptions import ConfigError

    # ReFrame's ConfigError names the file already (config/settings.py)
    text = str(err).strip() if isinstance(err, ConfigError) else \
        f'{path}: {type(err).__name__}: {err}'
    return ' '.join(text.splitlines()[:1]) or f'{path}: {type(err).__name__}'


def mpi_families(system, part, environments):
    """The MPI families the checks can use on ``part`` (of ``system``):
    those of its environments with the ``mpi`` feature and an
    ``mpi_family``, as ReFrame selects them (``+mpi``); empty when the
    partition itself lacks the ``mpi`` feature."""
    from clustergate.site import extras as keys

    if keys.MPI_FEATURE not in part.get('features', []):
        return []

    fams = []
    for ename in part.get('environs', []):
        env = keys.environment_of(ename, system['name'], environments) or {}
        fam = env.get('extras', {}).get(keys.MPI_FAMILY)
        if keys.MPI_FEATURE in env.get('features', []) and fam and \
                fam not in fams:
            fams.append(fam)

    return fams


def verdicts(model, req, fams, has_mpi=True):
    """Each point of the partition with None (runs with at least one of
    ``fams``) or the reason, as ``reframe -l`` decides it: a point runs
    when some MPI environment of the partition can run it."""
    from clustergate.site import extras as keys

    if not has_mpi or not fams:
        why = (f"partition has no '{keys.MPI_FEATURE}' feature: no check "
               f"runs here" if not has_mpi else
               f"no environment with the '{keys.MPI_FEATURE}' feature and "
               f"an {keys.MPI_FAMILY}: no check runs here")
        return [(pt, why) for pt, _ in sweep.points(model, req)]

    per_fam = [sweep.points(model, req, fam) for fam in fams]
    return [(rows[0][0], None if any(r is None for _, r in rows)
             else rows[0][1]) for rows in zip(*per_fam)]


def run(args):
    from clustergate.site import extras as keys

    if not os.path.isfile(args.config):
        print(f'clustergate sweep: error: {args.config}: no such '
              f'configuration file', file=sys.stderr)
        return 2

    conf = _load(args.config)

    for name, reason in sorted(mpiprobe.left_out().items()):
        print(f'{name} left out: {reason}')

    if mpiprobe.left_out():
        print()

    names = [s['name'] for s in conf['systems']]
    if args.system and args.system not in names:
        print(f'clustergate sweep: error: --system {args.system}: no such '
              f'system in {args.config} (systems: {", ".join(names)})',
              file=sys.stderr)
        return 2

    req = sweep.Requirements(min_ranks=args.min_ranks)
    found = False
    for system in conf['systems']:
        if args.system and system['name'] != args.system:
            continue

        for part in system['partitions']:
            model = config_partition_model(system, part)
            name = model.name
            if not model.declares_sweep:
                print(f'{name}: no sweep declared\n')
                continue

            found = True
            fams = mpi_families(system, part, conf.get('environments', []))
            print(f'{name}')
            print(f'environments: {", ".join(part["environs"]) or "none"}')
            print(sweep.format_points(verdicts(
                model, req, fams,
                keys.MPI_FEATURE in part.get('features', []))))
            print()

    if args.system and not found:
        print(f'clustergate sweep: no system {args.system!r} with a sweep '
              f'in {args.config}')
        return 1

    return 0
