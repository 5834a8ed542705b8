#!/usr/bin/env bash
# The Mach-O half of the kernel object wall's test (run by run.sh), on any host: kernel-like
# and forbidden objects compiled with clang for arm64 and x86_64 macOS (no SDK is needed: no
# system header is included), linked into dylibs with ld64.lld against a stub libSystem (a
# text .tbd written here) when ld64.lld is found, and crafted files that must be refused as
# unreadable. Usage: macho.sh OUT_DIR COMPILER... (the first clang++ among them builds);
# $OBJECT_CHECK_TEST is the checker program run.sh built. Exits non-zero on failure.
set -u
out="$1"; shift
mkdir -p "$out"
checker="$OBJECT_CHECK_TEST"
clang=""
for c in "$@"; do case "$c" in clang++*) clang="$c"; break ;; esac; done
if [ -z "$clang" ]; then echo "object_check (Mach-O): skipped: no clang++ found to build Mach-O objects"; exit 0; fi
if ! printf 'int f;\n' | "$clang" -x c++ -target arm64-apple-macos11 -c -o "$out/probe.o" - 2>/dev/null; then
  echo "object_check (Mach-O): skipped: $clang cannot build for arm64-apple-macos11"; exit 0
fi
lld=""
for l in ld64.lld ld64.lld-{22..14}; do command -v "$l" >/dev/null 2>&1 && { lld="$l"; break; }; done
[ -n "$lld" ] || echo "object_check (Mach-O): dylibs skipped: no ld64.lld (apt-get install lld); objects only"
# The flags of backends/cpu/cpu_compiler.cpp's build() on macOS (-shared is the link below).
flags=(-std=c++17 -O3 -fPIC -fvisibility=hidden -fno-math-errno -fno-trapping-math -fno-exceptions -fno-rtti
       -fsigned-char -fopenmp-simd -ffp-contract=off)
# Stub libraries: what the kernels below import, under Apple's install names.
mkdir -p "$out/stubs"
tbd() {  # file, install name, symbols
  printf -- "--- !tapi-tbd\ntbd-version: 4\ntargets: [ x86_64-macos, arm64-macos ]\ninstall-name: '%s'\nexports:\n  - targets: [ x86_64-macos, arm64-macos ]\n    symbols: [ %s ]\n...\n" "$2" "$3" > "$out/stubs/$1"
}
tbd libSystem.tbd /usr/lib/libSystem.B.dylib "_sinf, _expf, _cosf, _system, _fopen, _dlopen, _malloc, _memcpy, _memset, \
___bzero, _bzero, _memset_pattern16, ___stack_chk_fail, ___stack_chk_guard, __tlv_bootstrap, dyld_stub_binder, \
___chkstk_darwin, ___sincosf_stret, ___cxa_atexit, ___cxa_guard_acquire, ___cxa_guard_release, ___cxa_guard_abort"
tbd libevil.tbd /tmp/libevil.dylib "_evil"
tbd libc++.tbd /usr/lib/libc++.1.dylib "__ZdlPv"
status=0
check() {  # file, expect, needle
  "$checker" "$1" "$2" "${3:-}" || status=1
}
patch() {  # file, offset, bytes (printf escapes): overwrites in place
  printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}
