#!/usr/bin/env bash
# The kernel object wall (cpp/src/backends/cpu/object_check*.cpp), independent of the MSL
# front end: builds forbidden and allowed shared objects directly with the system compiler,
# with the CPU backend's own flags, and checks that the checker refuses or accepts each
# (ELF on Linux, Mach-O on macOS). Then macho.sh builds Mach-O objects and dylibs with
# clang's Darwin targets on any host, so the Mach-O reader is tested on Linux too.
# Build folder: $OBJECT_CHECK_BUILD_DIR (default: a temporary one). Exits non-zero on failure.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
src="$(cd "$here/../../src" && pwd)"
include="$(cd "$here/../../include" && pwd)"
out="${OBJECT_CHECK_BUILD_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/object-check.XXXXXX")}"
mkdir -p "$out"
"${CXX:-g++}" -std=c++17 -O2 -Wall -Wextra -Werror -I"$src" -I"$include" "$here/object_check_test.cpp" \
  "$src"/backends/cpu/object_check*.cpp -o "$out/object_check_test" || { echo "BUILD FAILED"; exit 1; }
# The flags of backends/cpu/cpu_compiler.cpp's build().
flags=(-std=c++17 -O3 -fPIC -shared -fvisibility=hidden -fno-math-errno -fno-trapping-math -fno-exceptions -fno-rtti)
status=0
cxx=""
object() {  # name, C++ source: builds $out/name.so
  printf '%s\n' "$2" > "$out/$1.cpp"
  rm -f "$out/$1.so"
  "$cxx" "${flags[@]}" -o "$out/$1.so" "$out/$1.cpp" -lm || { echo "FAIL $1: did not build"; status=1; return 1; }
}
check() {  # name, expect, needle
  "$out/object_check_test" "$out/$1.so" "$2" "${3:-}" || status=1
}
# Every host compiler found (the CPU backend uses whichever METALCALL_CXX or PATH gives).
compilers=()
for c in g++ clang++ clang++-{22..14}; do
  command -v "$c" >/dev/null 2>&1 && compilers+=("$c")
done
for cxx in "${compilers[@]}"; do
echo "== $cxx"
# Allowed: libm, memcpy/memset, thread_local (TLS), nothing at load time.
  object allowed 'extern "C" float sinf(float); extern "C" float expf(float);
  static thread_local int calls;
  extern "C" __attribute__((visibility("default"))) void entry(float* a, const float* b, int n) {
    ++calls; __builtin_memcpy(a, b, n * sizeof(float)); for (int i = 0; i < n; ++i) a[i] = sinf(a[i]) + expf(b[i]); }'
  check allowed ok
  # Allowed: glibc's vector variants of libm's functions (-fveclib=libmvec), by their vector-ABI names.
  object vector_math 'extern "C" void _ZGVdN8v_sinf(); extern "C" void _ZGVeN16vv_powf(); extern "C" void _ZGVbN2v_exp();
  extern "C" __attribute__((visibility("default"))) void entry() { _ZGVdN8v_sinf(); _ZGVeN16vv_powf(); _ZGVbN2v_exp(); }'
  check vector_math ok
  # Forbidden: a vector-ABI name of anything else, or a malformed one.
  object vector_system 'extern "C" void _ZGVdN8v_system();
  extern "C" __attribute__((visibility("default"))) void entry() { _ZGVdN8v_system(); }'
  check vector_system refused "'_ZGVdN8v_system'"
  object vector_bad_isa 'extern "C" void _ZGVzN8v_sinf();
  extern "C" __attribute__((visibility("default"))) void entry() { _ZGVzN8v_sinf(); }'
  check vector_bad_isa refused "'_ZGVzN8v_sinf'"
  object vector_no_lanes 'extern "C" void _ZGVdNv_sinf();
  extern "C" __attribute__((visibility("default"))) void entry() { _ZGVdNv_sinf(); }'
  check vector_no_lanes refused "'_ZGVdNv_sinf'"
  # Forbidden: host calls at call time.
  object calls_system 'extern "C" int system(const char*);
  extern "C" __attribute__((visibility("default"))) int entry() { return system("true"); }'
  check calls_system refused "'system'"
  object calls_fopen 'struct FILE; extern "C" FILE* fopen(const char*, const char*);
  extern "C" __attribute__((visibility("default"))) void* entry() { return fopen("/etc/passwd", "r"); }'
  check calls_fopen refused "'fopen'"
  object calls_dlopen 'extern "C" void* dlopen(const char*, int);
  extern "C" __attribute__((visibility("default"))) void* entry() { return dlopen("libc.so.6", 2); }'
  check calls_dlopen refused "'dlopen'"
  object calls_malloc 'extern "C" void* malloc(unsigned long);
  extern "C" __attribute__((visibility("default"))) void* entry() { return malloc(16); }'
  check calls_malloc refused "'malloc'"
  # Forbidden: code that runs at load time.
  object constructor 'volatile int g;
  __attribute__((constructor)) static void boot() { g = 1; }
  extern "C" __attribute__((visibility("default"))) int entry() { return g; }'
  check constructor refused "static initialiser"
  object dynamic_init 'volatile int g;
  static int seed() { return g + 1; }
  static int x = seed();
  extern "C" __attribute__((visibility("default"))) int entry() { return x; }'
  check dynamic_init refused "static initialiser"
  object init_and_system 'extern "C" int system(const char*);
  static int x = system("true");
  extern "C" __attribute__((visibility("default"))) int entry() { return x; }'
  check init_and_system refused "'system'"
  # Forbidden: code that runs at unload time, or at load time from the .init/.fini sections.
  object destructor 'volatile int g;
  __attribute__((destructor)) static void bye() { g = 2; }
  extern "C" __attribute__((visibility("default"))) int entry() { return g; }'
  check destructor refused "static finaliser (.fini_array)"
  object init_section 'volatile int g;
  __attribute__((section(".init"))) void early() { g = 3; }
  extern "C" __attribute__((visibility("default"))) int entry() { return g; }'
  check init_section refused ".init section"
  object fini_section 'volatile int g;
  __attribute__((section(".fini"))) void late() { g = 3; }
  extern "C" __attribute__((visibility("default"))) int entry() { return g; }'
  check fini_section refused ".fini section"
  # Guarded static locals (__cxa_guard_*) and static destructors (__cxa_atexit) are C++ runtime, not kernel code.
  object guarded_static 'volatile int g;
  static int seed() { return g + 1; }
  extern "C" __attribute__((visibility("default"))) int entry() { static int x = seed(); return x; }'
  check guarded_static refused "'__cxa_guard"
  # Not a kernel object at all.
  printf 'not an ELF file' > "$out/garbage.so"
  check garbage unreadable "cannot load the compiled kernel"
  rm -f "$out/fifo.so"; mkfifo "$out/fifo.so" 2>/dev/null && check fifo unreadable "regular file"
done
# Mach-O on any host: objects from clang's Darwin targets, dylibs where ld64.lld is found.
OBJECT_CHECK_TEST="$out/object_check_test" bash "$here/macho.sh" "$out/macho" "${compilers[@]}" || status=1
exit $status
