"""Bringing the emulated cluster up and down, and changing its links.

``up`` records every resource in the state file BEFORE creating it and
every daemon's PID right after starting it, so that a failed ``up`` (and
``down`` at any time) can remove exactly what exists. ``down`` is
idempotent: it stops the recorded daemons in parallel, kills whatever is
left inside the namespaces (job processes), then removes namespaces,
bridges, the /etc/hosts block and the state directory.
"""

import os
import shutil
import subprocess
import sys
import time

from . import dragonfly, lmod, netns, procs, shaping, slurm
from . import state as cluster_state
from . import tree as tr
from .layout import FABRICS, Layout
from .tree import plan_tree
from .procs import ClusterError

#: The unprivileged user jobs (and ReFrame) run as
RUN_USER = 'cgrunner'

#: command -> Debian package providing it
REQUIRED = {
    'ip': 'iproute2',
    'tc': 'iproute2',
    'nsenter': 'util-linux',
    'unshare': 'util-linux',
    'munged': 'munge',
    'slurmctld': 'slurmctld',
    'slurmd': 'slurmd',
    'sinfo': 'slurm-client',
    'srun': 'slurm-client',
    'scontrol': 'slurm-client',
}
PMIX_PLUGIN_DIRS = ['/usr/lib/x86_64-linux-gnu/slurm-wlm',
                    '/usr/lib/aarch64-linux-gnu/slurm-wlm',
                    '/usr/lib64/slurm', '/usr/lib/slurm']


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# Checks ----------------------------------------------------------------

def missing_packages(which=shutil.which):
    """``{command: package}`` of required commands that are not found."""
    return {cmd: pkg for cmd, pkg in REQUIRED.items() if not which(cmd)}


def preflight():
    """Refuse clearly when we cannot work here."""
    if os.geteuid() != 0:
        raise ClusterError('must run as root: the emulated cluster creates '
                           'network namespaces and starts Slurm daemons '
                           '(try: sudo clustergate-lab cluster ...)')

    missing = missing_packages()
    if missing:
        pkgs = sorted(set(missing.values()))
        raise ClusterError(
            'missing commands: ' +
            ', '.join(f'{c} (Debian package {p})'
                      for c, p in missing.items()) +
            f'\ninstall with: apt-get install {" ".join(pkgs)}'
        )

    if not any(os.path.exists(os.path.join(d, 'mpi_pmix.so'))
               for d in PMIX_PLUGIN_DIRS):
        raise ClusterError('Slurm PMIx plugin mpi_pmix.so not found '
                           '(Debian package slurm-wlm-basic-plugins)')

    cp = subprocess.run(['unshare', '--net', 'true'], capture_output=True,
                        text=True, timeout=10)
    if cp.returncode:
        raise ClusterError('network namespaces are not permitted here '
                           f'(unshare --net: {cp.stderr.strip()}); run on '
                           'a VM or a container with CAP_SYS_ADMIN and '
                           'CAP_NET_ADMIN')


def ensure_user(name=RUN_USER):
    """Create the unprivileged job user if missing (kept after down)."""
    if subprocess.run(['id', '-u', name], capture_output=True).returncode:
        procs.run(['useradd', '--create-home', '--shell', '/bin/bash',
                   '--comment', 'clustergate emulated-cluster jobs', name])
        log(f'created user {name}')


def _conflicts(layout, tree=None):
    found = [f'namespace {n}' for n in layout.node_names
             if n in netns.existing_namespaces()]
    found += [f'bridge {layout.bridge(f)}' for f in FABRICS
              if netns.link_exists(layout.bridge(f))]
    found += [what.replace(':', ' ', 1) for what in netns.tree_devices(tree)
              if netns.link_exists(what.split(':', 1)[1])]
    found += [f'interface {layout.host_veth(n, f)}'
              for n, f in layout.links()
              if netns.link_exists(layout.host_veth(n, f))]
    return found


# up --------------------------------------------------------------------

