"""The trend figures of the report: each metric that has a reference or a
change point, its value over time with today's reference band, each
point as it was judged when it ran (within, out of, or no reference
then), and the change points (clustergate.results.history)."""

import datetime as dt
import os
from typing import Dict, List, Sequence

from clustergate.refs import references
from clustergate.report import plotting
from clustergate.report.samplestatus import band, status
from clustergate.results import history


def trend_figures(groups, outdir, max_figures=40,
                  changes: Sequence[history.Finding] = ()) -> List[Dict]:
    """Value over time with the reference band and the change points, for
    metrics that have a reference or a change point."""
    plt = plotting.pyplot()
    found = history.by_key(changes)
    keys = [k for k, ss in groups.items()
            if (status(ss[-1]) != references.NO_REFERENCE or k in found)
            and len(ss) > 1]
    single = sum(1 for k, ss in groups.items() if len(ss) == 1 and
                 status(ss[-1]) != references.NO_REFERENCE)
    # changed metrics first: they are what the reader came for
    keys.sort(key=lambda k: (k not in found, k.label()))
    figs = []
    for key in keys[:max_figures]:
        figs.append(_trend_figure(plt, key, groups[key], found.get(key, []),
                                  outdir))

    if len(keys) > max_figures:
        figs.append({'file': None, 'title': f'{len(keys) - max_figures} '
                     f'more trend(s) not drawn (--max-trends)'})
    if single:
        figs.append({'file': None, 'title': f'{single} metric(s) with a '
                     f'reference have a single run: no trend to draw (their '
                     f'value is in the table below)'})

    return figs


def judged_points(ss) -> List[str]:
    """How each point of a trend was judged when it ran (status()): 'ok',
    'out of reference', or 'no reference' for a point measured before its
    metric had a reference (the band drawn is today's)."""
    return [status(s) for s in ss]


def _trend_text(key, ss, changes) -> str:
    text = '; '.join(c.message() for c in changes) or key.label()
    unjudged = judged_points(ss).count(references.NO_REFERENCE)
    if unjudged:
        text += (f' ({unjudged} of {len(ss)} point(s) measured with no '
                 f'reference: not judged, drawn hollow)')
    return text


def _trend_figure(plt, key, ss, changes, outdir) -> Dict:
    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    times = [dt.datetime.fromtimestamp(s.time, dt.timezone.utc) for s in ss]
    vals = [s.value for s in ss]
    ax.plot(times, vals, '-', color='#0072B2', lw=1)
    # each point as it was judged when it ran: a point measured before
    # its metric had a reference was not judged, whatever band is drawn
    # now (Okabe-Ito blue / vermillion, squares for out of reference,
    # hollow for no reference: readable without colour)
    judged = judged_points(ss)
    for word, style in (
            ('ok', dict(color='#0072B2', s=18, label='within reference')),
            ('out of reference', dict(color='#D55E00', marker='s', s=24,
                                      label='out of reference')),
            (references.NO_REFERENCE, dict(
                facecolors='none', edgecolors='#555555', s=22,
                label='no reference then (not judged)'))):
        pts = [(t, v) for t, v, j in zip(times, vals, judged) if j == word]
        if pts:
            ax.scatter([t for t, _ in pts], [v for _, v in pts], zorder=3,
                       **style)
    lo, hi = band(ss[-1])
    ref = ss[-1].ref
    ymin = min(vals + [v for v in (lo, ref) if v])
    ymax = max(vals + [v for v in (hi, ref) if v])
    pad = 0.1 * (ymax - ymin or abs(ymax) or 1)
    if ref:
        ax.axhline(ref, color='#009E73', lw=0.8, ls='--', label='reference')
        ax.axhspan(lo if lo is not None else ymin - pad,
                   hi if hi is not None else ymax + pad,
                   color='#009E73', alpha=0.12, label='accepted band')
    for i, c in enumerate(changes):
        ax.axvline(dt.datetime.fromtimestamp(c.time, dt.timezone.utc),
                   color='#CC79A7', lw=1.5, ls=':',
                   label='change point' if i == 0 else None)
    ax.set_ylim(ymin - pad, ymax + pad)
    ax.set_ylabel(f'{key.metric} ({ss[-1].unit or ""})')
    ax.set_xlabel('job completion (UTC)')
    ax.set_title(f'{key.check} [{key.point}] {key.metric}', fontsize=8)
    ax.legend(fontsize=7, loc='best')
    ax.grid(True, alpha=0.3)
    fig.autofmt_xdate()
    fig.tight_layout()
    name = 'trend_' + '_'.join(plotting.slug(part) for part in (
        key.system, key.check, key.point, key.metric)) + '.png'
    fig.savefig(os.path.join(outdir, name), dpi=90)
    plt.close(fig)
    return {'file': name, 'title': key.label(),
            # the findings name the metric already: its label once
            'text': _trend_text(key, ss, changes),
            'bad': status(ss[-1]) == 'out of reference' or bool(changes)}
