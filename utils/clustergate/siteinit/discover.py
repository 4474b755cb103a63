"""Parsers of what a site's own tools print, for ``clustergate site init``.

Each function takes the text one tool printed (``scontrol show ...``,
``ip -j link``, ``ucx_info -d``, ``fi_info``, ``module -t avail``,
``which``, ``mpirun --version``, ``spack find --json``) and returns
plain data; none runs anything, so each is tested on outputs recorded on
real machines (tests/fixtures/site-init/). :func:`describe` puts them
together into the plain description that clustergate.siteinit.siteconfig
writes out.
"""

import json
import re
from typing import Dict, List, Optional

from clustergate.links.topology import hostlist
from clustergate.site import gpus as gpuinfo

_KV = re.compile(r'(\w+)=(\S*)')


class ProbeOutput:
    """What one probe printed: its exit status and text, and a one-line
    note when it failed or was absent (the written file says so)."""

    def __init__(self, rc: int, text: str, note: str = ''):
        self.rc, self.text, self.note = rc, text or '', note
        self.command = ''  # the program that ran, when it is not fixed

    @property
    def ok(self) -> bool:
        return self.rc == 0


def scontrol_records(text: str) -> List[Dict[str, str]]:
    """``scontrol show partition|node`` text: one dict per record (records
    are separated by blank lines, fields are ``Key=Value``)."""
    out = []
    for block in re.split(r'\n\s*\n', text.strip()):
        rec = dict(_KV.findall(block))
        if rec:
            out.append(rec)

    return out


def partitions(text: str) -> List[dict]:
    """Partitions of ``scontrol show partition``: name, node list, node
    count, whether it is the default one, and its state."""
    return [{'name': r['PartitionName'], 'nodes': r.get('Nodes', ''),
             'total_nodes': int(r.get('TotalNodes', '0') or 0),
             'default': r.get('Default') == 'YES',
             'max_time': r.get('MaxTime', ''),
             'state': r.get('State', '')}
            for r in scontrol_records(text) if 'PartitionName' in r]


def slurm_minutes(text: str) -> Optional[float]:
    """Minutes of a Slurm time (``MaxTime``): ``30``, ``30:00``,
    ``00:30:00``, ``1-00:00:00``, ``2-12``, ``1-02:30``; None for
    ``UNLIMITED``, ``INFINITE`` or nothing. ValueError naming a text
    that is none of these."""
    text = (text or '').strip()
    if text.upper() in ('', 'UNLIMITED', 'INFINITE', 'NONE'):
        return None
    days, dash, rest = text.rpartition('-')
    try:
        parts = [int(p) for p in rest.split(':')]
        d = int(days) if dash else 0
    except ValueError:
        raise ValueError(f'not a Slurm time: {text!r}') from None
    if dash:
        # days-hours[:minutes[:seconds]]
        h, m, s = (parts + [0, 0])[:3]
    elif len(parts) == 3:
        h, m, s = parts
    elif len(parts) == 2:
        h, (m, s) = 0, parts
    else:
        h, m, s = 0, parts[0], 0
    if len(parts) > 3 or min(parts + [d]) < 0:
        raise ValueError(f'not a Slurm time: {text!r}')
    return d * 1440 + h * 60 + m + s / 60


def _max_job(text: str) -> Optional[float]:
    # a MaxTime this parser does not read is left out of the config: a
    # longer job then fails at once naming Slurm's PartitionTimeLimit
    try:
        return slurm_minutes(text)
    except ValueError:
        return None


def _list(value: str) -> List[str]:
    return [] if value in ('', '(null)') else value.split(',')


def nodes(text: str) -> Dict[str, dict]:
    """Nodes of ``scontrol show node``: cores, memory (MiB), features,
    gres and partitions of each."""
    out = {}
    for r in scontrol_records(text):
        if 'NodeName' not in r:
            continue

        out[r['NodeName']] = {
            'cpus': int(r.get('CPUTot', '0') or 0),
            'sockets': int(r.get('Sockets', '0') or 0),
            'cores_per_socket': int(r.get('CoresPerSocket', '0') or 0),
            'threads_per_core': int(r.get('ThreadsPerCore', '1') or 1),
            'memory_mib': int(r.get('RealMemory', '0') or 0),
            'features': _list(r.get('AvailableFeatures', '')),
            'gres': _list(r.get('Gres', '')),
            'partitions': _list(r.get('Partitions', '')),
        }

    return out


