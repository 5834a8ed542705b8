// Barriers as work-item loops (see barrier_regions.hpp).
#include "msl/passes/barrier_regions.hpp"
#include "msl/passes/barrier_region_reading.hpp"
#include "msl/passes/simd_exchanges.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "msl/analysis/call_graph.hpp"         // matching
#include "msl/analysis/sync_reachability.hpp"  // fiber_kernels
#include "msl/analysis/statements.hpp"         // statement_end
#include "msl/targets/entry_points.hpp"        // builtin_component
#include "msl/targets/target.hpp"

namespace metalcall::msl {

namespace {

using namespace regions;  // NOLINT: the reading helpers of this pass

// What a barrier of a planned body is renamed to while fiber_kernels asks whether anything
// else in the kernel synchronises (no synchronising name).
constexpr const char* kNeutralBarrier = "__metalcall_region_barrier";

enum class Kind { barrier, loop, declaration, other };

struct Statement {
  std::size_t first = 0, last = 0;  // its tokens, inclusive
  Kind kind = Kind::other;
  std::optional<Declaration> decl;
  bool group = false;  // runs once per group, before its region's threads
};

// A run of statements between barriers: each thread of the group runs it in turn.
struct Region {
  std::vector<std::size_t> group_statements;  // statements_ indices, moved ahead of the threads
  std::vector<std::size_t> statements;        // the threads' statements
  std::size_t anchor = 0;                     // a token near where it starts (for the generated text's lines)
  int depth = 0;                              // 0: the kernel body's own sequence
  std::size_t barrier = static_cast<std::size_t>(-1);  // the name of the barrier that starts it, if one does
  std::vector<std::size_t> runs, puts;  // exchanges_ run at its start (its statement's calls), put at its end
};

struct Item {
  bool loop = false;
  std::size_t index = 0;  // into regions_ or loops_
};

struct Sequence {
  std::vector<Item> items;
  std::size_t first_region = 0, last_region = 0;
};

// A loop whose header every thread of the group evaluates alike, holding barriers.
struct GroupLoop {
  std::size_t first = 0, body_open = 0, body_close = 0;  // first: its statement's first token
  bool braced = true;  // else a single statement: body_open is the header's `)`, body_close its `;`
  Sequence body;
};

// A local of the threads, declared at a sequence's top level.
struct Local {
  std::string name;
  std::size_t statement = 0, declarator = 0;
  std::size_t region = 0, last_region = 0;  // declared in; the last region of its scope
  bool crossing = false;                    // a later region names it: kept in a per-thread array
};

class Planner {
 public:
  Planner(const std::vector<Token>& t, const ParsedKernel& k, const Target& target,
          const std::set<std::string>& mutable_reference_functions, bool exchanges)
      : t_(t), k_(k), target_(target), mutable_references_(mutable_reference_functions), exchanges_allowed_(exchanges) {}

  bool plan() {
    const std::size_t open = k_.body_open, close = k_.body_close;
    if (open == 0 || close <= open || close >= t_.size() || !punct(t_, open, "{")) return false;
    for (std::size_t i = open + 1; i < close; ++i) {
      const Token& tok = t_[i];
      if (tok.is_identifier("goto")) return false;
      if (tok.kind == TokenKind::directive && tok.text.find("pragma") == std::string::npos) return false;
      // A lambda: its body's returns and breaks are its own; not followed.
      if (punct(t_, i, "]") && (punct(t_, i + 1, "(") || punct(t_, i + 1, "{"))) return false;
      if (tok.kind == TokenKind::identifier && tok.text.rfind("__metalcall", 0) == 0) return false;
    }
    for (const auto& p : k_.params) {
      if (p.info.kind == ParamKind::builtin && per_thread(p.info.builtin)) {
        thread_params_.insert(p.info.name);
      } else if (p.info.kind == ParamKind::value || (p.info.kind == ParamKind::builtin) ||
                 ((p.info.kind == ParamKind::reference || p.info.kind == ParamKind::buffer) &&
                  p.info.address_space == AddressSpace::constant)) {
        group_names_.insert(p.info.name);
      } else {
        varying_params_.insert(p.info.name);
      }
      if (!declared_.insert(p.info.name).second) return false;
    }
    // The group's parameters are the kernel's, shared by its threads: a write by one would be seen by all
    // (a value's member or element too; a pointer's elements are memory, not the parameter).
    for (const auto& p : k_.params)
      if (written(p.info.name, kNone, p.info.kind == ParamKind::builtin || p.info.kind == ParamKind::value)) return false;
    if (!sequence(open + 1, close, 0, top_)) return false;
    // Each exchange's storage is on the worker's stack (40 KiB, metal_regions.h): a few dozen at most.
    if ((barriers_.empty() && exchanges_.empty()) || exchanges_.size() > 24) return false;
    return find_crossings() && check_exits();
  }

