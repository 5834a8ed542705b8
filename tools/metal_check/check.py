#!/usr/bin/env python3
"""The Linux check of the Metal backend; run.sh is the entry point.

1. Generates Metal/Foundation declarations from the pyobjc-framework-Metal metadata.
2. Compiles every .mm of cpp/src/backends/metal with clang as Objective-C++ (ARC, blocks):
   once for Linux with the GNUstep runtime ABI, and once per simulated macOS SDK (13.0,
   14.0, 15.0, the newest) for an x86_64/arm64 macOS 13 target, where clang enforces
   availability: an API newer than macOS 13 outside `if (@available(...))` is an error.
3. Builds and runs logic_test.cpp against the backend's plain C++ (metal_support.cpp) and
   the MSL front end it uses (msl/errors/diagnostics.cpp parses Metal's compile log).
4. Negative tests: copies of the .mm with one mistake each must fail, for the stated reason.
"""

import concurrent.futures
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BACKEND = os.path.join(ROOT, "cpp", "src", "backends", "metal")
PLAN = os.path.join(ROOT, "cpp", "src", "backends", "metal_plan")
sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
sys.path.insert(0, HERE)
import generate_headers  # noqa: E402

SDKS = ["13.0", "14.0", "15.0", "latest"]
CLANG = os.environ.get("METAL_CHECK_CLANG", "clang++-16")

# (name, file, text to find, replacement, configuration, diagnostic the failure must show)
NEGATIVE_TESTS = [
    ("misspelled selector", "metal_queue.mm",
     "        threadsPerThreadgroup:MTLSize{d.group[0], d.group[1], d.group[2]}];\n  }\n  void operator()(const DispatchThreadgroups",
     "        threadsPerThreadGroup:MTLSize{d.group[0], d.group[1], d.group[2]}];\n  }\n  void operator()(const DispatchThreadgroups",
     "gnustep", r"no known instance method for selector 'dispatchThreads:threadsPerThreadGroup:'|"
                r"instance method .* not found"),
    ("wrong argument count", "metal_queue.mm",
     "[compute setBuffer:s.buffers[b.buffer] offset:b.offset atIndex:b.index]",
     "[compute setBuffer:s.buffers[b.buffer] atIndex:b.index]",
     "gnustep", r"no known instance method for selector 'setBuffer:atIndex:'|instance method .* not found"),
    ("selector of another protocol", "metal_queue.mm",
     "[command_buffer commit]", "[empty_ commit]",
     "gnustep", r"instance method '-commit' not found|no known instance method for selector 'commit'"),
    ("wrong argument type", "metal_queue.mm",
     "[compute dispatchThreads:MTLSize{d.threads[0], d.threads[1], d.threads[2]}",
     "[compute dispatchThreads:d.threads[0]",
     "gnustep", r"no viable conversion|cannot initialize a parameter|incompatible"),
    ("misspelled C function", "metal_device.mm",
     "in MTLCopyAllDevices())", "in MTLCopyAllDevice())",
     "gnustep", r"undeclared identifier 'MTLCopyAllDevice'|use of undeclared"),
    # P2.1 item 9: the call that switches a dual-GPU Mac to its discrete GPU is out of the API table.
    ("MTLCreateSystemDefaultDevice", "metal_device.mm",
     "in MTLCopyAllDevices())", "in @[MTLCreateSystemDefaultDevice()])",
     "gnustep", r"undeclared identifier 'MTLCreateSystemDefaultDevice'|use of undeclared"),
    ("newer API without @available", "metal_compiler.mm",
     "  if (@available(macOS 15.0, *)) {\n    // What fastMathEnabled",
     "  {\n    // What fastMathEnabled",
     "darwin-15.0", r"only available on macOS 15\.0 or newer"),
    ("newer API without an SDK guard", "metal_compiler.mm",
     "#if __MAC_OS_X_VERSION_MAX_ALLOWED >= 150000\n  if (@available(macOS 15.0, *)) {",
     "#if 1\n  if (@available(macOS 15.0, *)) {",
     "darwin-14.0", r"no known instance method for selector 'setMathMode:'|undeclared identifier 'MTLMathMode"),
    ("ARC switched off", "metal_device.mm", None, None,
     "gnustep-no-arc", r"needs ARC"),
    ("ARC switched off for the compiler", "metal_compiler.mm", None, None,
     "gnustep-no-arc", r"needs ARC"),
    ("ARC switched off for the queue", "metal_queue.mm", None, None,
     "gnustep-no-arc", r"needs ARC"),
]

