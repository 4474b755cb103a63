"""Slurm host list expressions: ``n[1-4,7]``, ``n[01-16]``, ``rack[1-2]-n[1-2]``,
comma-separated lists of them (``n1,m[3-4]``).

:func:`expand` turns an expression into host names (zero padding kept:
``n[08-10]`` is ``n08 n09 n10``), :func:`compress` does the reverse for
messages. Written here; Slurm's own ``scontrol show hostnames`` is not needed.
"""

import re
from typing import Iterable, List


class HostlistError(ValueError):
    """A malformed host list expression."""


def _split_top(expr: str) -> List[str]:
    """Split at commas outside brackets."""
    parts, depth, cur = [], 0, ''
    for ch in expr:
        if ch == '[':
            depth += 1
            if depth > 1:
                raise HostlistError(f'nested brackets in host list {expr!r}')
        elif ch == ']':
            depth -= 1
            if depth < 0:
                raise HostlistError(f'unbalanced "]" in host list {expr!r}')
        if ch == ',' and depth == 0:
            parts.append(cur)
            cur = ''
        else:
            cur += ch

    if depth:
        raise HostlistError(f'unbalanced "[" in host list {expr!r}')

    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def _range(spec: str, expr: str) -> List[str]:
    out = []
    for item in spec.split(','):
        item = item.strip()
        m = re.fullmatch(r'(\d+)(?:-(\d+))?', item)
        if not m:
            raise HostlistError(f'bad range {item!r} in host list {expr!r}')

        lo, hi = m.group(1), m.group(2) or m.group(1)
        if int(hi) < int(lo):
            raise HostlistError(f'descending range {item!r} in host list '
                                f'{expr!r}')

        width = len(lo) if lo.startswith('0') and len(lo) > 1 else 0
        if int(hi) - int(lo) > 1000000:
            raise HostlistError(f'range {item!r} too large in {expr!r}')

        out += [str(i).zfill(width) for i in range(int(lo), int(hi) + 1)]

    return out


def expand(expr: str) -> List[str]:
    """Host names of a host list expression, in order, duplicates kept."""
    hosts = []
    for part in _split_top(expr or ''):
        # a name is a sequence of literal text and [ranges]: cartesian product
        names = ['']
        for literal, spec in re.findall(r'([^\[\]]*)(?:\[([^\]]*)\])?', part):
            names = [n + literal for n in names]
            if spec:
                names = [n + v for n in names for v in _range(spec, expr)]
        hosts += names

    return hosts


def compress(hosts: Iterable[str]) -> str:
    """A short expression of ``hosts`` (``n1,n2,n3,n5`` -> ``n[1-3,5]``):
    names that differ only in a trailing number are grouped, keeping order
    of first appearance of each prefix."""
    groups, order = {}, []
    for h in hosts:
        m = re.fullmatch(r'(.*?)(\d+)', h)
        key = (m.group(1), len(m.group(2)) if m.group(2).startswith('0')
               else 0) if m else (h, None)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(m.group(2) if m else None)

    out = []
    for prefix, width in order:
        nums = groups[(prefix, width)]
        if width is None:
            out.append(prefix)
            continue

        values = sorted(set(int(n) for n in nums))
        if len(values) == 1:
            out.append(prefix + str(values[0]).zfill(width))
            continue

        spans, start, prev = [], values[0], values[0]
        for v in values[1:] + [None]:
            if v is not None and v == prev + 1:
                prev = v
                continue
            a, b = str(start).zfill(width), str(prev).zfill(width)
            spans.append(a if start == prev else f'{a}-{b}')
            if v is not None:
                start = prev = v
        out.append(f'{prefix}[{",".join(spans)}]')

    return ','.join(out)