  const std::vector<std::size_t>& barriers() const { return barriers_; }
  /** The names of the SIMD-group calls the regions exchange (no longer synchronising calls). */
  std::vector<std::size_t> exchange_names() const {
    std::vector<std::size_t> names;
    for (const ExchangeCall& c : exchanges_) names.push_back(c.name);
    return names;
  }

  /** Writes the body, `{` to `}`, as regions. */
  void emit(std::vector<Token>& out) const {
    Writer w{out, t_};
    w.copy(k_.body_open);
    w.text(kRegionGroupMarker, k_.body_open);
    emit_sequence(w, top_);
    w.copy(k_.body_close);
  }

 private:
  const std::vector<Token>& t_;
  const ParsedKernel& k_;
  const Target& target_;
  const std::set<std::string>& mutable_references_;  // functions with non-const reference parameters
  const bool exchanges_allowed_;                      // SIMD-group calls may start regions (simd_exchanges.hpp)
  std::set<std::string> thread_params_;   // per-thread builtins: recomputed in each region
  std::set<std::string> group_names_;     // uniform across the group: parameters, group locals, loop variables
  std::set<std::string> varying_params_;  // device and threadgroup memory, textures
  std::set<std::string> thread_locals_;   // names of Local
  std::set<std::string> declared_;        // every name declared at a top level (and the parameters)
  std::vector<Statement> statements_;
  std::vector<Region> regions_;
  std::vector<GroupLoop> loops_;
  std::vector<Local> locals_;
  std::vector<std::size_t> barriers_;          // the `threadgroup_barrier` tokens
  std::vector<ExchangeCall> exchanges_;        // SIMD-group calls that start regions (simd_exchanges.hpp)
  std::set<std::size_t> returns_;              // `return` tokens that end a thread's iteration
  Sequence top_;

  struct Writer {
    std::vector<Token>& out;
    const std::vector<Token>& t;
    // Inserted tokens take columns after the token they follow, so that they print apart.
    void append(Token tok) {
      if (!out.empty() && tok.line == out.back().line &&
          tok.column <= out.back().column + static_cast<int>(out.back().text.size()))
        tok.column = out.back().column + static_cast<int>(out.back().text.size()) + 1;
      out.push_back(std::move(tok));
    }
    void copy(std::size_t i) { append(t[i]); }
    void copy(std::size_t first, std::size_t last) {
      for (std::size_t i = first; i <= last; ++i) copy(i);
    }
    void text(const std::string& s, std::size_t anchor) {
      for (Token tok : tokenize(s)) {
        tok.line = t[anchor].line;
        tok.column = t[anchor].column;
        append(std::move(tok));
      }
    }
  };

  bool named(std::size_t k, const std::string& name) const {
    return t_[k].kind == TokenKind::identifier && t_[k].text == name &&
           !(k > 0 && (punct(t_, k - 1, ".") || punct(t_, k - 1, "->")));
  }

  // True when `name` is named in [first, last] (not as a member).
  bool mentions(std::size_t first, std::size_t last, const std::string& name) const {
    for (std::size_t k = first; k <= last; ++k)
      if (named(k, name)) return true;
    return false;
  }

  // Whether the use of a name at k may change it: assigned, incremented, its address taken, a
  // reference bound to it, passed alone to a function while the source has functions taking
  // non-const references, or a member function called on it; `through`: by a member or element
  // too (`v.x += 1`, `a[i] = 0`, `f(v.y)`: seed 1 of the region fuzzer found all three shared).
  bool write_at(std::size_t k, bool through) const {
    const std::size_t e = through ? postfix_end(t_, k) : k;
    if (assignment(t_[e + 1]) || punct(t_, e + 1, "++") || punct(t_, e + 1, "--")) return true;
    if (e > k && punct(t_, e + 1, "(")) return true;
    if (punct(t_, k - 1, "++") || punct(t_, k - 1, "--") || address_taken(t_, k)) return true;
    return binds_reference(t_, k_.body_open, mutable_references_, k, e);
  }

