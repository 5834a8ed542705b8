// SIMD-group functions as region boundaries (see simd_exchanges.hpp).
#include "msl/passes/simd_exchanges.hpp"

#include <map>

#include "msl/analysis/call_graph.hpp"  // matching
#include "msl/analysis/operands.hpp"
#include "msl/passes/barrier_region_reading.hpp"

namespace metalcall::msl::regions {

namespace {

struct Function {
  const char* op;    // metal_regions.h's exchange
  int arguments;     // 1: the value; 2: the value and a lane, delta or mask
  int vote;          // 0: the value's type; 1: a ballot (simd_vote, quad_vote); 2: bool (all, any)
};

// By the name after `simd_` or `quad_`; the results are metal_simdgroup.h's for fibers.
const std::map<std::string, Function>& functions() {
  static const auto& table = *new std::map<std::string, Function>{  // never destroyed
      {"sum", {"mtl_x_reduce<metal::mtl_rt::add_op>", 1, 0}},
      {"product", {"mtl_x_reduce<metal::mtl_rt::mul_op>", 1, 0}},
      {"min", {"mtl_x_reduce<metal::mtl_rt::min_op>", 1, 0}},
      {"max", {"mtl_x_reduce<metal::mtl_rt::max_op>", 1, 0}},
      {"and", {"mtl_x_reduce<metal::mtl_rt::and_op>", 1, 0}},
      {"or", {"mtl_x_reduce<metal::mtl_rt::or_op>", 1, 0}},
      {"xor", {"mtl_x_reduce<metal::mtl_rt::xor_op>", 1, 0}},
      {"prefix_inclusive_sum", {"mtl_x_prefix<metal::mtl_rt::add_op, 0, true>", 1, 0}},
      {"prefix_exclusive_sum", {"mtl_x_prefix<metal::mtl_rt::add_op, 0, false>", 1, 0}},
      {"prefix_inclusive_product", {"mtl_x_prefix<metal::mtl_rt::mul_op, 1, true>", 1, 0}},
      {"prefix_exclusive_product", {"mtl_x_prefix<metal::mtl_rt::mul_op, 1, false>", 1, 0}},
      {"broadcast", {"mtl_x_shuffle<metal::mtl_regions::mtl_from_lane>", 2, 0}},
      {"shuffle", {"mtl_x_shuffle<metal::mtl_regions::mtl_from_lane>", 2, 0}},
      {"shuffle_up", {"mtl_x_shuffle<metal::mtl_regions::mtl_from_up>", 2, 0}},
      {"shuffle_down", {"mtl_x_shuffle<metal::mtl_regions::mtl_from_down>", 2, 0}},
      {"shuffle_xor", {"mtl_x_shuffle<metal::mtl_regions::mtl_from_xor>", 2, 0}},
      {"shuffle_rotate_down", {"mtl_x_shuffle<metal::mtl_regions::mtl_from_rotate_down>", 2, 0}},
      {"shuffle_rotate_up", {"mtl_x_shuffle<metal::mtl_regions::mtl_from_rotate_up>", 2, 0}},
      {"broadcast_first", {"mtl_x_shuffle<metal::mtl_regions::mtl_from_first>", 1, 0}},
      {"ballot", {"", 1, 1}},
      {"all", {"", 1, 2}},
      {"any", {"", 1, 2}},
  };
  return table;
}

const Function* lookup(const std::string& name, bool* quad) {
  std::string rest;
  if (name.rfind("simd_", 0) == 0) rest = name.substr(5), *quad = false;
  else if (name.rfind("quad_", 0) == 0) rest = name.substr(5), *quad = true;
  else return nullptr;
  auto it = functions().find(rest);
  return it == functions().end() ? nullptr : &it->second;
}

}  // namespace

bool exchange_function(const std::string& name) {
  bool quad = false;
  return lookup(name, &quad) != nullptr;
}

bool holds_exchange(const std::vector<Token>& t, std::size_t first, std::size_t last) {
  for (std::size_t k = first; k <= last; ++k)
    if (t[k].kind == TokenKind::identifier && exchange_function(t[k].text) && punct(t, k + 1, "(")) return true;
  return false;
}

bool exchange_calls(const std::vector<Token>& t, std::size_t first, std::size_t last, std::vector<ExchangeCall>& out) {
  std::size_t inside = 0;  // the `)` of the call whose arguments are being read (0: none)
  for (std::size_t k = first; k <= last; ++k) {
    if (k == inside) inside = 0;
    if (t[k].kind != TokenKind::identifier) continue;
    bool quad = false;
    const Function* f = lookup(t[k].text, &quad);
    if (!f || (k > first && (punct(t, k - 1, ".") || punct(t, k - 1, "->")))) continue;
    if (!punct(t, k + 1, "(") || inside) return false;  // a template's arguments, or inside another call
    ExchangeCall c;
    c.name = k;
    c.first = k >= 2 && punct(t, k - 1, "::") && t[k - 2].is_identifier("metal") ? k - 2 : k;
    if (c.first == k && k > 0 && punct(t, k - 1, "::")) return false;  // another scope's function
    c.close = matching(t, k + 1);
    if (c.close == kNone || c.close > last || c.close == k + 2) return false;
    std::vector<std::size_t> commas;
    bool angle = false;  // a comma after a `<` might be a template argument list's: not followed
    for (std::size_t j = k + 2; j < c.close; ++j) {
      if (punct(t, j, "(") || punct(t, j, "[") || punct(t, j, "{")) j = matching(t, j);
      else if (punct(t, j, "<")) angle = true;
      else if (punct(t, j, ",")) commas.push_back(j);
    }
    if (static_cast<int>(commas.size()) + 1 != f->arguments || (angle && !commas.empty())) return false;
    c.value_first = k + 2;
    c.value_last = commas.empty() ? c.close : commas[0];
    if (!commas.empty()) c.arg_first = commas[0] + 1, c.arg_last = c.close;
    c.quad = quad;
    const std::string vote = quad ? "metal::quad_vote" : "metal::simd_vote";
    if (f->vote == 1) c.vote_type = vote;
    if (f->vote == 2) c.vote_type = "bool";
    c.op = f->vote ? "mtl_x_vote<" + vote + ", " + (f->vote == 1 ? "0" : t[k].text.substr(5) == "all" ? "1" : "2") + ">"
                   : f->op;
    out.push_back(c);
    inside = c.close;
  }
  return true;
}

bool skipped_by_a_branch(const std::vector<Token>& t, std::size_t first, std::size_t end,
                         const std::vector<ExchangeCall>& calls) {
  const auto holds_call = [&](std::size_t from, std::size_t to) {  // (from, to)
    for (const ExchangeCall& c : calls)
      if (c.first > from && c.first < to) return true;
    return false;
  };
  for (std::size_t k = first; k <= end; ++k) {
    if (punct(t, k, "?")) {
      const std::size_t colon = matching_colon(t, k);
      if (colon >= end) return true;
      const std::size_t arms_end = third_operand_end(t, colon + 1);
      if (arms_end > end || holds_call(k, arms_end)) return true;
    } else if (punct(t, k, "&&") || punct(t, k, "||")) {
      const std::size_t right_end = right_operand_end(t, k);
      if (right_end > end || holds_call(k, right_end)) return true;
    }
  }
  return false;
}

std::string exchanged_type(const std::vector<Token>& t, const ExchangeCall& c) {
  std::string type = "metal :: mtl_regions :: mtl_exchanged_t < decltype ( (";
  for (std::size_t k = c.value_first; k < c.value_last; ++k) type += " " + t[k].text;
  return type + " ) ) >";
}

bool declares_exchange_function(const std::vector<Token>& t) {
  for (std::size_t k = 1; k + 1 < t.size(); ++k) {
    if (t[k].kind != TokenKind::identifier || !exchange_function(t[k].text) || !punct(t, k + 1, "(")) continue;
    const Token& before = t[k - 1];
    // A type before the name (`cplx simd_sum(`, `vec<T, 2> simd_sum(`): a declaration; a
    // comparison `a > simd_sum(x)` reads as one too, which only keeps the fibers.
    if (before.is(">") || before.is("::") ||
        (before.kind == TokenKind::identifier && !one_of(before, {"return", "else", "do", "case", "throw"})))
      return true;
  }
  return false;
}

}  // namespace metalcall::msl::regions
