// Directives in the translation: the names in them renamed as in code, each on a line of its own
// (a `_Pragma` the preprocessing wrote as `#pragma` may stand among a line's tokens), and, on the
// CPU, diagnostic pragmas written so that they cannot lower -Werror=vla.
#include "msl/translate/translator_walk.hpp"

#include <sstream>

#include "msl/lex/token_text.hpp"
#include "msl/parse/type_names.hpp"

namespace metalcall::msl {

std::string Translator::rename_in_directive(const std::string& text) const {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == '"') {
      std::size_t j = text.find('"', i + 1);
      j = j == std::string::npos ? text.size() : j + 1;
      out += text.substr(i, j - i);
      i = j;
    } else if (is_word_char(text[i]) && (i == 0 || !is_word_char(text[i - 1]))) {
      std::size_t j = i;
      while (j < text.size() && is_word_char(text[j])) ++j;
      const std::string word = text.substr(i, j - i);
      out += is_renamed_type(word) ? renamed_type(word) : word;
      i = j;
    } else {
      out += text[i++];
    }
  }
  return out;
}

namespace {
// `pragma GCC diagnostic …` / `pragma clang diagnostic …` (a directive's text after the `#`).
bool is_diagnostic_pragma(const std::string& body) {
  std::istringstream words(body);
  std::string pragma, family, what;
  words >> pragma >> family >> what;
  return pragma == "pragma" && (family == "GCC" || family == "clang") && what == "diagnostic";
}
}  // namespace

void Translator::emit_directive(std::size_t i) {
  const Token& tok = t_[i];
  std::string body = tok.text.substr(1);
  std::size_t p = body.find_first_not_of(" \t");
  body = p == std::string::npos ? "" : body.substr(p);
  if (body.rfind("include", 0) == 0) {
    std::string target = body.substr(7);
    p = target.find_first_not_of(" \t");
    target = p == std::string::npos ? "" : target.substr(p);
    while (!target.empty() && (target.back() == ';' || target.back() == ' ')) target.pop_back();  // "#include <metal_stdlib>;" is common
    if (target.rfind("<metal_", 0) == 0 || target.rfind("<simd/", 0) == 0) return;  // the prelude provides them
    fail(i, "#include " + target + " is not supported: metalcall compiles one source; paste the code in, "
            "or pass macros with defines=");
  }
  // `#pragma clang diagnostic ignored "-Wvla"` (or "-Wpedantic", "-Weverything", ...) lowered the
  // CPU compiler's -Werror=vla, and variable-length arrays compiled again before 2026-12-05: the
  // pragma is written as _Pragma on its own line, followed by one that makes -Wvla an error again
  // (one line, so that the lines after it keep their numbers).
  // (`%:pragma` is the same directive: its body starts after the digraph.)
  const std::string pragma_body = tok.text.rfind("%:", 0) == 0 ? tok.text.substr(2) : body;
  if (target_.restores_vla_error() && is_diagnostic_pragma(pragma_body)) {
    const std::string words = pragma_body.substr(pragma_body.find("pragma") + 6);
    std::string quoted;
    for (char c : rename_in_directive(words)) {
      if (c == '\\' || c == '"') quoted += '\\';
      quoted += c == '\n' || c == '\r' ? ' ' : c;
    }
    emit("_Pragma(\"" + quoted + "\") _Pragma(\"GCC diagnostic error \\\"-Wvla\\\"\")", tok, true);
    return;
  }
  // A directive is a line of its own, also where the preprocessing put one among a line's tokens
  // (`_Pragma("unroll")` written as `#pragma unroll`): a new line before it when the line holds
  // text, and one after it, so that the next token says its line again (emit's #line).
  if (column_ > 1) new_output_line();
  emit(rename_in_directive(tok.text), tok, true);
  new_output_line();
}

void Translator::new_output_line() {
  out_ << '\n';
  ++line_;
  column_ = 1;
  last_user_end_ = 0;
}

}  // namespace metalcall::msl