  // True when the body may change `name` by that name (see write_at).
  bool written(const std::string& name, std::size_t declared_at = kNone, bool through = true) const {
    for (std::size_t k = k_.body_open + 1; k < k_.body_close; ++k)
      if (k != declared_at && named(k, name) && write_at(k, through)) return true;
    return false;
  }

  // Tokens [first, last) evaluate alike in every thread of the group, without side effects.
  bool uniform(std::size_t first, std::size_t last) const {
    for (std::size_t k = first; k < last; ++k) {
      const Token& tok = t_[k];
      switch (tok.kind) {
        case TokenKind::number:
        case TokenKind::character:
          continue;
        case TokenKind::string:
        case TokenKind::directive:
          return false;
        case TokenKind::punct:
          if (assignment(tok) || one_of(tok, {"++", "--", ";"})) return false;
          if (tok.is("&") && address_taken(t_, k + 1)) return false;
          continue;
        case TokenKind::identifier:
          break;
      }
      if (k > first && (punct(t_, k - 1, ".") || punct(t_, k - 1, "->"))) continue;  // a member
      if (punct(t_, k + 1, "(") && !group_names_.count(tok.text)) {
        if (!pure_callee(tok.text)) return false;
        continue;
      }
      if (punct(t_, k + 1, "<") && !group_names_.count(tok.text) && !thread_locals_.count(tok.text)) {
        // static_cast<uint>(x) and friends; other templates may be functions with effects.
        if (!one_of(tok, {"static_cast", "vec", "as_type"})) return false;
        continue;
      }
      if (group_names_.count(tok.text)) continue;
      if (thread_params_.count(tok.text) || varying_params_.count(tok.text) || thread_locals_.count(tok.text) ||
          declared_.count(tok.text))
        return false;
      // Else a name of namespace scope: a type, a constant, a function constant, an enumerator
      // (MSL has no mutable program-scope variables).
    }
    return true;
  }

  bool declare(const std::string& name) { return declared_.insert(name).second; }

  std::size_t new_region(std::size_t anchor, int depth) {
    Region r;
    r.anchor = anchor;
    r.depth = depth;
    regions_.push_back(r);
    return regions_.size() - 1;
  }

  // The statements of a block's body [first, last): regions, group loops, group statements.
  bool sequence(std::size_t first, std::size_t last, int depth, Sequence& seq) {
    seq.first_region = regions_.size();
    std::size_t region = new_region(first < last ? first : last, depth);
    seq.items.push_back({false, region});
    std::vector<std::size_t> own_locals;  // locals_ declared here: their scope ends with this sequence
    for (std::size_t i = first; i < last;) {
      const std::size_t end = statement_end(t_, i);
      if (end == kNone || end >= last) return false;
      std::size_t h = i;  // past `#pragma` lines, which stay with their statement
      while (h < end && t_[h].kind == TokenKind::directive) ++h;
      const Token& head = t_[h];
      const bool exchanges = holds_exchange(t_, i, end);
      Statement st;
      st.first = i;
      st.last = end;
      if (const std::size_t b = h == i ? barrier_statement(t_, i, end) : kNone; b != kNone) {
        if (!plain_barrier_arguments(t_, b)) return false;
        st.kind = Kind::barrier;
        barriers_.push_back(b);
        region = new_region(i, depth);
        regions_[region].barrier = b;
        seq.items.push_back({false, region});
      } else if ((head.is_identifier("for") || head.is_identifier("while")) && (holds_barrier(t_, i, end) || exchanges)) {
        std::size_t loop = 0;
        if (!group_loop(i, h, end, depth, loop)) return false;
        st.kind = Kind::loop;
        seq.items.push_back({true, loop});
        region = new_region(end, depth);
        seq.items.push_back({false, region});
      } else if (holds_barrier(t_, i, end) || refused_start(head) || punct(t_, h, "[")) {
        return false;
      } else if (exchanges && !start_exchange_region(i, end, depth, region, seq)) {
        return false;
      } else if (statement_keyword(head) || punct(t_, h, "{") || punct(t_, h, ";")) {
        if (head.is_identifier("break") || head.is_identifier("continue")) return false;  // the threads' loop is not theirs
        regions_[region].statements.push_back(statements_.size());
      } else if (h != i) {
        return false;
      } else if (auto decl = parse_declaration(t_, i, end)) {
        st.kind = Kind::declaration;
        st.decl = decl;
        if (!classify(st, region, own_locals)) return false;
        (st.group ? regions_[region].group_statements : regions_[region].statements).push_back(statements_.size());
      } else if (expression_statement(t_, i, end)) {
        regions_[region].statements.push_back(statements_.size());
      } else {
        return false;
      }
      statements_.push_back(std::move(st));
      i = end + 1;
    }
    seq.last_region = regions_.size() - 1;
    for (std::size_t l : own_locals) locals_[l].last_region = seq.last_region;
    return true;
  }