# The table cannot invent API either: (name, text in metal_api.py, replacement, generator message)
TABLE_NEGATIVE_TESTS = [
    ("misspelled selector in the table",
     '("dispatchThreads:threadsPerThreadgroup:", "10.13")',
     '("dispatchThreads:threadsPerThreadGroup:", "10.13")',
     r"dispatchThreads:threadsPerThreadGroup:: no such selector in the pyobjc metadata"),
    ("refinement that does not fit the encoding",
     '("length", "10.11")', '("length", "10.11", {"returns": "id<MTLBuffer>"})',
     r"MTLBuffer length: the result is integer .* but metal_api.py gives object"),
]


def fail(message):
    print("metal check: FAILED: " + message, file=sys.stderr)
    sys.exit(1)


def host_cxx_include_dirs():
    """The C++ library and target include directories clang uses on this Linux host."""
    output = subprocess.run([CLANG, "-x", "c++", "-E", "-v", "/dev/null"], capture_output=True, text=True).stderr
    block = output.split("#include <...> search starts here:")[1].split("End of search list.")[0]
    dirs = [line.strip() for line in block.splitlines() if line.strip()]
    return [d for d in dirs if "/c++/" in d or re.search(r"/include/[a-z0-9_]+-linux-gnu$", d)]


def configurations(include_root):
    common = ["-x", "objective-c++", "-std=c++17", "-fsyntax-only", "-fblocks", "-Wall", "-Wextra", "-Werror",
              "-I", os.path.join(ROOT, "cpp", "include"), "-I", os.path.join(ROOT, "cpp", "src")]
    arch = "arm64" if platform.machine() in ("aarch64", "arm64") else "x86_64"
    darwin = ["-target", "%s-apple-macos%s" % (arch, generate_headers_deployment()), "-nostdinc++",
              "-U__nonnull", "-U__nullable", "-D_GNU_SOURCE",
              "-Werror=unguarded-availability", "-Werror=unguarded-availability-new"]
    for d in host_cxx_include_dirs():
        darwin += ["-isystem", d]
    configs = {
        "gnustep": common + ["-fobjc-arc", "-fobjc-runtime=gnustep-2.0", "-I", os.path.join(include_root, "sdk-latest")],
        "gnustep-no-arc": common + ["-fobjc-runtime=gnustep-2.0", "-I", os.path.join(include_root, "sdk-latest")],
    }
    for sdk in SDKS:
        configs["darwin-" + sdk] = common + ["-fobjc-arc"] + darwin + ["-I", os.path.join(include_root, "sdk-" + sdk)]
    return configs


def generate_headers_deployment():
    return generate_headers.load_api(os.path.join(HERE, "metal_api.py")).DEPLOYMENT_TARGET


def compile_one(flags, path):
    result = subprocess.run([CLANG] + flags + [path], capture_output=True, text=True)
    return result.returncode, result.stdout + result.stderr


