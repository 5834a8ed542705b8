// MSL's preprocessing policy (see preprocessing.hpp).
#include "msl/lex/preprocessing.hpp"

#include <cctype>
#include <cstdlib>
#include <set>
#include <sstream>

#include "msl/errors/source_errors.hpp"
#include "msl/lex/clang_macros.hpp"
#include "msl/lex/lexer.hpp"
#include "msl/lex/line_splices.hpp"
#include "msl/lex/logical_lines.hpp"
#include "msl/translate/translator.hpp"

namespace metalcall::msl {

namespace {

constexpr const char* kRefusedDirective = "__metalcall_refused_directive_";
constexpr const char* kComputedInclude = "__metalcall_computed_include_";
constexpr const char* kPragmaOperator = "__metalcall_pragma_operator";
constexpr const char* kLoopPragma = "__metalcall_loop_pragma";

bool is_directive(const std::string& directive, const char* name) {
  const std::size_t p = directive.find_first_not_of(" \t", 1);
  return p != std::string::npos && directive.compare(p, std::string(name).size(), name) == 0;
}

bool is_prelude_include(const std::string& directive) {
  std::size_t p = directive.find_first_not_of(" \t", 1);
  if (p == std::string::npos || directive.compare(p, 7, "include") != 0) return false;
  p = directive.find_first_not_of(" \t", p + 7);
  return p != std::string::npos && (directive.compare(p, 7, "<metal_") == 0 || directive.compare(p, 6, "<simd/") == 0);
}

// Without tokenizing (a 30 KB source costs milliseconds to tokenize): true when every
// line that starts with '#' is a metal include or a pragma, and no block comment, line
// splice (a backslash, maybe blanks, a line end), lone '\r' line end or `%:` digraph could
// hide, split or spell a directive. False means "look closer".
bool surely_plain(const std::string& source) {
  if (source.find("/*") != std::string::npos || source.find('\\') != std::string::npos ||
      source.find('\r') != std::string::npos || source.find("%:") != std::string::npos)
    return false;
  std::size_t start = 0;
  while (start < source.size()) {
    std::size_t end = source.find('\n', start);
    if (end == std::string::npos) end = source.size();
    const std::size_t p = source.find_first_not_of(" \t", start);
    if (p < end && source[p] == '#') {
      const std::string directive = source.substr(p, end - p);
      if (!is_prelude_include(directive) && !is_directive(directive, "pragma")) return false;
    }
    start = end + 1;
  }
  return true;
}

bool identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || static_cast<unsigned char>(c) >= 0x80;
}

// The end of the string or character literal that opens at `at` (past its closing quote, or
// the line's end when it is not closed there).
std::size_t literal_end(const std::string& line, std::size_t at) {
  const char quote = line[at];
  std::size_t j = at + 1;
  while (j < line.size() && line[j] != quote) j += line[j] == '\\' ? 2 : 1;
  return j < line.size() ? j + 1 : line.size();
}

// Calls f(position, length) for each identifier of a logical line outside its literals.
template <class F> void for_each_identifier(const std::string& line, F&& f) {
  for (std::size_t i = 0; i < line.size();) {
    const char c = line[i];
    if (c == '"' || c == '\'') {
      i = literal_end(line, i);
    } else if (identifier_char(c) && !std::isdigit(static_cast<unsigned char>(c))) {
      std::size_t j = i;
      while (j < line.size() && identifier_char(line[j])) ++j;
      f(i, j - i);
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      while (i < line.size() && (identifier_char(line[i]) || line[i] == '.' || line[i] == '\'')) ++i;
    } else {
      ++i;
    }
  }
}

// Where a directive's name starts (after `#` or the digraph `%:` and blanks), or npos when
// the line is no directive.
std::size_t directive_name_at(const std::string& line) {
  std::size_t p = line.find_first_not_of(" \t\f\v");
  if (p == std::string::npos) return std::string::npos;
  if (line[p] == '#' && !(p + 1 < line.size() && line[p + 1] == '#')) {
    ++p;
  } else if (line.compare(p, 2, "%:") == 0 && line.compare(p + 2, 2, "%:") != 0) {
    p += 2;
  } else {
    return std::string::npos;
  }
  p = line.find_first_not_of(" \t\f\v", p);
  return p == std::string::npos ? line.size() : p;
}

std::string word_at(const std::string& line, std::size_t at) {
  std::size_t end = at;
  while (end < line.size() && identifier_char(line[end])) ++end;
  return line.substr(at, end - at);
}

std::string trimmed(const std::string& s) {
  const std::size_t b = s.find_first_not_of(" \t\f\v");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\f\v") + 1 - b);
}

// The header an `#include`'s text names when it is an MSL header (in angle brackets, or in
// quotes, which a compiler searches for among its own headers too; a `;` after it is common
// and harmless), else "".
std::string msl_include_target(const std::string& rest) {
  if (rest.empty() || (rest[0] != '<' && rest[0] != '"')) return "";
  const std::size_t close = rest.find(rest[0] == '<' ? '>' : '"', 1);
  if (close == std::string::npos) return "";
  const std::string after = trimmed(rest.substr(close + 1));
  if (!after.empty() && after != ";") return "";
  const std::string name = rest.substr(1, close - 1);
  if (rest[0] == '"') return is_msl_header(name) ? name : "";  // not a file of the user's that starts with metal_
  return name.rfind("metal_", 0) == 0 || name.rfind("simd/", 0) == 0 ? name : "";
}

// The loop pragma's text after `pragma` when its argument is an expression a macro may stand
// in (`#pragma unroll (MIN(DK8/2, 4*NSG))`, as ggml writes; `#pragma GCC unroll N`,
// `#pragma clang loop unroll_count(N)`): Apple's compiler expands macros there. Else "".
std::string loop_pragma_body(const std::string& body) {
  // The rest after `word` (and blanks) when `text` starts with it as a whole word, else npos.
  auto after = [](const std::string& text, std::size_t at, const char* word) -> std::size_t {
    at = text.find_first_not_of(" \t", at);
    const std::size_t n = std::string(word).size();
    if (at == std::string::npos || text.compare(at, n, word) != 0) return std::string::npos;
    if (at + n < text.size() && identifier_char(text[at + n])) return std::string::npos;
    return at + n;
  };
  std::size_t rest = after(body, 0, "unroll");
  if (rest == std::string::npos) {
    const std::size_t gcc = after(body, 0, "GCC"), clang = after(body, 0, "clang");
    if (gcc != std::string::npos) rest = after(body, gcc, "unroll");
    else if (clang != std::string::npos) rest = after(body, clang, "loop");
  }
  if (rest == std::string::npos || body.find_first_not_of(" \t", rest) == std::string::npos) return "";
  return body;
}

// Pragmas a preprocessor carries out itself and that reach the file system or the compiler's
// own machinery (`#pragma GCC dependency "file"` reads a file's time): refused where active.
bool host_pragma(const std::string& body) {
  std::istringstream words(body);
  std::string first, second;
  words >> first >> second;
  if (first == "include_alias" || first == "comment") return true;
  return (first == "GCC" || first == "clang") &&
         (second == "dependency" || second == "system_header" || second == "module" || second == "__debug" ||
          second.rfind("dependency(", 0) == 0);
}

// `__has_include(<h>)` / `("h")` (and _next) written out: 1 for an MSL header, else 0.
std::string answer_has_include(const std::string& line) {
  std::string out;
  std::size_t copied = 0;
  for_each_identifier(line, [&](std::size_t at, std::size_t n) {
    const std::string name = line.substr(at, n);
    if ((name != "__has_include" && name != "__has_include_next") || at < copied) return;
    std::size_t p = line.find_first_not_of(" \t", at + n);
    if (p == std::string::npos || line[p] != '(') return;
    p = line.find_first_not_of(" \t", p + 1);
    if (p == std::string::npos || (line[p] != '<' && line[p] != '"')) return;  // a computed name: the macro refuses it
    const std::size_t close = line.find(line[p] == '<' ? '>' : '"', p + 1);
    if (close == std::string::npos) return;
    const std::size_t paren = line.find_first_not_of(" \t", close + 1);
    if (paren == std::string::npos || line[paren] != ')') return;
    const bool found = is_msl_header(line.substr(p + 1, close - p - 1));
    out += line.substr(copied, at - copied) + (found ? " 1 " : " 0 ");
    copied = paren + 1;
  });
  return copied == 0 ? line : out + line.substr(copied);
}

std::string refused_message(const std::string& name, const std::string& target) {
  return "#" + name + (target.empty() ? "" : " " + target) +
         " is not supported: metalcall compiles one source (the metal_ headers are built in); paste the code in, "
         "or pass macros with defines=";
}

// The column of a directive's `#` on its line of the source: the first character that is not
// a blank or a comment (1 when a comment from an earlier line covers the start).
int directive_column(const std::string& physical) {
  std::size_t p = 0;
  while (p < physical.size()) {
    if (physical[p] == ' ' || physical[p] == '\t' || physical[p] == '\f' || physical[p] == '\v') {
      ++p;
    } else if (physical.compare(p, 2, "/*") == 0) {
      const std::size_t end = physical.find("*/", p + 2);
      if (end == std::string::npos) return 1;
      p = end + 2;
    } else {
      return static_cast<int>(p) + 1;
    }
  }
  return 1;
}

// The line number a `# 12 "file" …` or `#line 12` output line sets, or -1.
int linemarker_line(const std::string& line) {
  std::size_t i = line.find_first_not_of(" \t");
  if (i == std::string::npos || line[i] != '#') return -1;
  i = line.find_first_not_of(" \t", i + 1);
  if (i != std::string::npos && line.compare(i, 4, "line") == 0) i = line.find_first_not_of(" \t", i + 4);
  if (i == std::string::npos || !std::isdigit(static_cast<unsigned char>(line[i]))) return -1;
  return std::atoi(line.c_str() + i);
}

}  // namespace

