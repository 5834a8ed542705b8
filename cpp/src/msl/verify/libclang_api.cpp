// Finds and loads libclang (see libclang_api.hpp).
#include "msl/verify/libclang_api.hpp"

#include <cstdlib>
#include <dlfcn.h>
#include <glob.h>
#include <mutex>
#include <sys/stat.h>
#include <vector>

namespace metalcall::msl::clang_c {

namespace {

std::mutex wheel_mutex;
std::string& wheel_path = *new std::string();  // never destroyed (exit-safe statics)

template <typename F>
void bind(void* lib, F& field, const char* name, std::string* missing) {
  field = reinterpret_cast<F>(dlsym(lib, name));
  if (!field) *missing += std::string(missing->empty() ? "" : ", ") + name;
}

// True when every entry point is there; `missing` names those that are not.
bool bind_all(void* lib, Api& a, std::string* missing) {
#define MC_BIND(field) bind(lib, a.field, "clang_" #field, missing)
  MC_BIND(createIndex); MC_BIND(toggleCrashRecovery); MC_BIND(disposeIndex); MC_BIND(parseTranslationUnit2); MC_BIND(disposeTranslationUnit);
  MC_BIND(saveTranslationUnit); MC_BIND(getClangVersion);
  MC_BIND(getTranslationUnitCursor); MC_BIND(visitChildren); MC_BIND(getCursorKind); MC_BIND(getCursorReferenced);
  MC_BIND(getCanonicalCursor); MC_BIND(getCursorSemanticParent); MC_BIND(getSpecializedCursorTemplate);
  MC_BIND(getCursorDefinition);
  MC_BIND(isCursorDefinition); MC_BIND(Cursor_isNull); MC_BIND(getNumOverloadedDecls); MC_BIND(getOverloadedDecl);
  MC_BIND(getCursorSpelling); MC_BIND(getCursorUSR); MC_BIND(getCursorType); MC_BIND(getCanonicalType); MC_BIND(getTypeSpelling);
  MC_BIND(getPointeeType); MC_BIND(getArrayElementType); MC_BIND(getTypeDeclaration); MC_BIND(getCursorLocation);
  MC_BIND(getExpansionLocation); MC_BIND(getFileLocation); MC_BIND(getPresumedLocation); MC_BIND(getFileName); MC_BIND(getCString);
  MC_BIND(disposeString); MC_BIND(getNumDiagnostics); MC_BIND(getDiagnostic); MC_BIND(getDiagnosticSeverity);
  MC_BIND(formatDiagnostic); MC_BIND(disposeDiagnostic); MC_BIND(Cursor_Evaluate); MC_BIND(EvalResult_getAsLongLong);
  MC_BIND(EvalResult_dispose); MC_BIND(getCursorExtent); MC_BIND(tokenize); MC_BIND(getTokenSpelling);
  MC_BIND(disposeTokens);
#undef MC_BIND
  return missing->empty();
}

// The system's libclang: the versioned names first (a distribution's libclang-N-dev
// is often not installed, only its library), newest LLVM folder first.
std::vector<std::string> system_candidates() {
  std::vector<std::string> out = {"libclang.so.1", "libclang.so"};
  for (const char* pattern : {"/usr/lib/llvm-*/lib/libclang.so.1", "/usr/lib/llvm-*/lib/libclang-*.so.1",
                              "/usr/lib/x86_64-linux-gnu/libclang-*.so.1", "/usr/lib/aarch64-linux-gnu/libclang-*.so.1",
                              "/usr/lib64/libclang.so.*", "/opt/homebrew/opt/llvm/lib/libclang.dylib",
                              "/usr/local/opt/llvm/lib/libclang.dylib"}) {
    glob_t g{};
    if (glob(pattern, 0, nullptr, &g) == 0) {
      for (std::size_t i = g.gl_pathc; i-- > 0;) out.push_back(g.gl_pathv[i]);  // glob sorts: newest last
    }
    globfree(&g);
  }
  return out;
}

// A precompiled header is Clang's own format, of one Clang build: the version names it, and
// the library file's size and time tell a rebuilt or replaced library of the same version.
std::string identity_of(const Api& a) {
  std::string file = a.path;
  Dl_info info{};  // the file dlopen found (a bare name was searched for)
  if (dladdr(reinterpret_cast<void*>(a.createIndex), &info) && info.dli_fname) file = info.dli_fname;
  struct stat st{};
  std::string id = a.path + "\n" + file + "\n" + a.text(a.getClangVersion());
  if (stat(file.c_str(), &st) == 0)
    id += "\n" + std::to_string(st.st_size) + " " + std::to_string(st.st_mtime) + " " + std::to_string(st.st_ino);
  return id;
}

const Api* load(std::string* why) {
  std::vector<std::string> candidates;
  const char* env = std::getenv("METALCALL_LIBCLANG");
  if (env && *env) {
    candidates.push_back(env);  // the user's choice: no other library stands in for it
  } else {
    std::lock_guard<std::mutex> lock(wheel_mutex);
    if (!wheel_path.empty()) candidates.push_back(wheel_path);
    for (auto& c : system_candidates()) candidates.push_back(c);
  }
  std::string tried;
  for (const auto& c : candidates) {
    void* lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* error = dlerror();
      if (env && *env) tried = "METALCALL_LIBCLANG=" + c + " does not load: " + (error ? error : "");
      continue;
    }
    auto* a = new Api{};  // lives for the process, as the library does
    std::string missing;
    if (!bind_all(lib, *a, &missing)) {
      tried += (tried.empty() ? "" : "; ") + c + " lacks " + missing;
      delete a;
      dlclose(lib);
      continue;
    }
    a->path = c;
    a->identity = identity_of(*a);
    return a;
  }
  *why = "libclang was not found" + (tried.empty() ? std::string() : " (unusable: " + tried + ")") +
         ": install it with `pip install libclang` (or your system's libclang package), or set "
         "METALCALL_LIBCLANG to the library's path";
  return nullptr;
}

}  // namespace

std::string Api::text(CXString s) const {
  const char* c = getCString(s);
  std::string out = c ? c : "";
  disposeString(s);
  return out;
}

// libclang parses on a thread of its own with a fixed 8 MiB stack unless LIBCLANG_NOTHREADS is
// set; the verifier runs it on its own far larger one instead (verifier_stack.hpp). It is set
// while the library loads (static initialisation), before any thread of metalcall's runs:
// setenv at the first parse raced the compile threads' getenv of METALCALL_* variables (glibc's
// setenv may move the environment under a concurrent getenv). A value the user set stays.
[[maybe_unused]] const bool kLibclangNoThreads = setenv("LIBCLANG_NOTHREADS", "1", 0) == 0;

void set_wheel_libclang(const std::string& path) {
  std::lock_guard<std::mutex> lock(wheel_mutex);
  wheel_path = path;
}

const Api* libclang(std::string* why) {
  // Loaded once per process; a failed search is repeated, so that installing the
  // wheel (or setting METALCALL_LIBCLANG) later in the session is seen.
  static std::mutex mutex;
  static const Api* loaded = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (!loaded) loaded = load(why);
  return loaded;
}

}  // namespace metalcall::msl::clang_c
