"""Tests for the GPU benchmark parsers on real outputs of one H200 node
(tests/fixtures/benchmark-outputs/gpu, see its README): BabelStream,
nccl-tests, nvbandwidth and gpu-burn. Figures as in the files; a failed
or cut-short run is refused with a one-line reason naming the cause."""

import pytest

from clustergate.parsers import (ParseError, parse_babelstream,
                                 parse_gpu_burn, parse_nccl_tests,
                                 parse_nvbandwidth)
from clustergate.parsers.babelstream import BABEL_KERNELS
from clustergate.parsers.gpuburn import parse_gpu_burn_list
from conftest import BenchmarkOutputs, cut_before

OUTPUTS = BenchmarkOutputs('gpu')
read = OUTPUTS.read

#: the real cut-short gpu-burn run, completed with the lines gpu-burn
#: prints after "Killing processes" (its source: gpu_burn-drv.cpp), to
#: test the complete case against the same records
BURN_TAIL = ('Freed memory for dev 0\nUninitted cublas\ndone\n\n'
             'Tested 1 GPUs:\n\tGPU 0: OK\n')


def one_line(err):
    msg = str(err.value)
    assert '\n' not in msg
    return msg


def parse_error(parse, text):
    """The one-line message ``parse`` refuses ``text`` with."""
    with pytest.raises(ParseError) as err:
        parse(text)
    return one_line(err)


# -- BabelStream ------------------------------------------------------------

def test_babelstream_table():
    r = parse_babelstream(read('babelstream-cuda.2pow28.out'))
    assert list(r.kernels) == list(BABEL_KERNELS)
    assert r.rate('Triad') == 4369093.333
    assert r.rate('copy') == 4037112.860
    assert (r.kernels['Dot'].min_s, r.kernels['Dot'].max_s,
            r.kernels['Dot'].avg_s) == (0.00097, 0.00099, 0.00097)
    assert (r.version, r.implementation, r.elements, r.precision) == (
        '5.0', 'CUDA', 268435456, 'double')
    assert (r.device_index, r.device_name, r.peak_gb_s) == (
        0, 'NVIDIA H200', 4814.304)
    # 4.37 of 4.81 TB/s: the 91 % the README states
    assert round(r.triad_fraction_of_peak, 2) == 0.91


def test_babelstream_release_layout():
    # the v5.0 release prints MBytes/sec and 'Using CUDA device ...'
    r = parse_babelstream(read('babelstream-cuda-5.0release.2pow28.out'))
    assert list(r.kernels) == list(BABEL_KERNELS)
    assert r.rate('Triad') == 3975378.655
    assert r.rate('copy') == 3529166.417
    assert (r.version, r.implementation, r.precision) == (
        '5.0', 'CUDA', 'double')
    assert r.device_name == 'NVIDIA H200'
    assert r.peak_gb_s is None and r.triad_fraction_of_peak is None


def test_babelstream_mibytes_are_converted_to_mb():
    text = read('babelstream-cuda-5.0release.2pow28.out').replace(
        'MBytes/sec', 'MiBytes/sec')
    r = parse_babelstream(text)
    assert r.rate('Triad') == pytest.approx(3975378.655 * 1.048576)


def test_babelstream_csv():
    r = parse_babelstream(read('babelstream-cuda.2pow28.csv.out'))
    assert r.csv
    assert r.rate('Triad') == 4.36201e6
    assert r.kernels['Add'].avg_s == 0.00148396
    assert r.elements == 268435456
    assert r.peak_gb_s == 4814.3


def test_babelstream_too_large_names_the_cause():
    assert parse_error(parse_babelstream,
                       read('babelstream-cuda.toolarge.FAILED.out')) == (
        'BabelStream failed before measuring: Device does not have enough '
        'memory for all buffers (Requested array size of 24000 GB exceeds '
        'memory capacity of 150.11 GB)')


@pytest.mark.parametrize('marker,missing', [
    ('Triad', 'Triad'), ('Dot', 'Dot'), ('Function', 'Function')])
def test_babelstream_cut_short(marker, missing):
    text = cut_before(read('babelstream-cuda.2pow28.out'), marker,
                      occurrence=1)
    with pytest.raises(ParseError, match=missing) as err:
        parse_babelstream(text)
    assert 'cut short' in one_line(err)