bool needs_preprocessing(const std::string& source, const Macros& defines) {
  if (!defines.empty() || names_clang_value_macro(source)) return true;
  if (source.find("_Pragma") != std::string::npos) return true;  // the preprocessing writes it as a #pragma
  if (surely_plain(source)) return false;
  if (source.find("%:") != std::string::npos) return true;  // `%:include` is a directive
  for (std::size_t p = source.find('\r'); p != std::string::npos; p = source.find('\r', p + 1))
    if (p + 1 >= source.size() || source[p + 1] != '\n') return true;  // a line end for clang
  for (const auto& t : tokenize(source))
    if (t.kind == TokenKind::directive && !is_prelude_include(t.text) && !is_directive(t.text, "pragma")) return true;
  return false;
}

bool is_msl_header(const std::string& name) {
  static const std::set<std::string>& headers = *new std::set<std::string>{
      "metal_stdlib", "metal_array", "metal_assert", "metal_atomic", "metal_common", "metal_compute",
      "metal_config", "metal_functional", "metal_geometric", "metal_initializer_list", "metal_integer",
      "metal_limits", "metal_logging", "metal_math", "metal_matrix", "metal_numeric", "metal_pack",
      "metal_quadgroup", "metal_relational", "metal_simdgroup", "metal_simdgroup_matrix", "metal_texture",
      "metal_type_traits", "metal_types", "metal_uniform", "metal_utility", "simd/simd.h", "simd/base.h",
      "simd/vector.h", "simd/vector_types.h", "simd/matrix.h", "simd/matrix_types.h", "simd/math.h",
      "simd/common.h", "simd/geometry.h", "simd/conversion.h", "simd/packed.h"};
  return headers.count(name) != 0;
}

