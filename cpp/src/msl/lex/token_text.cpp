// Spelling helpers the translator's files share (see token_text.hpp).
#include "msl/lex/token_text.hpp"

#include <string_view>

#include "msl/parse/type_names.hpp"

namespace metalcall::msl {

bool is_swizzle(const std::string& s, std::vector<int>* indices) {
  if (s.size() < 2 || s.size() > 4) return false;
  constexpr std::string_view xyzw = "xyzw", rgba = "rgba";
  const std::string_view set = xyzw.find(s[0]) != std::string_view::npos ? xyzw : rgba;
  indices->clear();
  for (char c : s) {
    auto p = set.find(c);
    if (p == std::string_view::npos) return false;
    indices->push_back(static_cast<int>(p));
  }
  return true;
}

std::string swizzle_code(const std::string& name) {
  std::vector<int> indices;
  if (!is_swizzle(name, &indices)) return "";
  // Vectors read both spellings alike; a struct's members named `xyz` and `rgb` are two
  // (one code for both read the first member through either name before 2026-12-05).
  std::string code = std::string_view("xyzw").find(name[0]) != std::string_view::npos ? "1" : "2";
  for (int c : indices) code += std::to_string(c);
  return code;
}

std::string type_text(const std::vector<Token>& t, const std::vector<std::size_t>& tokens, bool element_only,
                      const TemplateArguments* arguments) {
  std::string out;
  for (std::size_t k = 0; k < tokens.size(); ++k) {
    if (tokens[k] == kClosingAngle) {
      out += '>';
      continue;
    }
    const Token& tok = t[tokens[k]];
    std::string piece;
    if (arguments && tok.kind == TokenKind::identifier) {
      const std::vector<std::size_t>* replacement = nullptr;
      for (const auto& [name, arg] : *arguments)
        if (name == tok.text) replacement = &arg;
      if (replacement) {
        piece = type_text(t, *replacement, false);
        if (!out.empty() && is_word_char(out.back()) && is_word_char(piece.front())) out += ' ';
        out += piece;
        continue;
      }
    }
    if (tok.is_identifier("device") || tok.is_identifier("thread") || tok.is_identifier("threadgroup")) continue;
    if (tok.is_identifier("constant")) {
      if (element_only) continue;
      const bool near_const = (k > 0 && t[tokens[k - 1]].is_identifier("const")) ||
                              (k + 1 < tokens.size() && t[tokens[k + 1]].is_identifier("const"));
      if (near_const) continue;
      piece = "const";
    } else if (element_only && (tok.is("*") || tok.is("&") || tok.is_identifier("const") ||
                                tok.is_identifier("volatile") || tok.is_identifier("restrict") ||
                                tok.is_identifier("__restrict") || tok.is_identifier("__restrict__"))) {
      continue;
    } else if (tok.kind == TokenKind::identifier && is_renamed_type(tok.text)) {
      piece = renamed_type(tok.text);
    } else {
      piece = tok.text;
    }
    if (!out.empty() && is_word_char(out.back()) && is_word_char(piece.front())) out += ' ';
    out += piece;
  }
  return out;
}

}  // namespace metalcall::msl
