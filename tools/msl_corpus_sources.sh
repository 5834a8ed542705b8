#!/usr/bin/env bash
# The compile survey (tools/msl_corpus_survey.py) of each public MSL source docs/msl-corpus.md
# records, with the files, include folders, macros and joined files each project builds with.
#
#   tools/msl_corpus_sources.sh DEVICE OUTDIR SOURCE...
#
# DEVICE: cpu, cuda or nvrtc (NVRTC without a GPU: $TRANSLATE_MAIN, default
# /tmp/translate-main-work/translate_main, built by cpp/tests/translate/run.sh). OUTDIR gets
# SOURCE.md (the survey's table) and SOURCE.err (its progress) for each source. SOURCE: mlx ggml
# ggml-bf16 candle mistralrs tnn mnn mnn-fp32 mnn-render mnn-runtime torchao, or all; all2 and all3
# for the second and third corpora ($METALCALL_CORPUS2, $METALCALL_CORPUS3). The corpus
# is read from $METALCALL_CORPUS, else .devcarry/corpus (docs/msl-corpus.md says how to fill it).
# $SURVEY_OPTIONS is added to every survey (say, --jobs 16 on the GPU machine); each survey runs
# at the lowest priority (nice) with a compile budget of 12 per file.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
device="$1" out="$(mkdir -p "$2" && cd "$2" && pwd)"
shift 2
corpus="${METALCALL_CORPUS:-$here/../.devcarry/corpus}"
corpus2="$(cd "${METALCALL_CORPUS2:-$here/../.devcarry/corpus2}" 2>/dev/null && pwd)"
corpus3="$(cd "${METALCALL_CORPUS3:-$here/../.devcarry/corpus3}" 2>/dev/null && pwd)"
cd "$corpus" || { echo "no corpus at $corpus (docs/msl-corpus.md: The corpus and the commands)"; exit 77; }
extra=()
[ "$device" = nvrtc ] && extra=(--translate-main "${TRANSLATE_MAIN:-/tmp/translate-main-work/translate_main}")

survey() {  # survey NAME ARGS...: one source's files and options
  local name="$1"
  shift
  echo "== $name $(date -u +%T)"
  # shellcheck disable=SC2086  # SURVEY_OPTIONS is a list of options
  nice -n 15 python3 "$here/msl_corpus_survey.py" "$@" --root . --budget 12 --batch 128 --markdown \
    --device "$device" "${extra[@]}" ${SURVEY_OPTIONS:-} > "$out/$name.md" 2> "$out/$name.err"
  echo "   exit $? $(date -u +%T)"
}

mnn_shaders=mnn/source/backend/metal/shader
mnn_host=mnn/source/backend/metal
# MNN's runtime shaders are raw strings of its headers, built with ftype and the layer's sizes
# as macros (a head dimension of 128, GQA groups of 4, 4 simdgroups: MetalAttention.mm and
# MetalLinearAttention.mm pass these for common models).
mnn_macros=(-D ftype=half -D ftype2=half2 -D ftype4=half4 -D ftype2x4=half2x4 -D ftype4x4=half4x4
            -D MNN_METAL_FLOAT32_COMPUTER=1 -D MNN_METAL_FLOAT16_STORAGE=1 -D W_QUANT_4=1 -D SIMD_GROUP_MATRIX=1
            -D SIMD_GROUP_REDUCE=1 -D GROUP_SIZE=4 -D HEAD_DIM=128 -D HEAD_K_DIM=128 -D HEAD_V_DIM=128
            -D SIMD_ITERS=4 -D SIMDS_PER_TG=4 -D CK_CHUNK=64 -D SIMD_ITERS_K=4 -D CHUNK_BT=16 -D CK_DV=128 -D CK_W=32
            -D DV_BLOCK=16 -D SIMD_ITERS_V=4 -D CK_DK=128)

strings_of() {  # the HEADER::NAME of each MSL raw string in a header, but those named in $2
  grep -o 'g[A-Za-z0-9]* = R"metal(' "$1" | sed 's/ = .*//' | grep -v -x -E "${2:-^$}" | sed "s|^|$1::|"
}