PreprocessorInput text_for_preprocessor(const std::string& source) {
  PreprocessorInput input;
  bool target_conditionals = false;
  std::vector<std::string> lines;
  {
    std::istringstream in(logical_lines(source));
    std::string line;
    while (std::getline(in, line)) lines.push_back(line);
  }
  // Each directive's column is read from its physical line: the line starts are found once
  // (physical_line() finds them all per call, which made a source of many directives take
  // time quadratic in its length: 200,000 `#define`s, 2.6 MB, took minutes in the caller's
  // process before 2026-12-05).
  const std::vector<std::size_t> starts = line_starts(source);
  const auto physical = [&](int number) {
    if (number < 1 || static_cast<std::size_t>(number) > starts.size()) return std::string();
    std::size_t end = starts[number - 1];
    while (end < source.size() && !line_end_length(source, end)) ++end;
    return source.substr(starts[number - 1], end - starts[number - 1]);
  };
  for (std::size_t index = 0; index < lines.size(); ++index) {
    std::string& line = lines[index];
    const int number = static_cast<int>(index) + 1;
    for_each_identifier(line, [&](std::size_t at, std::size_t n) {
      if (line.compare(at, 11, "__metalcall") != 0) return;
      const std::string name = line.substr(at, n);
      throw error_at(source, Token{TokenKind::identifier, name, number, static_cast<int>(at) + 1},
                     "'" + name + "' is a name metalcall reserves for itself; choose another");
    });
    const std::size_t name_at = directive_name_at(line);
    if (name_at == std::string::npos) {
      line = answer_has_include(line);
      continue;
    }
    const std::string name = word_at(line, name_at);
    const std::string rest = trimmed(line.substr(name_at + name.size()));
    const int column = directive_column(physical(number));
    if (name == "include" || name == "import" || name == "include_next" || name == "embed") {
      if ((name == "include" || name == "import") && !msl_include_target(rest).empty()) {
        line.clear();  // the prelude provides it
        continue;
      }
      if ((name == "include" || name == "import") && (rest == "<TargetConditionals.h>" || rest == "<TargetConditionals.h>;")) {
        line.clear();  // its macros are defined before the source (below)
        target_conditionals = true;
        continue;
      }
      input.refused.push_back({number, column, refused_message(name, rest), ""});
      if ((name == "include" || name == "import") && !rest.empty() && rest[0] != '<' && rest[0] != '"') {
        // `#include HDR`: the preprocessor expands the name on a line of its own, and
        // finish_preprocessed keeps the prelude's headers (`#define HDR <metal_stdlib>`) and
        // refuses any other, where that line survives.
        line = kComputedInclude + std::to_string(input.refused.size() - 1) + " " + rest;
        continue;
      }
    } else if (name == "pragma" && host_pragma(rest)) {
      std::istringstream words(rest);
      std::string first, second;
      words >> first >> second;
      input.refused.push_back({number, column,
                               "'#pragma " + first + (second.empty() ? "" : " " + second) +
                                   "' is not an MSL pragma (loop and diagnostic pragmas are)",
                               "pragmas"});
    } else if (name == "pragma" && !loop_pragma_body(rest).empty()) {
      // A pragma's tokens are not macro-expanded by the preprocessor that runs here, but
      // Apple's compiler expands them in its loop pragmas: as plain tokens they are, and
      // finish_preprocessed writes the line back as a #pragma.
      line = std::string(kLoopPragma) + " " + rest;
      continue;
    } else {
      line = answer_has_include(line);
      continue;
    }
    line = kRefusedDirective + std::to_string(input.refused.size() - 1);
  }
  // What no source may reach: a __has_include whose header name macros make (the file system
  // would answer it), __has_embed (C23 and C++26, clang 19 and GCC 15: whether a host file
  // exists, is empty or is longer than an offset; #embed is refused, so nothing can be
  // embedded: 0) and _Pragma, which would carry out a pragma as preprocessing runs: it becomes a
  // marker that finish_preprocessed writes as a #pragma line, which the MSL rules then check as any.
  input.text =
      "#define __has_include(...) \"__has_include of a header name made by macros: metalcall answers "
      "__has_include for a header name written out only\"\n"
      "#define __has_include_next(...) __has_include()\n"
      "#define __has_embed(...) 0\n"
      "#define _Pragma(...) " + std::string(kPragmaOperator) + "(__VA_ARGS__)\n";
  // Apple's <TargetConditionals.h>, which shared headers include (MetalPetal's MTIShaderLib.h
  // tests TARGET_OS_SIMULATOR): the platform of a Mac, where metalcall's kernels run as Metal's would.
  if (target_conditionals)
    for (const char* m : {"TARGET_OS_MAC 1", "TARGET_OS_OSX 1", "TARGET_OS_IPHONE 0", "TARGET_OS_IOS 0",
                          "TARGET_OS_MACCATALYST 0", "TARGET_OS_TV 0", "TARGET_OS_WATCH 0", "TARGET_OS_VISION 0",
                          "TARGET_OS_XR 0", "TARGET_OS_BRIDGE 0", "TARGET_OS_DRIVERKIT 0", "TARGET_OS_EMBEDDED 0",
                          "TARGET_OS_SIMULATOR 0", "TARGET_IPHONE_SIMULATOR 0", "TARGET_OS_UNIX 0", "TARGET_OS_WIN32 0",
                          "TARGET_OS_WINDOWS 0", "TARGET_OS_LINUX 0", "TARGET_RT_LITTLE_ENDIAN 1", "TARGET_RT_BIG_ENDIAN 0",
                          "TARGET_RT_64_BIT 1"})
      input.text += std::string("#define ") + m + "\n";
  input.text += "#line 1 \"" + std::string(kSourceName) + "\"\n";
  for (const auto& l : lines) input.text += l + "\n";
  return input;
}