def topology(text: str) -> List[dict]:
    """Switches of ``scontrol show topology`` (name, level, nodes, child
    switches); empty when Slurm has no topology ("No topology information
    available" or nothing)."""
    out = []
    for line in text.splitlines():
        kv = dict(_KV.findall(line))
        if 'SwitchName' in kv:
            out.append({'name': kv['SwitchName'],
                        'level': int(kv.get('Level', '0') or 0),
                        'nodes': kv.get('Nodes', ''),
                        'switches': kv.get('Switches', '')})

    return out


def ip_links(text: str) -> List[dict]:
    """Links of ``ip -j link``: name, link type (ether, infiniband,
    loopback, ...) and whether it is up (UP and LOWER_UP)."""
    out = []
    for link in json.loads(text or '[]'):
        flags = link.get('flags', [])
        out.append({'name': link.get('ifname', '?'),
                    'type': link.get('link_type', '?'),
                    'up': 'UP' in flags and 'LOWER_UP' in flags})

    return out


def ucx_devices(text: str) -> List[dict]:
    """``ucx_info -d``: one entry per (memory domain, transport, device),
    with the memory domain's component (ib, tcp, posix, ...)."""
    out, md, comp, tl = [], None, None, None
    for line in text.splitlines():
        m = re.match(r'#\s*(Memory domain|Component|Transport|Device):'
                     r'\s*(\S+)', line)
        if not m:
            continue

        key, val = m.groups()
        if key == 'Memory domain':
            md, comp = val, val
        elif key == 'Component':
            comp = val
        elif key == 'Transport':
            tl = val
        elif tl:
            out.append({'md': md, 'component': comp, 'transport': tl,
                        'device': val})
            tl = None

    return out


def fi_providers(text: str) -> List[dict]:
    """``fi_info`` (short form): provider, fabric and domain of each
    entry, the provider as its core (``tcp`` of ``tcp;ofi_rxm``)."""
    out, cur = [], None
    for line in text.splitlines():
        m = re.match(r'\s*(provider|fabric|domain|type):\s*(\S+)', line)
        if not m:
            continue

        key, val = m.groups()
        if key == 'provider':
            cur = {'provider': val.split(';')[0], 'stack': val}
            out.append(cur)
        elif cur is not None:
            cur[key] = val

    return out


def lmod_modules(text: str) -> List[str]:
    """``module -t avail``: the module names (``openmpi/4.1.6``), without
    the path headers and the bare directory lines."""
    mods = []
    for line in text.splitlines():
        name = line.strip().split('(')[0]
        if name and not name.endswith((':', '/')):
            mods.append(name)

    return mods


#: module or wrapper name -> MPI family (clustergate.site.extras)
_FAMILY_PATTERNS = (
    (re.compile(r'^(openmpi|ompi|hpcx)', re.I), 'openmpi'),
    (re.compile(r'^(mpich|cray-mpich|mvapich2?)', re.I), 'mpich'),
    (re.compile(r'^(intel-?mpi|impi|intel-oneapi-mpi)', re.I), 'intelmpi'),
)


def mpi_family(name: str) -> Optional[str]:
    """The MPI family a module (or package) name is, or None."""
    base = name.split('/')[0]
    for pat, fam in _FAMILY_PATTERNS:
        if pat.match(base):
            return fam

    return None


def mpi_modules(mods: List[str]) -> List[dict]:
    """The MPI modules among ``module -t avail``'s, each with its family
    and version."""
    out = []
    for mod in mods:
        fam = mpi_family(mod)
        if fam and '/' in mod:
            out.append({'module': mod, 'family': fam,
                        'version': mod.split('/', 1)[1]})

    return out


#: MPI compiler wrappers whose name says the family (Debian's alternatives)
WRAPPERS = {'mpicc.openmpi': 'openmpi', 'mpicc.mpich': 'mpich',
            'mpiicc': 'intelmpi'}


