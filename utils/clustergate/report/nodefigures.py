"""Figures of the node tests (clustergate.rfm.families.node) in the report, of the
latest session: what the main job measures on one node.

* memory bandwidth per rank against the stride, with one rank active and
  with every rank of the point active (MemoryStrided ``bw1_s<s>``,
  ``bw_s<s>``; MemoryRandom's ``bw1``, ``bw`` at the right, "random");
* the (all ranks) / (1 rank) ratios of one node: MemoryStrided's
  ``ratio_s<s>`` per kernel against the stride, MemoryRandom's ``ratio``;
* memory latency per cache level with one rank and with every rank
  (MemoryLatency ``lat_<level>``, ``lat_<level>_k``).
"""

import re
from typing import Dict, List

from clustergate.report import plotting, samplestatus

_STRIDE = re.compile(r'^(bw1|bw|ratio)_s(\d+)$')
_LEVEL = re.compile(r'^lat_(\w+?)(_k)?$')
#: levels in the order of the memory hierarchy
_LEVEL_ORDER = ('L1', 'L2', 'L3', 'L4', 'DRAM')


def _latest(groups):
    """{key: latest value} of each check's latest session."""
    by_check = {}
    for key, ss in groups.items():
        by_check.setdefault((key.system, key.partition, key.check),
                            []).extend(ss)
    keep = {id(s) for v in by_check.values()
            for s in samplestatus.latest_session(v)}
    out = {}
    for key, ss in groups.items():
        mine = [s for s in ss if id(s) in keep]
        if mine:
            out[key] = mine[-1].value
    return out


def _label(point, *drop):
    from clustergate.refs import references
    ax = references.parse_axes(point) if point != '*' else {}
    return ' '.join(f'{ax[k]}' if k in ('environ', 'interconnect', 'kernel')
                    else f'{k}={ax[k]}' for k in sorted(ax)
                    if k not in drop and k not in ('scale', 'num_nodes'))


def memory_series(groups):
    """{(system, partition): {'bw': {label: [(x, y)]}, 'ratio': ...,
    'latency': ...}} of the latest session; x is the stride (0: random
    access) or the level's rank in the hierarchy."""
    out = {}
    for key, value in _latest(groups).items():
        where = out.setdefault((key.system, key.partition), {})
        if key.check == 'MemoryStrided':
            m = _STRIDE.match(key.metric)
            if not m:
                continue
            kind, stride = m[1], int(m[2])
        elif key.check == 'MemoryRandom' and key.metric in ('bw', 'bw1',
                                                            'ratio'):
            kind, stride = key.metric, 0
        elif key.check == 'MemoryLatency':
            m = _LEVEL.match(key.metric)
            if not m or m[1] not in _LEVEL_ORDER:
                continue
            label = _label(key.point) + (_ALL if m[2] else _ALONE)
            where.setdefault('latency', {}).setdefault(label, []).append(
                (_LEVEL_ORDER.index(m[1]), value))
            continue
        else:
            continue

        base = _label(key.point)
        if kind == 'ratio':
            where.setdefault('ratio', {}).setdefault(base, []).append(
                (stride, value))
        else:
            label = base + (_ALONE if kind == 'bw1' else _ALL)
            where.setdefault('bw', {}).setdefault(label, []).append(
                (stride, value))

    return {k: v for k, v in out.items() if v}


def _strides_axis(ax, lines):
    strides = sorted({x for pts in lines.values() for x, _ in pts})
    pos = {s: i for i, s in enumerate(strides)}
    ax.set_xticks(range(len(strides)))
    ax.set_xticklabels(['random' if s == 0 else str(s) for s in strides])
    ax.set_xlabel('stride (elements); random: MemoryRandom')
    return pos


_ALONE, _ALL = ' 1 rank', ' all ranks'


def _plot(ax, lines, pos=None):
    """One line per label; a kernel's (or point's) 1-rank and all-ranks
    lines share colour and marker, solid and dashed."""
    bases = sorted({label.replace(_ALONE, '').replace(_ALL, '')
                    for label in lines})
    for label, pts in sorted(lines.items()):
        i = bases.index(label.replace(_ALONE, '').replace(_ALL, ''))
        pts = sorted(pts, key=lambda p: (p[0] != 0, p[0]))
        xs = [pos[x] if pos is not None else x for x, _ in pts]
        ax.plot(xs, [y for _, y in pts], label=label, color=f'C{i % 10}',
                marker=plotting.MARKERS[i % len(plotting.MARKERS)],
                ls='--' if label.endswith(_ALL) else '-', markersize=4)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc='upper left', bbox_to_anchor=(1.01, 1.0),
              borderaxespad=0)


def _stride_figure(plt, lines):
    """A figure of ``lines`` over the strides they were measured at."""
    fig, ax = plt.subplots(figsize=(9.5, 4.2))
    _plot(ax, lines, _strides_axis(ax, lines))
    return fig, ax


def _memory_saved(plt, fig, ax, outdir, name, title, alt):
    """The memory figure titled ``title``, saved as ``memory`` and
    ``name`` (system, partition, kind), for the report."""
    ax.set_title(title, fontsize=10)
    return dict(plotting.saved(plt, fig, outdir, ('memory',) + name, alt),
                wide=True)


#: the memory figures over the strides: (series, file name, y label,
#: title after the partition, alt text before it)
_STRIDE_FIGURES = (
    ('bw', 'bandwidth', 'bandwidth per rank (MB/s)',
     'memory bandwidth per rank: 1 rank active and all ranks active',
     'memory bandwidth per rank vs stride'),
    ('ratio', 'ratio', 'time ratio (all ranks) / (1 rank)',
     'memory: all ranks of the point active over one rank alone',
     'memory (all ranks)/(1 rank) ratio vs stride'),
)


def memory_figures(groups, outdir) -> List[Dict]:
    """The memory figures of each system and partition (latest
    session)."""
    plt = plotting.pyplot()
    figs = []
    for (system, part), kinds in sorted(memory_series(groups).items()):
        where = f'{system}:{part}'
        for kind, name, ylabel, title, alt in _STRIDE_FIGURES:
            if kind not in kinds:
                continue
            fig, ax = _stride_figure(plt, kinds[kind])
            if kind == 'ratio':
                ax.axhline(1.0, color='grey', lw=0.8)
            else:
                ax.set_yscale('log')
            ax.set_ylabel(ylabel)
            figs.append(_memory_saved(
                plt, fig, ax, outdir, (system, part, name),
                f'{where} {title}', f'{alt} ({where})'))
        if 'latency' in kinds:
            fig, ax = plt.subplots(figsize=(9.5, 4.2))
            _plot(ax, kinds['latency'])
            levels = sorted({x for pts in kinds['latency'].values()
                             for x, _ in pts})
            ax.set_xticks(levels)
            ax.set_xticklabels([_LEVEL_ORDER[x] for x in levels])
            ax.set_yscale('log')
            ax.set_xlabel('level of the memory hierarchy')
            ax.set_ylabel('latency per access (ns)')
            figs.append(_memory_saved(
                plt, fig, ax, outdir, (system, part, 'latency'),
                f'{where} memory latency: 1 rank and all ranks at once',
                f'memory latency per level ({where})'))

    return figs