namespace {

// `_Pragma("body")` (C++11 §16.9), as text_for_preprocessor's macro left it at `at` in `line`:
// the destringized body and the index after the closing ')', or npos when the operand is no
// plain string literal. A body that could end or splice its line, or that the preprocessor
// would have carried out, is refused at the user's line.
std::pair<std::string, std::size_t> pragma_operator(const std::string& line, std::size_t at, int line_number,
                                                    const std::string& source) {
  const Token where{TokenKind::identifier, "_Pragma", line_number, 1};
  std::size_t p = line.find_first_not_of(" \t", at + std::string(kPragmaOperator).size());
  if (p == std::string::npos || line[p] != '(') return {"", std::string::npos};
  p = line.find_first_not_of(" \t", p + 1);
  if (p == std::string::npos || line[p] != '"') return {"", std::string::npos};
  const std::size_t end = literal_end(line, p);  // one past the closing quote
  const std::size_t close = line.find_first_not_of(" \t", end);
  if (end > line.size() || close == std::string::npos || line[close] != ')') return {"", std::string::npos};
  // Destringized (§16.9): `\"` loses its backslash. Any other backslash, and any control
  // character, could end or splice the pragma's line: refused.
  std::string body;
  for (std::size_t i = p + 1; i + 1 < end; ++i) {
    if (line[i] == '\\' && i + 2 < end && line[i + 1] == '"') {
      body += line[++i];
      continue;
    }
    if (line[i] == '\\' || std::iscntrl(static_cast<unsigned char>(line[i])))
      throw rule_error(source, where, "_Pragma's string holds a backslash or control character: write the pragma out",
                       "pragmas");
    body += line[i];
  }
  if (host_pragma(body)) {
    std::istringstream words(body);
    std::string first, second;
    words >> first >> second;
    throw rule_error(source, where,
                     "'_Pragma(\"" + first + (second.empty() ? "" : " " + second) +
                         "\")' is not an MSL pragma (loop and diagnostic pragmas are)",
                     "pragmas");
  }
  return {body, close + 1};
}

}  // namespace

