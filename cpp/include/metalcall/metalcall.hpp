// Umbrella header of the metalcall C++ API.
#pragma once

#include "metalcall/argument.hpp"
#include "metalcall/buffer.hpp"
#include "metalcall/cache.hpp"
#include "metalcall/completion.hpp"
#include "metalcall/device.hpp"
#include "metalcall/errors.hpp"
#include "metalcall/interrupt.hpp"
#include "metalcall/reflection.hpp"
#include "metalcall/texture.hpp"
#include "metalcall/translation_check.hpp"
#include "metalcall/warnings.hpp"
#include "metalcall/version.hpp"