  // A declaration at a sequence's top level: the group's (threadgroup storage, constexpr, or
  // a uniform initialiser nothing changes) or the threads' (a Local).
  bool classify(Statement& st, std::size_t region, std::vector<std::size_t>& own_locals) {
    const Declaration& d = *st.decl;
    bool named_before = false;  // by a statement of its region: moved ahead, it would rebind that name
    for (const Declarator& dd : d.declarators) {
      if (!declare(t_[dd.name].text)) return false;  // shadowing: not followed
      for (std::size_t s : regions_[region].statements)
        named_before = named_before || mentions(statements_[s].first, statements_[s].last, t_[dd.name].text);
    }
    if (d.is_threadgroup && !d.indirect) {
      if (named_before) return false;
      for (const Declarator& dd : d.declarators)
        if (dd.indirect || dd.init_first != dd.init_last || !uniform(dd.suffix_first, dd.suffix_last)) return false;
      st.group = true;
      for (const Declarator& dd : d.declarators) varying_params_.insert(t_[dd.name].text);
      return true;
    }
    if (d.is_static) return false;
    bool group = !named_before && (d.is_constexpr || (!d.is_volatile && unwritable_but_by_name(t_, d)));
    for (const Declarator& dd : d.declarators) {
      if (d.is_constexpr) break;
      if (dd.init_first == dd.init_last || !uniform(dd.init_first, dd.init_last) ||
          !uniform(d.type_first, d.type_last) || !uniform(dd.suffix_first, dd.suffix_last) ||
          written(t_[dd.name].text, dd.name))
        group = false;
      // `T x(a)`/`T x{a}`: its parentheses or braces are the initializer's own.
    }
    if (group) {
      st.group = true;
      for (const Declarator& dd : d.declarators) group_names_.insert(t_[dd.name].text);
      return true;
    }
    for (std::size_t n = 0; n < d.declarators.size(); ++n) {
      Local l;
      l.name = t_[d.declarators[n].name].text;
      l.statement = statements_.size();
      l.declarator = n;
      l.region = region;
      own_locals.push_back(locals_.size());
      locals_.push_back(l);
      thread_locals_.insert(l.name);
    }
    return true;
  }

  // A declaration or expression statement [first, end] calling SIMD-group functions that every
  // thread of the group evaluates (none in a conditional's arm or the right of `&&`/`||`), each of a value
  // the threads compute and a lane, delta or mask the same for all: it starts a region, and the
  // region before puts each call's value (simd_exchanges.hpp).
  bool start_exchange_region(std::size_t first, std::size_t end, int depth, std::size_t& region, Sequence& seq) {
    if (!exchanges_allowed_ || t_[first].kind == TokenKind::directive || statement_keyword(t_[first]) ||
        punct(t_, first, "{"))
      return false;
    std::vector<ExchangeCall> calls;
    if (!exchange_calls(t_, first, end, calls) || skipped_by_a_branch(t_, first, end, calls)) return false;
    const auto decl = parse_declaration(t_, first, end);
    for (const ExchangeCall& c : calls) {
      for (std::size_t k = c.value_first; k < c.value_last; ++k) {
        const Token& tok = t_[k];
        if (assignment(tok) || one_of(tok, {"++", "--", ";"}) || tok.kind == TokenKind::string) return false;
        // The value is put before the statement runs: not of a name the statement declares.
        for (std::size_t d = 0; decl && d < decl->declarators.size(); ++d)
          if (named(k, t_[decl->declarators[d].name].text)) return false;
      }
      if (c.arg_first != c.arg_last && !uniform(c.arg_first, c.arg_last)) return false;
    }
    const std::size_t before = region;
    region = new_region(first, depth);
    seq.items.push_back({false, region});
    for (const ExchangeCall& c : calls) {
      regions_[before].puts.push_back(exchanges_.size());
      regions_[region].runs.push_back(exchanges_.size());
      exchanges_.push_back(c);
    }
    return true;
  }