for arch in arm64 x86_64; do
  echo "== $clang -target $arch-apple-macos11"
  # name, expect, needle, C++ source: an object file, and (with ld64.lld) two dylibs: dyld
  # information (macOS 11) and chained fixups (macOS 13), each checked. $extra_flags go to the
  # compiler, $extra_libs to the linker; $object_expect, when set, is the object file's outcome.
  case_() {
    local name="$1.$arch" expect="$2" needle="$3"
    printf '%s\n' "$4" > "$out/$name.cpp"
    "$clang" -target "$arch-apple-macos11" "${flags[@]}" ${extra_flags:-} -c -o "$out/$name.o" "$out/$name.cpp" \
      || { echo "FAIL $name: did not build"; status=1; return 1; }
    if [ -n "${object_expect:-}" ]; then check "$out/$name.o" "$object_expect"; else check "$out/$name.o" "$expect" "$needle"; fi
    [ -n "$lld" ] || return 0
    "$lld" -arch "$arch" -platform_version macos 11.0 11.0 -dylib -o "$out/$name.dylib" "$out/$name.o" \
      -L "$out/stubs" -lSystem ${extra_libs:-} || { echo "FAIL $name: did not link"; status=1; return 1; }
    check "$out/$name.dylib" "$expect" "$needle"
    "$lld" -arch "$arch" -platform_version macos 13.0 13.0 -fixup_chains -dylib -o "$out/$name.chained.dylib" \
      "$out/$name.o" -L "$out/stubs" -lSystem ${extra_libs:-} || { echo "FAIL $name: did not link"; status=1; return 1; }
    check "$out/$name.chained.dylib" "$expect" "$needle"
  }
  # Allowed: what the prelude's kernels make clang emit for Darwin on its own: libm (sinf and
  # cosf of one argument become __sincosf_stret), memcpy, memset of zero (bzero), a loop
  # storing one constant (memset_pattern16), thread_local (_tlv_bootstrap: every kernel has
  # some), stack protection of a local array, and a frame over a page (Apple's clang probes it
  # with __chkstk_darwin; upstream clang does not, so that name is not exercised here).
  case_ allowed ok "" 'extern "C" float sinf(float); extern "C" float cosf(float); extern "C" float expf(float);
  static thread_local int calls;
  extern "C" __attribute__((visibility("default"))) void entry(float* a, const float* b, int n, volatile char* c) {
    ++calls; __builtin_memcpy(a, b, n * sizeof(float)); __builtin_memset(a + n, 0, n * sizeof(float));
    for (int i = 0; i < n; ++i) a[2 * n + i] = 1.5f;
    for (int i = 0; i < n; ++i) a[i] = sinf(a[i]) * cosf(a[i]) + expf(b[i]);
    volatile char big[16384]; for (int i = 0; i < n; ++i) big[i] = c[i]; c[0] = big[n / 2]; }'
  # Forbidden: host calls at call time.
  case_ calls_system refused "'system'" 'extern "C" int system(const char*);
  extern "C" __attribute__((visibility("default"))) int entry() { return system("true"); }'
  case_ calls_fopen refused "'fopen'" 'struct FILE; extern "C" FILE* fopen(const char*, const char*);
  extern "C" __attribute__((visibility("default"))) void* entry() { return fopen("/etc/passwd", "r"); }'
  case_ calls_dlopen refused "'dlopen'" 'extern "C" void* dlopen(const char*, int);
  extern "C" __attribute__((visibility("default"))) void* entry() { return dlopen("/usr/lib/libc.dylib", 2); }'
  # Forbidden: code that runs at load (or unload) time.
  case_ constructor refused "static initialiser" 'volatile int g;
  __attribute__((constructor)) static void boot() { g = 1; }
  extern "C" __attribute__((visibility("default"))) int entry() { return g; }'
  case_ dynamic_init refused "static initialiser" 'volatile int g;
  static int seed() { return g + 1; }
  static int x = seed();
  extern "C" __attribute__((visibility("default"))) int entry() { return x; }'
  # A destructor: clang registers it with __cxa_atexit from an initialiser on Darwin, or puts it
  # in __mod_term_func (run by dlclose) with -fno-register-global-dtors-with-atexit.
  destructor='volatile int g;
  __attribute__((destructor)) static void bye() { g = 1; }
  extern "C" __attribute__((visibility("default"))) int entry() { return g; }'
  case_ destructor refused "'__cxa_atexit'" "$destructor"
  extra_flags=-fno-register-global-dtors-with-atexit case_ term_function refused "static finaliser" "$destructor"
  case_ init_and_system refused "'system'" 'extern "C" int system(const char*);
  static int x = system("true");
  extern "C" __attribute__((visibility("default"))) int entry() { return x; }'
  case_ guarded_static refused "'__cxa_guard" 'volatile int g;
  static int seed() { return g + 1; }
  extern "C" __attribute__((visibility("default"))) int entry() { static int x = seed(); return x; }'
  if [ -n "$lld" ]; then
    # A library outside libSystem and the C++ runtime: loading it would run its initialisers
    # (also when weakly linked). libc++, which clang++ links into every C++ link, is allowed.
    linked='extern "C" float sinf(float);
    extern "C" __attribute__((visibility("default"))) float entry(float x) { return sinf(x); }'
    object_expect=ok extra_libs=-levil case_ links_evil refused "links '/tmp/libevil.dylib'" "$linked"
    object_expect=ok extra_libs=-weak-levil case_ weak_links_evil refused "links '/tmp/libevil.dylib'" "$linked"
    extra_libs=-lc++ case_ links_libcxx ok "" "$linked"
    # An import hidden from the symbol table (its name there overwritten with an allowed one,
    # the string table being the file's last part): the binds still name it.
    if command -v python3 >/dev/null 2>&1; then
      for kind in dylib chained.dylib; do
        f="$out/hidden_system.$arch.$kind"
        cp "$out/calls_system.$arch.$kind" "$f"
        python3 -c 'import sys; p = sys.argv[1]; b = bytearray(open(p, "rb").read()); i = b.rindex(b"_system\0")
