"""``clustergate baseline``: healthy runs -> config/references/<system>.yaml.

Prints the spread of every metric and the tolerance it produced, then the
diff against the current file, and writes it (unless ``--dry-run``). The
file is the one each partition reads, as the configuration declares it: a
partition with a ``reference_set`` reads ``<system>.<set>.yaml``, so its
entries go there (runs of partitions that read different files: one file
each); ``--output`` names one file for all.
Re-baselining after an intentional change (new MPI, firmware) is this same
command on runs made after the change (``--since``; their performance
failures against the old reference count with ``--include-perf-failures``).
See docs/guide/references.md.
"""

import os
import sys

import yaml

from clustergate import PROJECT_ROOT
from clustergate.refs import baseline
from clustergate.refs import refcheck
from clustergate.refs import references
from clustergate.refs import refwriter
from clustergate.results import samples
from clustergate.results import times
from clustergate.site import environment as cgenv
from clustergate.site.partition import config_partition_model
from clustergate.commands import sources

EXAMPLES = (
    'clustergate baseline --system emucluster     # the results DB or perflogs/',
    'clustergate baseline --db output/results.db --last 5',
    'clustergate baseline --report run-report.json --dry-run  # show the diff',
    'clustergate baseline --since now-14d --include-perf-failures',
    'clustergate baseline --validate config/references/emucluster.yaml',
    'clustergate baseline --links --db output/results.db   # per node link',
)


def _directions(items):
    out = {}
    for item in items or []:
        metric, sep, d = item.partition('=')
        if not sep or d not in references.DIRECTIONS:
            raise SystemExit(f'clustergate baseline: --direction takes '
                             f'METRIC=lower|higher|both, got {item!r}')
        out[metric] = d

    return out


def _is_link_file(path):
    return os.path.basename(os.path.dirname(os.path.abspath(path))) == \
        'links'


def _validate_links(path):
    from clustergate.links import linkbaselines as linkbaseline
    system = os.path.basename(path)[:-len('.yaml')]
    bl = linkbaseline.load(path, system)
    if bl is None:
        raise references.ReferenceFileError(path, '', 'no such file')
    points = sum(len(v) for p in bl.entries.values() for v in p.values())
    return (f'{path}: ok, link baseline of {points} point(s), '
            f'{bl.provenance["runs"]} runs')


def _validate(paths, out, err):
    """--validate: each reference file loads and names configured
    partitions; 0, 1 once each problem is printed, 2 (bad input, one
    line) when a file is missing."""
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        print(f'clustergate baseline: error: --validate '
              f'{", ".join(missing)}: no such file', file=err)
        return 2

    try:
        systems = refcheck.configured_partitions()
    except Exception as e:      # the configuration names the problem
        print(f'clustergate baseline: error: {e}', file=err)
        return 2

    status = 0
    for path in paths:
        try:
            if _is_link_file(path):
                print(_validate_links(path), file=out)
                continue
            refs = refcheck.validate_file(path, systems)
        except references.ReferenceFileError as e:
            refs, status = e, 1

        if refs is None:
            print(f'error: {path}: no such file', file=err)
            status = 1
        elif isinstance(refs, Exception):
            print(f'error: {refs}', file=err)
        else:
            print(f'{path}: ok, {len(refs)} point(s), '
                  f'{len(references.metric_entries(refs))} metric(s)',
                  file=out)

    return status


