// Render-stage functions (vertex, fragment, mesh, object) in a library that also has kernels:
// metalcall runs compute kernels only, so their definitions are left out of what the front
// end checks and translates, as if the library had been split. MetalPetal's and naga's files
// put both kinds side by side; the kernels are what a compute caller asks for.
#pragma once

#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** Removes each render-stage function's tokens (its attributes, declaration and body). */
void drop_render_functions(std::vector<Token>& t);

}  // namespace metalcall::msl