def _prepare_dirs(paths, layout):
    os.makedirs(paths.root, mode=0o755, exist_ok=True)
    os.chmod(paths.root, 0o755)
    for d in (paths.munge_dir, paths.socket_dir, paths.ctld_dir,
              paths.nodes_dir):
        shutil.rmtree(d, ignore_errors=True)

    os.makedirs(paths.munge_dir, mode=0o700)
    os.makedirs(paths.socket_dir, mode=0o755)
    os.makedirs(paths.ctld_dir, mode=0o755)
    for n in layout.node_names:
        nd = paths.node_dir(n)
        os.makedirs(os.path.join(nd, 'spool'), mode=0o755)
        os.makedirs(os.path.join(nd, 'tmp'))
        os.chmod(os.path.join(nd, 'tmp'), 0o1777)

    fd = os.open(paths.munge_key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
    with os.fdopen(fd, 'wb') as fp:
        fp.write(slurm.munge_key_bytes())


def _checker(state):
    def check():
        for name, rec in state['procs'].items():
            if not procs.alive(rec):
                raise ClusterError(f'{name} exited during start-up', [name])

    return check


def _start(state, paths, name, cmd, logfile):
    # The daemons write their own log file; in the foreground they repeat
    # it on stderr, which goes to <log>.console (kept for early errors)
    state['procs'][name] = procs.spawn(cmd, logfile + '.console',
                                       env=slurm.slurm_env(paths))
    cluster_state.save(state, paths)


def up(nodes=4, rate='1gbit', timeout=30.0, paths=None, topology=None,
       leaves=3, oversubscription=None, uplink_rate=None, spines=None,
       groups=None):
    """Bring the cluster up; on any failure undo everything and raise."""
    paths = paths or cluster_state.Paths()
    t0 = time.monotonic()
    layout = Layout(nodes)
    bits = shaping.parse_rate(rate)
    tree, up_bits = plan_tree(layout, topology, leaves, bits,
                              oversubscription, uplink_rate, spines, groups)
    trunk_bits = tree and tree.trunk_rate(
        up_bits, oversubscription or tr.DEFAULT_OVERSUBSCRIPTION)
    preflight()
    old = cluster_state.load(paths)
    if old is not None:
        running = [n for n, r in old.get('procs', {}).items()
                   if procs.alive(r)]
        if running:
            raise ClusterError(
                f'the emulated cluster is already up ({old["nodes"]} nodes, '
                f'state in {paths.root}); run `clustergate-lab cluster down` '
                f'first'
            )

        raise ClusterError(
            f'a previous emulated cluster left state behind in {paths.root} '
            f'(phase {old.get("phase")}, no daemon running); run '
            f'`clustergate-lab cluster down` to clean it up, then `up` again'
        )

    conflicts = _conflicts(layout, tree)
    if conflicts:
        raise ClusterError('cannot bring the cluster up, these already '
                           'exist (not recorded as ours): ' +
                           ', '.join(conflicts))

    ensure_user()
    state = cluster_state.new_state(nodes, bits, tree, up_bits, trunk_bits)
    _prepare_dirs(paths, layout)
    cluster_state.save(state, paths)
    try:
        _bring_up(state, layout, paths, timeout, tree)
    except BaseException as err:
        if isinstance(err, ClusterError):
            _show_logs(paths, err.daemons[:3])

        log('up failed: removing what was started')
        teardown(paths, quiet=True)
        raise

    shape = '' if tree is None else ' ' + tr.describe(tree, bits, up_bits,
                                                         trunk_bits)
    log(f'emulated cluster up: {nodes} nodes{shape} in '
        f'{time.monotonic() - t0:.2f} s; SLURM_CONF={paths.slurm_conf}')
    return state


def _show_logs(paths, daemons):
    """Print the tails of the daemons' logs (their console output when the
    log file is missing or empty: errors before logging started)."""
    for name in daemons:
        logfile = paths.daemon_log(name)
        if not logfile:
            continue

        if not os.path.exists(logfile) or not os.path.getsize(logfile):
            logfile += '.console'

        log(f'--- last lines of {logfile} ---\n'
            f'{procs.tail(logfile, 12).rstrip()}')


def _bring_up(state, layout, paths, timeout, tree=None):
    rates = cluster_state.link_rates(state, layout)
    uplink_rates = cluster_state.uplink_rates(state, tree) if tree else None
    netns.build(layout, rates,
                on_created=lambda what: cluster_state.mark_created(
                    state, what, paths),
                tree=tree, uplink_rates=uplink_rates)
    cluster_state.mark_created(state, 'hosts', paths)
    netns.install_hosts(layout)
    check = _checker(state)

    _start(state, paths, 'munged', slurm.munged_cmd(paths), paths.munge_log)
    if not slurm.wait_socket(paths.munge_socket, timeout,
                             lambda: procs.alive(state['procs']['munged'])):
        raise ClusterError('munged did not create its socket', ['munged'])

    m = slurm.machine()
    if tree is not None:
        with open(paths.topology_conf, 'w') as fp:
            fp.write(tr.topology_conf_of_state(tree, state))

    with open(paths.slurm_conf, 'w') as fp:
        fp.write(slurm.render_conf(
            layout, paths, m['cpus'],
            slurm.node_memory_mib(m['mem_mib'], layout.nodes), m['topology'],
            tree=tree is not None
        ))

    # before the nodes start: their jobs load these modules
    mods = lmod.write(paths.root)
    log(f'modules ({lmod.modulepath(paths.root)}): {", ".join(mods)}')
    _start(state, paths, 'slurmctld', slurm.slurmctld_cmd(paths),
           paths.ctld_log)
    head = layout.host_addr(FABRICS[0])
    if not slurm.wait_port(head, slurm.SLURMCTLD_PORT, timeout,
                           lambda: procs.alive(state['procs']['slurmctld'])):
        raise ClusterError(f'slurmctld does not listen on '
                           f'{head}:{slurm.SLURMCTLD_PORT}', ['slurmctld'])

    for n in layout.node_names:
        _start(state, paths, f'slurmd@{n}', slurm.slurmd_cmd(paths, n),
               paths.slurmd_log(n))

    slurm.wait_idle(paths, layout.node_names, timeout, check)
    state['phase'] = 'up'
    state['up_at'] = time.time()
    cluster_state.save(state, paths)


# down ------------------------------------------------------------------

# long: a flat list of idempotent removal steps, in the reverse order of
# bring-up; each step records its problem and the next one still runs
def teardown(paths=None, quiet=False):
    """Remove everything recorded (and our uniquely named bridges and hosts
    block even without a record). Idempotent. Returns a list of problems
    (empty when all is gone)."""
    paths = paths or cluster_state.Paths()
    problems = []
    try:
        state = cluster_state.load(paths)
    except RuntimeError as err:
        problems.append(str(err))
        state = None

    state = state or {'procs': {}, 'created': []}
    recs = state.get('procs', {})
    slurm_recs = [r for n, r in recs.items() if n != 'munged']
    left = procs.stop_all(slurm_recs)
    left += procs.stop_all([recs['munged']] if 'munged' in recs else [])
    problems += [f'still running: pid {r["pid"]} ({" ".join(r["cmd"])})'
                 for r in left]

    nodes = [w.split(':', 1)[1] for w in state.get('created', [])
             if w.startswith('netns:')]
    nodes = [n for n in nodes if n in netns.existing_namespaces()]
    # Job processes left in the namespaces (proctrack/linuxproc does not
    # kill steps when slurmd stops)
    deadline = time.monotonic() + 3
    while nodes and time.monotonic() < deadline:
        pids = [p for n in nodes for p in netns.namespace_pids(n)]
        if not pids:
            break

        procs.kill_pids(pids)
        time.sleep(0.05)

    for n in nodes:
        try:
            netns.delete_namespace(n)
        except ClusterError as err:
            problems.append(str(err))

    # the uplinks (one end deletes the pair), then the leaf bridges
    created = state.get('created', [])
    for what in ([w for w in created if w.startswith('link:')] +
                 [w for w in created if w.startswith('bridge:')]):
        name = what.split(':', 1)[1]
        try:
            if what.startswith('link:'):
                netns.delete_link(name)
            else:
                netns.delete_bridge(name)
        except ClusterError as err:
            problems.append(str(err))

    for f in FABRICS:
        try:
            netns.delete_bridge(Layout.bridge(f))
        except ClusterError as err:
            problems.append(str(err))

    try:
        netns.remove_hosts()
    except OSError as err:
        problems.append(f'cannot clean {netns.HOSTS_FILE}: {err}')

    if not problems:
        shutil.rmtree(paths.root, ignore_errors=True)
    else:
        cluster_state.save(state, paths)

    if not quiet:
        for p in problems:
            log(f'down: {p}')

    return problems


def down(paths=None):
    t0 = time.monotonic()
    if os.geteuid() != 0:
        raise ClusterError('must run as root (try: sudo clustergate '
                           'cluster down)')

    problems = teardown(paths)
    if problems:
        raise ClusterError('down left things behind (see above); run it '
                           'again or remove them by hand')

    log(f'emulated cluster down ({time.monotonic() - t0:.2f} s)')


# degrade / restore -----------------------------------------------------

def _running_state(paths):
    if os.geteuid() != 0:
        raise ClusterError('must run as root (changes qdiscs)')

    state = cluster_state.load(paths)
    if state is None or state.get('phase') != 'up':
        raise ClusterError('the emulated cluster is not up '
                           '(clustergate-lab cluster up)')

    return state


def degrade(node, fabric, rate, delay=None, loss=None, paths=None,
            uplink=None, global_link=None):
    """Set the rate of ``node``'s link(s) on ``fabric`` (or ``all``), of
    the uplink of leaf ``uplink``, or of a dragonfly's global link
    ``global_link`` (``group1-group2``); ``rate`` is absolute
    (``250mbit``) or a share of the nominal rate (``25%``)."""
    shaping.reject_netem(delay, loss)
    paths = paths or cluster_state.Paths()
    if [node, uplink, global_link].count(None) != 2:
        raise ValueError('give --node, --uplink or --global (one of them)')

    state = _running_state(paths)
    if global_link is not None:
        tree = cluster_state.tree_of(state)
        if tree is None or not tree.dragonfly:
            raise ClusterError('--global needs `clustergate-lab cluster up '
                               '--topology dragonfly`')
        uplink = tree.global_name(global_link)
    if uplink is not None:
        return _degrade_uplink(state, paths, uplink, fabric, rate)

    bits = tr.resolve_rate(rate, state['rate'])
    layout = Layout(state['nodes'])
    if node not in layout.node_names:
        raise ClusterError(f'no node {node!r} (nodes: '
                           f'{", ".join(layout.node_names)})')

    fabrics = FABRICS if fabric == 'all' else [fabric]
    rates = cluster_state.link_rates(state, layout)
    for f in fabrics:
        rates[(node, f)] = bits
        state['rates'][cluster_state.rate_key(node, f)] = bits

    netns.apply_rates(layout, rates, nodes=[node])
    cluster_state.save(state, paths)
    for f in fabrics:
        log(f'{node} {f}: {shaping.format_rate(bits)} (nominal '
            f'{shaping.format_rate(state["rate"])})')


def _tree_state(paths):
    state = _running_state(paths)
    tree = cluster_state.tree_of(state)
    if tree is None:
        raise ClusterError('the emulated cluster is flat (one bridge per '
                           'fabric): uplinks and leaves need `clustergate '
                           'cluster up --topology leafspine`')

    return state, tree


def _degrade_uplink(state, paths, switch, fabric, rate):
    tree = cluster_state.tree_of(state)
    if tree is None:
        raise ClusterError('the emulated cluster is flat: --uplink needs '
                           '`clustergate-lab cluster up --topology leafspine`')

    tree.parent_of(switch)          # a leaf, or a spine of three levels
    nominal = cluster_state.nominal_uplink(state, tree, switch)
    bits = tr.resolve_rate(rate, nominal)
    fabrics = FABRICS if fabric == 'all' else [fabric]
    for f in fabrics:
        state['rates'][tr.uplink_key(switch, f)] = bits

    netns.apply_uplink_rates(tree, {(switch, f): bits for f in fabrics})
    cluster_state.save(state, paths)
    what = (f'global link {switch.replace("~", "-")}'
            if tree.is_global(switch) else
            f'{"trunk" if tree.is_spine(switch) else "uplink"} {switch}-'
            f'{tree.parent_of(switch)}')
    for f in fabrics:
        log(f'{what} {f}: '
            f'{shaping.format_rate(bits)} (nominal '
            f'{shaping.format_rate(nominal)})')


def miscable(node, leaf, fabric='fab0', paths=None):
    """Move ``node``'s cable on ``fabric`` (or ``all``) to leaf ``leaf``;
    topology.conf keeps saying where it was meant to be."""
    paths = paths or cluster_state.Paths()
    state, tree = _tree_state(paths)
    layout = Layout(state['nodes'])
    if node not in layout.node_names:
        raise ClusterError(f'no node {node!r} (nodes: '
                           f'{", ".join(layout.node_names)})')

    tree.check_leaf(leaf)
    fabrics = FABRICS if fabric == 'all' else [fabric]
    cabling = state.setdefault('cabling', {})
    for f in fabrics:
        netns.recable(node, f, tree.leaf_bridge(leaf, f), layout)
        over = cabling.setdefault(f, {})
        if leaf == tree.leaf_of(node):
            over.pop(node, None)
        else:
            over[node] = leaf

        if tree.dragonfly:      # the groups route to where it now is
            dragonfly.apply_fdb(layout, tree, cabling)
        cluster_state.save(state, paths)
        log(f'{node} {f}: cabled to {leaf} (topology.conf: '
            f'{tree.leaf_of(node)})')


def restore(paths=None):
    """All links back to the nominal rate, every node back on the leaf
    topology.conf names."""
    paths = paths or cluster_state.Paths()
    state = _running_state(paths)
    layout = Layout(state['nodes'])
    state['rates'] = {}
    netns.apply_rates(layout, cluster_state.link_rates(state, layout))
    tree = cluster_state.tree_of(state)
    if tree is not None:
        netns.apply_uplink_rates(tree, cluster_state.uplink_rates(state, tree))
        for f, over in state.get('cabling', {}).items():
            for node in sorted(over):
                netns.recable(node, f, tree.leaf_bridge(tree.leaf_of(node),
                                                        f), layout)
        state['cabling'] = {}
        if tree.dragonfly:
            dragonfly.apply_fdb(layout, tree)

    cluster_state.save(state, paths)
    up = ''
    if tree is not None:
        upper = 'global links' if tree.dragonfly else 'trunks'
        trunks = (f', {upper} at '
                  f'{shaping.format_rate(state["trunk_rate"])}'
                  if tree.spines else '')
        up = (f', uplinks at {shaping.format_rate(state["uplink_rate"])}'
              f'{trunks}, every node on its leaf')
    log(f'all links at {shaping.format_rate(state["rate"])}{up}')


# status / env ----------------------------------------------------------

# long: prints its sections in order (nodes, daemons, Slurm, links), each
# a few lines reading the recorded state
def status(paths=None, out=sys.stdout):
    """Print nodes, daemons, Slurm's view and the shaping. Returns True
    when the cluster is up and every daemon runs."""
    paths = paths or cluster_state.Paths()
    state = cluster_state.load(paths)
    if state is None:
        print(f'no emulated cluster (no state in {paths.root})', file=out)
        return False

    layout = Layout(state['nodes'])
    print(f'emulated cluster: {state["nodes"]} nodes, phase '
          f'{state["phase"]}, nominal rate '
          f'{shaping.format_rate(state["rate"])}', file=out)
    print(f'SLURM_CONF={paths.slurm_conf}', file=out)
    ok = state['phase'] == 'up'
    print('daemons:', file=out)
    for name, rec in sorted(state['procs'].items()):
        alive = procs.alive(rec)
        ok = ok and alive
        print(f'  {name:12} pid {rec["pid"]:<8} '
              f'{"running" if alive else "DEAD"}', file=out)

    print('slurm (sinfo):', file=out)
    cp = subprocess.run(['sinfo', '-N', '-o', '%N %P %t %c %m'],
                        capture_output=True, text=True, timeout=15,
                        env=slurm.slurm_env(paths))
    text = (cp.stdout if cp.returncode == 0 else cp.stderr).rstrip()
    print('\n'.join('  ' + line for line in text.splitlines()), file=out)
    print('links (TBF rate, host end / node end; * = not nominal):',
          file=out)
    nominal = state['rate']
    for n in layout.node_names:
        cells = []
        for f in FABRICS:
            h = netns.read_rate(n, f, layout, 'host')
            # entering a namespace (tc -n) needs root
            i = (netns.read_rate(n, f, layout, 'node')
                 if os.geteuid() == 0 else None)

            def fmt(b):
                return shaping.format_rate(b) if b else 'none'

            inner = fmt(i) if os.geteuid() == 0 else '?'
            same = h == nominal and (i == nominal or os.geteuid() != 0)
            mark = '' if same else ' *'
            cells.append(f'{f} {layout.node_addr(n, f):12} '
                         f'{fmt(h)}/{inner}{mark}')

        print(f'  {n:4} ' + '   '.join(cells), file=out)

    tree = cluster_state.tree_of(state)
    if tree is not None:
        real = {f: {n: tree.leaf_of_bridge(netns.bridge_of(
                    layout.host_veth(n, f))) for n in layout.node_names}
                for f in FABRICS}
        uplinks = {(sw, f): netns.read_dev_rate(tree.link_ends(sw, f)[0])
                   for sw in tree.trunked for f in FABRICS}
        for line in tr.cabling_lines(tree, real, uplinks,
                                     state['uplink_rate'],
                                     state.get('trunk_rate')):
            print(line, file=out)

    return ok


def env_lines(paths=None):
    paths = paths or cluster_state.Paths()
    return [f'export SLURM_CONF={paths.slurm_conf}',
            f'. {lmod.profile(paths.root)}  # Lmod with the MPI modules']