# long: the command's steps in order (read, select, compute, render,
# write), each a few lines on top of clustergate.refs.baseline
def run(args, out=sys.stdout, err=sys.stderr):
    if args.validate:
        return _validate(args.validate, out, err)

    chosen_samples, source = sources.read_runs(
        args.db, args.json, args.perflogs, 'baseline', err)
    if chosen_samples is None or sources.narrowed(
            chosen_samples, args.system, args.check, 'baseline', source,
            err) is None:
        return 2

    from clustergate.links import linkbaselines as linkbaseline
    if args.links and args.system and ':' in args.system:
        print(f'clustergate baseline: error: --links --system '
              f'{args.system}: a link baseline is one file a system, give '
              f'--system {args.system.partition(":")[0]}', file=err)
        return 2

    if args.links:
        return linkbaseline.command(
            chosen_samples, source, out, err, system=args.system,
            check=args.check, since=times.since(args.since, 'baseline'),
            last=args.last, min_runs=args.min_runs, output=args.output,
            dry_run=args.dry_run, refs_dir=cgenv.references_dir())

    systems = sorted({s.key.system for s in chosen_samples})
    system = args.system
    if system is None:
        if len(systems) != 1:
            print(f'clustergate baseline: error: the samples are from '
                  f'{len(systems)} systems ({", ".join(systems) or "none"}):'
                  f' choose one with --system', file=err)
            return 2

        system = systems[0]

    # --system SYSTEM:PARTITION: that partition's runs, into its file
    chosen = samples.select(chosen_samples, system=system, check=args.check,
                       since=times.since(args.since, 'baseline'),
                       last=args.last,
                       include_perf_failures=args.include_perf_failures)
    system = system.partition(':')[0]
    # each node link's figures have their own baseline (--links), judged
    # in MADs of that link's noise, not with a file tolerance
    chosen = [s for s in chosen if not linkbaseline.is_link_metric(
        s.key.metric)]
    try:
        base = baseline.make(samples.group(chosen), min_runs=args.min_runs,
                             k=args.mad_k, floor=args.floor,
                             better_factor=args.better_factor,
                             skip_short=args.skip_short,
                             directions=_directions(args.direction))
    except baseline.TooFewRuns as e:
        print(f'clustergate baseline: {e}', file=err)
        return 3

    print(f'baseline of {system}: {len(base.stats)} metric(s) from '
          f'{len(base.runs)} run(s), {times.iso_utc(base.span[0])} .. '
          f'{times.iso_utc(base.span[1])}; tolerance = max('
          f'{args.floor:g}, '
          f'{args.mad_k:g} x 1.4826 x MAD / median)', file=out)
    print(baseline.spread_table(base), file=out)
    for key, n in sorted(base.short.items(), key=lambda kv: kv[0].label()):
        print(f'skipped (only {n} run(s)): {key.label()}', file=out)

    files = _target_files(args.output, system, base, err)
    if files is None:
        return 2

    planned = []
    for path, (ref_set, parts) in sorted(files.items()):
        table = {k: v for k, v in baseline.entries(base).items()
                 if k[1] in parts}
        texts = _file_text(path, system, table,
                           _comment(system, ref_set, base, args),
                           args.replace, err)
        if texts is None:
            return 2
        planned.append((path, parts, ref_set) + texts)

    for path, parts, ref_set, old_text, text in planned:
        _show_diff(path, parts, ref_set, old_text, text, out,
                   named=len(planned) > 1 or ref_set is not None)

    if args.dry_run:
        print('(dry run: nothing written)', file=out)
        return 0

    for path, _, _, _, text in planned:
        refwriter.write(path, text)
        print(f'wrote {path}', file=out)

    return 0


def _configured_system(system, err):
    """The configuration's description of ``system``, or None after a
    one-line error: the configuration is what says which reference file
    each partition reads."""
    try:
        systems = refcheck.configured_systems()
    except Exception as e:      # the configuration names the problem
        print(f'clustergate baseline: error: cannot tell which reference '
              f'file each partition reads, the configuration does not '
              f'load: {e} (or name the file with --output)', file=err)
        return None

    conf = next((s for s in systems if s['name'] == system), None)
    if conf is None:
        print(f'clustergate baseline: error: system {system!r} is not '
              f'configured here (systems: '
              f'{", ".join(s["name"] for s in systems)}): which reference '
              f'file its partitions read is unknown; name the file with '
              f'--output', file=err)
    return conf


def _target_files(output, system, base, err):
    """``{path: (reference set, [partition, ...])}``: where the entries
    of each partition of ``base`` go. ``--output``: all into that file;
    else the file each partition reads, ``<system>.yaml`` or, where it
    declares a ``reference_set``, ``<system>.<set>.yaml`` (one file a
    set). None after a one-line error."""
    parts = sorted({key.partition for key in base.stats})
    if output:
        return {output: (None, parts)}

    conf = _configured_system(system, err)
    if conf is None:
        return None

    declared = {p['name']: p for p in conf['partitions']}
    files = {}
    for name in parts:
        if name not in declared:
            print(f'clustergate baseline: error: system {system!r} has no '
                  f'partition {name!r} (partitions: '
                  f'{", ".join(sorted(declared))}): which reference file '
                  f'it reads is unknown; name the file with --output',
                  file=err)
            return None

        ref_set = config_partition_model(conf, declared[name]).reference_set
        path = references.reference_file(cgenv.references_dir(), system,
                                         ref_set)
        files.setdefault(path, (ref_set, []))[1].append(name)

    return files