def path_wrappers(text: str) -> List[dict]:
    """``which`` of :data:`WRAPPERS`: each found wrapper with its family
    and prefix (``/usr`` of ``/usr/bin/mpicc.openmpi``)."""
    out = []
    for line in text.splitlines():
        path = line.strip()
        name = path.rsplit('/', 1)[-1]
        if name in WRAPPERS and path.startswith('/'):
            prefix = path.rsplit('/', 2)[0] or '/'
            out.append({'wrapper': name, 'family': WRAPPERS[name],
                        'path': path, 'prefix': prefix})

    return out


def mpi_version(text: str) -> Optional[str]:
    """The version in ``mpirun --version`` of OpenMPI ("(Open MPI) 4.1.4",
    "(OpenRTE) 4.1.4") or MPICH's Hydra ("Version: 4.0.2")."""
    m = (re.search(r'\(Open(?: MPI|RTE)\)\s+(\d[\w.]*)', text) or
         re.search(r'^\s*Version:\s+(\d[\w.]*)', text, re.M))
    return m.group(1) if m else None


#: Spack packages that provide ``mpi`` -> MPI family (clustergate.site.extras)
SPACK_MPI_PACKAGES = {
    'openmpi': 'openmpi', 'hpcx-mpi': 'openmpi',
    'mpich': 'mpich', 'mvapich': 'mpich', 'mvapich2': 'mpich',
    'cray-mpich': 'mpich',
    'intel-oneapi-mpi': 'intelmpi', 'intel-mpi': 'intelmpi',
}


def spack_mpis(text: str) -> List[dict]:
    """The MPI providers among the installed specs of ``spack find
    --json``: package, family, version, DAG hash and, for an external,
    its prefix or modules. Anything that is not Spack's JSON list of
    records raises ValueError (the caller makes it a note)."""
    records = json.loads(text) if text.strip() else []
    if not isinstance(records, list):
        raise ValueError('not a JSON list of specs')

    out = []
    for rec in records:
        fam = SPACK_MPI_PACKAGES.get(rec.get('name'))
        if fam is None or not rec.get('hash'):
            continue

        ext = rec.get('external') or {}
        out.append({'package': rec['name'], 'family': fam,
                    'version': str(rec.get('version', '')),
                    'hash': rec['hash'], 'external': bool(ext),
                    'prefix': ext.get('path'),
                    'modules': ext.get('module') or []})

    return out


def partition_nodes(part: dict, allnodes: Dict[str, dict]) -> List[dict]:
    """The node records of a partition's node list."""
    return [allnodes[n] for n in hostlist.expand(part['nodes'])
            if n in allnodes] if part['nodes'] else []


def switched_nodes(switches: List[dict]) -> set:
    """Nodes under some leaf switch of the topology."""
    return {n for s in switches if s['level'] == 0 and s['nodes']
            for n in hostlist.expand(s['nodes'])}


#: libfabric providers that are a site's fabric (the others are TCP/UDP
#: sockets, shared memory or utility layers)
HPC_PROVIDERS = ('cxi', 'efa', 'opx', 'psm2', 'psm3', 'verbs')


def _ucx_fabrics(devs: List[dict]) -> List[dict]:
    seen = []
    for d in devs:
        if d['component'] == 'ib' and d['device'] not in seen:
            seen.append(d['device'])

    return [{'name': dev.split(':')[0], 'kind': 'ucx', 'device': dev,
             'source': f'ucx_info -d: memory domain {dev.split(":")[0]} '
                       f'(component ib), device {dev}'} for dev in seen]


def _ofi_fabrics(provs: List[dict]) -> List[dict]:
    out, seen = [], set()
    for p in provs:
        key = (p['provider'], p.get('domain', ''))
        if p['provider'] in HPC_PROVIDERS and key not in seen:
            seen.add(key)
            out.append({'name': re.sub(r'\W', '_', key[1] or key[0]),
                        'kind': 'ofi', 'provider': key[0],
                        'device': key[1],
                        'source': f'fi_info: provider {p["stack"]}, '
                                  f'domain {key[1]}'})

    return out


