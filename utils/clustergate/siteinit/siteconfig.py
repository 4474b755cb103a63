"""Writes a site's configuration from the plain description of
clustergate.siteinit.discover.describe: the ReFrame system module
(``config/systems/NAME.py``, in the style of the hand-written ones, every
choice commented with the probe output it came from) and an empty
references file (the Spack environment: clustergate.siteinit.spackenv).
Pure: text in, text out; clustergate.commands.site_cmd writes the files.
"""

import pprint
from typing import List

from clustergate.siteinit import gpuconfig
from clustergate.planning import modesize
from clustergate.siteinit import prebuilt

#: MPI family -> launcher options for srun (the usual Slurm plugins; check
#: ``srun --mpi=list`` on the site)
_SRUN_MPI = {'openmpi': ['--mpi=pmix'], 'mpich': ['--mpi=pmi2'],
             'intelmpi': ['--mpi=pmi2']}

#: srun's MPI plugin for Cray MPICH (HPE's Slurm builds)
_SRUN_CRAY = ['--mpi=cray_shasta']

#: (family, version) of MPIs whose ranks crash in MPI_Init when srun starts
#: them, started by their own mpirun inside the allocation instead: OpenMPI
#: 4.1.4 (Debian 12's) under srun --mpi=pmix crashed in 18 of 100 jobs on
#: the loaded emulated site, under its mpirun in 0 of 200
#: (docs/reports/emulated-cluster.md)
_MPIRUN_NOT_SRUN = {('openmpi', '4.1.4')}


def _fmt(obj, indent):
    text = pprint.pformat(obj, indent=1, width=76 - indent, sort_dicts=False)
    return text.replace('\n', '\n' + ' ' * indent)


def _ic_env(ic, families):
    """Python source of one interconnect's ``env`` for ``families``."""
    if ic['kind'] == 'tcp':
        call = {'openmpi': '_mpi.openmpi_tcp', 'mpich': '_mpi.mpich_tcp',
                'intelmpi': '_mpi.intelmpi_tcp'}
        return {f: f'{call[f]}({ic["device"]!r})' for f in families}

    if ic['kind'] == 'ucx':
        dev = ic['device']
        env = {'openmpi': {'OMPI_MCA_pml': 'ucx', 'UCX_NET_DEVICES': dev},
               'mpich': {'UCX_NET_DEVICES': dev},
               'intelmpi': {'I_MPI_FABRICS': 'shm:ofi', 'FI_PROVIDER': 'mlx',
                            'UCX_NET_DEVICES': dev}}
    else:
        prov = ic['provider']
        env = {'openmpi': {'OMPI_MCA_pml': 'cm', 'OMPI_MCA_mtl': 'ofi',
                           'OMPI_MCA_mtl_ofi_provider_include': prov},
               'mpich': {'FI_PROVIDER': prov},
               'intelmpi': {'I_MPI_FABRICS': 'shm:ofi',
                            'FI_PROVIDER': prov}}

    return {f: repr(env[f]) for f in families}


def _interconnect(ic, families, indent):
    pad = ' ' * indent
    lines = [f'{pad}# {ic["source"]}', f'{pad}{ic["name"]!r}: {{',
             f"{pad}    'scope': 'network',", f"{pad}    'env': {{"]
    for fam, src in _ic_env(ic, families).items():
        lines.append(f'{pad}        {fam!r}: {src},')
    lines.append(f'{pad}    }},')
    if ic['kind'] == 'tcp':
        lines.append(f"{pad}    'verify': _mpi.tcp_verification("
                     f"{ic['device']!r}),")
    lines.append(f'{pad}}},')
    return lines


#: MPI families that run over UCX (Debian's MPICH is ch4:ucx; Intel MPI
#: would need libfabric's mlx provider, which impi-rt does not ship)
_UCX_FAMILIES = {'openmpi': '_mpi.openmpi_ucx_tcp',
                 'mpich': '_mpi.mpich_tcp'}


