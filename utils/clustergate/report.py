"""``clustergate report``: PNG figures and one static HTML page from the
perflogs and/or ReFrame's results database.

::

    clustergate report                       # perflogs/ -> report/index.html
    clustergate report --db output/results.db --out /tmp/r --system emucluster

Figures (matplotlib, the ``report`` extra):

* latency and bandwidth vs message size, per check, one line per
  interconnect and scale (log axes);
* the (k ppn)/(1 ppn) ratio of the classic studies: the time with k
  processes per node over the time with one, same nodes and size;
* the link-matrix heat map of the latest matrix per system and fabric
  (``linkmatrix_<fabric>.csv`` in ReFrame's output directory);
* a trend per metric that has a reference, over time, with its band.

The page also lists the latest value of every metric with its status:
within reference, out of reference, or "no reference" (never counted as
checked). See docs/reports.md.
"""

import datetime as dt
import glob
import html
import os
import re
import sys
from typing import Dict, List, Sequence

from clustergate import PROJECT_ROOT
from clustergate import baseline as bl
from clustergate import linkmatrix, references


def _plt():
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    return plt


def _slug(text):
    return re.sub(r'[^A-Za-z0-9_.-]+', '_', text).strip('_')[:120]


def _axes(point):
    return references.parse_axes(point) if point != '*' else {}


# -- data ------------------------------------------------------------------

def load_samples(perflogs=(), db=None, json_reports=()) -> List[bl.Sample]:
    samples = []
    if perflogs:
        samples += bl.read_perflogs(perflogs)

    if db:
        samples += bl.read_results_db(db)

    if json_reports:
        samples += bl.read_json_reports(json_reports)

    return samples


def _by_run_and_key(samples):
    """Latest run's sample per key, and all samples per key (by time)."""
    groups = {}
    for s in samples:
        groups.setdefault(s.key, []).append(s)

    for g in groups.values():
        g.sort(key=lambda s: s.time)

    return groups


def status(s: bl.Sample) -> str:
    """'ok', 'out of reference' or 'no reference' of one sample."""
    if references.status_of(s.ref, s.lower, s.upper) == \
            references.NO_REFERENCE:
        return references.NO_REFERENCE

    lo = s.ref * (1 + s.lower) if s.lower is not None else None
    hi = s.ref * (1 + s.upper) if s.upper is not None else None
    if (lo is not None and s.value < lo) or (hi is not None and s.value > hi):
        return 'out of reference'

    return 'ok'


def band(s: bl.Sample):
    if s.ref in (None, 0):
        return None, None

    lo = s.ref * (1 + s.lower) if s.lower is not None else None
    hi = s.ref * (1 + s.upper) if s.upper is not None else None
    return lo, hi


# -- figures ---------------------------------------------------------------

def _latest_value(ss):
    return ss[-1].value


def size_figures(groups, outdir) -> List[Dict]:
    """Latency and bandwidth vs message size per check (log-log)."""
    plt = _plt()
    series = {}
    for key, ss in groups.items():
        ax = _axes(key.point)
        if 'msg_bytes' not in ax or key.metric not in ('latency',
                                                        'bandwidth'):
            continue

        try:
            size = float(ax['msg_bytes'])
        except ValueError:
            continue

        if size <= 0:
            continue

        label = (f'{ax.get("interconnect", "?")} '
                 f'{ax.get("num_nodes", "?")}n x {ax.get("ppn", "?")}ppn')
        series.setdefault((key.system, key.partition, key.check), {}) \
            .setdefault(key.metric, {}).setdefault(label, []) \
            .append((size, _latest_value(ss)))

    figs = []
    for (system, part, check), metrics in sorted(series.items()):
        names = [m for m in ('latency', 'bandwidth') if m in metrics]
        fig, axs = plt.subplots(1, len(names), figsize=(6 * len(names), 4.2),
                                squeeze=False)
        for ax, metric in zip(axs[0], names):
            for label, pts in sorted(metrics[metric].items()):
                pts.sort()
                ax.plot([p[0] for p in pts], [p[1] for p in pts], 'o-',
                        label=label, markersize=4)

            ax.set_xscale('log')
            ax.set_yscale('log')
            ax.set_xlabel('message size (B)')
            ax.set_ylabel('latency (us)' if metric == 'latency'
                          else 'bandwidth (MB/s)')
            ax.grid(True, which='both', alpha=0.3)
            ax.legend(fontsize=7)
            ax.set_title(f'{check} {metric}', fontsize=10)

        fig.suptitle(f'{system}:{part} {check}: {" and ".join(names)} vs '
                     f'message size (latest run)', fontsize=10)
        fig.tight_layout()
        name = f'size_{_slug(system)}_{_slug(part)}_{_slug(check)}.png'
        fig.savefig(os.path.join(outdir, name), dpi=100)
        plt.close(fig)
        figs.append({'file': name, 'title': f'{check} vs message size '
                                             f'({system}:{part})'})

    return figs