  // `for (T v = a; cond; v op= b) { ... }` or `while (cond) { ... }` holding barriers, with a
  // uniform header: the group runs it once, its body's regions each a loop over the threads.
  bool group_loop(std::size_t statement, std::size_t first, std::size_t end, int depth, std::size_t& index) {
    const std::size_t open = first + 1;
    if (!punct(t_, open, "(")) return false;
    const std::size_t close = matching(t_, open);
    // A body in braces, or one statement (`v += simd_shuffle_down(v, o);`).
    const bool braced = punct(t_, close + 1, "{");
    if (close >= end || (braced && matching(t_, close + 1) != end)) return false;
    std::string variable;
    if (t_[first].is_identifier("for")) {
      std::vector<std::size_t> semicolons;
      for (std::size_t k = open + 1; k < close; ++k) {
        if (punct(t_, k, "(") || punct(t_, k, "[") || punct(t_, k, "{")) k = matching(t_, k);
        else if (punct(t_, k, ";")) semicolons.push_back(k);
      }
      if (semicolons.size() != 2) return false;
      const std::size_t s1 = semicolons[0], s2 = semicolons[1];
      if (s1 > open + 1) {
        const auto init = parse_declaration(t_, open + 1, s1);
        if (!init || init->declarators.size() != 1 || init->indirect || init->is_static || init->is_threadgroup)
          return false;
        const Declarator& dd = init->declarators[0];
        if (dd.init_first == dd.init_last || !uniform(dd.init_first, dd.init_last) ||
            !uniform(init->type_first, init->type_last) || dd.suffix_first != dd.suffix_last)
          return false;
        variable = t_[dd.name].text;
        if (!declare(variable)) return false;
        // The body reads it only: the header alone advances it.
        for (std::size_t k = close + 1; k < end; ++k)
          if (named(k, variable) && write_at(k, true)) return false;
        group_names_.insert(variable);
      }
      if (!uniform(s1 + 1, s2)) return false;
      // The step: ++v, v++, --v, v--, v op= uniform.
      const std::size_t n = close - (s2 + 1);
      const std::size_t a = s2 + 1;
      bool step = n == 0;
      if (!variable.empty() && n == 2)
        step = (named(a, variable) && (punct(t_, a + 1, "++") || punct(t_, a + 1, "--"))) ||
               ((punct(t_, a, "++") || punct(t_, a, "--")) && named(a + 1, variable));
      if (!variable.empty() && n >= 3 && named(a, variable) && assignment(t_[a + 1]))
        step = uniform(a + 2, close);
      if (!step) return false;
    } else {
      if (!uniform(open + 1, close)) return false;
    }
    // Every thread must reach the same barriers: nothing leaves the loop or its iteration early.
    for (std::size_t k = close + 1; k < end; ++k)
      if (t_[k].is_identifier("return")) return false;
    if (braced ? leaves(t_, close + 2, end - 1) : leaves(t_, close + 1, end)) return false;
    GroupLoop loop;
    loop.first = statement;
    loop.braced = braced;
    loop.body_open = braced ? close + 1 : close;
    loop.body_close = end;
    index = loops_.size();  // its body's loops follow it
    loops_.push_back(loop);
    Sequence body;
    if (!(braced ? sequence(close + 2, end, depth + 1, body) : sequence(close + 1, end + 1, depth + 1, body))) return false;
    loops_[index].body = std::move(body);
    return true;
  }

