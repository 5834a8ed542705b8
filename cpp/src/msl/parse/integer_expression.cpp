// Integer constant expressions in attribute arguments: `[[function_constant(1200 + 0)]]`,
// as ggml's macros write them.
#include "msl/parse/integer_expression.hpp"

namespace metalcall::msl {

namespace {

bool constant_sum(const std::string& s, std::size_t& pos, long& out);
bool constant_product(const std::string& s, std::size_t& pos, long& out);
bool constant_term(const std::string& s, std::size_t& pos, long& out);

bool constant_sum(const std::string& s, std::size_t& pos, long& out) {
  if (!constant_product(s, pos, out)) return false;
  while (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    const char op = s[pos++];
    long rhs = 0;
    if (!constant_product(s, pos, rhs)) return false;
    out = op == '+' ? out + rhs : out - rhs;
  }
  return true;
}
bool constant_product(const std::string& s, std::size_t& pos, long& out) {
  if (!constant_term(s, pos, out)) return false;
  while (pos < s.size() && (s[pos] == '*' || s[pos] == '/')) {
    const char op = s[pos++];
    long rhs = 0;
    if (!constant_term(s, pos, rhs) || (op == '/' && rhs == 0)) return false;
    out = op == '*' ? out * rhs : out / rhs;
    if (out > 999999999 || out < -999999999) return false;
  }
  return true;
}
bool constant_term(const std::string& s, std::size_t& pos, long& out) {
  if (pos < s.size() && s[pos] == '(') {
    ++pos;
    if (!constant_sum(s, pos, out) || pos >= s.size() || s[pos] != ')') return false;
    ++pos;
    return true;
  }
  const std::size_t begin = pos;
  while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9' && pos - begin < 9) ++pos;
  if (pos == begin) return false;
  out = std::stol(s.substr(begin, pos - begin));
  while (pos < s.size() && (s[pos] == 'u' || s[pos] == 'U')) ++pos;  // 3u
  return true;
}

}  // namespace

bool integer_expression(const std::string& text, long& value) {
  std::size_t pos = 0;
  return constant_sum(text, pos, value) && pos == text.size();
}

}  // namespace metalcall::msl