def ppn_ratio_figures(groups, outdir) -> List[Dict]:
    """(k ppn)/(1 ppn) of the latency (time) at equal nodes, interconnect
    and size."""
    plt = _plt()
    values = {}
    for key, ss in groups.items():
        if key.metric != 'latency':
            continue

        ax = _axes(key.point)
        if 'ppn' not in ax:
            continue

        rest = {k: v for k, v in ax.items() if k != 'ppn'}
        values.setdefault((key.system, key.partition, key.check), {})[
            (references.format_axes(rest), int(ax['ppn']))] = \
            _latest_value(ss)

    figs = []
    for (system, part, check), vals in sorted(values.items()):
        lines = {}
        for (rest, k), v in vals.items():
            one = vals.get((rest, 1))
            if k == 1 or not one:
                continue

            r = _axes(rest)
            size = float(r.get('msg_bytes', 0) or 0)
            label = (f'{r.get("interconnect", "?")} '
                     f'{r.get("num_nodes", "?")}n, {k} ppn / 1 ppn')
            lines.setdefault(label, []).append((size, v / one))

        if not lines:
            continue

        fig, ax = plt.subplots(figsize=(6.5, 4.2))
        for label, pts in sorted(lines.items()):
            pts.sort()
            xs = [max(p[0], 1) for p in pts]
            ax.plot(xs, [p[1] for p in pts], 'o-', label=label,
                    markersize=4)

        ax.axhline(1.0, color='grey', lw=0.8)
        ax.set_xscale('log')
        ax.set_xlabel('message size (B)')
        ax.set_ylabel('time ratio (k ppn) / (1 ppn)')
        ax.grid(True, which='both', alpha=0.3)
        ax.legend(fontsize=7)
        ax.set_title(f'{system}:{part} {check}: (k ppn)/(1 ppn)',
                     fontsize=10)
        fig.tight_layout()
        name = f'ppn_{_slug(system)}_{_slug(part)}_{_slug(check)}.png'
        fig.savefig(os.path.join(outdir, name), dpi=100)
        plt.close(fig)
        figs.append({'file': name, 'title': f'{check}: (k ppn)/(1 ppn) '
                                             f'({system}:{part})'})

    return figs


def find_matrices(dirs: Sequence[str]) -> Dict[str, str]:
    """Latest ``linkmatrix_<fabric>.csv`` per system/partition/fabric
    below ReFrame output (or stage) directories."""
    found = {}
    for d in dirs:
        for path in glob.glob(os.path.join(d, '**', 'linkmatrix_*.csv'),
                              recursive=True):
            parts = os.path.normpath(path).split(os.sep)
            fabric = os.path.basename(path)[len('linkmatrix_'):-4]
            # <prefix>/<system>/<partition>/<environ>/<test>/file
            where = '/'.join(parts[-5:-3]) if len(parts) >= 5 else '?'
            label = f'{where} {fabric}'
            if label not in found or \
                    os.path.getmtime(path) > os.path.getmtime(found[label]):
                found[label] = path

    return found


def matrix_figures(dirs, outdir, fraction=linkmatrix.DEFAULT_FRACTION):
    figs = []
    for label, path in sorted(find_matrices(dirs).items()):
        mat = linkmatrix.read_csv(path)
        fabric = label.split()[-1]
        an = linkmatrix.analyse(mat, fraction, fabric)
        when = dt.datetime.fromtimestamp(os.path.getmtime(path))
        name = f'linkmatrix_{_slug(label)}.png'
        linkmatrix.heatmap(mat, os.path.join(outdir, name),
                           f'{label}: link matrix (MB/s), '
                           f'{when:%Y-%m-%d %H:%M}', fraction, an)
        figs.append({'file': name, 'title': f'link matrix {label}',
                     'text': an.summary(), 'bad': not an.healthy})

    return figs