def test_babelstream_validation_failure():
    text = read('babelstream-cuda.2pow28.out') + (
        'Validation failed on a[]. Average error 1.2e-03\n')
    with pytest.raises(ParseError, match=r'do not validate: Validation '
                                         r'failed on a\[\]'):
        parse_babelstream(text)


def test_babelstream_foreign_output():
    with pytest.raises(ParseError, match='not a BabelStream output'):
        parse_babelstream(read('nccltests-sendrecv.g1.out'))


# -- nccl-tests -------------------------------------------------------------

def test_nccl_all_reduce():
    r = parse_nccl_tests(read('nccltests-all_reduce.g1.out'))
    assert (r.test, r.version, r.n_gpus) == ('all_reduce_perf', '2.19.6', 1)
    assert (r.min_bytes, r.max_bytes) == (8, 1073741824)
    assert len(r.rows) == 14
    last = r.largest
    assert (last.size, last.oop_time_us, last.oop_algbw, last.oop_busbw,
            last.ip_algbw) == (536870912, 255.81, 2098.7, 0.0, 413502.0)
    # one GPU: bus bandwidth 0 by definition
    assert r.avg_busbw == 0.0
    assert r.out_of_bounds == 0 and not r.wrong_rows
    dev = r.devices[0]
    assert (dev.rank, dev.host, dev.device, dev.bus_id, dev.name) == (
        0, 'vm', 0, '0000:00:06', 'NVIDIA H200')


def test_nccl_sendrecv():
    r = parse_nccl_tests(read('nccltests-sendrecv.g1.out'))
    assert r.test == 'sendrecv_perf'
    assert r.by_size()[268435456].oop_busbw == 1686.9
    assert r.by_size()[1024].oop_time_us == 6.70
    assert r.largest.ip_wrong is None         # N/A in place
    assert r.avg_busbw == 9276.08


def test_nccl_cut_short():
    text = cut_before(read('nccltests-all_reduce.g1.out'), '536870912')
    msg = parse_error(parse_nccl_tests, text)
    assert "all_reduce_perf output has no '# Avg bus bandwidth' summary: " \
        "the run stopped after 134217728 B" in msg


def test_nccl_wrong_elements_are_counted():
    text = read('nccltests-sendrecv.g1.out').replace(
        '159.13  1686.9  1686.9       0', '159.13  1686.9  1686.9       7')
    r = parse_nccl_tests(text)
    assert [row.size for row in r.wrong_rows] == [268435456]


def test_nccl_refusal_names_the_cause():
    # what nccl-tests prints for -g 2 on a one-GPU node
    text = cut_before(read('nccltests-all_reduce.g1.out'), '# Using') + \
        'Invalid number of GPUs: 2 requested but only 1 were found.\n'
    assert parse_error(parse_nccl_tests, text) == ('all_reduce_perf failed: Invalid number of '
                             'GPUs: 2 requested but only 1 were found.')


# -- nvbandwidth ------------------------------------------------------------

def test_nvbandwidth_text():
    r = parse_nvbandwidth(read('nvbandwidth-h2d-d2h.out'))
    assert r.version == 'v0.8'
    assert r.devices == {0: 'NVIDIA H200'}
    assert {k: v.sum for k, v in r.testcases.items()} == {
        'host_to_device_memcpy_ce': 55.39,
        'device_to_host_memcpy_ce': 55.32,
        'host_to_device_memcpy_sm': 51.29,
        'device_to_host_memcpy_sm': 52.35,
        'host_to_device_bidirectional_memcpy_ce': 50.43}
    assert r.passed('host_to_device_memcpy_ce').per_gpu() == {0: 55.39}
    assert r.passed('device_to_host_memcpy_sm').per_gpu() == {0: 52.35}


def test_nvbandwidth_json():
    r = parse_nvbandwidth(read('nvbandwidth-h2d-d2h.json'))
    assert r.version == 'v0.8'
    assert r.devices == {0: 'NVIDIA H200'}
    assert r.passed('host_to_device_memcpy_ce').per_gpu() == {0: 55.3197}
    assert r.passed('device_to_host_memcpy_ce').sum == 55.301550850000005
    with pytest.raises(ParseError, match='ran no test case '
                                         'host_to_device_memcpy_sm'):
        r.passed('host_to_device_memcpy_sm')