  // Which locals a later region names (kept per thread in an array), and whether each can be.
  bool find_crossings() {
    for (Local& l : locals_) {
      for (std::size_t r = l.region + 1; r <= l.last_region && !l.crossing; ++r)
        for (std::size_t s : regions_[r].statements)
          if (mentions(statements_[s].first, statements_[s].last, l.name)) l.crossing = true;
      if (!l.crossing) continue;
      const Statement& st = statements_[l.statement];
      const Declaration& d = *st.decl;
      const Declarator& dd = d.declarators[l.declarator];
      if (d.indirect || dd.indirect || d.is_auto || d.is_volatile || d.is_constexpr) return false;
      // An array: its name decays to a pointer whose address space picks overloads (a slot's
      // element would pass as another space's pointer: test_language's address-space overloads
      // read the wrong one), and checked mode's arrays are classes. Fibers.
      if (dd.suffix_first != dd.suffix_last) return false;
      // Its type is named ahead of the threads: nothing of theirs in it.
      for (std::size_t k = d.type_first; k < d.type_last; ++k)
        if (t_[k].kind == TokenKind::identifier && (thread_locals_.count(t_[k].text) || thread_params_.count(t_[k].text)))
          return false;
      for (std::size_t k = dd.suffix_first; k < dd.suffix_last; ++k)
        if (t_[k].kind == TokenKind::identifier && (thread_locals_.count(t_[k].text) || thread_params_.count(t_[k].text)))
          return false;
      // Its address never taken: a pointer to it would outlive its region's copy.
      for (std::size_t k = k_.body_open + 1; k < k_.body_close; ++k)
        if (named(k, l.name) && address_taken(t_, k)) return false;
    }
    return true;
  }

  // Returns only in the kernel's last region (nothing after them may reach a barrier), and
  // no break or continue that would leave a region's threads loop.
  bool check_exits() {
    const std::size_t last = top_.last_region;
    for (std::size_t r = 0; r < regions_.size(); ++r) {
      for (std::size_t s : regions_[r].statements) {
        const Statement& st = statements_[s];
        if (leaves(t_, st.first, st.last)) return false;
        for (std::size_t k = st.first; k <= st.last; ++k) {
          if (!t_[k].is_identifier("return")) continue;
          if (r != last || regions_[r].depth != 0 || !punct(t_, k + 1, ";")) return false;
          returns_.insert(k);
        }
        if (r == last && return_in_loop(t_, st.first, st.last)) return false;
      }
    }
    return true;
  }

  // ---- writing ----

  std::string slot_name(std::size_t local) const { return "mtl_rs_" + std::to_string(local); }
  std::string exchange_site(std::size_t x) const { return "mtl_xs_" + std::to_string(x); }

  // The exchange whose call starts at token k of region r's statement, if one does.
  const ExchangeCall* exchange_at(const Region& r, std::size_t k) const {
    for (std::size_t x : r.runs)
      if (exchanges_[x].first == k) return &exchanges_[x];
    return nullptr;
  }

  // The call's result for its thread, read from the site its values were exchanged in.
  void take(Writer& w, const ExchangeCall& c) const {
    const std::string site = exchange_site(static_cast<std::size_t>(&c - exchanges_.data()));
    if (!c.vote_type.empty()) {
      w.text("metal :: mtl_regions :: mtl_take_vote < " + c.vote_type + " > ( " + site + " , mtl_ti )", c.name);
      return;
    }
    w.text("metal :: mtl_regions :: mtl_take < " + exchanged_type(t_, c), c.name);
    w.text("> ( " + site + " , mtl_ti )", c.name);
  }

  // In region r, the declarations of the per-thread builtins and the references to the slots of
  // the earlier regions' locals that the code `mentions` names, at the token `at`.
  template <class Mentions>
  void thread_names(Writer& w, std::size_t r, const Mentions& mentions, std::size_t at) const {
    for (const auto& p : k_.params) {
      if (!thread_params_.count(p.info.name) || !mentions(p.info.name)) continue;
      std::string decl;
      for (std::size_t k : p.type_tokens) decl += t_[k].text + " ";
      decl += p.info.name + " ( ";
      const int width = std::min(p.info.vector_width, 3);
      for (int d = 0; d < width; ++d) decl += (d ? " , " : "") + builtin_component(p.info.builtin, d, target_);
      w.text(decl + " ) ;", at);
    }
    for (std::size_t l = 0; l < locals_.size(); ++l) {
      const Local& local = locals_[l];
      if (!local.crossing || local.region >= r || r > local.last_region || !mentions(local.name)) continue;
      const bool is_const = statements_[local.statement].decl->is_const;
      w.text(std::string(is_const ? "const " : "") + "auto & " + local.name + " = " + slot_name(l) + " [ mtl_ti ] ;", at);
    }
  }

