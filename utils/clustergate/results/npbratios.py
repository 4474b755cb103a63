"""The (k ppn)/(1 ppn) ratios of the NAS Parallel Benchmarks in one run's
ReFrame JSON report: a report step over one session's results
(``clustergate npb``, docs/guide/benchmarks.md), with no ReFrame import.
"""


def ppn_ratios(cases):
    """Ratios of NPB results at the same kernel, class, process count,
    interconnect, partition and environment: the run with k ranks per
    node against the run with 1 rank per node (k nodes' worth more
    spread). Below 1 for ``mops_total``: packing ranks costs that much.

    ``cases`` are dicts with keys ``kernel``, ``npb_class``, ``num_nodes``,
    ``ppn``, ``interconnect``, ``system``, ``environ`` and ``mops_total``.
    Returns dicts with the key fields, ``ranks``, ``ppn`` (the k),
    ``mops_k``, ``mops_1`` and ``ratio``, sorted.
    """
    one, many = {}, []
    for c in cases:
        ranks = c['num_nodes'] * c['ppn']
        key = (c['system'], c['environ'], c['kernel'], c['npb_class'],
               c['interconnect'], ranks)
        if c['ppn'] == 1:
            one[key] = c
        else:
            many.append((key, c))

    out = []
    for key, c in many:
        base = one.get(key)
        if base is None or not base['mops_total']:
            continue

        out.append({
            'system': key[0], 'environ': key[1], 'kernel': key[2],
            'npb_class': key[3], 'interconnect': key[4], 'ranks': key[5],
            'ppn': c['ppn'], 'mops_k': c['mops_total'],
            'mops_1': base['mops_total'],
            'ratio': c['mops_total'] / base['mops_total'],
        })

    return sorted(out, key=lambda r: (r['system'], r['kernel'],
                                      r['npb_class'], r['interconnect'],
                                      r['ranks'], r['ppn']))


def cases_from_report(report):
    """NPB results of a ReFrame JSON run report (``--report-file``), as
    :func:`ppn_ratios` wants them. Only passed tests count."""
    out = []
    for run in report.get('runs', []):
        for tc in run.get('testcases', []):
            if tc.get('result') != 'pass':
                continue

            # loggable parameters and variables are top-level keys
            params = tc
            if 'kernel' not in params or 'npb_class' not in params:
                continue

            perf = {name: value for name, value, *_ in
                    _perfvalues(tc.get('perfvalues', {}))}
            if 'mops_total' not in perf:
                continue

            out.append({
                'kernel': params['kernel'],
                'npb_class': params['npb_class'],
                'num_nodes': int(params['num_nodes']),
                'ppn': int(params['ppn']),
                'interconnect': params['interconnect'],
                'system': f'{tc.get("system")}:{tc.get("partition")}',
                'environ': tc.get('environ'),
                'mops_total': float(perf['mops_total']),
            })

    return out


def _perfvalues(perfvalues):
    # ReFrame: {'<system>:<partition>:<var>': [value, ref, lower, upper,
    # unit, result]}
    for key, val in perfvalues.items():
        yield (key.rsplit(':', 1)[-1], val[0])