def _ucx_interconnect(ic, families, indent):
    """``NAME_ucx``: the same interface through UCX's tcp transport (the
    path InfiniBand sites use, here verified on TCP)."""
    pad = ' ' * indent
    fams = [f for f in families if f in _UCX_FAMILIES]
    if not (ic.get('ucx') and fams):
        return []

    dev = ic['device']
    return ([f'{pad}# {ic["source"]}: UCX lists it, so MPIs over UCX '
             f'(pml ucx, UCX_TLS=tcp)', f'{pad}{ic["name"] + "_ucx"!r}: {{',
             f"{pad}    'scope': 'network',", f"{pad}    'env': {{"] +
            [f'{pad}        {f!r}: {_UCX_FAMILIES[f]}({dev!r}),'
             for f in fams] +
            [f'{pad}    }},', f"{pad}    'verify': {{"] +
            [f'{pad}        {f!r}: _mpi.ucx_tcp_verification({dev!r}),'
             for f in fams] +
            [f'{pad}    }},', f'{pad}}},'])


def _shm(families, indent):
    pad = ' ' * indent
    call = {'openmpi': '_mpi.openmpi_shm()', 'mpich': '_mpi.mpich_shm()',
            'intelmpi': '_mpi.intelmpi_shm()'}
    return ([f'{pad}# within a node: every MPI has shared memory',
             f"{pad}'shm': {{", f"{pad}    'scope': 'node',",
             f"{pad}    'env': {{"] +
            [f'{pad}        {f!r}: {call[f]},' for f in families] +
            [f'{pad}    }},', f'{pad}}},'])


def _powers(top):
    vals, n = [], 1
    while n < top:
        vals.append(n)
        n *= 2

    return vals + [top] if top else [1]


def _sweep(part, ics=()):
    nodes = _powers(part['total_nodes'])
    ppn = [p for p in _powers(part['cores']) if p <= max(part['cores'], 1)]
    across = [n for n in nodes if 2 <= n <= 4] or nodes[:1]
    # the nightly's ppn: a handful (1, 2, half and all cores), not every
    # power of two: its size must not grow with the cores of a node
    sweep = {'nodes': nodes, 'ppn': ppn,
             'ci': {'nodes': [min(2, nodes[-1])], 'ppn': [1]},
             'nightly': {'nodes': across,
                         'ppn': modesize.mode_ppn(ppn, 'nightly')}}
    if any(ic.get('ucx') for ic in ics):
        # the UCX paths of the same interfaces: in acceptance only, so
        # the ci and the nightly measure each interface once
        plain = [ic['name'] for ic in ics]
        sweep['ci']['interconnects'] = sweep['nightly']['interconnects'] = \
            plain
    return sweep


def _environment(mpi, primary):
    fam = mpi['family']
    feats = ['mpi', fam] + (['primary'] if primary else [])
    env = {'name': mpi['name'], 'features': feats}
    if 'spack_hash' in mpi:
        # the job loads this very installation; --sh needs no shell support
        env.update({'prepare_cmds': [f'eval "$({mpi["spack"]} load --sh '
                                     f'/{mpi["spack_hash"]})"'],
                    'cc': 'mpicc', 'cxx': 'mpicxx', 'ftn': 'mpifort'})
    elif 'module' in mpi:
        # the module's own wrappers (Cray's cc for cray-mpich)
        cray = mpi['module'].startswith('cray-')
        env.update({'modules': [mpi['module']],
                    'cc': 'cc' if cray else 'mpicc',
                    'cxx': 'CC' if cray else 'mpicxx',
                    'ftn': 'ftn' if cray else 'mpifort'})
    else:
        suffix = mpi['wrapper'].split('.', 1)[-1]
        env.update({'cc': mpi['wrapper'],
                    'cxx': mpi['wrapper'].replace('mpicc', 'mpicxx'),
                    'ftn': mpi['wrapper'].replace('mpicc', 'mpifort')})
        if '.' in mpi['wrapper']:
            env['env_vars'] = [['CG_MPIRUN', f'mpirun.{suffix}']]
        if fam == 'openmpi':
            # OpenMPI refuses root without these (containers, CI);
            # harmless for ordinary users
            env.setdefault('env_vars', []).extend(
                [['OMPI_ALLOW_RUN_AS_ROOT', '1'],
                 ['OMPI_ALLOW_RUN_AS_ROOT_CONFIRM', '1']])
    env.update({'cflags': ['-O2'],
                'extras': {'mpi_family': fam,
                           'srun_options': _SRUN_CRAY if (mpi.get(
                               'module') or mpi.get('spack_package', '')
                           ).startswith('cray-mpich')
                           else _SRUN_MPI[fam]}})
    if (fam, mpi.get('version')) in _MPIRUN_NOT_SRUN:
        # srun_options stay for the srun steps (mpirun's daemons, probes)
        env['extras']['launcher'] = 'cg-mpirun'
    return env


