"""Parser for gpu-burn output (wilicc/gpu-burn: a matrix-multiply stress
of every GPU, results compared between iterations).

::

    GPU 0: NVIDIA H200 (UUID: GPU-99a62ee6-...)
    ...
    Burning for 30 seconds.
    36.7%  proc'd: 499 (48940 Gflop/s)   errors: 0   temps: 59 C
    ...
    100.0%  proc'd: 1497 (51058 Gflop/s)   errors: 0   temps: 62 C
    Killing processes with SIGTERM (soft kill)
    ...
    Tested 1 GPUs:
    	GPU 0: OK

With several GPUs a progress record lists one value per GPU, joined by
`` - `` (``proc'd: 499 (48940 Gflop/s) - 501 (49010 Gflop/s)  errors: 0 -
0  temps: 59 C - 61 C``). A run without the final ``Tested N GPUs`` verdict
was cut short (killed by a timeout while it stopped its workers, as
in the fixture ``gpuburn-30s.cut-by-timeout.out``) and is no result.
``gpu_burn -l`` lists the devices: ``ID 0: NVIDIA H200, 150109MB``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional

from . import ParseError, ending_hint, last_line

__all__ = ['BurnGpu', 'GpuBurnResult', 'parse_gpu_burn',
           'parse_gpu_burn_list']

_GPU_RE = re.compile(r'^GPU (\d+): (.+?) \(UUID: (GPU-[0-9a-fA-F-]+)\)',
                     re.M)
_DURATION_RE = re.compile(r'^Burning for (\d+) seconds', re.M)
_PROC = r"(\d+) \((\d+(?:\.\d+)?) Gflop/s\)"
_RECORD_RE = re.compile(
    rf"(\d+(?:\.\d+)?)%\s+proc'd:\s+((?:{_PROC}(?:\s+-\s+)?)+)\s+"
    r"errors:\s+((?:\d+\s*(?:\((?:WARNING|DIED)!\))?(?:\s*-\s+)?)+)\s+"
    r"temps:\s+((?:(?:\d+ C|--)\s*(?:-\s+)?)+)")
_PROC_RE = re.compile(_PROC)
_VERDICT_HEAD_RE = re.compile(r'^Tested (\d+) GPUs:', re.M)
_VERDICT_RE = re.compile(r'^\s*GPU (\d+): (OK|FAULTY)', re.M)
_LIST_RE = re.compile(r'^ID (\d+): (.+?), (\d+)MB\s*$', re.M)
#: what gpu-burn prints when it cannot start (no device, a CUDA error)
_ERROR_RE = re.compile(r"^(?:Couldn't init .*|No CUDA devices.*|"
                       r".*CUDA_ERROR_\w+.*|Error .*)$", re.M)


@dataclass
class BurnGpu:
    """One GPU's figures: the last progress record's throughput, the
    errors and the highest temperature seen."""

    index: int
    name: str = ''
    uuid: str = ''
    gflops: Optional[float] = None
    errors: int = 0
    max_temp_c: Optional[int] = None
    verdict: str = ''           # 'OK' or 'FAULTY'


@dataclass
class GpuBurnResult:
    """One gpu-burn run."""

    gpus: Dict[int, BurnGpu]
    duration_s: Optional[int] = None
    progress_pct: float = 0.0
    records: int = 0

    @property
    def faulty(self) -> List[BurnGpu]:
        return [g for g in self.gpus.values()
                if g.verdict == 'FAULTY' or g.errors]


def parse_gpu_burn(text: str) -> GpuBurnResult:
    """Parse one complete gpu-burn run. Raises :class:`ParseError` naming
    the cause when it could not start, never reported, or was cut short
    before its ``Tested N GPUs`` verdict."""
    if not text or not text.strip():
        raise ParseError('gpu-burn output is empty')

    gpus: Dict[int, BurnGpu] = {int(m.group(1)): BurnGpu(
        int(m.group(1)), m.group(2), m.group(3))
        for m in _GPU_RE.finditer(text)}
    duration = _DURATION_RE.search(text)
    records = list(_RECORD_RE.finditer(text))
    if not records:
        err = _ERROR_RE.search(text)
        if err:
            raise ParseError(f'gpu-burn did not run: {err.group(0).strip()}')
        if not duration and not gpus:
            raise ParseError("not a gpu-burn output: no 'Burning for N "
                             "seconds' line" + ending_hint(text))
        raise ParseError('gpu-burn reported no progress' + ending_hint(text))

    last_pct = float(records[-1].group(1))
    head = _VERDICT_HEAD_RE.search(text)
    if not head:
        took = f' of its {duration.group(1)} s burn' if duration else ''
        raise ParseError(
            f"gpu-burn was cut short: no 'Tested N GPUs' verdict after "
            f"{last_pct:g}%{took} (output ends with "
            f"{last_line(text, 60)!r}: killed by a time limit shorter than "
            f"the burn plus its shutdown, ~20 s)")

    for rec in records:
        procs = _PROC_RE.findall(rec.group(2))
        errors = re.findall(r'\d+', rec.group(5))
        temps = re.findall(r'(\d+) C|--', rec.group(6))
        for i, (_, gflops) in enumerate(procs):
            gpu = gpus.setdefault(i, BurnGpu(i))
            gpu.gflops = float(gflops)
            if i < len(errors):
                gpu.errors = max(gpu.errors, int(errors[i]))
            if i < len(temps) and temps[i]:
                t = int(temps[i])
                gpu.max_temp_c = max(gpu.max_temp_c or t, t)

    for m in _VERDICT_RE.finditer(text[head.end():]):
        gpus.setdefault(int(m.group(1)), BurnGpu(int(m.group(1)))).verdict \
            = m.group(2)

    tested = int(head.group(1))
    if len([g for g in gpus.values() if g.verdict]) != tested:
        raise ParseError(f'gpu-burn tested {tested} GPUs but gives a '
                         f'verdict for '
                         f'{len([g for g in gpus.values() if g.verdict])}' +
                         ending_hint(text))

    return GpuBurnResult(gpus, int(duration.group(1)) if duration else None,
                         last_pct, len(records))


def parse_gpu_burn_list(text: str) -> Dict[int, Dict[str, object]]:
    """``gpu_burn -l``: ``{index: {'name':, 'memory_mb':}}``."""
    found = {int(m.group(1)): {'name': m.group(2),
                               'memory_mb': int(m.group(3))}
             for m in _LIST_RE.finditer(text)}
    if not found:
        raise ParseError("gpu-burn -l lists no device ('ID N: <name>, "
                         "<memory>MB')" + ending_hint(text))
    return found