def _tcp_fabrics(devs, provs, links) -> List[dict]:
    """Interfaces with an address (UCX's or libfabric's tcp devices),
    up in ``ip -j link`` when that ran, loopback left out."""
    up = {ln['name'] for ln in links if ln['up']} if links else None
    found = [(d['device'], f'ucx_info -d: tcp device {d["device"]}')
             for d in devs if d['transport'] == 'tcp']
    found += [(p['domain'], f'fi_info: provider {p["stack"]}, domain '
               f'{p["domain"]}') for p in provs
              if p['provider'] == 'tcp' and p.get('domain')]
    if not found:
        # neither UCX nor libfabric answered: the Ethernet links that are
        # up (a cluster whose MPIs use TCP)
        found = [(ln['name'], 'ip -j link: ether link') for ln in links
                 if ln['type'] == 'ether']
    out, seen = [], set()
    for iface, src in found:
        if iface == 'lo' or iface in seen or (up is not None and
                                              iface not in up):
            continue

        seen.add(iface)
        out.append({'name': iface, 'kind': 'tcp', 'device': iface,
                    'source': src + (', up in ip -j link' if up else ''),
                    # UCX sees it: MPIs over UCX can be told to use it
                    'ucx': src.startswith('ucx_info')})

    return out


def interconnects(devs, provs, links) -> List[dict]:
    """The network interconnects to measure: the high-speed fabric (UCX's
    InfiniBand devices, else libfabric's HPC providers); only without one,
    TCP on each interface that has an address."""
    return (_ucx_fabrics(devs) or _ofi_fabrics(provs) or
            _tcp_fabrics(devs, provs, links))


def _env_name(text: str) -> str:
    return re.sub(r'[^\w-]', '_', text)


def mpis(modules: List[dict], wrappers: List[dict], versions: dict):
    """The MPIs to offer: each MPI module, and the system wrappers of the
    families no module offers (a site that has an MPI as a module means
    its users to load it)."""
    moduled = {m['family'] for m in modules}
    wrappers = [w for w in wrappers if w['family'] not in moduled]
    out = []
    for m in modules:
        out.append({'name': _env_name(m['module'].replace('/', '-')),
                    'family': m['family'], 'module': m['module'],
                    'version': m['version'],
                    'source': f'module -t avail: {m["module"]}'})

    for w in wrappers:
        out.append({'name': w['family'], 'family': w['family'],
                    'wrapper': w['wrapper'], 'prefix': w['prefix'],
                    'version': versions.get(w['family']),
                    'source': f'which: {w["path"]}'})

    return out


def spack_mpi_entries(found: List[dict], modules: List[dict],
                      wrappers: List[dict], spack: str = 'spack'):
    """The MPIs of ``spack find --json`` (:func:`spack_mpis`) to offer
    beside the modules and wrappers: one the site already offers as a
    module of the same name and version, or as a system wrapper of the
    same family at the same prefix, is not offered twice. Each loads with
    ``spack load /HASH`` through ``spack`` (the command that answered)."""
    have = {tuple(m['module'].split('/', 1)) for m in modules}
    wrapped = {(w['family'], w['prefix']) for w in wrappers}
    out = []
    for s in found:
        if (s['package'], s['version']) in have or \
                (s['family'], s['prefix']) in wrapped:
            continue

        where = (f'external at {s["prefix"]}' if s['prefix'] else
                 f'external module {",".join(s["modules"])}'
                 if s['external'] else 'installed by Spack')
        out.append({'name': _env_name(f'spack-{s["package"]}-'
                                      f'{s["version"]}'),
                    'family': s['family'], 'version': s['version'],
                    'spack_package': s['package'], 'spack_hash': s['hash'],
                    'spack': spack, 'prefix': s['prefix'],
                    'spack_modules': s['modules'],
                    'source': f'spack find --json: {s["package"]}@'
                              f'{s["version"]} /{s["hash"][:7]}, {where}'})

    return out


def _spack_mpis(out: Dict[str, 'ProbeOutput'], mods, wrappers):
    """The Spack MPIs of the ``spack-find`` probe; output that is not
    Spack's JSON becomes the probe's note (nothing offered from it)."""
    got = out.get('spack-find')
    if got is None or not got.ok:
        return []

    try:
        found = spack_mpis(got.text)
    except (ValueError, AttributeError) as err:
        got.note = f'not spack find --json output ({err})'
        return []

    return spack_mpi_entries(found, mods, wrappers, got.command or 'spack')