b[i:i + 8] = b"_sinf\0\0\0"; open(p, "wb").write(bytes(b))' "$f"
        check "$f" refused "'system'"
      done
    fi
  fi
  # Load-time code without an initialiser, written in assembly (clang 16 has no Darwin ifunc):
  # a symbol resolver (Mach-O's ifunc: dyld calls it when it binds the symbol, as dlsym of an
  # entry point does), interposing tuples, Objective-C metadata (the runtime runs +load while
  # dyld loads it). Each an object file, the section ones linked too.
  asm_case() {  # name, needle, assembly; $link: also link and check the dylib
    local name="$1.$arch"
    printf '%s\n' "$3" > "$out/$name.s"
    "$clang" -target "$arch-apple-macos11" -x assembler -c -o "$out/$name.o" "$out/$name.s" \
      || { echo "FAIL $name: did not build"; status=1; return 1; }
    check "$out/$name.o" refused "$2"
    [ -n "$lld" ] && [ -n "${link:-}" ] || return 0
    "$lld" -arch "$arch" -platform_version macos 11.0 11.0 -dylib -o "$out/$name.dylib" "$out/$name.o" \
      -L "$out/stubs" -lSystem || { echo "FAIL $name: did not link"; status=1; return 1; }
    check "$out/$name.dylib" refused "$2"
  }
  text='.section __TEXT,__text,regular,pure_instructions
.globl _impl
_impl:
  ret'
  asm_case resolver "symbol resolver 'entry'" "$text
.globl _entry
.symbol_resolver _entry
_entry:
  ret"
  link=1 asm_case interpose "interposing" "$text
.section __DATA,__interpose,interposing
.quad _impl
.quad _impl"
  link=1 asm_case interpose_by_name "interposing" "$text
.section __DATA,__interpose
.quad _impl
.quad _impl"
  link=1 asm_case objc_load "Objective-C metadata (__objc_nlclslist)" "$text
.section __DATA,__objc_nlclslist,regular,no_dead_strip
.quad _impl"
  if [ -n "$lld" ] && command -v python3 >/dev/null 2>&1; then
    # ld64.lld writes no resolver or re-export itself: the export trie of a linked kernel is
    # patched (its entry's flags byte) into each; dyld would act on it at dlsym.
    for kind in dylib chained.dylib; do
      for flag in resolver:0x10 reexport:0x08 absolute:0x02; do
        f="$out/export_${flag%%:*}.$arch.$kind"
        cp "$out/allowed.$arch.$kind" "$f"
        python3 "$(dirname "$0")/macho_export_flag.py" "$f" _entry "${flag##*:}" || { status=1; continue; }
        case "${flag%%:*}" in resolver) needle="symbol resolver 'entry'" ;; reexport) needle="re-export" ;;
          absolute) needle="absolute symbol 'entry'" ;; esac
        check "$f" refused "$needle"
      done
    done
  fi
  # Not a kernel object this reader accepts: each refused as unreadable, with its reason.
  o="$out/allowed.$arch.o"
  size=$(wc -c < "$o")
  head -c 100 "$o" > "$out/truncated_header.$arch.o"; check "$out/truncated_header.$arch.o" unreadable "truncated"
  head -c $((size - 64)) "$o" > "$out/truncated_tail.$arch.o"; check "$out/truncated_tail.$arch.o" unreadable "truncated"
  { printf '\xca\xfe\xba\xbe\x00\x00\x00\x01'; cat "$o"; } > "$out/fat.$arch.o"; check "$out/fat.$arch.o" unreadable "universal"
  cp "$o" "$out/bad_cpu.$arch.o"; patch "$out/bad_cpu.$arch.o" 4 '\x12\x00\x00\x00'
  check "$out/bad_cpu.$arch.o" unreadable "CPU type"
  cp "$o" "$out/bad_commands.$arch.o"; patch "$out/bad_commands.$arch.o" 20 '\xff\xff\xff\x7f'
  check "$out/bad_commands.$arch.o" unreadable "load commands are truncated"
  cp "$o" "$out/big_endian.$arch.o"; patch "$out/big_endian.$arch.o" 0 '\xfe\xed\xfa\xcf'
  check "$out/big_endian.$arch.o" unreadable "big-endian"
  cp "$o" "$out/executable.$arch.o"; patch "$out/executable.$arch.o" 12 '\x02\x00\x00\x00'
  check "$out/executable.$arch.o" unreadable "not a Mach-O dynamic library"
done
# 32-bit Mach-O: from clang's i386 Darwin target where it has one, else a crafted header.
if ! printf 'int f;\n' | "$clang" -x c++ -target i386-apple-macos10.13 -c -o "$out/i386.o" - 2>/dev/null; then
  { printf '\xce\xfa\xed\xfe'; head -c 60 /dev/zero; } > "$out/i386.o"
fi
check "$out/i386.o" unreadable "32-bit"
printf 'MZ not a kernel object at all' > "$out/wrong_magic.o"; check "$out/wrong_magic.o" unreadable "not an ELF or Mach-O"
exit $status