  // The exchange of call x, between the region that put its values and region r, its call's:
  // its value's type read with thread 0's names (only the type: nothing is evaluated).
  void run_exchange(Writer& w, std::size_t r, std::size_t x) const {
    const ExchangeCall& c = exchanges_[x];
    const std::size_t at = c.name;
    w.text("{ const unsigned mtl_x = mtl_x0 , mtl_ly = 0 , mtl_lz = 0 ; __metalcall_thread_ids ;", at);
    thread_names(w, r, [&](const std::string& name) { return mentions(c.value_first, c.value_last - 1, name); }, at);
    w.text("metal :: mtl_regions :: mtl_run < metal :: mtl_regions :: " + c.op + " , " + exchanged_type(t_, c) + " > ( " +
               exchange_site(x) + " , mtl_count , " + (c.quad ? "4u" : "mtl_sw") + " , ( unsigned short ) (", at);
    if (c.arg_first == c.arg_last) w.text("0u", at);
    else w.copy(c.arg_first, c.arg_last - 1);
    w.text(") ) ; }", at);
  }

  void emit_sequence(Writer& w, const Sequence& seq) const {
    for (const Item& item : seq.items) {
      if (!item.loop) {
        emit_region(w, item.index);
        continue;
      }
      const GroupLoop& loop = loops_[item.index];
      w.copy(loop.first, loop.body_open);
      if (!loop.braced) w.text("{", loop.body_open);
      emit_sequence(w, loop.body);
      if (loop.braced) w.copy(loop.body_close);
      else w.text("}", loop.body_close);
    }
  }