std::string finish_preprocessed(const std::string& output, const PreprocessorInput& input, const std::string& source) {
  if (output.find("__metalcall_") == std::string::npos) return output;
  std::string out;
  out.reserve(output.size());
  std::istringstream in(output);
  std::string line;
  int line_number = 1;  // the user's line of the output line being read
  std::vector<std::size_t> pragma_at;  // where `_Pragma(` markers start on the line
  int computed = -1;                   // the refusal of a computed #include on the line
  std::string computed_rest;           // what its macros expanded to
  while (std::getline(in, line)) {
    const int marked = linemarker_line(line);
    for_each_identifier(line, [&](std::size_t at, std::size_t n) {
      const std::string name = line.substr(at, n);
      if (name.rfind(kRefusedDirective, 0) == 0) {
        const std::size_t index = std::strtoul(name.c_str() + std::string(kRefusedDirective).size(), nullptr, 10);
        if (index >= input.refused.size()) return;
        const RefusedDirective& r = input.refused[index];
        const Token at_directive{TokenKind::directive, "#", r.line, r.column};
        if (!r.rule.empty()) throw rule_error(source, at_directive, r.message, r.rule);
        throw error_at(source, at_directive, r.message);
      }
      if (name == kPragmaOperator) pragma_at.push_back(at);
      if (name.rfind(kComputedInclude, 0) == 0 && computed < 0) {
        computed = static_cast<int>(std::strtoul(name.c_str() + std::string(kComputedInclude).size(), nullptr, 10));
        computed_rest = line.substr(at + n);
      }
    });
    if (computed >= 0 && static_cast<std::size_t>(computed) < input.refused.size()) {
      // The expanded header name, blanks between its tokens dropped: an MSL header's line is
      // blanked (the prelude provides it), any other refused as the directive it came from.
      std::string header;
      for (const char c : computed_rest)
        if (c != ' ' && c != '\t') header += c;
      if (msl_include_target(header).empty()) {
        const RefusedDirective& r = input.refused[computed];
        throw error_at(source, Token{TokenKind::directive, "#", r.line, r.column},
                       r.message + " (the macro names " + (header.empty() ? "nothing" : header) + ")");
      }
      line.clear();
    }
    computed = -1;
    // Each `_Pragma("body")` on its own line as `#pragma body` (a pragma is a line of its own),
    // the text after it kept at the user's line by a line marker, and at its column by blanks.
    if (!pragma_at.empty()) {
      const std::string marker = "# " + std::to_string(line_number) + " \"" + std::string(kSourceName) + "\"\n";
      // The marker is longer than the `_Pragma` it stands for: columns after one, as written.
      const std::size_t longer = std::string(kPragmaOperator).size() - std::string("_Pragma").size();
      auto blanks = [&](std::size_t column, std::size_t before) {
        return std::string(column > longer * before ? column - longer * before : 0, ' ');
      };
      std::string rewritten;
      std::size_t from = 0, count = 0;
      for (const std::size_t at : pragma_at) {
        const auto [body, after] = pragma_operator(line, at, line_number, source);
        if (after == std::string::npos)
          throw rule_error(source, Token{TokenKind::identifier, "_Pragma", line_number, 1},
                           "_Pragma takes one string literal", "pragmas");
        rewritten += blanks(from, count) + line.substr(from, at - from) + "\n" + marker + "#pragma " + body + "\n" + marker;
        from = after;
        ++count;
      }
      line = rewritten + blanks(from, count) + line.substr(from);
      pragma_at.clear();
    }
    const std::size_t first = line.find_first_not_of(" \t");
    if (first != std::string::npos && line.compare(first, std::string(kLoopPragma).size(), kLoopPragma) == 0)
      line = "#pragma" + line.substr(first + std::string(kLoopPragma).size());
    out += line + "\n";
    line_number = marked >= 0 ? marked : line_number + 1;
  }
  return out;
}

