"""metalcall.benchmark: Kernel.benchmark's result type and the function behind it (written in
_benchmark.py; this module is its public names only). `kernel.benchmark(grid, *args)` is the usual
way in; `python -m metalcall bench` builds on it."""

from ._benchmark import BenchmarkResult, benchmark, format_seconds

BenchmarkResult.__module__ = __name__

__all__ = ["BenchmarkResult", "benchmark", "format_seconds"]
