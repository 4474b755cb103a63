"""Link shaping with TBF: rates, ``tc`` batch commands, and reading back.

Every link (veth) of the emulated cluster carries a TBF root qdisc on BOTH
ends: the host end limits traffic into the node, the namespace end traffic
out of it. This kernel has no ``netem``, so only the rate can be changed;
delay and loss are refused by the CLI.

Rates follow ``tc``'s units: ``bit``, ``kbit``, ``mbit``, ``gbit``, ``tbit``
are bits per second (powers of 1000), ``bps``, ``kbps``, ``mbps``, ``gbps``
are BYTES per second (as in tc); a bare number is bits per second.
"""

import re

_BIT_UNITS = {'': 1, 'bit': 1, 'kbit': 10**3, 'mbit': 10**6,
              'gbit': 10**9, 'tbit': 10**12}
_BYTE_UNITS = {'bps': 8, 'kbps': 8 * 10**3, 'mbps': 8 * 10**6,
               'gbps': 8 * 10**9, 'tbps': 8 * 10**12}
_RATE_RE = re.compile(r'^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$')

#: TBF queue bound: packets waiting longer than this are dropped
TBF_LATENCY = '20ms'
#: Smallest bucket: a whole GSO packet (64 KiB) must fit
MIN_BURST = 96 * 1024


def parse_rate(text):
    """Bits per second of a tc-style rate (``'250mbit'`` -> 250000000)."""
    m = _RATE_RE.match(str(text).lower())
    if not m:
        raise ValueError(f'cannot parse rate {text!r} '
                         f'(examples: 1gbit, 250mbit, 100kbit)')

    value, unit = float(m.group(1)), m.group(2)
    if unit in _BIT_UNITS:
        bits = value * _BIT_UNITS[unit]
    elif unit in _BYTE_UNITS:
        bits = value * _BYTE_UNITS[unit]
    else:
        raise ValueError(f'unknown rate unit {unit!r} in {text!r} '
                         f'(use bit, kbit, mbit, gbit or bps, kbps, mbps)')

    bits = int(round(bits))
    if bits < 8000:
        raise ValueError(f'rate {text!r} is too small (minimum 8kbit)')

    return bits


def format_rate(bits):
    """Human (and tc) form of a rate in bits/s: ``1gbit``, ``250mbit``."""
    for unit, scale in (('gbit', 10**9), ('mbit', 10**6), ('kbit', 10**3)):
        if bits >= scale and bits % scale == 0:
            return f'{bits // scale}{unit}'

    return f'{bits}bit'


def burst_bytes(bits):
    """TBF bucket size for ``bits``/s: 1 ms worth, at least MIN_BURST."""
    return max(bits // 8 // 1000, MIN_BURST)


def tbf_command(dev, bits):
    """One ``tc -batch`` line that sets TBF at ``bits``/s on ``dev``."""
    return (f'qdisc replace dev {dev} root tbf rate {bits}bit '
            f'burst {burst_bytes(bits)} latency {TBF_LATENCY}')


def host_batch(layout, rates):
    """tc batch for the host ends of all links.

    ``rates`` maps ``(node, fabric)`` to bits/s.
    """
    return [tbf_command(layout.host_veth(n, f), rates[(n, f)])
            for n, f in layout.links()]


def node_batch(node, fabrics, rates):
    """tc batch for the namespace ends of ``node``'s links."""
    return [tbf_command(f, rates[(node, f)]) for f in fabrics]


_TBF_RE = re.compile(r'^qdisc tbf \S+ root\b.*?\brate (\S+)', re.M)


def parse_tc_show(text):
    """Rate in bits/s of the root TBF in ``tc qdisc show dev X`` output, or
    None when the root qdisc is not TBF."""
    m = _TBF_RE.search(text)
    if not m:
        return None

    return parse_rate(m.group(1))


def reject_netem(delay=None, loss=None):
    """Raise ``ValueError`` if delay or loss is asked for: they need the
    ``netem`` qdisc, which this kernel does not have."""
    wanted = [name for name, v in (('--delay', delay), ('--loss', loss)) if v]
    if wanted:
        raise ValueError(
            f'{" and ".join(wanted)}: not supported: delay and loss need the '
            f'netem qdisc, which this kernel lacks (only tbf/htb are available); '
            f'degrade the link rate with --rate instead'
        )