void rethrow_preprocessor_error(const CompileError& e, const std::string& source) {
  const std::string line = e.line() > 0 ? physical_line(source, e.line()) : "";
  const std::size_t at = line.find("__has_include");
  if (at == std::string::npos || e.log().find("__has_include") == std::string::npos) throw e;
  throw error_at(source, Token{TokenKind::identifier, "__has_include", e.line(), static_cast<int>(at) + 1},
                 "__has_include of a header name that macros make is not supported: metalcall answers "
                 "__has_include from the MSL headers, for a header name written out (<metal_stdlib>, \"file.h\")");
}

int metal_version(const std::string& language_version) {
  if (language_version.empty()) return 320;  // the MSL version the prelude follows (3.2)
  static const std::set<std::string>& known = *new std::set<std::string>{"1.0", "1.1", "1.2", "2.0", "2.1", "2.2",
                                                                         "2.3", "2.4", "3.0", "3.1", "3.2"};
  if (!known.count(language_version)) {
    throw CompileError("unknown Metal language version '" + language_version +
                       "': the CPU and CUDA backends take 1.0 to 3.2 (major.minor, e.g. \"3.1\"), or none for 3.2");
  }
  return (language_version[0] - '0') * 100 + (language_version[2] - '0') * 10;
}

Macros predefined_macros(const std::string& language_version) {
  const int version = metal_version(language_version);
  Macros macros = {{"__METAL_VERSION__", std::to_string(version)}};
  // Apple's compiler says "Metal" with __METAL__ from MSL 3.0 (-std=metal3.x) and with
  // __METAL_MACOS__ before (-std=macos-metal2.x; the translated backends stand in for a Mac).
  macros.emplace_back(version >= 300 ? "__METAL__" : "__METAL_MACOS__", "1");
  if (version >= 310) macros.emplace_back("__HAVE_BFLOAT__", "1");
  return macros;
}

Macros predefined_macros(const Macros& defines, const std::string& language_version) {
  Macros macros = predefined_macros(language_version);
  // Clang's value macros for the preprocessor only: it expands them, so the translation
  // never names them (the CPU's host compiler and NVRTC would give other values, or none).
  macros.insert(macros.end(), clang_value_macros().begin(), clang_value_macros().end());
  macros.insert(macros.end(), defines.begin(), defines.end());
  return macros;
}

}  // namespace metalcall::msl
