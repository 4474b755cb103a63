"""The GPU checks judging the real outputs of one H200 node
(tests/fixtures/benchmark-outputs/gpu): the figures of a complete run,
a one-line reason naming the cause for a failed or cut-short run, and
the verdicts that name the GPU (index and UUID): busy with another
process, slow against its peers, on a host link at half its bandwidth.

The machine running the tests has no GPU: the checks are loaded for
``localhost`` (their GPU point exists, no partition runs it) and fed the
files a job writes."""

import json

from conftest import cut_before, fixture_text
from rfm_loader import checks_fixture, perf_values, pick, sanity_failure

gpu = checks_fixture('checks/gpu/gpu_checks.py')

#: the real node's GPU as ``nvidia-smi --query-gpu=index,uuid,name,
#: pci.bus_id --format=csv,noheader`` prints it (values from its
#: ``nvidia-smi -q`` in node-facts.txt)
H200 = 'GPU-37131cbc-2be2-2bc3-fc77-14417bf3135e'
QUERY_1 = f'0, {H200}, NVIDIA H200, 00000000:00:06.0\n'
#: a second GPU of the same kind, for the verdicts against peers
OTHER = 'GPU-99a62ee6-3258-17cd-89b4-0c89c9f209b9'
QUERY_2 = QUERY_1 + f'1, {OTHER}, NVIDIA H200, 00000000:00:07.0\n'
BURN_TAIL = ('Freed memory for dev 0\nUninitted cublas\ndone\n\n'
             'Tested 1 GPUs:\n\tGPU 0: OK\n')


def out(name):
    return fixture_text('benchmark-outputs', 'gpu', name)


def job(check, gpus, stdout='', **files):
    """``check`` reading a job's files: its stdout, ``cg-gpus.csv`` and
    the others by name."""
    check.gpus_per_node = gpus
    files.setdefault('cg-gpus.csv', QUERY_2 if gpus > 1 else QUERY_1)
    check.stdout_text = lambda: stdout
    check.job_text = lambda name: files.get(name, '')
    return check


# -- BabelStream ------------------------------------------------------------

def test_babelstream_figures(gpu):
    c = job(pick(gpu, 'GpuStream'), 1, **{
        'babelstream.out.0': out('babelstream-cuda.2pow28.out')})
    assert c.check_output(c.output_text())
    values = perf_values(c)
    assert values['triad_gpu0'] == 4369093.333
    assert values['copy_gpu0'] == 4037112.860
    assert values['triad_min'] == 4369093.333


def test_babelstream_failed_run_names_gpu_and_cause(gpu):
    c = job(pick(gpu, 'GpuStream'), 1, **{
        'babelstream.out.0': out('babelstream-cuda.toolarge.FAILED.out')})
    assert sanity_failure(c) == (
        f'GPU 0 ({H200}, NVIDIA H200): BabelStream failed before '
        f'measuring: Device does not have enough memory for all buffers '
        f'(Requested array size of 24000 GB exceeds memory capacity of '
        f'150.11 GB)')


def test_babelstream_slow_gpu_against_its_peer(gpu):
    text = out('babelstream-cuda.2pow28.out')
    slow = text.replace('Triad       4369093.333', 'Triad       2184546.666')
    c = job(pick(gpu, 'GpuStream'), 2, **{'babelstream.out.0': text,
                                          'babelstream.out.1': slow})
    msg = sanity_failure(c)
    assert msg.startswith(f'GPU 1 ({OTHER}, NVIDIA H200): BabelStream Triad '
                          f'2.185e+06 MB/s, 0.50x the median 4.369e+06 MB/s '
                          f'of its 1 peer(s)')
    assert 'GPU 0' not in msg


def test_busy_gpu_is_named(gpu):
    # what nvidia-smi --query-compute-apps prints while a second gpu_burn
    # runs on the GPU
    apps = f'{H200}, 48213, ./gpu_burn, 129043 MiB\n'
    c = job(pick(gpu, 'GpuStream'), 1, **{
        'babelstream.out.0': out('babelstream-cuda.2pow28.out'),
        'cg-gpu-apps.before.csv': apps})
    assert sanity_failure(c) == (
        f'GPU 0 ({H200}, NVIDIA H200) is busy: another process runs on it '
        f'(pid 48213 ./gpu_burn, 129043 MiB before the run); its figures '
        f'measure the sharing, not the GPU')


def test_busy_is_the_cause_when_the_run_fails_too(gpu):
    apps = f'{H200}, 48213, ./gpu_burn, 129043 MiB\n'
    c = job(pick(gpu, 'GpuBurn'), 1, out('gpuburn-30s.cut-by-timeout.out'),
            **{'cg-gpu-apps.after.csv': apps})
    assert sanity_failure(c).startswith(f'GPU 0 ({H200}, NVIDIA H200) is busy: '
                                 f'another process runs on it (pid 48213 '
                                 f'./gpu_burn, 129043 MiB after the run)')


def test_a_process_on_another_gpu_is_not_this_jobs(gpu):
    apps = f'{OTHER}, 48213, ./gpu_burn, 129043 MiB\n'
    c = job(pick(gpu, 'GpuStream'), 1, **{
        'babelstream.out.0': out('babelstream-cuda.2pow28.out'),
        'cg-gpus.csv': QUERY_2, 'cg-gpu-apps.after.csv': apps})
    assert c.check_output(c.output_text())


