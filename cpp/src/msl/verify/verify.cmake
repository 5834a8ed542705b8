# The translation verifier (msl/verify/translation_verifier.hpp): libclang is loaded at
# run time, so nothing here needs LLVM to build.
list(APPEND METALCALL_CORE_SOURCES
  cpp/src/msl/verify/call_graph_check.cpp
  cpp/src/msl/verify/libclang_api.cpp
  cpp/src/msl/verify/libclang_parse.cpp
  cpp/src/msl/verify/translation_facts.cpp
  cpp/src/msl/verify/translation_verifier.cpp
  cpp/src/msl/verify/verifier_stack.cpp
)
