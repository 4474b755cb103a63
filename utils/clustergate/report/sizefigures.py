"""The message-size figures of the report: latency and bandwidth against
the message size of each check's latest session, and the (k ppn)/(1 ppn)
ratios of the latency at equal nodes, interconnect and size (the size
where clustergate.report.sizes finds it)."""

from typing import Dict, List

from clustergate.refs import references
from clustergate.report import plotting, samplestatus, sizes


def _axes(point):
    return references.parse_axes(point) if point != '*' else {}


def _latest_value(ss):
    return ss[-1].value


def _size_series(groups):
    """{(system, partition, series): {metric: {label: [(size, value)]}}}
    of the latency and bandwidth of the latest session, one label per MPI,
    interconnect and scale; the size is the point's ``msg_bytes`` or, in a
    suite, in the metric's name (clustergate.report.sizes)."""
    series = {}
    by_check = {}
    for key, ss in groups.items():
        by_check.setdefault((key.system, key.partition, key.check),
                            []).extend(ss)
    latest = {k: {id(s) for s in samplestatus.latest_session(v)}
              for k, v in by_check.items()}
    for key, all_ss in groups.items():
        found = sizes.sized(key.check, key.point, key.metric)
        if found is None or found[1] <= 0:
            continue

        ss = [s for s in all_ss if id(s) in
              latest[(key.system, key.partition, key.check)]]
        if not ss:
            continue

        name, size, metric = found
        ax = _axes(key.point)
        label = (f'{ax.get("environ", "?")} {ax.get("interconnect", "?")} '
                 f'{ax.get("num_nodes", "?")}n x {ax.get("ppn", "?")}ppn')
        series.setdefault((key.system, key.partition, name), {}) \
            .setdefault(metric, {}).setdefault(label, []) \
            .append((size, _latest_value(ss)))

    return series


def _size_lines(ax, lines, ylabel, title):
    """One line per label of ``lines`` (label -> [(size, value)]) against
    the message size on a log axis; the legend outside the axes (a dozen
    labels inside hid the data)."""
    for i, (label, pts) in enumerate(sorted(lines.items())):
        pts = sorted(pts)
        ax.plot([p[0] for p in pts], [p[1] for p in pts],
                marker=plotting.MARKERS[i % len(plotting.MARKERS)],
                ls=plotting.DASHES[(i // 10) % len(plotting.DASHES)],
                label=label,
                markersize=4)

    ax.set_xscale('log')
    ax.set_xlabel('message size (B)')
    ax.set_ylabel(ylabel)
    ax.grid(True, which='both', alpha=0.3)
    ax.legend(fontsize=7, loc='upper left', bbox_to_anchor=(1.01, 1.0),
              borderaxespad=0)
    ax.set_title(title, fontsize=10)


def size_figures(groups, outdir) -> List[Dict]:
    """Latency and bandwidth vs message size per check (log-log), of one
    session: a line joins the points of one MPI, interconnect and scale."""
    plt = plotting.pyplot()
    series = _size_series(groups)
    figs = []
    for (system, part, check), metrics in sorted(series.items()):
        names = [m for m in ('latency', 'bandwidth') if m in metrics]
        # one above the other, legends on the right: side by side, two
        # 6-inch panels were shrunk to half their size on the page
        fig, axs = plt.subplots(len(names), 1,
                                figsize=(9.5, 3.8 * len(names)),
                                squeeze=False)
        for ax, metric in zip(axs[:, 0], names):
            _size_lines(ax, metrics[metric],
                        'latency (us)' if metric == 'latency'
                        else 'bandwidth (MB/s)', f'{check} {metric}')
            ax.set_yscale('log')

        fig.suptitle(f'{system}:{part} {check}: {" and ".join(names)} vs '
                     f'message size (latest session)', fontsize=10)
        figs.append(dict(plotting.saved(plt, fig, outdir,
                                ('size', system, part, check),
                                f'{check} vs message size ({system}:'
                                f'{part})'), wide=True))

    return figs


def ppn_ratio_figures(groups, outdir) -> List[Dict]:
    """(k ppn)/(1 ppn) of the latency (time) at equal nodes, interconnect
    and size; where a point has no 1 ppn (one node: a pattern needs 2
    ranks), against its fewest ppn."""
    plt = plotting.pyplot()
    values = {}
    for key, ss in groups.items():
        found = sizes.sized(key.check, key.point, key.metric)
        if found is None or found[2] != 'latency':
            continue

        ax = _axes(key.point)
        if 'ppn' not in ax:
            continue

        rest = {k: v for k, v in ax.items() if k != 'ppn'}
        rest['msg_bytes'] = f'{found[1]:g}'
        values.setdefault((key.system, key.partition, found[0]), {})[
            (references.format_axes(rest), int(ax['ppn']))] = \
            _latest_value(ss)

    figs = []
    for (system, part, check), vals in sorted(values.items()):
        lines = {}
        # against 1 ppn, or the fewest ranks per node the point has: on
        # one node the suite's smallest point is 2 ppn (2 ranks)
        low = {}
        for (rest, k) in vals:
            low[rest] = min(k, low.get(rest, k))
        for (rest, k), v in vals.items():
            base = vals.get((rest, low[rest]))
            if k == low[rest] or not base:
                continue

            r = _axes(rest)
            size = float(r.get('msg_bytes', 0) or 0)
            label = (f'{r.get("environ", "?")} {r.get("interconnect", "?")} '
                     f'{r.get("num_nodes", "?")}n, {k} ppn / {low[rest]} '
                     f'ppn')
            lines.setdefault(label, []).append((size, v / base))

        if not lines:
            continue

        fig, ax = plt.subplots(figsize=(6.5, 4.2))
        # 0 B on a log axis: drawn at 1 B
        _size_lines(ax, {label: [(max(x, 1), y) for x, y in pts]
                         for label, pts in lines.items()},
                    'time ratio (k ppn) / (fewest ppn)',
                    f'{system}:{part} {check}: (k ppn)/(1 ppn, or the '
                    f'fewest)')
        ax.axhline(1.0, color='grey', lw=0.8)
        figs.append(plotting.saved(plt, fig, outdir,
                                   ('ppn', system, part, check),
                                   f'{check}: (k ppn)/(1 ppn) '
                                   f'({system}:{part})'))

    return figs