def _environments(desc) -> List[str]:
    lines = ['_environments = []']
    seen = set()
    for mpi in desc['mpis']:
        env = _environment(mpi, mpi['family'] == 'openmpi' and
                           'openmpi' not in seen)
        seen.add(mpi['family'])
        env['target_systems'] = [desc['name']]
        lines.append(f'# {mpi["source"]}; srun_options: the usual Slurm MPI '
                     f'plugin of {mpi["family"]} (check srun --mpi=list)')
        if 'launcher' in env['extras']:
            lines.append(f'# launcher cg-mpirun: {mpi["family"]} '
                         f'{mpi["version"]} crashes in MPI_Init under srun '
                         f'(18 of 100 jobs under load); its mpirun starts '
                         f'the ranks')
        lines.append(f'_environments.append({_fmt(env, 22)})')

    lines += ['# system wrappers are offered only when their two-rank hello '
              'compiles and runs', '# here (clustergate.siteinit.mpiprobe); '
              'module and Spack environments are probed by the checks',
              '_loaded = [e for e in _environments',
              '           if "modules" in e or "prepare_cmds" in e]',
              '_environments = _loaded + mpiprobe.working(',
              '    [e for e in _environments if e not in _loaded])']
    return lines


def _scheduler(desc, pad):
    """ReFrame's 'slurm' backend polls sacct: only with accounting."""
    if desc.get('accounting') is False:
        return [f"{pad}    # scontrol show config: AccountingStorageType="
                f"accounting_storage/none (no sacct): 'squeue'",
                f"{pad}    'scheduler': 'squeue',"]

    return [f"{pad}    # 'slurm' polls sacct; without accounting use "
            f"'squeue'", f"{pad}    'scheduler': 'slurm',"]


