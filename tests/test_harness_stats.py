"""The spike filter and summary of the C harness (cg_stats.c), exercised
through cg_stats_cli on given trial vectors."""

import os
import subprocess

import pytest


def stats(built_programs, *vectors, stop=()):
    text = '\n'.join(' '.join(str(v) for v in vec) for vec in vectors)
    args = ['--stop', *(str(a) for a in stop)] if stop else []
    out = subprocess.run([os.path.join(built_programs, 'cg_stats_cli'),
                          *args],
                         input=text + '\n', capture_output=True, text=True,
                         check=True).stdout
    rows = []
    for line in out.splitlines():
        rows.append({k: float(v) for k, v in
                     (kv.split('=') for kv in line.split())})

    return rows


def test_no_spikes_mean_of_all(built_programs):
    [r] = stats(built_programs, [10, 11, 12, 13, 14])
    assert r['kept'] == 5
    assert r['mean'] == pytest.approx(12.0)
    assert r['median'] == 12
    assert r['min'] == 10 and r['max'] == 14
    assert r['filtered'] == 0


def test_spikes_above_1p8_median_are_dropped(built_programs):
    # 30 trials, median 10, threshold 18: 19, 50 and 100 are spikes, 18
    # is not (strictly above); 3 of 30 is within the 10% cap
    vec = [10] * 26 + [18, 19, 50, 100]
    [r] = stats(built_programs, vec)
    assert r['kept'] == 27
    assert r['filtered'] == pytest.approx(3 / 30)
    assert r['mean'] == pytest.approx((26 * 10 + 18) / 27)
    assert r['max'] == 100          # max is over all trials


def test_never_more_than_ten_percent_filtered(built_programs):
    # 10 trials, 5 spikes: only 1 (10%) may go, the largest
    vec = [1, 1, 1, 1, 1, 1, 9, 9, 9, 99]
    [r] = stats(built_programs, vec)
    assert r['median'] == 1
    assert r['kept'] == 9
    assert r['filtered'] == pytest.approx(0.1)
    assert r['mean'] == pytest.approx((6 + 27) / 9)


def test_fewer_than_ten_trials_filter_nothing(built_programs):
    [r] = stats(built_programs, [1, 1, 1, 1, 1, 1, 1, 1, 100])
    assert r['kept'] == 9 and r['filtered'] == 0


def test_even_count_median(built_programs):
    [r] = stats(built_programs, [4, 1, 3, 2])
    assert r['median'] == pytest.approx(2.5)
    assert r['min'] == 1 and r['max'] == 4


def test_relative_standard_error_of_the_kept_mean(built_programs):
    # sd of 10..14 is sqrt(2.5); over sqrt(5) and the mean 12
    [r] = stats(built_programs, [10, 11, 12, 13, 14])
    assert r['rse'] == pytest.approx(2.5 ** 0.5 / 5 ** 0.5 / 12)
    # the spike filtered out does not count: 26 x 10 and 18 kept
    [r] = stats(built_programs, [10] * 26 + [18, 19, 50, 100])
    kept = [10] * 26 + [18]
    mean = sum(kept) / 27
    sd = (sum((x - mean) ** 2 for x in kept) / 26) ** 0.5
    assert r['rse'] == pytest.approx(sd / 27 ** 0.5 / mean)
    [r] = stats(built_programs, [5])
    assert r['rse'] == float('inf')


def test_stopping_on_the_noise(built_programs):
    steady = [10 + 0.01 * (i % 3) for i in range(30)]
    noisy = [10, 30] * 15
    # noisy first, steady after: tight only once the steady trials dominate
    mixed = [10, 30] * 5 + [20] * 40
    rows = stats(built_programs, steady, noisy, mixed, stop=(5, 0.05))
    assert rows[0]['stop'] == 5            # tight at the floor
    assert rows[1]['stop'] == 30           # never: every trial runs
    k = int(rows[2]['stop'])
    assert 5 < k < 50 and (k - 5) % 5 == 0  # a check point after the floor
    # the rule is the statistics': the prefix it stopped at is tight, the
    # check point before it is not
    [at, before] = stats(built_programs, mixed[:k], mixed[:k - 5])
    assert at['rse'] <= 0.05 < before['rse']
    # a higher floor waits for it even when tight earlier
    assert stats(built_programs, steady, stop=(20, 0.05))[0]['stop'] == 20
