#!/usr/bin/env python3
"""Checks the CUDA translator's rewrites with translate_main: conditionals.metal (branches of
mixed types, msl/passes/conditional_literals.hpp: METALCALL_COND_ARMS where the rewrite applies,
for CUDA and the CPU alike, whose translation must compile with the host compiler) and cuda_constructs.metal (half literals as constexpr half_lit, no
__device__ on a static member's definition, no initializer on __shared__ storage, `U(0)` of a
type parameter as the constexpr literal_cast) and barrier_branches.metal (the branch bodies
holding a barrier that the CUDA translation rejoins, msl/passes/branch_reconvergence.hpp) and
accumulator_elements.metal (the products into array elements that the CUDA translation hands
the prelude with their array, msl/passes/accumulator_elements.hpp) and async_copies.metal (the
device-to-threadgroup copies it hands to mtl_async_copy, msl/passes/async_copies.hpp) and
loop_exits.metal (the exits of loops calling SIMD-group functions that it keeps in their
iteration, msl/passes/simd_loop_exits.hpp) and switch_fall_through.metal (the switches whose
cases fall through into SIMD-group functions that it writes as guarded blocks,
msl/passes/switch_fall_through.hpp) and
product_nests.metal (the loop nests of products and loads it hands to product_nest and
load_nest, msl/passes/product_nests.hpp) and loop_nests.metal (the stop check's counters: a loop nested
in another of the same function adds its count to the outer one's, msl/passes/loop_stops.hpp; in
loop_nest_unrolled.metal an inner loop unrolled in full leaves one stop check, the outer loop's; in
loop_strip_unrolled.metal an innermost loop in strips unrolls as without checks) and
cuda_builtin_names.metal (a user's names that NVRTC declares globally, threadIdx among them,
written mtl_user_<name>). With NVRTC
(tools/nvrtc_check.py) the CUDA translations must compile, which checks their static_asserts
(the types and values MSL gives), and threadgroup_tiles.metal's PTX must read its B layouts
with ldmatrix behind no run-time test (the prelude's test for aligned threadgroup rows folds,
metal_simdgroup_matrix_cuda.h); without NVRTC that part says why it skips.

    check_translations.py PATH/TO/translate_main
"""
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent.parent / "tools"))
import nvrtc_check  # noqa: E402

SOURCE = HERE / "conditionals.metal"
CONSTRUCTS = HERE / "cuda_constructs.metal"
BARRIER_BRANCHES = HERE / "barrier_branches.metal"
ACCUMULATORS = HERE / "accumulator_elements.metal"
TILES = HERE / "threadgroup_tiles.metal"
ASYNC_COPIES = HERE / "async_copies.metal"
NESTS = HERE / "product_nests.metal"
LOOP_NESTS = HERE / "loop_nests.metal"
LOOP_NEST_UNROLLED = HERE / "loop_nest_unrolled.metal"
LOOP_STRIP_UNROLLED = HERE / "loop_strip_unrolled.metal"
LOOP_EXITS = HERE / "loop_exits.metal"
SWITCHES = HERE / "switch_fall_through.metal"
REJOINS = HERE / "rejoins_after_rewrites.metal"
JOINED = HERE / "joined_conditions.metal"
BUILTIN_NAMES = HERE / "cuda_builtin_names.metal"
# The user's names in BUILTIN_NAMES that NVRTC declares globally.
NVRTC_GLOBALS = ("threadIdx", "blockDim", "blockIdx", "gridDim", "y0", "dim3")
# Every conditional of conditionals.metal but the template argument's.
EXPECTED_WRAPS = 12


def translate(exe, target, source=SOURCE, defines=()):
    r = subprocess.run([exe, "--target", target, *[f"-D{d}" for d in defines], str(source)], capture_output=True,
                       text=True)
    if r.returncode != 0:
        print(r.stderr)
        raise SystemExit(f"FAIL: translate_main --target {target} failed")
    return r.stdout