  void emit_region(Writer& w, std::size_t r) const {
    const Region& region = regions_[r];
    if (region.barrier != static_cast<std::size_t>(-1)) {
      w.text("metal :: mtl_regions :: barrier_arguments", region.barrier);
      w.copy(region.barrier + 1, matching(t_, region.barrier + 1));
      w.text(";", region.barrier);
    }
    // The exchanges of the statement that starts it, over the values the region before put.
    for (std::size_t x : region.runs) run_exchange(w, r, x);
    for (std::size_t s : region.group_statements) w.copy(statements_[s].first, statements_[s].last);
    for (std::size_t x : region.puts) w.text("metal :: mtl_regions :: mtl_exchange_site " + exchange_site(x) + " ;", exchanges_[x].name);
    // Per-thread arrays of the locals declared here that later regions read.
    for (std::size_t l = 0; l < locals_.size(); ++l) {
      const Local& local = locals_[l];
      if (local.region != r || !local.crossing) continue;
      const Declaration& d = *statements_[local.statement].decl;
      const Declarator& dd = d.declarators[local.declarator];
      std::string type;
      for (std::size_t k = d.type_first; k < d.type_last; ++k)
        if (!t_[k].is_identifier("const") && !t_[k].is_identifier("thread")) type += t_[k].text + " ";
      for (std::size_t k = dd.suffix_first; k < dd.suffix_last; ++k) type += t_[k].text + " ";
      w.text("metal :: mtl_regions :: mtl_slots < " + type + " , " + std::to_string(l) + " > " + slot_name(l) +
                 " ( mtl_count ) ;",
             statements_[local.statement].first);
    }
    if (region.statements.empty() && region.puts.empty()) return;
    const std::size_t first = region.statements.empty() ? region.anchor : statements_[region.statements.front()].first;
    const std::size_t last = region.statements.empty() ? region.anchor : statements_[region.statements.back()].last;
    // Whether the threads' code names `name`: a statement, or a value put for an exchange.
    const auto region_mentions = [&](const std::string& name) {
      for (std::size_t s : region.statements)
        if (mentions(statements_[s].first, statements_[s].last, name)) return true;
      for (std::size_t x : region.puts)
        if (mentions(exchanges_[x].value_first, exchanges_[x].value_last - 1, name)) return true;
      return false;
    };
    // The `;` ends the macro's statement for the passes after this one: checked mode read
    // `__metalcall_thread_ids long a[2] = {...}` as a declaration of that type (fuzz seed 23).
    w.text("__metalcall_threads { __metalcall_thread_ids ;", first);
    thread_names(w, r, region_mentions, first);
    for (std::size_t s : region.statements)
      for (std::size_t k = statements_[s].first; k <= statements_[s].last; ++k) {
        if (returns_.count(k)) {
          w.text("continue", k);
        } else if (const ExchangeCall* c = exchange_at(region, k)) {
          take(w, *c);
          k = c->close;
        } else {
          w.copy(k);
        }
      }
    for (std::size_t x : region.puts) {
      const ExchangeCall& c = exchanges_[x];
      w.text("metal :: mtl_regions :: mtl_put ( " + exchange_site(x) + " , mtl_ti , (", c.name);
      w.copy(c.value_first, c.value_last - 1);
      w.text(") ) ;", c.name);
    }
    for (std::size_t l = 0; l < locals_.size(); ++l) {
      const Local& local = locals_[l];
      if (local.region != r || !local.crossing) continue;
      w.text("metal :: mtl_regions :: mtl_store ( " + slot_name(l) + " [ mtl_ti ] , " + local.name + " ) ;", last);
    }
    w.text("}", last);
  }
};

}  // namespace

std::vector<Token> form_barrier_regions(const std::vector<Token>& t, const std::string& source, const Target& target) {
  if (std::none_of(t.begin(), t.end(), [](const Token& k) {
        return k.is_identifier("threadgroup_barrier") || (k.kind == TokenKind::identifier && exchange_function(k.text));
      }))
    return t;
  try {
    const ParsedSource parsed = parse_source(t, source);
    const std::set<std::string> references = mutable_reference_functions(t);
    // Kernels by body: a template's instantiations share one.
    std::map<std::size_t, std::vector<std::size_t>> bodies;
    for (std::size_t i = 0; i < parsed.kernels.size(); ++i)
      if (parsed.kernels[i].body_close > parsed.kernels[i].body_open) bodies[parsed.kernels[i].body_open].push_back(i);
    const bool exchanges = !declares_exchange_function(t);
    std::map<std::size_t, std::unique_ptr<Planner>> plans;
    for (const auto& [open, kernels] : bodies) {
      auto plan = std::make_unique<Planner>(t, parsed.kernels[kernels.front()], target, references, exchanges);
      if (plan->plan()) plans[open] = std::move(plan);
    }
    // Nothing else in a planned kernel may synchronise: with its own barriers renamed, every
    // kernel sharing the body must run as a plain loop by fiber_kernels' rule.
    for (bool changed = true; changed && !plans.empty();) {
      changed = false;
      std::vector<Token> neutral = t;
      for (const auto& [open, plan] : plans)
        for (std::size_t b : plan->barriers()) neutral[b].text = kNeutralBarrier;
      for (const auto& [open, plan] : plans)
        for (std::size_t n : plan->exchange_names()) neutral[n].text = kNeutralBarrier;
      const std::vector<bool> sync = fiber_kernels(neutral, parsed.kernels);
      for (auto it = plans.begin(); it != plans.end();) {
        bool keep = true;
        for (std::size_t i : bodies[it->first]) keep = keep && !sync[i];
        if (keep) {
          ++it;
        } else {
          it = plans.erase(it);
          changed = true;
        }
      }
    }
    if (plans.empty()) return t;
    std::vector<Token> out;
    out.reserve(t.size() * 2);
    for (std::size_t i = 0; i < t.size(); ++i) {
      auto plan = plans.find(i);
      if (plan == plans.end()) {
        out.push_back(t[i]);
        continue;
      }
      plan->second->emit(out);
      i = parsed.kernels[bodies[i].front()].body_close;
    }
    return out;
  } catch (...) {
    return t;  // the translation reports what it cannot follow
  }
}

bool runs_in_regions(const std::vector<Token>& t, const ParsedKernel& k) {
  return k.body_open + 1 < t.size() && k.body_close > k.body_open && t[k.body_open + 1].is_identifier(kRegionGroupMarker);
}

}  // namespace metalcall::msl
