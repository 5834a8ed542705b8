// Which code of the source may call a SIMD-group function: its functions, lambdas and functors
// (a struct's operator()), and the names their calls go by. For the passes that act around such
// calls: the CPU's loop latches and call frames (simd_latches, simd_frames) and CUDA's rejoins
// (simd_reconvergence). By name, to a fixed point: overloads and template instances count as
// one; a callable handed to a function as an argument is not followed.
#pragma once

#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** A body of the source that code may call: a function's, a lambda's or an operator()'s. */
struct CallableBody {
  std::size_t params = 0;  // its parameter list's `(`; statements::kNone for a lambda written `[…] {`
  std::size_t intro = 0;   // a lambda's `]`; statements::kNone for a function
  std::size_t open = 0;    // the body's `{`
  std::size_t close = 0;   // its `}`
  std::string name;        // the function's, or the variable a lambda initialises ("" if none)
  bool kernel = false;     // a kernel (or other entry point): the root of the calls
  bool is_constexpr = false;
  bool reaches = false;    // may call a SIMD-group function
};

class SimdCallers {
 public:
  /** is_simd: the names whose call is a SIMD-group function for the pass at hand. */
  SimdCallers(const std::vector<Token>& t, std::function<bool(const std::string&)> is_simd);

  const std::vector<CallableBody>& bodies() const { return bodies_; }
  /** The struct whose operator() body i is, or "" (not an operator()). */
  const std::string& functor_of(std::size_t i) const { return functor_of_[i]; }
  /** Whether the token at j may call a SIMD-group function: such a name, a function or lambda
   * that may before its `(`, or a functor type that may or an object of it. */
  bool calls(std::size_t j) const;
  /** Whether [begin, end) holds such a token. */
  bool mentions(std::size_t begin, std::size_t end) const;

 private:
  void find_bodies();
  void add_objects(const std::string& type);

  const std::vector<Token>& t_;
  std::function<bool(const std::string&)> is_simd_;
  std::vector<CallableBody> bodies_;
  std::vector<std::string> functor_of_;  // per body: the struct an operator() belongs to, or ""
  std::set<std::string> names_;          // called as `name(`
  std::set<std::string> types_;          // functor types: any mention
};

/** Whether the `{` at j opens a lambda's body (`[…] {`, `[…](…) {`, `[…](…) mutable -> T {`);
 * sets *intro to its `]`. */
bool lambda_body(const std::vector<Token>& t, std::size_t j, std::size_t* intro = nullptr);

}  // namespace metalcall::msl