def host_syntax_check(translation):
    """The CPU translation through the host compiler's front end ($CXX, else g++), which checks
    its static_asserts (the types MSL gives); [] when it compiles, else the failure."""
    import os
    import tempfile
    cxx = os.environ.get("CXX", "g++")
    with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as f:
        f.write(translation)
    try:
        r = subprocess.run([cxx, "-std=c++17", "-fsyntax-only", "-I", str(HERE.parent.parent / "src/msl/prelude"),
                            f.name], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    return [] if r.returncode == 0 else [f"CPU: the translation does not compile with {cxx}:\n{r.stderr[:2000]}"]


def main():
    exe = sys.argv[1]
    failures = []
    cuda, cpu = translate(exe, "cuda"), translate(exe, "cpu")
    body = cuda[cuda.index('#line 1 "source.metal"'):]
    wraps = body.count("METALCALL_COND_ARMS((")
    if wraps != EXPECTED_WRAPS:
        failures.append(f"CUDA: {wraps} conditionals rewritten, expected {EXPECTED_WRAPS}")
    flat = "".join(body.split())
    if "i<2?METALCALL_COND_ARMS((xb->d),(xb->d/16.f));" not in flat:
        failures.append("CUDA: dequantize_q5_K's conditional not rewritten as expected")
    if ":3>h2;" not in flat:
        failures.append("CUDA: the template argument's conditional was rewritten")
    cpu_wraps = cpu[cpu.index('#line 1 "source.metal"'):].count("METALCALL_COND_ARMS((")
    if cpu_wraps != EXPECTED_WRAPS:  # bfloat is a class on the CPU too
        failures.append(f"CPU: {cpu_wraps} conditionals rewritten, expected {EXPECTED_WRAPS}")
    failures += host_syntax_check(cpu)
    print(f"translation: {wraps} conditionals rewritten for CUDA, {cpu_wraps} for the CPU")
    constructs = translate(exe, "cuda", CONSTRUCTS)
    flat2 = "".join(constructs[constructs.index('#line 1 "source.metal"'):].split())
    for text, what in [("metal::mtl_rt::half_lit(0x1000000p-24f)", "a half literal as half_lit (its exact value: lex/half_literals.hpp)"),
                       ("constexprconstfloattable::v[2];", "the static member's definition without __device__"),
                       ("init=metal::mtl_rt::literal_cast<U>::from(0);", "U(0) as literal_cast"),
                       ("one=metal::mtl_rt::literal_cast<U>::from(1.0f);", "static_cast<U>(1.0f) as literal_cast"),
                       ("n=metal::mtl_rt::literal_cast<T>::from((bits==40?", "a constexpr T from an int"),
                       ("h_sum=metal::mtl_rt::literal_cast<mtl_half>::from((1+2));", "a constexpr half from an int"),
                       ("h_of_int=metal::mtl_rt::literal_cast<mtl_half>::from((2*3));", "a constant half from an int"),
                       ("__shared__floatscratch[32];", "threadgroup storage without its initializer"),
                       ("metal::fmin(x[i],0.0f)+metal::fmax(x[i],-0.0f)+metal::rsqrt(x[i])+precise::rsqrt(x[i])",
                        "fmin/fmax/rsqrt qualified (NVRTC's global overloads would win), precise:: left alone"),
                       ("metal::mtl_rt::int_arg<long>(metal::mtl_rt::literal_cast<mtl_half>::from(x[i]))",
                        "long(half(v)) wrapped around the half's literal_cast")]:
        if text not in flat2:
            failures.append(f"CUDA: {what} ({text!r} not found)")
    cpu_constructs = "".join(translate(exe, "cpu", CONSTRUCTS).split())
    if "half_lit" in cpu_constructs or "scratch[32]={0};" not in cpu_constructs:
        failures.append("CPU: the CUDA rewrites of cuda_constructs.metal reached the CPU translation")
    # Branch bodies holding a barrier: rejoined at their end on CUDA (three: an if, its else and an
    # inner if; not the four marked KEEP), never on the CPU.
    branches = translate(exe, "cuda", BARRIER_BRANCHES)
    rejoins, lanes = branches.count("metal::mtl_rt::rejoin(mtl_lanes_"), branches.count("metal::mtl_rt::branch_lanes()")
    if rejoins != 3 or lanes != 3:
        failures.append(f"CUDA: {rejoins} rejoins and {lanes} branch_lanes in barrier_branches.metal, expected 3 and 3")
    if "rejoin" in translate(exe, "cpu", BARRIER_BRANCHES):
        failures.append("CPU: a branch body was rejoined (CUDA's rewrite only)")
    print(f"translation: {rejoins} barrier branches rejoined for CUDA")
    # Exits of loops that may call a SIMD-group function: through stay_in_loop on CUDA (those
    # marked STAY, a value or a void call evaluated first where marked so), never on the CPU.
    exits = translate(exe, "cuda", LOOP_EXITS)
    marks = LOOP_EXITS.read_text()
    stays, values = exits.count("metal::mtl_rt::stay_in_loop()"), "".join(exits.split()).count("{auto&&mtl_exit_")
    if stays != marks.count("// STAY") or values != marks.count("// STAY VALUE"):
        failures.append(f"CUDA: {stays} loop exits through stay_in_loop ({values} values first) in {LOOP_EXITS.name}, "
                        f"expected {marks.count('// STAY')} ({marks.count('// STAY VALUE')})")
    # A braced list: into a variable of the declared return type, spelled as the mark says.
    typed = re.findall(r"// STAY TYPED (\S+)", marks)
    flat_exits = "".join(exits.split())
    untyped = sorted({t for t in typed if "{" + t + "mtl_exit_" not in flat_exits})
    narrow = flat_exits.count("returnmetal::mtl_rt::narrow_arg(mtl_exit_")
    if narrow != marks.count("// STAY VALUE NARROW"):
        failures.append(f"CUDA: {narrow} char or short values returned from loops in {LOOP_EXITS.name} through "
                        f"narrow_arg, expected {marks.count('// STAY VALUE NARROW')}")
    if flat_exits.count("returnmtl_exit_") != values - narrow + len(typed) or untyped:
        failures.append(f"CUDA: {flat_exits.count('returnmtl_exit_') - values + narrow} braced lists returned from "
                        f"loops in {LOOP_EXITS.name} evaluated first, expected {len(typed)}; not as typed: {untyped}")
    calls = "".join(exits.split()).count(";if(metal::mtl_rt::stay_in_loop())return;}")
    if calls != marks.count("// STAY CALL"):
        failures.append(f"CUDA: {calls} void calls returned from loops in {LOOP_EXITS.name} evaluated first, "
                        f"expected {marks.count('// STAY CALL')}")
    cpu_exits = translate(exe, "cpu", LOOP_EXITS)
    if "stay_in_loop" in cpu_exits:
        failures.append("CPU: a loop exit went through stay_in_loop (CUDA's rewrite only)")
    failures += host_syntax_check(cpu_exits)
    print(f"translation: {stays} exits of loops calling SIMD-group functions kept in their iteration for CUDA")
    # Switches reaching SIMD-group functions on several paths: guarded blocks on CUDA where marked GUARDED.
    switches = translate(exe, "cuda", SWITCHES)
    guarded, marked = switches.count("unsigned mtl_switch_case_"), SWITCHES.read_text().count("// GUARDED")
    if guarded != marked:
        failures.append(f"CUDA: {guarded} switches of {SWITCHES.name} written as guarded blocks, expected {marked}")
    cpu_switches = translate(exe, "cpu", SWITCHES)
    if "mtl_switch_case_" in cpu_switches:
        failures.append("CPU: a switch written as guarded blocks (CUDA's rewrite only)")
    failures += host_syntax_check(cpu_switches)
    print(f"translation: {guarded} switches reaching SIMD-group functions on several paths as guarded blocks for CUDA")
    # Rejoins after a block holding a loop and after a switch written as guarded blocks.
    rejoined = translate(exe, "cuda", REJOINS).count("metal::mtl_rt::rejoin(mtl_rejoin_")
    marked = REJOINS.read_text().count("// REJOIN")
    if rejoined != marked:
        failures.append(f"CUDA: {rejoined} rejoins in {REJOINS.name}, expected {marked}")
    print(f"translation: {rejoined} rejoins after blocks and rewritten switches for CUDA")
    # Conditions whose branches call SIMD-group functions: evaluated by the lanes that start them,
    # which rejoin before the branches (CUDA only), where marked JOINED.
    joined = translate(exe, "cuda", JOINED)
    joined_lines = [n for n, text in enumerate(JOINED.read_text().splitlines(), 1) if "// JOINED" in text]
    if joined.count("joined_t{") != len(joined_lines):
        failures.append(f"CUDA: {joined.count('joined_t{')} joined conditions in {JOINED.name}, expected "
                        f"{len(joined_lines)} (lines {joined_lines})")
    if "joined_t{" in translate(exe, "cpu", JOINED):
        failures.append("CPU: a condition joined (CUDA's rewrite only)")
    print(f"translation: {joined.count('joined_t{')} conditions choosing SIMD-group calls joined for CUDA")
    # Products into array elements: the calls marked PAIRED go to multiply_accumulate_element
    # with their array on CUDA, those marked KEEP stay, and the CPU keeps all of them.
    accumulators = translate(exe, "cuda", ACCUMULATORS)
    paired = "".join(accumulators.split()).count("metal::mtl_sgm::multiply_accumulate_element(")
    expected = ACCUMULATORS.read_text().count("// PAIRED")
    if paired != expected:
        failures.append(f"CUDA: {paired} products handed over with their array, expected {expected}")
    flat3 = "".join(accumulators.split())
    for text in ["multiply_accumulate_element(acc,acc[i][j],a[i],b[j]);",
                 "multiply_accumulate_element(flat,flat[1+2],a[0],b[1]);",
                 "simdgroup_multiply_accumulate(flat[k++],a[0],b[0],flat[k++]);",
                 "simdgroup_multiply_accumulate(t.acc[0],a[0],b[0],t.acc[0]);"]:
        if text not in flat3:
            failures.append(f"CUDA: {text!r} not in the translation of {ACCUMULATORS.name}")
    if "multiply_accumulate_element" in translate(exe, "cpu", ACCUMULATORS):
        failures.append("CPU: a product was handed over with its array (CUDA's rewrite only)")
    print(f"translation: {paired} products into array elements handed over with their array for CUDA")
    # Device-to-threadgroup copies: those marked ASYNC go to mtl_async_copy on CUDA, those
    # marked KEEP stay, and the CPU keeps all of them.
    copies = translate(exe, "cuda", ASYNC_COPIES)
    handed = copies.count("metal::mtl_rt::mtl_async_copy(")
    expected = ASYNC_COPIES.read_text().count("// ASYNC")
    if handed != expected:
        failures.append(f"CUDA: {handed} copies handed to mtl_async_copy, expected {expected}")
    flat4 = "".join(copies.split())
    if "metal::mtl_rt::mtl_async_copy((mtl_uint4*)(tile+tid),(constmtl_uint4*)(in+tid));" not in flat4:
        failures.append(f"CUDA: the first copy of {ASYNC_COPIES.name} not written as expected")
    if "mtl_async_copy" in translate(exe, "cpu", ASYNC_COPIES):
        failures.append("CPU: a copy was handed to mtl_async_copy (CUDA's rewrite only)")
    print(f"translation: {handed} device-to-threadgroup copies handed to mtl_async_copy for CUDA")
    # Loop nests: the product nests marked NEST go to product_nest on CUDA and the load nests
    # marked LOADS to load_nest, those marked KEEP stay, and the CPU keeps all of them.
    nests = translate(exe, "cuda", NESTS)
    products, loads = nests.count("metal::mtl_sgm::product_nest<"), nests.count("metal::mtl_sgm::load_nest(")
    text = NESTS.read_text()
    if (products, loads) != (text.count("// NEST"), text.count("// LOADS")):
        failures.append(f"CUDA: {products} product nests and {loads} load nests handed over in {NESTS.name}, "
                        f"expected {text.count('// NEST')} and {text.count('// LOADS')}")
    flat5 = "".join(nests.split())
    for part in ["metal::mtl_sgm::product_nest<2,0,1>(metal::mtl_sgm::nest_range(s,mtl_nest_end0),",
                 "[&](decltype(s)s,decltype(i)i,decltype(j)j)->decltype(auto){returnacc[i][j];}",
                 "metal::mtl_sgm::product_nest<0,2,1>(", "metal::mtl_sgm::nest_range(0,1),[&](decltype(i)i,int,int)"]:
        if part not in flat5:
            failures.append(f"CUDA: {part!r} not in the translation of {NESTS.name}")
    if "_nest" in translate(exe, "cpu", NESTS):
        failures.append("CPU: a nest was handed over (CUDA's rewrite only)")
    print(f"translation: {products} product nests and {loads} load nests handed over for CUDA")
    # Loop nests: every loop gets a check; those marked NESTED add their count to their outer loop's.
    loop_nests = translate(exe, "cuda", LOOP_NESTS)
    text = LOOP_NESTS.read_text()
    # (innermost loops check between strips, STRIP_CHECK, and nothing inside a strip)
    strips = loop_nests.count("__METALCALL_STRIP_CHECK(")
    checks = loop_nests.count("__METALCALL_LOOP_CHECK(") + strips
    nested = loop_nests.count("__METALCALL_LOOP_NESTED(")
    if (checks, nested) != (text.count("// NESTED") + text.count("// OWN"), text.count("// NESTED")):
        failures.append(f"CUDA: {checks} loop checks and {nested} nested counts in {LOOP_NESTS.name}, expected "
                        f"{text.count('// NESTED') + text.count('// OWN')} and {text.count('// NESTED')}")
    in_strips = text.count("STRIPS\n")
    if strips != in_strips:
        failures.append(f"CUDA: {strips} loops in strips in {LOOP_NESTS.name}, expected {in_strips}")
    failures += host_syntax_check(translate(exe, "cpu", LOOP_NESTS))
    print(f"translation: {nested} loops of {checks} count into their nest for CUDA")
    # The user's names that NVRTC declares, renamed in the user's code (the entry point that follows
    # spells CUDA's own threadIdx and blockDim), and under poisoning, which calls the prelude with them.
    builtin_names = {}
    for label, defines in (("plain", ()), ("poisoned", ("METALCALL_POISON_THREADGROUP=1",))):
        code = translate(exe, "cuda", BUILTIN_NAMES, defines)
        builtin_names[label] = code
        user = code[code.index('#line 1 "source.metal"'):code.index('#line 1 "metalcall-entry-point')]
        for name in NVRTC_GLOBALS:
            bare = re.findall(rf"(?<![A-Za-z0-9_]){name}(?![A-Za-z0-9_])", user)
            if bare or f"mtl_user_{name}" not in user:
                failures.append(f"CUDA ({label}): the user's {name} is not written mtl_user_{name} in {BUILTIN_NAMES.name}")
    print(f"translation: NVRTC's global names {', '.join(NVRTC_GLOBALS)} renamed in the user's code")
    found, why = nvrtc_check.find_nvrtc()
    if not found:
        print(f"SKIP (NVRTC part): {why}")
    else:
        for name, code in [(SOURCE.name, cuda), (CONSTRUCTS.name, constructs), (BARRIER_BRANCHES.name, branches),
                           (ACCUMULATORS.name, accumulators), (ASYNC_COPIES.name, copies), (NESTS.name, nests),
                           (LOOP_NESTS.name, loop_nests), (LOOP_EXITS.name, exits), (SWITCHES.name, switches), (JOINED.name, joined),
                           (BUILTIN_NAMES.name, builtin_names["plain"]),
                           (BUILTIN_NAMES.name + " (poisoned)", builtin_names["poisoned"])]:
            ok, log, seconds = nvrtc_check.compile_cuda(code, "compute_90", *found)
            print(f"NVRTC, {name}: {'compiled' if ok else 'FAILED'} in {seconds:.1f} s")
            if not ok:
                print(log)
                failures.append(f"NVRTC could not compile the CUDA translation of {name}")
        # A nest whose inner loop unrolls in full: one stop check left, the outer loop's.
        ptx = []
        ok, log, seconds = nvrtc_check.compile_cuda(translate(exe, "cuda", LOOP_NEST_UNROLLED), "compute_90", *found,
                                                    ptx=ptx)
        if not ok:
            print(log)
            failures.append(f"NVRTC could not compile the CUDA translation of {LOOP_NEST_UNROLLED.name}")
        else:
            entry = ptx[0][ptx[0].index(".entry"):]
            checks = entry.count("stop_check")
            print(f"NVRTC, {LOOP_NEST_UNROLLED.name}: {checks} stop_check call(s) in {seconds:.1f} s")
            if checks != 1:
                failures.append(f"CUDA: {LOOP_NEST_UNROLLED.name} has {checks} stop_check calls, expected 1 (the outer loop's)")
        # An innermost loop in strips: unrolled as without checks, one stop_check call.
        muls = {}
        for label, defines in (("checks", ()), ("no checks", ("METALCALL_LOOP_STOP_CHECKS=0",))):
            ptx = []
            ok, log, seconds = nvrtc_check.compile_cuda(translate(exe, "cuda", LOOP_STRIP_UNROLLED, defines),
                                                        "compute_90", *found, ptx=ptx)
            if not ok:
                print(log)
                failures.append(f"NVRTC could not compile the CUDA translation of {LOOP_STRIP_UNROLLED.name} ({label})")
                continue
            entry = ptx[0][ptx[0].index(".entry"):]
            # The unrolled loop's block: the most multiplies between two labels.
            muls[label] = (max(b.count("mul.rn.f32") for b in entry.split("$L__BB")), entry.count("stop_check"))
        if len(muls) == 2:
            print(f"NVRTC, {LOOP_STRIP_UNROLLED.name}: (multiplies in the loop's block, stop_check calls) {muls}")
            if muls["checks"] != (muls["no checks"][0], 1) or muls["checks"][0] < 8:
                failures.append(f"CUDA: {LOOP_STRIP_UNROLLED.name}'s strip is not unrolled as its loop: {muls}")
        # A K step's 32 blocks in load nests of four blocks: two ldmatrix.x4 for each four
        # (both layouts; ptxas later drops those that no product uses), and no test left
        # behind: no isspacep, no branch up to the stores of C (the K step is straight-line
        # code once the test folds; each store of C then tests its pair's alignment).
        ptx = []
        ok, log, seconds = nvrtc_check.compile_cuda(translate(exe, "cuda", TILES), "compute_90", *found, ptx=ptx)
        if not ok:
            print(log)
            failures.append(f"NVRTC could not compile the CUDA translation of {TILES.name}")
        else:
            entry = ptx[0][ptx[0].index(".entry"):]
            k_step = entry[:entry.rindex("mma.sync")]  # up to the last product: the stores come after
            loads, tests, branches = entry.count("ldmatrix.sync.aligned.m8n8.x4"), entry.count("isspacep"), k_step.count("bra")
            print(f"NVRTC, {TILES.name}: {loads} ldmatrix.x4, {tests} isspacep, {branches} branches before the stores "
                  f"in {seconds:.1f} s")
            if loads != 16 or tests or branches:
                failures.append(f"CUDA: {TILES.name}'s blocks: {loads} ldmatrix.x4 (expected 16), {tests} isspacep "
                                f"and {branches} branches before the stores (expected none)")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