def trend_figures(groups, outdir, max_figures=40) -> List[Dict]:
    """Value over time with the reference band, for metrics that have a
    reference (the link matrix's and any check's in the reference file)."""
    plt = _plt()
    keys = [k for k, ss in groups.items()
            if status(ss[-1]) != references.NO_REFERENCE]
    keys.sort(key=lambda k: k.label())
    figs = []
    for key in keys[:max_figures]:
        ss = groups[key]
        fig, ax = plt.subplots(figsize=(6.5, 3.2))
        times = [dt.datetime.fromtimestamp(s.time) for s in ss]
        vals = [s.value for s in ss]
        ax.plot(times, vals, '-', color='tab:blue', lw=1)
        bad = [status(s) == 'out of reference' for s in ss]
        ax.scatter(times, vals, c=['tab:red' if b else 'tab:blue'
                                   for b in bad], s=18, zorder=3)
        lo, hi = band(ss[-1])
        ref = ss[-1].ref
        ymin = min(vals + [v for v in (lo, ref) if v is not None])
        ymax = max(vals + [v for v in (hi, ref) if v is not None])
        pad = 0.1 * (ymax - ymin or abs(ymax) or 1)
        ax.axhline(ref, color='green', lw=0.8, ls='--', label='reference')
        ax.axhspan(lo if lo is not None else ymin - pad,
                   hi if hi is not None else ymax + pad,
                   color='green', alpha=0.12, label='accepted band')
        ax.set_ylim(ymin - pad, ymax + pad)
        ax.set_ylabel(f'{key.metric} ({ss[-1].unit or ""})')
        ax.set_title(f'{key.check} [{key.point}] {key.metric}',
                     fontsize=8)
        ax.legend(fontsize=7, loc='best')
        ax.grid(True, alpha=0.3)
        fig.autofmt_xdate()
        fig.tight_layout()
        name = f'trend_{_slug(key.system)}_{_slug(key.check)}_' \
               f'{_slug(key.point)}_{_slug(key.metric)}.png'
        fig.savefig(os.path.join(outdir, name), dpi=90)
        plt.close(fig)
        figs.append({'file': name, 'title': key.label(),
                     'bad': status(ss[-1]) == 'out of reference'})

    if len(keys) > max_figures:
        figs.append({'file': None, 'title': f'{len(keys) - max_figures} '
                     f'more trend(s) not drawn (--max-trends)'})

    return figs


# -- page ------------------------------------------------------------------