def _partition(part, allnodes, switched):
    recs = partition_nodes(part, allnodes)
    names = set(hostlist.expand(part['nodes'])) if part['nodes'] else set()
    return {
        'name': _env_name(part['name']), 'slurm_name': part['name'],
        'total_nodes': part['total_nodes'] or len(recs),
        'default': part['default'],
        'cpus': min((r['cpus'] for r in recs), default=0),
        'cores': min((r['cpus'] // max(r['threads_per_core'], 1)
                      for r in recs), default=0),
        'memory_gib': min((r['memory_mib'] for r in recs), default=0) // 1024,
        'features': sorted({f for r in recs for f in r['features']}),
        'gres': sorted({g for r in recs for g in r['gres']}),
        'topology': bool(names) and names <= switched,
        'max_job_min': _max_job(part.get('max_time', '')),
    }


def gpu_gres(recs: List[dict]) -> Optional[str]:
    """The GPU GRES every node of a partition has (``gpu:h200:4``: the
    smallest count where they differ), or None without GPUs."""
    found = []
    for r in recs:
        g = next((x for x in r['gres'] if gpuinfo.gres_gpus([x])), None)
        if g is None:
            return None
        found.append(g.split('(')[0])
    if not found:
        return None
    return min(found, key=lambda g: gpuinfo.gres_gpus([g])[1])


def gpu_probe_names(partition: str):
    """The probe names of a partition's GPU probes (``nvidia-smi -L``,
    ``nvidia-smi topo -m``)."""
    return f'gpu-list-{partition}', f'gpu-topo-{partition}'


def _gpus(part, recs, text):
    gres = gpu_gres(recs)
    if gres is None:
        return None
    lst, topo = gpu_probe_names(part['name'])
    got = gpuinfo.describe_node([gres], text(lst), text(topo))
    got['slurm_gres'] = gres
    got['probed'] = bool(text(lst))
    return got


def accounting(text: str) -> Optional[bool]:
    """Whether ``scontrol show config`` names an accounting storage (jobs
    then appear in ``sacct``); None when it did not answer."""
    m = re.search(r'^AccountingStorageType\s*=\s*(\S+)', text, re.M)
    return None if m is None else m.group(1) != 'accounting_storage/none'


def describe(name: str, out: Dict[str, ProbeOutput]) -> dict:
    """The plain description of a site from its probes' outputs (by probe
    name, see clustergate.commands.site_cmd.PROBES); a probe that failed adds
    its note and leaves its part empty."""
    def text(key):
        got = out.get(key)
        return got.text if got is not None and got.ok else ''

    allnodes = nodes(text('scontrol-node'))
    switches = topology(text('scontrol-topology'))
    switched = switched_nodes(switches)
    parts = []
    for p in partitions(text('scontrol-partition')):
        parts.append(_partition(p, allnodes, switched))
        parts[-1]['gpus'] = _gpus(p, partition_nodes(p, allnodes), text)
    links = ip_links(text('ip-link')) if text('ip-link') else []
    devs = ucx_devices(text('ucx_info'))
    provs = fi_providers(text('fi_info'))
    mods = mpi_modules(lmod_modules(text('module-avail')))
    versions = {fam: mpi_version(text(f'version-{fam}'))
                for fam in ('openmpi', 'mpich')}
    wrappers = path_wrappers(text('which'))
    spack = _spack_mpis(out, mods, wrappers)
    return {
        'name': name,
        'partitions': parts,
        'switches': len(switches),
        'interconnects': interconnects(devs, provs, links),
        'ib_sysfs': [ln for ln in text('sys-infiniband').split() if ln],
        'mpis': mpis(mods, wrappers, versions) + spack,
        'accounting': accounting(text('scontrol-config')),
        'modules_system': 'lmod' if out.get('module-avail') is not None
        and out['module-avail'].ok else 'nomod',
        'notes': [f'{k}: {v.note}' for k, v in out.items() if v.note],
    }