# -- nvbandwidth ------------------------------------------------------------

def test_nvbandwidth_figures(gpu):
    c = job(pick(gpu, 'GpuHostLink'), 1, out('nvbandwidth-h2d-d2h.json'))
    assert c.check_output(c.output_text())
    assert perf_values(c) == {'h2d_gpu0': 55.3197, 'd2h_gpu0': 55.3016}


def two_gpu_json(h2d_1):
    """The real JSON with a second GPU column (nvbandwidth's layout of a
    CPU(row) -> GPU(column) matrix), and the all-at-once cases."""
    doc = json.loads(out('nvbandwidth-h2d-d2h.json'))
    cases = doc['nvbandwidth']['testcases']
    cases[0]['bandwidth_matrix'] = [['55.3197', h2d_1]]
    cases[1]['bandwidth_matrix'] = [['55.3016', '55.2950']]
    for name in ('host_to_all_memcpy_ce', 'all_to_host_memcpy_ce'):
        cases.append({'name': name, 'status': 'Passed',
                      'bandwidth_description': 'CPU(row) GPU(column)',
                      'bandwidth_matrix': [['50.1', '50.0']], 'sum': 100.1})
    return json.dumps(doc)


def test_nvbandwidth_host_link_at_half_names_the_gpu(gpu):
    c = job(pick(gpu, 'GpuHostLink'), 2, two_gpu_json('27.6600'))
    assert sanity_failure(c) == (
        f'GPU 1 ({OTHER}, NVIDIA H200): host-to-device 27.66 GB/s, 0.50x '
        f'the median 55.32 GB/s of its 1 peer(s) in the node (below '
        f'0.90x): its host link is slow (a PCIe link trained at a lower '
        f'width or generation)')


def test_nvbandwidth_two_healthy_gpus(gpu):
    c = job(pick(gpu, 'GpuHostLink'), 2, two_gpu_json('55.1000'))
    assert c.check_output(c.output_text())
    assert perf_values(c)['h2d_all_gpu1'] == 50.0


def test_nvbandwidth_cut_short(gpu):
    c = job(pick(gpu, 'GpuHostLink'), 1,
            cut_before(out('nvbandwidth-h2d-d2h.out'),
                       'SUM device_to_host_memcpy_ce'))
    assert "device_to_host_memcpy_ce has no 'SUM device_to_host_memcpy_ce'" \
        in sanity_failure(c)


# -- gpu-burn ---------------------------------------------------------------

def test_gpu_burn_cut_short_fails_with_the_cause(gpu):
    c = job(pick(gpu, 'GpuBurn'), 1, out('gpuburn-30s.cut-by-timeout.out'))
    assert sanity_failure(c).startswith(
        "gpu-burn was cut short: no 'Tested N GPUs' verdict after 100% of "
        "its 30 s burn")


def test_gpu_burn_figures(gpu):
    c = job(pick(gpu, 'GpuBurn'), 1,
            out('gpuburn-30s.cut-by-timeout.out') + BURN_TAIL)
    assert c.check_output(c.output_text())
    assert perf_values(c) == {'gflops_gpu0': 51058.0}
    assert c.max_temp_c == 62


def test_gpu_burn_hot_gpu_is_named(gpu):
    c = job(pick(gpu, 'GpuBurn'), 1,
            out('gpuburn-30s.cut-by-timeout.out') + BURN_TAIL)
    c.temp_limit_c = 61
    assert sanity_failure(c) == (f'GPU 0 ({H200}, NVIDIA H200): 62 C under '
                          f'gpu-burn, above 61 C')


def test_gpu_burn_errors_name_the_gpu(gpu):
    text = (out('gpuburn-30s.cut-by-timeout.out').replace(
        "1497 (51058 Gflop/s)   errors: 0 ",
        "1497 (51058 Gflop/s)   errors: 12  (WARNING!)") +
        BURN_TAIL.replace('GPU 0: OK', 'GPU 0: FAULTY'))
    c = job(pick(gpu, 'GpuBurn'), 1, text)
    assert sanity_failure(c) == (f'GPU 0 ({H200}, NVIDIA H200): gpu-burn FAULTY: '
                          f'12 computation error(s)')


# -- nccl-tests -------------------------------------------------------------

def test_nccl_sendrecv_figures(gpu):
    c = job(pick(gpu, 'NcclSendRecv'), 1, out('nccltests-sendrecv.g1.out'))
    assert c.check_output(c.output_text())
    assert perf_values(c) == {'busbw': 1686.9, 'algbw': 1686.9}
    assert c.avg_busbw == 9276.08   # logged, not judged
    assert c.gpu_hosts == 'vm'    # the node nccl-tests names


def test_nccl_cut_short(gpu):
    c = job(pick(gpu, 'NcclSendRecv'), 1,
            cut_before(out('nccltests-sendrecv.g1.out'), '268435456', 2))
    assert "sendrecv_perf output has no '# Avg bus bandwidth' summary" in \
        sanity_failure(c)


def test_nccl_wrong_gpu_count(gpu):
    c = job(pick(gpu, 'NcclSendRecv'), 2, out('nccltests-sendrecv.g1.out'))
    assert sanity_failure(c) == 'sendrecv_perf used 1 GPU(s), the job has 2'