_CSS = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; font-size: 0.8em; }
td, th { border: 1px solid #ccc; padding: 2px 6px; text-align: left; }
td.num { text-align: right; font-family: monospace; }
.ok { background: #e6f4e6; } .bad { background: #f8d7d7; }
.noref { background: #f3f3f3; color: #666; }
figure { display: inline-block; margin: 0.5em; vertical-align: top; }
figcaption { font-size: 0.8em; max-width: 640px; }
figure.bad figcaption { color: #a00; font-weight: bold; }
img { max-width: 640px; border: 1px solid #ddd; }
"""


def _fig_html(figs):
    out = []
    for f in figs:
        if f.get('file') is None:
            out.append(f'<p>{html.escape(f["title"])}</p>')
            continue

        cls = ' class="bad"' if f.get('bad') else ''
        text = f.get('text', f['title'])
        out.append(f'<figure{cls}><img src="{html.escape(f["file"])}" '
                   f'alt="{html.escape(f["title"])}"><figcaption>'
                   f'{html.escape(text)}</figcaption></figure>')

    return '\n'.join(out) or '<p>(no data)</p>'


def _table_html(groups):
    rows = []
    counts = {'ok': 0, 'out of reference': 0, references.NO_REFERENCE: 0}
    for key in sorted(groups, key=lambda k: k.label()):
        s = groups[key][-1]
        st = status(s)
        counts[st] += 1
        lo, hi = band(s)
        cls = {'ok': 'ok', 'out of reference': 'bad'}.get(st, 'noref')
        fmt = (lambda v: '' if v is None else f'{v:.4g}')
        when = dt.datetime.fromtimestamp(s.time).strftime('%Y-%m-%d %H:%M')
        rows.append(
            f'<tr class="{cls}"><td>{html.escape(key.system)}:'
            f'{html.escape(key.partition)}</td><td>{html.escape(key.check)}'
            f'</td><td>{html.escape(key.point)}</td><td>'
            f'{html.escape(key.metric)}</td><td class="num">{fmt(s.value)}'
            f'</td><td>{html.escape(s.unit or "")}</td><td class="num">'
            f'{fmt(s.ref) if st != references.NO_REFERENCE else ""}</td>'
            f'<td class="num">{fmt(lo)} .. {fmt(hi)}</td><td>{st}</td>'
            f'<td class="num">{len(groups[key])}</td><td>{when}</td></tr>'
        )

    head = ('<tr><th>system</th><th>check</th><th>point</th><th>metric'
            '</th><th>latest</th><th>unit</th><th>reference</th><th>band'
            '</th><th>status</th><th>runs</th><th>time</th></tr>')
    summary = (f'{counts["ok"]} within reference, '
               f'{counts["out of reference"]} out of reference, '
               f'{counts[references.NO_REFERENCE]} with no reference '
               f'(run and logged, not checked)')
    return summary, f'<table>{head}\n' + '\n'.join(rows) + '</table>'


def render(samples, outdir, matrix_dirs=(), max_trends=40,
           title='clustergate report') -> str:
    """Write the figures and ``index.html`` to ``outdir``; return the
    page's path."""
    os.makedirs(outdir, exist_ok=True)
    groups = _by_run_and_key(samples)
    sections = [
        ('Latency and bandwidth vs message size', size_figures(groups,
                                                               outdir)),
        ('(k ppn) / (1 ppn) ratios', ppn_ratio_figures(groups, outdir)),
        ('Link matrices', matrix_figures(matrix_dirs, outdir)),
        ('Trends with reference bands', trend_figures(groups, outdir,
                                                      max_trends)),
    ]
    summary, table = _table_html(groups)
    now = dt.datetime.now().strftime('%Y-%m-%d %H:%M')
    span = ''
    if samples:
        t0 = min(s.time for s in samples)
        t1 = max(s.time for s in samples)
        span = (f'{dt.datetime.fromtimestamp(t0):%Y-%m-%d %H:%M} .. '
                f'{dt.datetime.fromtimestamp(t1):%Y-%m-%d %H:%M}')

    body = [f'<h1>{html.escape(title)}</h1>',
            f'<p>Generated {now} from {len(samples)} measurements '
            f'({span}). {html.escape(summary)}.</p>']
    for name, figs in sections:
        body.append(f'<h2>{html.escape(name)}</h2>')
        body.append(_fig_html(figs))

    body.append('<h2>Latest value of every metric</h2>')
    body.append(table)
    page = ('<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
            f'<title>{html.escape(title)}</title><style>{_CSS}</style>'
            '</head><body>\n' + '\n'.join(body) + '\n</body></html>\n')
    path = os.path.join(outdir, 'index.html')
    with open(path, 'w') as fp:
        fp.write(page)

    return path


# -- command ---------------------------------------------------------------

def run(args):
    perflogs = args.perflogs
    if perflogs is None and not args.db and not args.json:
        perflogs = [os.environ.get('CG_PERFLOG_DIR',
                                   os.path.join(PROJECT_ROOT, 'perflogs'))]

    try:
        samples = load_samples(perflogs or (), args.db, args.json or ())
    except (OSError, ValueError) as err:
        print(f'clustergate report: error: {err}', file=sys.stderr)
        return 2

    if args.system:
        samples = [s for s in samples if s.key.system == args.system]

    if args.since:
        t = dt.datetime.fromisoformat(args.since)
        t = t.astimezone() if t.tzinfo is None else t
        samples = [s for s in samples if s.time >= t.timestamp()]

    dirs = args.matrices if args.matrices is not None else \
        [os.path.join(PROJECT_ROOT, 'output')]
    try:
        _plt()
    except ImportError as err:
        print(f'clustergate report: needs matplotlib (pip install '
              f'clustergate[report]): {err}', file=sys.stderr)
        return 2

    page = render(samples, args.out, dirs, args.max_trends)
    print(f'wrote {page}')
    return 0


def add_parser(subparsers):
    p = subparsers.add_parser(
        'report', help='PNG figures and a static HTML page',
        description=__doc__.split('::')[0].strip()
    )
    p.add_argument('--perflogs', nargs='+', metavar='PATH',
                   help='perflog files or directories (default: '
                        '$CG_PERFLOG_DIR or perflogs/, unless --db/--json)')
    p.add_argument('--db', metavar='FILE',
                   help="ReFrame's SQLite results database")
    p.add_argument('--json', nargs='+', metavar='FILE',
                   help='ReFrame JSON run reports')
    p.add_argument('--matrices', nargs='*', metavar='DIR',
                   help='directories searched for linkmatrix_*.csv '
                        '(default: output/)')
    p.add_argument('--system', help='only this system')
    p.add_argument('--since', metavar='ISO', help='only runs from then on')
    p.add_argument('--max-trends', type=int, default=40,
                   help='at most this many trend figures (default: 40)')
    p.add_argument('-o', '--out', default=os.path.join(PROJECT_ROOT,
                                                       'report'),
                   help='output directory (default: report/)')
    p.set_defaults(func=run)
    return p
