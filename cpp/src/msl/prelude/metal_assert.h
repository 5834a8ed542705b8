// metalcall MSL prelude: assert(condition), as Apple's <metal_assert> defines it for a
// compile without asserts enabled (the default): the condition is not evaluated.
#pragma once

#undef assert
#define assert(condition) ((void)0)
