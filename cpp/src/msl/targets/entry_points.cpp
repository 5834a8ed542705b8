// The part of each kernel's entry point that every target shares (see entry_points.hpp).
#include "msl/targets/entry_points.hpp"

#include <algorithm>
#include <sstream>

#include "msl/targets/cpu_abi.hpp"
#include "msl/lex/token_text.hpp"

namespace metalcall::msl {

namespace {

// What the runtime passes for a texture or sampler parameter (metal_texture.h): a descriptor,
// N of them in a row for `array<texture2d<T>, N>`.
std::string descriptor_type(const ParamInfo& p) {
  if (p.kind == ParamKind::sampler) return "metal::mtl_sampler_abi";
  if (p.texture_count > 0) return "metal::array<metal::mtl_texture_abi, " + std::to_string(p.texture_count) + ">";
  return "metal::mtl_texture_abi";
}

// One table for every target; only its declaration and the binding's integer type differ.
void emit_layout_table(std::ostream& o, const std::vector<Token>& t, const ParsedKernel& k, std::size_t index,
                       const Target& target) {
  o << target.layout_declaration() << cpu_layout_symbol(index) << "[] = {";
  for (const auto& p : k.params) {
    if (p.info.kind == ParamKind::builtin) {
      o << "{0, 0, -1" << target.layout_entry_tail(index, p.info) << "}, ";
    } else if (p.info.kind == ParamKind::texture || p.info.kind == ParamKind::sampler) {
      // A descriptor the runtime fills in (metal_texture.h).
      const std::string abi = descriptor_type(p.info);
      o << "{sizeof(" << abi << "), alignof(" << abi << "), " << p.info.binding << target.layout_entry_tail(index, p.info)
        << "}, ";
    } else {
      std::string e = type_text(t, p.type_tokens, true, &k.template_arguments);
      if (e == "void") e = "unsigned char";  // `device const void* src` (ggml): bytes
      const std::string binding = p.binding_expression.empty()
                                      ? std::to_string(p.info.binding)
                                      : "(" + std::string(target.binding_type()) + ")(" + p.binding_expression + ")";
      o << "{sizeof(" << e << "), alignof(" << e << "), " << binding << target.layout_entry_tail(index, p.info) << "}, ";
    }
  }
  o << target.layout_terminator(index) << "};\n";
}

// The non-builtin parameters with their element types, for the target's parameter block.
std::vector<ParamSlot> parameter_slots(const std::vector<Token>& t, const ParsedKernel& k) {
  std::vector<ParamSlot> slots;
  for (const auto& p : k.params) {
    if (p.info.kind == ParamKind::texture || p.info.kind == ParamKind::sampler) slots.push_back({p.info, descriptor_type(p.info)});
    else if (p.info.kind != ParamKind::builtin) slots.push_back({p.info, type_text(t, p.type_tokens, true, &k.template_arguments)});
  }
  return slots;
}

}  // namespace

// Component d of a builtin, in the names every entry point declares: the group's
// origin mtl_x0/y0/z0, the thread's mtl_lx/ly/lz in it, the group mtl_gx/gy/gz, the actual
// group size mtl_ax/ay/az (smaller at the grid's edge) and the dispatch's mtl_tx/ty/tz. The
// entry point's names are all mtl_ ones, which user source may not spell: no kernel, type or
// variable of the user's can collide with them (implementation_rules.hpp).
std::string builtin_component(Builtin b, int d, const Target& target) {
  static const char* xyz[3] = {"x", "y", "z"};
  const std::string c = xyz[d];
  // 32 (CUDA's warps), or the launch's width, a power of two (CPU): a mask and a shift, not a division.
  const std::string w = target.simd_width_expression();
  const bool fixed = w == "32u";
  const std::string w_less_one = fixed ? "31u" : "(" + w + " - 1u)";
  const std::string index = "((mtl_lz * mtl_ay + mtl_ly) * mtl_ax + mtl_lx)";
  switch (b) {
    case Builtin::thread_position_in_grid: return "mtl_" + c + "0 + mtl_l" + c;
    case Builtin::thread_position_in_threadgroup: return "mtl_l" + c;
    case Builtin::threadgroup_position_in_grid: return "mtl_g" + c;
    case Builtin::threads_per_threadgroup: return "mtl_a" + c;
    case Builtin::dispatch_threads_per_threadgroup: return "mtl_t" + c;
    case Builtin::threadgroups_per_grid: return "mtl_L->groups[" + std::to_string(d) + "]";
    case Builtin::threads_per_grid: return target.grid_size_expression(d);
    case Builtin::thread_index_in_threadgroup: return "((mtl_lz * mtl_ay + mtl_ly) * mtl_ax + mtl_lx)";
    case Builtin::thread_index_in_simdgroup: return fixed ? "(" + index + " % 32u)" : "(" + index + " & " + w_less_one + ")";
    case Builtin::simdgroup_index_in_threadgroup:
      return fixed ? "(" + index + " / 32u)" : "(" + index + " >> __builtin_ctz(" + w + "))";
    case Builtin::threads_per_simdgroup: return w;
    case Builtin::simdgroups_per_threadgroup: return "((mtl_ax * mtl_ay * mtl_az + " + w_less_one + ") / " + w + ")";
    case Builtin::thread_execution_width: return w;
    case Builtin::dispatch_simdgroups_per_threadgroup: return "((mtl_tx * mtl_ty * mtl_tz + " + w_less_one + ") / " + w + ")";
    case Builtin::thread_index_in_quadgroup: return "(((mtl_lz * mtl_ay + mtl_ly) * mtl_ax + mtl_lx) % 4u)";
    case Builtin::quadgroup_index_in_threadgroup: return "(((mtl_lz * mtl_ay + mtl_ly) * mtl_ax + mtl_lx) / 4u)";
    case Builtin::quadgroups_per_threadgroup: return "((mtl_ax * mtl_ay * mtl_az + 3u) / 4u)";
    case Builtin::dispatch_quadgroups_per_threadgroup: return "((mtl_tx * mtl_ty * mtl_tz + 3u) / 4u)";
    case Builtin::grid_origin: return "0u";  // no stage-in region: the grid's own origin
    case Builtin::grid_size: return target.grid_size_expression(d);
    case Builtin::none: break;
  }
  return "0u";
}

namespace {

// Checked mode: a pointer parameter becomes a bounds-checked pointer over its argument's bytes
// (a `device void*` one counts bytes: element_bytes).
void emit_checked_param(std::ostream& o, const std::vector<Token>& t, const ParsedKernel& k, const ParsedParam& p,
                        const std::string& var, const std::string& address) {
  const std::string element = (p.info.is_const ? "const " : "") + type_text(t, p.type_tokens, true, &k.template_arguments);
  const std::string what = std::string(p.info.kind == ParamKind::threadgroup_memory ? "threadgroup" : "argument") +
                           " '" + p.info.name + "' (" +
                           (p.info.kind == ParamKind::threadgroup_memory ? "threadgroup(" : "buffer(") +
                           std::to_string(p.info.binding) + "))";
  o << "  const metal::mtl_checked<" << element << "> " << var << "((" << element << "*)" << address
    << ", mtl_L->arg_bytes[" << p.info.position << "] / metal::mtl_rt::element_bytes<" << element << ">::value, \""
    << what << "\");\n";
  // Raw pointers into it (`&p[i]`) are checked against it again (metal_checked.h).
  o << "  metal::mtl_rt::add_region(" << address << ", mtl_L->arg_bytes[" << p.info.position << "], \"" << what
    << "\");\n";
}

// Checked mode: an argument's bytes come from the caller, so a type that holds a pointer there (a
// struct with a `device float*` member, in a Buffer or passed by value) would take a checked
// pointer's bounds from any bytes: `s->p[1] = x` wrote wherever the bytes said. Such a type is
// refused where the kernel is built (the trait finds every class holding a checked pointer,
// however deep: metal_checked.h), as pointers made from integers are.
void emit_no_bounds_assert(std::ostream& o, const std::string& type, const ParsedParam& p) {
  o << "  static_assert(!metal::mtl_rt::argument_holds_bounds<" << type << ">::value, \"checked mode: the kernel's "
    << (p.info.kind == ParamKind::threadgroup_memory ? "threadgroup memory '" : "argument '") << p.info.name
    << "' has a type that holds a pointer, whose bounds would come from the argument's bytes; pass indices "
       "or offsets instead, or compile it without checked=True\");\n";
}

// A reference parameter's object type: without its `&` and restrict qualifiers (SPIRV-Cross
// writes `device SSBO& __restrict b`), which qualify the reference, not the object.
std::string referenced_type(const std::vector<Token>& t, const ParsedKernel& k, const ParsedParam& p) {
  std::vector<std::size_t> kept;
  for (std::size_t i : p.type_tokens)
    if (!t[i].is("&") && !t[i].is_identifier("__restrict") && !t[i].is_identifier("__restrict__") &&
        !t[i].is_identifier("restrict"))
      kept.push_back(i);
  return type_text(t, kept, false, &k.template_arguments);
}

// Declarations of the kernel's arguments from the launch (into `o`), and the call's argument list.
// `aligned`: buffer addresses are written as assumed 16-byte aligned (the runtime checked them).
std::vector<std::string> argument_setup(std::ostream& o, const std::vector<Token>& t, const ParsedKernel& k,
                                        bool checked, const Target& target, bool aligned = false) {
  std::vector<std::string> call_args;
  for (const auto& p : k.params) {
    const std::string var = "mtl_p" + std::to_string(p.info.position);
    const std::string full = type_text(t, p.type_tokens, false, &k.template_arguments) + (p.array ? "*" : "");
    switch (p.info.kind) {
      case ParamKind::buffer:
      case ParamKind::threadgroup_memory: {
        std::string address = p.info.kind == ParamKind::buffer ? target.buffer_address(p.info)
                                                               : target.threadgroup_address(p.info);
        if (aligned && p.info.kind == ParamKind::buffer) address = "__builtin_assume_aligned(" + address + ", 16)";
        if (full.find('&') != std::string::npos) {  // a threadgroup reference: one object there
          const std::string base = referenced_type(t, k, p);
          if (checked) emit_no_bounds_assert(o, base, p);
          if (checked)
            o << "  metal::mtl_rt::add_region(" << address << ", mtl_L->arg_bytes[" << p.info.position << "], \"threadgroup '"
              << p.info.name << "'\");\n";
          o << "  " << base << "& " << var << " = *(" << base << "*)" << address << ";\n";
        } else if (checked) {
          emit_no_bounds_assert(o, type_text(t, p.type_tokens, true, &k.template_arguments), p);
          emit_checked_param(o, t, k, p, var, address);
        } else {
          o << "  " << full << " const " << var << " = (" << full << ")" << address << ";\n";
        }
        call_args.push_back(var);
        break;
      }
      case ParamKind::reference: {
        const std::string base = referenced_type(t, k, p);
        if (checked) emit_no_bounds_assert(o, base, p);
        if (aligned && p.info.is_const && p.info.address_space == AddressSpace::constant) {
          // The coarsened entry (CUDA) runs several positions in a row: a small `constant T&`
          // read once into a register copy (metalcall_constant_copy) cannot alias the kernel's
          // device stores, which made NVVM reload it after each store and kept the positions'
          // loads and stores from merging into vector ones (`out[i] = (x[i] + y[i]) * s`: the
          // plain entry's speed). Constant memory does not change during a dispatch.
          o << "  metalcall_constant_copy<" << base << "> " << var << "_copy(*(" << base << "*)"
            << target.value_address(p.info) << ");\n";
          o << "  " << base << "& " << var << " = " << var << "_copy.get();\n";
        } else {
          o << "  " << base << "& " << var << " = *(" << base << "*)" << target.value_address(p.info) << ";\n";
        }
        call_args.push_back(var);
        break;
      }
      case ParamKind::value:
        if (checked) emit_no_bounds_assert(o, full, p);
        o << "  const " << full << " " << var << " = *(const " << full << "*)" << target.value_address(p.info)
          << ";\n";
        call_args.push_back(var);
        break;
      case ParamKind::texture:
        // The runtime passes a metal::mtl_texture_abi (metal_texture.h) for each texture.
        if (p.info.texture_count > 0) {  // an array of textures: N descriptors in a row
          const std::string array = full.rfind("const ", 0) == 0 ? full.substr(6) : full;
          o << "  " << array << " " << var << ";\n  metal::mtl_bind_textures(" << var << ", (const metal::mtl_texture_abi*)"
            << target.value_address(p.info) << ");\n";
          call_args.push_back(var);
          break;
        }
        o << "  const " << full << " " << var << "((const metal::mtl_texture_abi*)" << target.value_address(p.info)
          << ");\n";
        call_args.push_back(var);
        break;
      case ParamKind::sampler:
        o << "  const " << full << " " << var << "(*(const metal::mtl_sampler_abi*)" << target.value_address(p.info)
          << ");\n";
        call_args.push_back(var);
        break;
      case ParamKind::builtin: {
        std::string expr;
        if (p.info.vector_width == 1) {
          expr = "(" + full + ")(" + builtin_component(p.info.builtin, 0, target) + ")";
        } else {
          // remove_cv_t: `const uint3 gid [[thread_position_in_grid]]` has no functional cast of its own.
          expr = "metal::remove_cv_t<" + full + ">(";
          for (int d = 0; d < p.info.vector_width && d < 3; ++d)
            expr += (d ? ", " : "") + builtin_component(p.info.builtin, d, target);
          expr += ")";
        }
        call_args.push_back(expr);
        break;
      }
    }
  }
  return call_args;
}

// `ns::f<float>(mtl_p0, mtl_p1, (uint)(mtl_x0 + mtl_lx));`
std::string call_text(const std::vector<Token>& t, const ParsedKernel& k, const std::string& qualified_name,
                      const std::vector<std::string>& args) {
  std::string c = qualified_name;
  if (k.instantiation) {
    c += "<";
    for (std::size_t a = 0; a < k.explicit_arguments && a < k.template_arguments.size(); ++a)
      c += (a ? ", " : "") + type_text(t, k.template_arguments[a].second, false);
    c += ">";
  }
  c += "(";
  for (std::size_t a = 0; a < args.size(); ++a) c += (a ? ", " : "") + args[a];
  return c + ");";
}

}  // namespace

bool coarsenable(const ParsedKernel& k, bool uses_fibers, bool checked, bool straight_line_source) {
  if (uses_fibers || checked || !straight_line_source) return false;
  bool position = false;
  for (const auto& p : k.params) {
    switch (p.info.kind) {
      case ParamKind::buffer:
      case ParamKind::value:
      case ParamKind::reference:
        break;
      case ParamKind::builtin:
        if (p.info.builtin != Builtin::thread_position_in_grid || p.info.vector_width != 1) return false;
        position = true;
        break;
      default:  // textures, samplers, threadgroup memory
        return false;
    }
  }
  return position;
}

void emit_entry_point(std::ostream& o, const std::vector<Token>& t, const ParsedKernel& k, std::size_t index,
                      const std::string& qualified_name, bool uses_fibers, bool checked, const Target& target,
                      bool straight_line_source, bool regions, bool poison_threadgroup) {
  target.emit_parameter_block(o, index, parameter_slots(t, k));
  emit_layout_table(o, t, k, index, target);
  EntryPoint entry;
  entry.index = index;
  entry.kernel_name = k.info.name;
  entry.uses_fibers = uses_fibers;
  entry.regions = regions;
  std::ostringstream setup;
  entry.call = call_text(t, k, qualified_name, argument_setup(setup, t, k, checked, target));
  entry.argument_setup = setup.str();
  if (poison_threadgroup) {
    std::vector<ParamInfo> memory;
    for (const auto& p : k.params)
      if (p.info.kind == ParamKind::threadgroup_memory) memory.push_back(p.info);
    entry.group_start = target.threadgroup_poison(memory);
  }
  if (target.emits_coarsened_entries() && coarsenable(k, uses_fibers, checked, straight_line_source)) {
    std::ostringstream aligned;
    argument_setup(aligned, t, k, checked, target, /*aligned=*/true);
    entry.coarsenable = true;
    entry.aligned_argument_setup = aligned.str();
  }
  target.emit_entry_point(o, entry);
}

}  // namespace metalcall::msl