def nightly_share(partitions: int) -> int:
    """Minutes of each partition's nightly rotation: the night's budget
    (:data:`clustergate.planning.modesize.BUDGETS`) shared by the partitions,
    whose jobs may run one after the other (a partition that is part of
    another shares its nodes). Without a rotation the nightly is a fixed
    subset that grows with the partition: a 12-node site with 3 MPIs
    listed 1,188 cases, 21 hours by the cost model."""
    night = modesize.BUDGETS['nightly'].minutes
    return max(5, int(night // max(1, partitions)) // 5 * 5)


def _rotation(partitions: int, pad: str) -> List[str]:
    share = nightly_share(partitions)
    return [f"{pad}        # the nightly: tonight's share of the whole "
            f"acceptance space that fits",
            f"{pad}        # {share} min by the cost model (a night of "
            f"{modesize.BUDGETS['nightly'].minutes:g} min over "
            f"{partitions} partition(s));",
            f"{pad}        # every point runs once per cycle of nights",
            f"{pad}        'rotation': {{'budget_min': {share}}},"]


def _max_job(part, pad: str) -> List[str]:
    if part.get('max_job_min') is None:
        return []
    return [f"{pad}        # scontrol show partition: MaxTime; a check's "
            f"longer job limit is lowered to it",
            f"{pad}        'max_job_min': {part['max_job_min']:g},"]


def _partition(desc, part, families):
    pad = ' ' * 16
    ics = desc['interconnects']
    head = [
        f"{pad}# scontrol show partition {part['slurm_name']}: "
        f"{part['total_nodes']} nodes; scontrol show node: "
        f"{part['cpus']} CPUs ({part['cores']} cores), "
        f"{part['memory_gib']} GiB, features "
        f"{','.join(part['features']) or 'none'}, gres "
        f"{','.join(part['gres']) or 'none'}",
        f'{pad}{{',
        f"{pad}    'name': {part['name']!r},",
        f"{pad}    'descr': {part['slurm_name'] + ' (site init)'!r},",
        *_scheduler(desc, pad),
        f"{pad}    # a job Slurm can never start (PartitionConfig, ...) is "
        f"cancelled at once,",
        f"{pad}    # the test failing with the reason, instead of pending for "
        f"ever",
        f"{pad}    'sched_options': {{'slurm_job_cancel_reasons':",
        f"{pad}                      slurmreasons.cancel_reasons()}},",
        f"{pad}    'launcher': 'srun',",
        f"{pad}    # whole nodes: link tests must not share a node's link",
        f"{pad}    'access': {['--partition=' + part['slurm_name'], '--exclusive']!r},",  # noqa: E501
        f"{pad}    'environs': [e['name'] for e in _environments],",
        f"{pad}    'features': ['mpi', 'slurm'],",
        f"{pad}    'processor': {{'num_cpus': {part['cpus']}}},",
        *gpuconfig.partition_lines(part, desc['name'], pad),
        f"{pad}    'extras': {{",
    ]
    sweep = _sweep(part, ics)
    sweep['ppn'] = gpuconfig.ppn_values(sweep['ppn'], part.get('gpus'))
    body = [f"{pad}        'sweep': {_fmt(sweep, 25)},",
            f"{pad}        'cores_per_node': {part['cores']},",
            f"{pad}        'memory_per_node_gib': {part['memory_gib']},"]
    body += _max_job(part, pad) + _rotation(len(desc['partitions']), pad)
    body += gpuconfig.extras_lines(part, desc['name'], pad)
    bench = (prebuilt.lines(part, pad + ' ' * 12) +
             gpuconfig.benchmark_lines(part, desc['name'], pad + ' ' * 12))
    if bench:
        body += [f"{pad}        'benchmarks': {{", *bench, f'{pad}        }},']
    body += [f'{pad}        # {n}' for n in part.get('prebuilt_notes', [])]
    if part['topology']:
        # Slurm knows the tree, not the links' rate: without it the first
        # nights are planned at the 1 Gbit/s the defaults were measured at
        body += [f'{pad}        # scontrol show topology: every node of '
                 f'the partition under a leaf switch; add the node links\' '
                 f"rate ('node_rate': '100gbit') so that the first nights'"
                 f' estimates follow it',
                 f"{pad}        'topology': {{'source': 'scontrol'}},"]
    else:
        body += [f'{pad}        # no topology: scontrol show topology '
                 f'names no switch above these nodes']
    body.append(f"{pad}        'interconnects': {{")
    for ic in ics:
        body += _interconnect(ic, families, 20 + len(pad) - 8)
    for ic in ics:
        body += _ucx_interconnect(ic, families, 20 + len(pad) - 8)
    body += _shm(families, 20 + len(pad) - 8)
    body += [f'{pad}        }},', f'{pad}    }},', f'{pad}}},']
    return head + body


_HEADER = '''"""System {name}: written by ``clustergate site init {name}``
from what the site's tools said (each choice below names its source);
edit freely.

{notes}"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _mpi  # noqa: E402,F401
from clustergate.siteinit import mpiprobe  # noqa: E402
from clustergate.site import slurmreasons  # noqa: E402

'''


def system_module(desc) -> str:
    """The text of ``config/systems/NAME.py``."""
    notes = '\n'.join(f'Probe {n}' for n in desc['notes']) or \
        'Every probe answered.'
    families = sorted({m['family'] for m in desc['mpis']})
    lines = _HEADER.format(name=desc['name'], notes=notes).splitlines()
    if any(p.get('gpus') for p in desc['partitions']):
        lines += [gpuconfig.HERE_LINE, '']
    lines += _environments(desc) + ['']
    lines += ['site_configuration = {', "    'systems': [", '        {',
              f"            'name': {desc['name']!r},",
              f"            'descr': {desc['name'] + ' (clustergate site init)'!r},",  # noqa: E501
              "            # chosen by name (--system); add this site's "
              "login node pattern",
              f"            'hostnames': [{'^' + desc['name'] + '-never$'!r}],",
              f"            # module -t avail answered: "
              f"{desc['modules_system'] == 'lmod'}",
              f"            'modules_system': {desc['modules_system']!r},",
              "            'partitions': ["]
    for part in desc['partitions']:
        lines += _partition(desc, part, families)
    lines += ['            ],', '        },', '    ],',
              "    'environments': _environments,", '}', '']
    return '\n'.join(lines)


def references_file(desc) -> str:
    """An empty references file (``clustergate baseline`` fills it)."""
    return (f'# Performance references of system {desc["name"]} '
            f'(docs/references.md).\n# Empty: written by clustergate site '
            f'init; fill it with clustergate baseline.\n')
