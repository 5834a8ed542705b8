"""What the CPU loop stop checks cost in the kernel code alone: bench_stop_checks.py's loop kernels
translated with their checks and without (translate_main, cpp/tests/translate/run.sh builds it),
compiled as the CPU backend compiles them (g++ -O3 -march=native, Metal's fast math), and timed
outside the runtime: a small C++ program loads both objects and calls their entry points in turn,
on one thread or two, by the CPU time of the process. The runtime's own choices (whether a call
runs on the calling thread or the pool, chunk sizes, spinning workers: all from each kernel's
measured cost) are left out, which on a loaded machine move bench_stop_checks.py's ratios by more
than the checks do.

    python benchmarks/bench_stop_check_objects.py TRANSLATE_MAIN [--size 16] [--threads 2] [--rounds 301]

Prints, per kernel, the median of the paired ratios (with checks / as written) and its quartiles.
Each object's results are compared with the other's before timing (c = a * b exactly and with the
product; the FMA loop within 1e-3 of its largest value, as fast math may order its sums apart).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench_stop_checks import LOOP_SOURCE  # noqa: E402

FLAGS = ["-std=c++17", "-O3", "-fPIC", "-shared", "-fvisibility=hidden", "-fno-math-errno", "-fno-trapping-math",
         "-fno-exceptions", "-fno-rtti", "-fsigned-char", "-fopenmp-simd", "-ffp-contract=fast", "-fno-signed-zeros",
         "-fassociative-math", "-march=native", "-fstack-clash-protection",
         "-fno-optimize-sibling-calls"]

TIMER = r"""
#include "msl/targets/cpu_abi.hpp"  // the launch structure, as the runtime declares it
#include <dlfcn.h>
#include <time.h>
#include <algorithm>
#include <cmath>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
int main(int argc, char** argv) {  // timer ENTRY N ROUNDS THREADS A.so B.so
  const int entry = atoi(argv[1]), rounds = atoi(argv[3]), threads = atoi(argv[4]);
  const unsigned n = unsigned(atol(argv[2]));
  metalcall_cpu_entry fn[2];
  for (int k = 0; k < 2; ++k) {
    void* h = dlopen(argv[5 + k], RTLD_NOW | RTLD_LOCAL);
    if (!h) { std::printf("%s\n", dlerror()); return 1; }
    fn[k] = (metalcall_cpu_entry)dlsym(h, entry ? "metalcall_entry_1" : "metalcall_entry_0");
  }
  std::vector<float> a(n), b(n), c(n), first;
  for (unsigned i = 0; i < n; ++i) { a[i] = (i % 97) * 0.01f; b[i] = -float(i % 89) * 0.013f; }
  unsigned param = entry ? n : 400u;  // mul_loop's n, heavy_loop's blocks
  void* args[8] = {a.data(), b.data(), c.data(), &param, nullptr, nullptr, nullptr, nullptr};
  int fault = 0;
  char message[256];
  metalcall_cpu_launch L{};
  L.args = args;
  L.grid[0] = entry ? n / 4 : n;
  L.grid[1] = L.grid[2] = L.group[1] = L.group[2] = L.groups[1] = L.groups[2] = 1;
  L.group[0] = 1024;  // the CPU device's automatic threadgroup
  L.groups[0] = (L.grid[0] + 1023) / 1024;
  L.fault = &fault; L.fault_message = message; L.fault_capacity = sizeof message; L.simd_width = 32;
  std::vector<double> ratios;
  for (int r = 0; r < rounds; ++r) {
    double t[2];
    for (int k = 0; k < 2; ++k) {
      std::fill(c.begin(), c.end(), 0.f);
      std::atomic<unsigned long long> next{0};
      auto work = [&] {
        for (;;) {
          const unsigned long long g = next.fetch_add(8);
          if (g >= L.groups[0]) break;
          fn[k](&L, g, std::min<unsigned long long>(L.groups[0], g + 8), nullptr);
        }
      };
      timespec s0, s1;
      clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &s0);
      std::vector<std::thread> more;
      for (int w = 1; w < threads; ++w) more.emplace_back(work);
      work();
      for (auto& w : more) w.join();
      clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &s1);
      t[k] = (s1.tv_sec - s0.tv_sec) + 1e-9 * (s1.tv_nsec - s0.tv_nsec);
      if (r == 0 && k == 0) first = c;
      if (r == 0 && k == 1) {  // exact for c = a * b; fast math may reorder the FMA loop's sums
        float scale = 0.f;
        for (unsigned i = 0; i < L.grid[0]; ++i) scale = std::max(scale, std::fabs(first[i]));
        for (unsigned i = 0; i < L.grid[0]; ++i)
          if (entry ? first[i] != c[i] : std::fabs(first[i] - c[i]) > 1e-3f * scale) { std::printf("results differ at %u\n", i); return 1; }
      }
    }
    ratios.push_back(t[0] / t[1]);
  }
  if (entry)
    for (unsigned i = 0; i < n; ++i)
      if (c[i] != a[i] * b[i]) { std::printf("c[%u] is not a[%u] * b[%u]\n", i, i, i); return 1; }
  std::sort(ratios.begin(), ratios.end());
  const size_t m = ratios.size();
  std::printf("%+.1f%% [%+.1f%%, %+.1f%%]\n", (ratios[m / 2] - 1) * 100, (ratios[m / 4] - 1) * 100, (ratios[3 * m / 4] - 1) * 100);
}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("translate_main")
    parser.add_argument("--size", type=int, default=16, help="log2 of c = a * b's elements (default 16)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=301)
    parser.add_argument("--cxx", default="g++", help="the host compiler (the CPU backend's: clang++ where it finds one)")
    args = parser.parse_args()
    prelude = os.path.join(REPO, "cpp", "src", "msl", "prelude")
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "loops.metal"), "w") as f:
            f.write(LOOP_SOURCE)
        objects = []
        for name, defines in (("checks", []), ("as_written", ["-D", "METALCALL_LOOP_STOP_CHECKS=0"])):
            code = subprocess.run([args.translate_main, "--target", "cpu", *defines, os.path.join(d, "loops.metal")],
                                  capture_output=True, text=True, check=True).stdout
            if defines:  # the prelude option, as the runtime passes it
                code = "#define METALCALL_LOOP_STOP_CHECKS 0\n" + code
            cpp, so = os.path.join(d, name + ".cpp"), os.path.join(d, name + ".so")
            with open(cpp, "w") as f:
                f.write(code)
            # The backend's clang-only flag (cpu_compiler.cpp): the runtime uses clang where it finds one.
            extra = ["-fmax-type-align=8", "-Wno-pass-failed"] if "clang" in os.path.basename(args.cxx) else []
            subprocess.run([args.cxx, *FLAGS, *extra, "-I", prelude, cpp, "-o", so], check=True)
            objects.append(so)
        with open(os.path.join(d, "timer.cpp"), "w") as f:
            f.write(TIMER)
        timer = os.path.join(d, "timer")
        subprocess.run([args.cxx, "-std=c++17", "-O2", "-I", os.path.join(REPO, "cpp", "src"), os.path.join(d, "timer.cpp"),
                        "-o", timer, "-ldl", "-lpthread"], check=True)
        n = 1 << args.size
        for label, entry, rounds in ((f"c = a * b 2^{args.size} as a loop", 1, args.rounds),
                                     ("FMA recurrence as a loop, 2^16 threads", 0, max(11, args.rounds // 20))):
            out = subprocess.run([timer, str(entry), str(n if entry else 1 << 16), str(rounds), str(args.threads),
                                  *objects], capture_output=True, text=True)
            result = out.stdout.strip() or out.stderr.strip()
            if out.returncode:
                sys.exit(f"{label}: {result}")
            print(f"{label}, {args.threads} thread(s), checks against as written: {result}")


if __name__ == "__main__":
    main()