def main():
    work = tempfile.mkdtemp(prefix="metal-check-")
    try:
        include_root = os.path.join(work, "include")
        try:
            wheel = os.environ.get("METAL_CHECK_WHEEL") or generate_headers.download_wheel(work)
        except (subprocess.CalledProcessError, generate_headers.CheckError) as error:
            fail("could not download pyobjc-framework-Metal %s: %s" % (generate_headers.PYOBJC_METAL_VERSION, error))
        command = [sys.executable, os.path.join(HERE, "generate_headers.py"), "--wheel", wheel, "--out", include_root]
        for sdk in SDKS:
            command += ["--sdk", sdk]
        if subprocess.run(command).returncode != 0:
            fail("could not generate the declarations")
        configs = configurations(include_root)

        sources = sorted(os.path.join(BACKEND, f) for f in os.listdir(BACKEND) if f.endswith(".mm"))
        if not sources:
            fail("no .mm files in " + BACKEND)
        jobs = {}
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as pool:
            for source in sources:
                for name, flags in configs.items():
                    if name != "gnustep-no-arc":
                        jobs[(source, name)] = pool.submit(compile_one, flags, source)
            logic = pool.submit(run_logic_test, work)
            negatives = {test[0]: pool.submit(run_negative_test, work, configs, test) for test in NEGATIVE_TESTS}
            for test in TABLE_NEGATIVE_TESTS:
                negatives[test[0]] = pool.submit(run_table_negative_test, work, wheel, test)
            problems = []
            for (source, name), job in sorted(jobs.items()):
                code, output = job.result()
                if code != 0:
                    problems.append("%s [%s]:\n%s" % (os.path.relpath(source, ROOT), name, output))
            if problems:
                fail("the backend does not compile against the generated declarations:\n" + "\n".join(problems))
            logic_message = logic.result()
            for name, job in negatives.items():
                job.result()
        print(logic_message)
        print("metal check: %d files ok, negative tests failed as expected" % len(sources))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def write_prelude_texts(work):
    """The prelude's text as cpp/build_tools/prelude_names_main.cpp reads it (CMake generates the same file
    from cpp/src/msl/analysis/stdlib_names.cmake for the real build)."""
    prelude = os.path.join(ROOT, "cpp", "src", "msl", "prelude")
    texts = [open(os.path.join(prelude, f)).read() for f in sorted(os.listdir(prelude)) if f.endswith(".h")]
    path = os.path.join(work, "msl_prelude_texts.cpp")
    with open(path, "w") as out:
        out.write("#include <cstddef>\nnamespace metalcall::msl {\n"
                  "extern const char* const kPreludeTexts[];\nextern const std::size_t kPreludeTextCount;\n"
                  "const char* const kPreludeTexts[] = {\n")
        for text in texts:
            out.write('  R"mcprelude(' + text + ')mcprelude",\n')
        out.write("};\nconst std::size_t kPreludeTextCount = %d;\n}\n" % len(texts))
    return path


def write_prelude_names(work):
    """The prelude's name table that msl/analysis/stdlib_names.cpp reads, made from its text as the
    CMake build makes it (cpp/build_tools/prelude_names.sh)."""
    path = os.path.join(work, "msl_prelude_names.cpp")
    made = subprocess.run([os.path.join(ROOT, "cpp", "build_tools", "prelude_names.sh"), write_prelude_texts(work), path],
                          capture_output=True, text=True, env=dict(os.environ, CXX=CLANG))
    if made.returncode != 0:
        fail("the prelude's name table was not made:\n" + made.stdout + made.stderr)
    return path


def run_logic_test(work):
    binary = os.path.join(work, "logic_test")
    msl = os.path.join(ROOT, "cpp", "src", "msl")
    msl_sources = sorted(os.path.join(stage, f) for stage, _, files in os.walk(msl) for f in files if f.endswith(".cpp"))
    msl_sources.append(write_prelude_names(work))
    # -O0: one clang process compiles the whole front end here, in about half -O1's time (CI has 2 cores).
    build = subprocess.run([CLANG, "-std=c++17", "-O0", "-Wall", "-Wextra", "-Werror",
                            "-I", os.path.join(ROOT, "cpp", "include"), "-I", os.path.join(ROOT, "cpp", "src"),
                            os.path.join(HERE, "logic_test.cpp"), os.path.join(BACKEND, "metal_support.cpp"),
                            # Metal's rules on buffers and textures (backends/metal_plan; plan_test runs the rest)
                            os.path.join(PLAN, "metal_resources.cpp"),
                            # Metal's kernel list and pipeline reflection against the front end's
                            os.path.join(PLAN, "library_reflection.cpp"),
                            # function constants as the driver sets them
                            os.path.join(PLAN, "function_constants.cpp"),
                            # the core pieces metal_support.cpp builds on
                            os.path.join(ROOT, "cpp", "src", "core", "scalar_packing.cpp"),
                            os.path.join(ROOT, "cpp", "src", "core", "constant_components.cpp"),
                            os.path.join(ROOT, "cpp", "src", "core", "reflection.cpp"),
                            # pixel formats' names and sizes (metal_resources.cpp's format rules)
                            os.path.join(ROOT, "cpp", "src", "core", "texture_values.cpp")]
                           # and the MSL front end (compile-log parsing and CompileError in msl/diagnostics)
                           + msl_sources + ["-o", binary], capture_output=True, text=True)
    if build.returncode != 0:
        fail("logic_test.cpp does not build:\n" + build.stderr)
    run = subprocess.run([binary], capture_output=True, text=True)
    if run.returncode != 0:
        fail("logic_test failed:\n" + run.stdout + run.stderr)
    return run.stdout.strip().splitlines()[-1] + "\n" + run_plan_test(work)


