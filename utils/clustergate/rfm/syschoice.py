"""Which system a ``reframe`` session runs on, and why, said in one line.

ReFrame takes the first system whose ``hostnames`` pattern matches the
host. ``localhost`` (this machine as a one-node cluster, pattern ``.*``)
matches every host: if it stayed last in line behind a site's systems, a
login node whose name a site pattern missed would run the site's nightly
on itself, with no references, and go green. So:

- A system is chosen explicitly (``--system NAME`` or ``RFM_SYSTEM``) or
  by its own hostname pattern.
- ``localhost`` matches every host only when *no site system is
  configured*: every system of ``config/systems/`` is one that ships with
  clustergate (:data:`EMBEDDED`: ``localhost`` and the emulated cluster,
  which matches only while ``SLURM_CONF`` points at it). As soon as a
  site adds its own system file, ``localhost`` runs only when asked for
  (``--system localhost``).
- With a site system configured, a host that none of the patterns
  matches stops the session at configuration load with one line naming
  the host and the patterns (:func:`choose`).

``config/assemble.py`` (loaded by ``config/settings.py``) calls
:func:`apply` once the systems are loaded; in a ``reframe`` session
that runs or lists checks the choice is printed before ReFrame's header,
e.g.
``clustergate: system localhost: no site system is configured (only
localhost, emucluster), hostname 'vm'``.
"""

import os
import re
import socket
import sys
from typing import List, Mapping, Optional, Tuple

#: the systems that ship with clustergate; any other is a site's
EMBEDDED = ('localhost', 'emucluster')

#: the catch-all system
LOCALHOST = 'localhost'

#: a pattern that matches no host name
NEVER = r'(?!)'

_printed = []


class NoSystem(Exception):
    """No system was chosen and no site pattern matches this host; the
    message is one line."""


def site_systems(systems: List[Mapping]) -> List[str]:
    """Names of the configured systems that are a site's own."""
    return [s['name'] for s in systems if s['name'] not in EMBEDDED]


def explicit(argv: List[str], environ: Mapping) -> Optional[Tuple[str, str]]:
    """``(system, how)`` when the command line (``--system NAME``,
    ``--system=NAME``) or ``RFM_SYSTEM`` names the system; the command
    line wins, as in ReFrame. A ``system:partition`` gives the system."""
    for i, arg in enumerate(argv):
        name = None
        if arg == '--system' and i + 1 < len(argv):
            name = argv[i + 1]
        elif arg.startswith('--system='):
            name = arg.split('=', 1)[1]

        if name:
            return name.split(':')[0], f'--system {name}'

    name = environ.get('RFM_SYSTEM')
    if name:
        return name.split(':')[0], f'RFM_SYSTEM={name}'

    return None


def _matching(systems, hostname):
    for sys_ in systems:
        for patt in sys_.get('hostnames', []):
            if re.match(patt, hostname):
                return sys_['name'], patt

    return None


def choose(systems: List[Mapping], argv: List[str], environ: Mapping,
           hostname: str, notes: Optional[Mapping] = None) -> str:
    """The one line saying which system the session runs on and why
    (without the ``clustergate:`` prefix). ``systems`` in ReFrame's order,
    after :func:`restrict_localhost`; ``notes``: why a system's pattern is
    what it is (``{name: text}``, e.g. the emulated cluster's ``active()``).
    Raises :class:`NoSystem` when a site system is configured, none is
    named and no pattern matches."""
    named = explicit(argv, environ)
    if named:
        return f'system {named[0]}: chosen with {named[1]}'

    sites = site_systems(systems)
    found = _matching(systems, hostname)
    if found is None or (found[0] == LOCALHOST and sites):
        pats = '; '.join(f'{s["name"]} {", ".join(map(repr, s["hostnames"]))}'
                         for s in systems if s['name'] in sites)
        raise NoSystem(
            f'no system for host {hostname!r}: it matches none of the site '
            f'systems\' hostnames ({pats or "none"}); choose one with '
            f'--system NAME or RFM_SYSTEM=NAME (--system {LOCALHOST} runs '
            f'on this machine alone)')

    name, patt = found
    if name == LOCALHOST:
        return (f'system {LOCALHOST}: no site system is configured (only '
                f'{", ".join(s["name"] for s in systems)}), hostname '
                f'{hostname!r}')

    note = (notes or {}).get(name)
    return (f'system {name}: hostname {hostname!r} matches its pattern '
            f'{patt!r}' + (f' ({note})' if note else ''))


def restrict_localhost(systems: List[Mapping]) -> None:
    """With a site system configured, ``localhost`` matches no host: it
    runs only when named."""
    if not site_systems(systems):
        return

    for sys_ in systems:
        if sys_['name'] == LOCALHOST:
            sys_['hostnames'] = [NEVER]


def apply(systems: List[Mapping], settings_path: str,
          notes: Optional[Mapping] = None) -> None:
    """Restrict ``localhost`` (:func:`restrict_localhost`); in a ``reframe``
    command, refuse an unchosen system with ReFrame's ConfigError (one
    line) and, when the command runs or lists checks, print the choice
    once. ``systems``: the configuration's list, in ReFrame's order;
    ``notes``: as for :func:`choose`."""
    from clustergate.rfm import session
    from clustergate.planning import selection
    from reframe.core.exceptions import ConfigError

    restrict_localhost(systems)
    if not session.in_reframe_command():
        return

    try:
        line = choose(systems, sys.argv, os.environ, socket.gethostname(),
                      notes)
    except NoSystem as err:
        raise ConfigError(f'{settings_path}: {err}') from None

    if selection.is_selecting(sys.argv) and not _printed:
        _printed.append(line)
        print(f'clustergate: {line}', flush=True)