run_source() {
  case "$1" in
    mlx) survey mlx $(find mlx/mlx/backend/metal/kernels -name '*.metal' | sort) \
           mlx/examples/extensions/axpby/axpby.metal -I mlx ;;
    ggml) survey ggml ggml/src/ggml-metal/ggml-metal.metal -I ggml/src -I ggml/src/ggml-metal ;;
    ggml-bf16) survey ggml-bf16 ggml/src/ggml-metal/ggml-metal.metal -I ggml/src -I ggml/src/ggml-metal \
                 -D GGML_METAL_HAS_BF16=1 ;;
    candle) survey candle $(ls candle/candle-metal-kernels/src/metal_src/*.metal | grep -v /utils.metal) \
              -I candle/candle-metal-kernels/src/metal_src ;;
    mistralrs) survey mistralrs $(find mistralrs -name '*.metal' | sort) ;;
    tnn) survey tnn $(find tnn -name '*.metal' | sort) -I tnn/source ;;
    # createLibrary (MNNMetalContext.mm): MetalDefine.metal and MetalConvolutionActivation.metal before each
    mnn|mnn-fp32)
      survey "$1" $(ls $mnn_shaders/*.metal | grep -v -E '/(MetalDefine|MetalConvolutionActivation)\.metal$') \
        --prepend $mnn_shaders/MetalDefine.metal --prepend $mnn_shaders/MetalConvolutionActivation.metal \
        -D MNN_METAL_FULL_PRECISION=$([ "$1" = mnn ] && echo 0 || echo 1) ;;
    # MetalRasterAndInterpolate.mm's macros
    mnn-render) survey mnn-render $(ls mnn/source/backend/metal/render/shader/*.metal) \
                  -D LOCAL_SIZE=256 -D UNIT=8 -D BIN_NUMBER=16 -D TYPE=float4 ;;
    mnn-runtime)
      survey mnn-runtime $(for h in $mnn_host/*Shader.hpp; do strings_of "$h" 'gBasicConvPrefix|gConv1x1.*'; done) \
        "${mnn_macros[@]}"
      # MetalConvolution1x1.mm: gBasicConvPrefix before each of these
      survey mnn-runtime-conv $(strings_of $mnn_host/ConvSimdGroupShader.hpp 'gBasicConvPrefix') \
        --prepend $mnn_host/ConvSimdGroupShader.hpp::gBasicConvPrefix "${mnn_macros[@]}" ;;
    # codegen/gen_metal_shader_lib.py joins the files, common.metal first
    torchao) survey torchao $(ls torchao/torchao/experimental/kernels/mps/metal/*.metal | grep -v /common.metal) \
               --prepend torchao/torchao/experimental/kernels/mps/metal/common.metal ;;
    # the second corpus: its folder is the survey's root
    ik-llama|metalpetal|mfa|naga|spirv-cross)
      [ -n "$corpus2" ] || { echo "no second corpus (docs/msl-corpus.md)"; return 77; }
      (cd "$corpus2" && run_source2 "$1") ;;
    # the third corpus: its folder is the survey's root
    paddle-lite|paddle-lite-fp32|anc|forge|opensubdiv|moltenvk|tint)
      [ -n "$corpus3" ] || { echo "no third corpus (docs/msl-corpus.md)"; return 77; }
      (cd "$corpus3" && run_source3 "$1") ;;
    *) echo "unknown source $1"; return 2 ;;
  esac
}

run_source2() {
  case "$1" in
    # ikawrakow/ik_llama.cpp: ggml's Metal file with its own quantisation types (IQ*_K, ...)
    ik-llama) survey ik-llama ik_llama/ggml/src/ggml-metal.metal -I ik_llama/ggml/src ;;
    # MetalPetal's framework shaders and its examples' (Xcode builds each file alone)
    metalpetal) survey metalpetal $(ls metalpetal/Frameworks/MetalPetal/Shaders/*.metal) \
                  metalpetal/MetalPetalExamples/Shared/Shaders.metal -I metalpetal/Frameworks/MetalPetal/Shaders ;;
    # metal-flash-attention's last hand-written MSL (v1.0: GEMM, attention, convolution)
    mfa) survey mfa $(ls mfa/Sources/*.metal) ;;
    # naga's MSL output for its WGSL tests (wgpu)
    naga) survey naga $(ls wgpu/naga/tests/out/msl/*.msl) ;;
    # SPIRV-Cross's MSL reference output for its compute shaders (as MoltenVK emits)
    spirv-cross) survey spirv-cross $(ls spirv-cross/reference/shaders-msl/comp/* spirv-cross/reference/shaders-msl-no-opt/comp/* \
                   spirv-cross/reference/shaders-msl/asm/comp/* spirv-cross/reference/shaders-msl-no-opt/asm/comp/*) ;;
  esac
}

run_source3() {
  case "$1" in
    # Paddle-Lite's Metal backend: each file its own unit (lite/backends/metal/CMakeLists.txt), half
    # unless LITE_WITH_METAL_FULL
    paddle-lite|paddle-lite-fp32)
      survey "$1" $(ls paddle-lite/lite/backends/metal/metal_kernel/texture/*.metal | grep -v '\.inc\.metal$') \
        $([ "$1" = paddle-lite-fp32 ] && echo -D LITE_WITH_METAL_FULL=1) ;;
    # ShoYamanishi/AppleNumericalComputing: reductions, scans, sorts, solvers, FFT
    anc) survey anc $(ls anc/*/metal/*.metal) ;;
    # hollance/Forge: a CNN library's shaders and its examples'
    forge) survey forge forge/Forge/Forge/Shaders.metal forge/Examples/*/*/Shaders.metal ;;
    # OpenSubdiv's compute evaluator, after the patch basis sources, with the macros
    # mtlComputeEvaluator.mm sets (a 4-float vertex, no derivatives)
    opensubdiv)
      local osd=opensubdiv/opensubdiv/osd i=0 indices=()
      for b in PARAMETER SIZES OFFSETS INDICES WEIGHTS DST_VERTEX SRC_VERTEX DU_WEIGHTS DV_WEIGHTS DU_DERIVATIVE \
               DV_DERIVATIVE DUU_WEIGHTS DUV_WEIGHTS DVV_WEIGHTS DUU_DERIVATIVE DUV_DERIVATIVE DVV_DERIVATIVE \
               PATCH_ARRAYS PATCH_COORDS PATCH_INDICES PATCH_PARAMS; do indices+=(-D "${b}_BUFFER_INDEX=$i"); i=$((i + 1)); done
      survey opensubdiv $osd/mtlComputeKernel.metal --prepend $osd/patchBasisTypes.h --prepend $osd/patchBasis.h \
        -D OSD_PATCH_BASIS_METAL=1 -D LENGTH=4 -D SRC_STRIDE=4 -D DST_STRIDE=4 -D WORK_GROUP_SIZE=64 "${indices[@]}" ;;
    # MoltenVK's command shaders: the raw strings of MVKCommandPipelineStateFactoryShaderSource.h
    # joined with the MVKDXTnCodec.def it includes (cmd_shaders.metal; docs/msl-corpus.md)
    moltenvk) survey moltenvk moltenvk/cmd_shaders.metal ;;
    # Tint's (Dawn's) MSL test expectations, one program per entry point, every 30th program
    # with a kernel (tint-sample/: docs/msl-corpus.md says how it was drawn)
    tint) survey tint $(find tint-sample -name '*.msl' | LC_ALL=C sort) ;;
  esac
}

[ "$#" -eq 1 ] && [ "$1" = all3 ] && set -- paddle-lite paddle-lite-fp32 anc forge opensubdiv moltenvk tint
[ "$#" -eq 1 ] && [ "$1" = all2 ] && set -- ik-llama metalpetal mfa naga spirv-cross
[ "$#" -eq 1 ] && [ "$1" = all ] && set -- mlx ggml ggml-bf16 candle mistralrs tnn mnn mnn-fp32 mnn-render mnn-runtime torchao
for s in "$@"; do run_source "$s"; done