def test_nvbandwidth_cut_short():
    text = cut_before(read('nvbandwidth-h2d-d2h.out'),
                      'SUM device_to_host_memcpy_sm')
    assert "device_to_host_memcpy_sm has no 'SUM device_to_host_memcpy_sm'" \
        in parse_error(parse_nvbandwidth, text)


def test_nvbandwidth_json_cut_short():
    text = read('nvbandwidth-h2d-d2h.json')
    with pytest.raises(ParseError, match='not complete JSON'):
        parse_nvbandwidth(text[:len(text) // 2])


def test_nvbandwidth_waived_is_not_a_measurement():
    text = read('nvbandwidth-h2d-d2h.out').replace(
        'NOTE:', 'Running device_to_device_memcpy_read_ce.\nWaived. \n\nNOTE:')
    r = parse_nvbandwidth(text)
    assert r.testcases['device_to_device_memcpy_read_ce'].status == 'Waived'
    with pytest.raises(ParseError, match='was waived'):
        r.passed('device_to_device_memcpy_read_ce')


# -- gpu-burn ---------------------------------------------------------------

def test_gpu_burn_cut_short_names_the_cause():
    assert parse_error(parse_gpu_burn,
                       read('gpuburn-30s.cut-by-timeout.out')) == (
        "gpu-burn was cut short: no 'Tested N GPUs' verdict after 100% of "
        "its 30 s burn (output ends with 'Killing processes with SIGTERM "
        "(soft kill)': killed by a time limit shorter than the burn plus "
        "its shutdown, ~20 s)")


def test_gpu_burn_complete():
    r = parse_gpu_burn(read('gpuburn-30s.cut-by-timeout.out') + BURN_TAIL)
    gpu = r.gpus[0]
    assert (gpu.name, gpu.uuid) == (
        'NVIDIA H200', 'GPU-99a62ee6-3258-17cd-89b4-0c89c9f209b9')
    # the last record: 1497 processed at 51058 Gflop/s; 59-62 C
    assert (gpu.gflops, gpu.errors, gpu.max_temp_c, gpu.verdict) == (
        51058.0, 0, 62, 'OK')
    assert (r.duration_s, r.progress_pct) == (30, 100.0)
    assert not r.faulty


def test_gpu_burn_errors_and_faulty():
    text = (read('gpuburn-30s.cut-by-timeout.out').replace(
        "1497 (51058 Gflop/s)   errors: 0 ",
        "1497 (51058 Gflop/s)   errors: 3  (WARNING!)") +
        BURN_TAIL.replace('GPU 0: OK', 'GPU 0: FAULTY'))
    r = parse_gpu_burn(text)
    assert r.gpus[0].errors == 3
    assert r.gpus[0].verdict == 'FAULTY'
    assert [g.index for g in r.faulty] == [0]


def test_gpu_burn_several_gpus():
    # a record of two GPUs in gpu_burn-drv.cpp's layout ("- " between GPUs)
    text = ('GPU 0: NVIDIA H200 (UUID: GPU-aaaa)\n'
            'GPU 1: NVIDIA H200 (UUID: GPU-bbbb)\nBurning for 10 seconds.\n'
            "100.0%  proc'd: 998 (51073 Gflop/s) - 500 (25100 Gflop/s)   "
            'errors: 0 - 0   temps: 61 C - 70 C \n' + BURN_TAIL.replace(
                'Tested 1 GPUs:\n\tGPU 0: OK',
                'Tested 2 GPUs:\n\tGPU 0: OK\n\tGPU 1: OK'))
    r = parse_gpu_burn(text)
    assert [(g.index, g.uuid, g.gflops, g.max_temp_c)
            for g in r.gpus.values()] == [
        (0, 'GPU-aaaa', 51073.0, 61), (1, 'GPU-bbbb', 25100.0, 70)]


def test_gpu_burn_list():
    assert parse_gpu_burn_list(read('gpuburn-list.out')) == {
        0: {'name': 'NVIDIA H200', 'memory_mb': 150109}}
    with pytest.raises(ParseError, match='lists no device'):
        parse_gpu_burn_list('cuInit returned 100 (no CUDA-capable device)\n')


def test_gpu_burn_foreign_output():
    with pytest.raises(ParseError, match='not a gpu-burn output'):
        parse_gpu_burn(read('babelstream-cuda.2pow28.out'))