def _comment(system, ref_set, base, args):
    """The header of a written file: what it is and how it was learnt."""
    what = f'system {system}' + (
        f', reference set {ref_set} (read by the partitions that declare '
        f'it)' if ref_set else '')
    return [
        f'Performance references of {what} (docs/guide/references.md).',
        f'Written by: clustergate baseline ({len(base.runs)} runs, '
        f'{times.iso_utc(base.span[0])} .. '
        f'{times.iso_utc(base.span[1])},',
        f'  min-runs {args.min_runs}, tolerance max({args.floor:g}, '
        f'{args.mad_k:g} sigma-from-MAD), better side x'
        f'{args.better_factor:g}).',
        'Review the diff before committing; edit by hand where needed.',
    ]


def _file_text(path, system, table, comment, replace, err):
    """``(old text, new text)`` of the reference file ``path`` with the
    entries ``table`` written in; None after a one-line error."""
    try:
        old = references.load(path, system)
    except references.ReferenceFileError as e:
        if not replace:
            print(f'clustergate baseline: error: {e} (fix it, or '
                  f'--replace it)', file=err)
            return None
        old = None

    old_text = refwriter.current_text(path)
    # written into the file as it is (ruamel.yaml round trip): comments
    # and hand edits stay; a broken file replaced (--replace) starts anew
    text = refwriter.update(old_text if old is not None else '', system,
                            table, comment, replace=replace)
    # what we write must load: never leave a broken file behind
    references.parse(yaml.safe_load(text), path, system)
    return old_text, text


def _show_diff(path, parts, ref_set, old_text, text, out, named):
    """The diff of one file; ``named``: first, which partitions it is
    for (a reference set's file, or one of several)."""
    shown = os.path.relpath(path, PROJECT_ROOT) \
        if path.startswith(PROJECT_ROOT) else path
    if named:
        which = f'reference set {ref_set}' if ref_set else 'no reference set'
        print(f'{shown}: partition(s) {", ".join(parts)} ({which})',
              file=out)
    d = baseline.diff(old_text, text, shown)
    print(d if d else f'{shown}: unchanged', file=out)


# long: one line or two per option, in the groups --help shows
def add_parser(subparsers):
    p = sources.add_subcommand(
        subparsers, 'baseline', 'healthy runs -> reference file of a system',
        __doc__, examples=EXAMPLES)
    sources.add_runs(p.add_argument_group(
        'where the runs come from (default: the results database if it '
        'exists, else the perflogs)'))
    sel = p.add_argument_group('which runs')
    sources.add_filters(sel)
    sel.add_argument('--last', type=sources.positive_int, metavar='N',
                     help='only the N most recent runs of each metric')
    sel.add_argument('--include-perf-failures', action='store_true',
                     help='also runs that failed only their performance '
                          'check (re-baselining after an intentional '
                          'change)')
    mth = p.add_argument_group('maths')
    mth.add_argument('--min-runs', type=sources.positive_int, default=3,
                     help='refuse metrics with fewer runs (default: 3)')
    for flag, default, what in (
            ('--mad-k', 3.0, 'tolerance = k x 1.4826 x MAD / median'),
            ('--floor', 0.05, 'smallest relative tolerance'),
            ('--better-factor', 3.0, 'better-side tolerance = this x '
                                     'tolerance; 0: unbounded')):
        mth.add_argument(flag, type=float, default=default,
                         help=what + ' (default: %(default)g)')
    mth.add_argument('--direction', action='append', metavar='METRIC=DIR',
                     help='override the direction of a metric (lower, '
                          'higher, both)')
    mth.add_argument('--skip-short', action='store_true',
                     help='skip metrics with too few runs instead of '
                          'refusing')
    mth.add_argument('--links', action='store_true',
                     help='learn each node link\'s healthy level and '
                          'spread of the link matrix (median, MAD) into '
                          'config/references/links/<system>.yaml '
                          '(docs/reports/link-baselines.md)')
    o = p.add_argument_group('output')
    sources.add_output(o, 'reference file of every partition (default: '
                          'the file each partition reads, config/'
                          'references/<system>.yaml, or <system>.<set>'
                          '.yaml where it declares a reference_set, one '
                          'file a set; the directory: $CG_REFERENCES_DIR)')
    o.add_argument('--replace', action='store_true',
                   help='drop points of the current file that these runs '
                        'do not cover (default: keep them)')
    o.add_argument('--dry-run', action='store_true',
                   help='show spread and diff, write nothing')
    o.add_argument('--validate', nargs='+', metavar='FILE',
                   help='only check reference files and exit')
    p.set_defaults(func=run)
    return p