def run_plan_test(work):
    """The planner's tests: the Metal plan (backends/metal_plan) with the core values it uses."""
    binary = os.path.join(work, "plan_test")
    core = os.path.join(ROOT, "cpp", "src", "core")
    build = subprocess.run([CLANG, "-std=c++17", "-O0", "-Wall", "-Wextra", "-Werror", "-pthread",
                            "-I", os.path.join(ROOT, "cpp", "include"), "-I", os.path.join(ROOT, "cpp", "src"),
                            os.path.join(HERE, "plan_test.cpp")]
                           + sorted(os.path.join(PLAN, f) for f in os.listdir(PLAN) if f.endswith(".cpp"))
                           + [os.path.join(core, f) for f in ("buffer.cpp", "completion.cpp", "interrupt.cpp",
                                                               "texture_values.cpp", "reflection.cpp",
                                                               "scalar_packing.cpp", "constant_components.cpp")]
                           + ["-o", binary], capture_output=True, text=True)
    if build.returncode != 0:
        fail("plan_test.cpp does not build:\n" + build.stderr)
    run = subprocess.run([binary], capture_output=True, text=True)
    if run.returncode != 0:
        fail("plan_test failed:\n" + run.stdout + run.stderr)
    return run.stdout.strip().splitlines()[-1]


def run_negative_test(work, configs, test):
    name, file_name, find, replace, config, diagnostic = test
    original = os.path.join(BACKEND, file_name)
    with open(original) as f:
        text = f.read()
    if find is not None:
        if text.count(find) != 1:
            fail("negative test '%s': %r must occur exactly once in %s; update NEGATIVE_TESTS in check.py"
                 % (name, find, file_name))
        text = text.replace(find, replace)
    directory = os.path.join(work, "negative", re.sub(r"\W+", "_", name))
    os.makedirs(directory)
    path = os.path.join(directory, file_name)
    with open(path, "w") as f:
        f.write(text)
    code, output = compile_one(configs[config], path)
    if code == 0:
        fail("negative test '%s' compiled: the check would not catch that mistake" % name)
    if not re.search(diagnostic, output):
        fail("negative test '%s' failed for another reason than expected (%s):\n%s" % (name, diagnostic, output))


def run_table_negative_test(work, wheel, test):
    name, find, replace, message = test
    with open(os.path.join(HERE, "metal_api.py")) as f:
        text = f.read()
    if text.count(find) != 1:
        fail("negative test '%s': %r must occur exactly once in metal_api.py; update TABLE_NEGATIVE_TESTS"
             % (name, find))
    directory = os.path.join(work, "negative", re.sub(r"\W+", "_", name))
    os.makedirs(directory)
    api = os.path.join(directory, "metal_api.py")
    with open(api, "w") as f:
        f.write(text.replace(find, replace))
    result = subprocess.run([sys.executable, os.path.join(HERE, "generate_headers.py"), "--wheel", wheel,
                             "--api", api, "--out", os.path.join(directory, "include")],
                            capture_output=True, text=True)
    if result.returncode == 0:
        fail("negative test '%s': the generator accepted the table" % name)
    if not re.search(message, result.stderr):
        fail("negative test '%s' failed for another reason than expected (%s):\n%s" % (name, message, result.stderr))


if __name__ == "__main__":
    main()
