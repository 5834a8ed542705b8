"""A pytest plugin that makes metalcall.numpy take its GPU routes on the CPU backend: the kernel
variants GPUs run (cache.force_gpu_variants: threadgroup reductions, matmul, sort, scans, block
Jacobi) and the fft paths GPUs take (fft_tg's short rows, fft_4step's two launches), their
barriers run as fibers. It checks those routes against a test suite where no GPU is at hand:

    PYTHONPATH=tools METALCALL_DEVICE=cpu tools/run_array_api_tests.sh SUITE -p mnp_gpu_variants
"""

from metalcall.numpy._kernels import cache, fft_4step, fft_tg
from metalcall.numpy._kernels import fft as passes

cache.force_gpu_variants = True
fft_tg.usable = lambda dev, n: 2 <= n <= fft_tg.MAX_N and passes.factors(n) is not None
fft_4step.usable = lambda dev, n: n > fft_tg.MAX_N and fft_4step.split(n) is not None
