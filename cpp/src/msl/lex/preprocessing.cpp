// MSL's preprocessing policy (see preprocessing.hpp).
#include "msl/lex/preprocessing.hpp"

#include <cctype>

#include "msl/errors/source_errors.hpp"
#include "msl/lex/lexer.hpp"
#include "msl/lex/line_splices.hpp"
#include "msl/translate/translator.hpp"

namespace metalcall::msl {

namespace {

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

// The loop pragma's text after `#pragma` when its argument is an expression a macro may
// stand in (`#pragma unroll (MIN(DK8/2, 4*NSG))`, as ggml writes; `#pragma GCC unroll N`,
// `#pragma clang loop unroll_count(N)`); else empty.
std::string loop_pragma_with_argument(const std::string& directive) {
  if (directive.find('\n') != std::string::npos || directive.find("/*") != std::string::npos) return "";
  std::string body = directive.substr(directive.find_first_not_of(" \t", 1));
  if (body.compare(0, 6, "pragma") != 0) return "";
  body = body.substr(6);
  const std::size_t comment = body.find("//");
  if (comment != std::string::npos) body = body.substr(0, comment);
  // The rest after `word` (and blanks) when `text` starts with it as a whole word, else npos.
  auto after = [](const std::string& text, std::size_t at, const char* word) -> std::size_t {
    at = text.find_first_not_of(" \t", at);
    const std::size_t n = std::string(word).size();
    if (at == std::string::npos || text.compare(at, n, word) != 0) return std::string::npos;
    if (at + n < text.size() && (std::isalnum(static_cast<unsigned char>(text[at + n])) || text[at + n] == '_'))
      return std::string::npos;
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

}  // namespace

bool needs_preprocessing(const std::string& source, const Macros& defines) {
  if (!defines.empty()) return true;
  if (surely_plain(source)) return false;
  for (const auto& t : tokenize(source))
    if (t.kind == TokenKind::directive && !is_prelude_include(t.text) && !is_directive(t.text, "pragma")) return true;
  return false;
}

std::string text_for_preprocessor(const std::string& source) {
  // Physical lines as the lexer counts them (a lone '\r' ends one too), so that a token's
  // line names the line to blank; each is written with a '\n'.
  std::vector<std::string> lines;
  {
    const std::vector<std::size_t> starts = line_starts(source);
    for (std::size_t n = 0; n < starts.size(); ++n) {
      std::size_t end = starts[n];
      while (end < source.size() && !line_end_length(source, end)) ++end;
      if (n + 1 == starts.size() && starts[n] == source.size()) break;  // nothing after the last line end
      lines.push_back(source.substr(starts[n], end - starts[n]));
    }
  }
  bool loop_pragmas = false;
  for (const auto& t : tokenize(source)) {
    // A pragma's tokens are not macro-expanded by the preprocessor that runs here, but
    // Apple's compiler expands them in its loop pragmas: written as _Pragma through a
    // macro, the argument is expanded and the output is the same #pragma line.
    const std::string loop = t.kind == TokenKind::directive ? loop_pragma_with_argument(t.text) : "";
    if (!loop.empty() && t.line >= 1 && static_cast<std::size_t>(t.line) <= lines.size()) {
      lines[t.line - 1] = "METALCALL_PRAGMA(" + loop + ")";
      loop_pragmas = true;
    }
    if (t.kind != TokenKind::directive || !is_directive(t.text, "include")) continue;
    if (!is_prelude_include(t.text)) {
      throw error_at(source, t, "#include is not supported: metalcall compiles one source (the metal_ headers "
                                "are built in); paste the code in, or pass macros with defines=");
    }
    if (t.line >= 1 && static_cast<std::size_t>(t.line) <= lines.size()) lines[t.line - 1].clear();
  }
  std::string text = loop_pragmas ? "#define METALCALL_PRAGMA_TEXT(x) #x\n"
                                    "#define METALCALL_PRAGMA(x) _Pragma(METALCALL_PRAGMA_TEXT(x))\n"
                                  : "";
  text += "#line 1 \"" + std::string(kSourceName) + "\"\n";
  for (const auto& l : lines) text += l + "\n";
  return text;
}

Macros predefined_macros(const Macros& defines, int metal_version) {
  Macros macros = {{"__METAL_VERSION__", std::to_string(metal_version)}};
  macros.insert(macros.end(), defines.begin(), defines.end());
  return macros;
}

}  // namespace metalcall::msl
