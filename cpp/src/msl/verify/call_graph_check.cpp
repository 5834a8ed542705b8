// Reachability and cycles over the verifier's call graph (see call_graph_check.hpp).
#include "msl/verify/call_graph_check.hpp"

#include <map>
#include <set>

namespace metalcall::msl::verify {

namespace {

// The functions of the unit a node may call: those Clang resolved, and every function
// named as an unresolved call is (a template's dependent call, taken conservatively).
// A kernel named as a value is its [[host_name]] instantiation's decltype, not a call: it
// is left out of what a call through a function-pointer template parameter may reach.
std::vector<std::string> callees(const TranslationFacts& facts, const FunctionFacts& f, const std::set<std::string>& kernels) {
  std::vector<std::string> out;
  for (const auto& k : f.calls)
    if (facts.functions.count(k)) out.push_back(k);
  for (const auto& name : f.unresolved) {
    auto [b, e] = facts.by_name.equal_range(name);
    for (auto it = b; it != e; ++it)
      if (name != kNamedFunctions || !kernels.count(it->second)) out.push_back(it->second);
  }
  return out;
}

std::string path_text(const TranslationFacts& facts, const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "" : " -> ") + facts.functions.at(k).name;
  return out;
}

// Breadth first from `start`: the path to the first function `stop` accepts (empty for none).
template <typename Stop>
std::vector<std::string> first_path(const TranslationFacts& facts, const std::set<std::string>& kernels, const std::string& start,
                                    Stop stop) {
  std::map<std::string, std::string> parent = {{start, ""}};
  std::vector<std::string> queue = {start};
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const std::string k = queue[i];
    if (stop(facts.functions.at(k))) {
      std::vector<std::string> path;
      for (std::string p = k; !p.empty(); p = parent[p]) path.insert(path.begin(), p);
      return path;
    }
    for (const auto& next : callees(facts, facts.functions.at(k), kernels))
      if (parent.emplace(next, k).second) queue.push_back(next);
  }
  return {};
}

// A cycle reachable from `start`, as the path around it (empty for none): depth first,
// iteratively, so that a long chain of calls cannot overflow this thread's stack.
std::vector<std::string> find_cycle(const TranslationFacts& facts, const std::set<std::string>& kernels,
                                    const std::string& start) {
  std::map<std::string, int> state;  // 1 on the current path, 2 done
  std::vector<std::pair<std::string, std::vector<std::string>>> stack;
  stack.push_back({start, callees(facts, facts.functions.at(start), kernels)});
  state[start] = 1;
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next.empty()) {
      state[node] = 2;
      stack.pop_back();
      continue;
    }
    const std::string k = next.back();
    next.pop_back();
    if (state[k] == 1) {
      std::vector<std::string> cycle;
      bool on = false;
      for (const auto& frame : stack) {
        on = on || frame.first == k;
        if (on) cycle.push_back(frame.first);
      }
      cycle.push_back(k);
      return cycle;
    }
    if (state[k] == 0) {
      state[k] = 1;
      stack.push_back({k, callees(facts, facts.functions.at(k), kernels)});
    }
  }
  return {};
}

// The kernel an entry point runs: the user's function it (or the fiber body it names) calls.
const FunctionFacts* kernel_of(const TranslationFacts& facts, const EntryFacts& e) {
  std::vector<std::string> level = {e.key};
  for (int depth = 0; depth < 3 && !level.empty(); ++depth) {
    std::vector<std::string> next;
    for (const auto& k : level) {
      const FunctionFacts& f = facts.functions.at(k);
      for (const auto& c : f.called) {
        auto it = facts.functions.find(c);
        if (it != facts.functions.end() && it->second.origin == Origin::user) return &it->second;
      }
      for (const auto& c : f.calls) {
        auto it = facts.functions.find(c);
        if (it != facts.functions.end() && it->second.origin == Origin::translator) next.push_back(c);
      }
    }
    level = next;
  }
  return nullptr;
}

std::string key_of(const TranslationFacts& facts, const FunctionFacts* f) {
  for (const auto& [k, g] : facts.functions)
    if (&g == f) return k;
  return "";
}

const char* mode_name(EntryMode m) {
  return m == EntryMode::loop ? "as a plain loop over its threads" : "as loops between its barriers (regions)";
}

}  // namespace

std::vector<std::string> check_call_graph(const TranslationFacts& facts) {
  std::vector<std::string> problems;
  std::set<std::string> cycles;
  std::set<std::string> kernels;
  for (const auto& e : facts.entries)
    if (const FunctionFacts* k = kernel_of(facts, e)) kernels.insert(key_of(facts, k));
  for (const auto& e : facts.entries) {
    // The kernel: the first function of the user's source its entry point reaches.
    const FunctionFacts* k = kernel_of(facts, e);
    const std::string kernel = k ? k->name : e.symbol;
    const std::string who = "kernel '" + kernel + "' (" + e.symbol + ")";
    if (e.mode != EntryMode::fibers) {
      const auto path = first_path(facts, kernels, e.key, [](const FunctionFacts& f) { return !f.synchronises.empty(); });
      if (!path.empty())
        problems.push_back(who + " was translated to run " + mode_name(e.mode) + ", but it can reach " +
                           facts.functions.at(path.back()).synchronises + ": " + path_text(facts, path));
    }
    const auto cycle = find_cycle(facts, kernels, e.key);
    if (!cycle.empty() && cycles.insert(path_text(facts, cycle)).second)
      problems.push_back(who + " can reach recursion, which MSL does not allow: " + path_text(facts, cycle));
  }
  return problems;
}

}  // namespace metalcall::msl::verify
