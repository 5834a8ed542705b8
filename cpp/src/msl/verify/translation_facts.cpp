// Reads a translated unit's AST through libclang (see translation_facts.hpp). One walk:
// the prelude's and the system's declarations are skipped, the translator's file is
// visited, and each function definition there starts a node of the call graph.
#include "msl/verify/translation_facts.hpp"

#include <cstring>

#include "msl/analysis/msl_rules.hpp"
#include "msl/translate/translator.hpp"

namespace metalcall::msl::verify {

using namespace clang_c;

namespace {

bool is_function_kind(int k) {
  return k == FunctionDecl || k == CXXMethod || k == Constructor || k == Destructor || k == ConversionFunction ||
         k == FunctionTemplate;
}

bool is_cast_kind(int k) {
  return k == CStyleCastExpr || k == CXXStaticCastExpr || k == CXXReinterpretCastExpr || k == CXXFunctionalCastExpr ||
         k == BuiltinBitCastExpr;
}

bool is_integer(const CXType& t) { return (t.kind >= Type_Bool && t.kind <= Type_Int128) || t.kind == Type_Enum; }

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

class Reader {
 public:
  Reader(const Api& api, CXTranslationUnit unit, UserRange user) : a_(api), unit_(unit), user_(user) {}

  TranslationFacts run() {
    find_foreign_macros();
    Context top{this, nullptr};
    a_.visitChildren(a_.getTranslationUnitCursor(unit_), &Reader::visit, &top);
    walk_instantiations(top);
    find_entries();
    for (const auto& [k, text] : undefined_calls_)
      if (!facts_.functions.count(k)) facts_.problems.push_back(text);
    return std::move(facts_);
  }

 private:
  struct Context {
    Reader* reader;
    FunctionFacts* function;  // the definition being walked; null outside functions and in constant expressions
    FunctionFacts* constant_in = nullptr;  // in a constant expression: the definition it is in
    bool in_template_argument = false;     // in a template argument an instantiation's body holds
  };

  const Api& a_;
  CXTranslationUnit unit_;
  UserRange user_;
  TranslationFacts facts_;
  std::map<const void*, int> file_kinds_;  // 0 the unit, 1 the prelude, 2 elsewhere, 3 the unit's head
  std::set<std::string> reported_;
  std::set<unsigned> foreign_macro_sites_;  // offsets of macro names (find_foreign_macros)
  std::set<unsigned> callee_sites_;  // offsets of the names calls call (note_callee_site)
  std::map<std::string, std::string> undefined_calls_;  // functions the user's code declares and calls
  std::vector<CXCursor> instantiations_;  // the unit's template instantiations named so far, to walk
  std::set<std::string> instantiations_named_;  // their keys
  std::set<std::string> reexported_;  // USRs of the system's declarations the prelude names (using std::x)
  bool reexported_read_ = false;

  static int visit(CXCursor c, CXCursor parent, void* data) {
    auto* ctx = static_cast<Context*>(data);
    return ctx->reader->on_cursor(c, parent, *ctx);
  }

  std::string spelling(CXCursor c) const { return a_.text(a_.getCursorSpelling(c)); }

  // 0 the unit, 1 the prelude, 2 elsewhere (a system header), 3 the unit's head precompiled.
  int file_kind(CXFile file, std::string* place) {
    auto it = file_kinds_.find(file);
    if (it == file_kinds_.end()) {
      const std::string name = a_.text(a_.getFileName(file));
      const int kind = name == kUnitPath ? 0 : name == kHeadPath ? 3 : starts_with(name, kPreludeFolder) ? 1 : 2;
      it = file_kinds_.emplace(file, kind).first;
    }
    if (it->second == 2 && place) *place = a_.text(a_.getFileName(file));
    return it->second;
  }

  // Where a cursor is, through macro expansions: the user's source (source.metal), the
  // translator's own lines, the prelude or elsewhere; `place` says where for messages.
  Origin origin(CXCursor c, std::string* place = nullptr) {
    CXFile file = nullptr;
    unsigned line = 0, column = 0, offset = 0;
    const CXSourceLocation at = a_.getCursorLocation(c);
    a_.getExpansionLocation(at, &file, &line, &column, &offset);
    if (!file) {
      if (place) *place = "a compiler builtin";
      return Origin::foreign;
    }
    const int kind = file_kind(file, place);
    if (kind == 1) return Origin::prelude;
    if (kind == 2) return Origin::foreign;
    if (place) {
      CXString presumed;
      a_.getPresumedLocation(at, &presumed, &line, &column);
      *place = a_.text(presumed) + ":" + std::to_string(line) + ":" + std::to_string(column);
    }
    return kind == 0 && offset >= user_.begin && offset < user_.end ? Origin::user : Origin::translator;
  }

  // True when the user wrote the cursor's code: in the user's source, and not in the body
  // of a macro of the prelude or the translator expanded there. A token of a macro's body
  // is placed at the macro's name; a token of its arguments where the argument is written.
  bool written_by_user(CXCursor c) {
    CXFile file = nullptr;
    unsigned line = 0, column = 0, written = 0, expanded = 0;
    const CXSourceLocation at = a_.getCursorLocation(c);
    a_.getFileLocation(at, &file, &line, &column, &written);
    if (!file || file_kind(file, nullptr) != 0 || written < user_.begin || written >= user_.end) return false;
    a_.getExpansionLocation(at, &file, &line, &column, &expanded);
    return !(written == expanded && foreign_macro_sites_.count(expanded));
  }

  // Where the user's source expands a macro of the prelude or the translator.
  void find_foreign_macros() {
    a_.visitChildren(a_.getTranslationUnitCursor(unit_), [](CXCursor c, CXCursor, void* data) {
      auto* r = static_cast<Reader*>(data);
      if (r->a_.getCursorKind(c) != MacroExpansion || r->origin(c) != Origin::user) return CXChildVisit_Continue;
      if (r->origin(r->a_.getCursorReferenced(c)) == Origin::user) return CXChildVisit_Continue;
      CXFile file = nullptr;
      unsigned line = 0, column = 0, offset = 0;
      r->a_.getExpansionLocation(r->a_.getCursorLocation(c), &file, &line, &column, &offset);
      r->foreign_macro_sites_.insert(offset);
      return CXChildVisit_Continue;
    }, this);
  }

  // One key per function however it is named: its first declaration's USR. A template's
  // instantiation is a function of its own (USRs spell the template arguments), and so is an
  // explicit specialisation: operator><float> comparing floats calls no operator>, and
  // mpc_sum<pair> calling mpc_sum<float4> is no recursion. Each instantiation of the unit's
  // templates that the walk names is walked later (walk_instantiations).
  std::string key(CXCursor c) {
    const bool specialisation = !a_.Cursor_isNull(a_.getSpecializedCursorTemplate(c));
    c = a_.getCanonicalCursor(c);
    std::string usr = a_.text(a_.getCursorUSR(c));
    if (usr.empty()) {
      std::string place;
      origin(c, &place);
      usr = spelling(c) + "@" + place;
    }
    if (specialisation && !instantiations_named_.count(usr)) {
      const Origin o = origin(c);
      if ((o == Origin::user || o == Origin::translator) && instantiations_named_.insert(usr).second)
        instantiations_.push_back(c);
    }
    return usr;
  }

  // The bodies Clang instantiated for the templates the unit uses: there every call is
  // resolved, where the template itself could only name a dependent call (`a.val > b.val`
  // for a T). Walking one names further instantiations, walked in turn; an explicit
  // specialisation, written in the unit, was walked there. An instantiation whose body was
  // not instantiated (named, never odr-used) is a node without calls.
  void walk_instantiations(Context& top) {
    while (!instantiations_.empty()) {
      const CXCursor c = instantiations_.back();
      instantiations_.pop_back();
      const std::string k = key(c);
      if (facts_.functions.count(k)) continue;
      const CXCursor definition = a_.getCursorDefinition(c);
      if (!a_.Cursor_isNull(definition)) {
        on_cursor(definition, a_.getCursorSemanticParent(definition), top);
        continue;
      }
      // Where the template is declared or defined: an instantiation, not a specialisation declared only.
      const CXCursor pattern = a_.getSpecializedCursorTemplate(c);
      const CXCursor pattern_definition = a_.getCursorDefinition(pattern);
      if (a_.Cursor_isNull(pattern_definition) ||
          !((offset_of(c) == offset_of(pattern) && same_file(c, pattern)) ||
            (offset_of(c) == offset_of(pattern_definition) && same_file(c, pattern_definition))))
        continue;  // a call to it is refused: declared, never defined
      FunctionFacts& f = facts_.functions[k];
      f.name = spelling(c);
      f.origin = origin(c, &f.where);
    }
  }

  bool in_runtime_namespace(CXCursor c) {
    for (int depth = 0; depth < 16; ++depth) {
      c = a_.getCursorSemanticParent(c);
      if (a_.Cursor_isNull(c) || a_.getCursorKind(c) == 300 /* CXCursor_TranslationUnit */) return false;
      if (a_.getCursorKind(c) == Namespace && spelling(c) == "mtl_rt") return true;
    }
    return false;
  }

  void report(CXCursor c, const std::string& what) {
    std::string place;
    origin(c, &place);
    const std::string text = place + ": " + what;
    if (reported_.insert(text).second) facts_.problems.push_back(text);
  }

  int on_cursor(CXCursor c, CXCursor parent, Context& ctx) {
    const int k = a_.getCursorKind(c);
    if (k >= 500 && k < 600) return CXChildVisit_Continue;  // preprocessing: read by find_foreign_macros
    const Origin o = origin(c);
    // The prelude and the system's headers are not the translation: trusted, not walked.
    if (o == Origin::prelude || o == Origin::foreign) return CXChildVisit_Continue;
    check_asm(c, k);
    if (k == DeclRefExpr && !ctx.in_template_argument && a_.Cursor_isNull(a_.getCursorReferenced(c)) &&
        spelling(c).empty()) {
      // A non-type template argument put in an instantiation's body (apply<inc>'s F, a
      // compile-time constant): checked where the user wrote it; what it calls still counts.
      Context inner = ctx;
      inner.in_template_argument = true;
      a_.visitChildren(c, &Reader::visit, &inner);
      return CXChildVisit_Continue;
    }
    if (o == Origin::user && !ctx.in_template_argument && written_by_user(c)) check_user_node(c, parent, k);
    if (is_function_kind(k) && a_.isCursorDefinition(c)) {
      FunctionFacts& f = facts_.functions[key(c)];
      f.name = spelling(c);
      f.origin = o;
      origin(c, &f.where);
      facts_.by_name.emplace(f.name, key(c));
      Context inner{this, &f};
      a_.visitChildren(c, &Reader::visit, &inner);
      return CXChildVisit_Continue;
    }
    if (k == CallExpr) note_callee_site(c);
    if (k == DeclRefExpr) note_named_function(c);
    if (ctx.function) note_call(c, k, *ctx.function);
    // What a constexpr variable's initialiser or a static_assert calls, the compiler runs
    // (MSL allows a constexpr function's recursion there, as the front end does); a lambda
    // defined there may still be called at run time, so its body is the function's again.
    FunctionFacts* constant_in = ctx.function && (k == StaticAssert || (k == VarDecl && declared_constexpr(c)))
                                     ? ctx.function : nullptr;
    if (!ctx.function && ctx.constant_in && k == LambdaExpr) constant_in = ctx.constant_in;
    if (constant_in) {
      Context inner{this, k == LambdaExpr ? constant_in : nullptr, k == LambdaExpr ? nullptr : constant_in};
      a_.visitChildren(c, &Reader::visit, &inner);
      return CXChildVisit_Continue;
    }
    return CXChildVisit_Recurse;
  }

  // `constexpr` among a variable declaration's tokens ahead of its name.
  bool declared_constexpr(CXCursor var) {
    const std::string name = spelling(var);
    CXToken* tokens = nullptr;
    unsigned n = 0;
    a_.tokenize(unit_, a_.getCursorExtent(var), &tokens, &n);
    bool found = false;
    for (unsigned i = 0; i < n && !found; ++i) {
      const std::string t = a_.text(a_.getTokenSpelling(unit_, tokens[i]));
      if (t == name) break;
      found = t == "constexpr";
    }
    if (tokens) a_.disposeTokens(unit_, tokens, n);
    return found;
  }

  void check_asm(CXCursor c, int k) {
    if (k == GCCAsmStmt || k == MSAsmStmt || k == AsmLabelAttr) {
      report(c, "an asm statement");
    } else if (k == UnexposedDecl) {  // file-scope asm has no cursor kind of its own
      CXToken* tokens = nullptr;
      unsigned n = 0;
      a_.tokenize(unit_, a_.getCursorExtent(c), &tokens, &n);
      const std::string first = n ? a_.text(a_.getTokenSpelling(unit_, tokens[0])) : "";
      if (tokens) a_.disposeTokens(unit_, tokens, n);
      if (first == "asm" || first == "__asm__" || first == "__asm") report(c, "an asm declaration");
    }
  }

  std::string last_token(CXCursor c) {
    CXToken* tokens = nullptr;
    unsigned n = 0;
    a_.tokenize(unit_, a_.getCursorExtent(c), &tokens, &n);
    const std::string last = n ? a_.text(a_.getTokenSpelling(unit_, tokens[n - 1])) : "";
    if (tokens) a_.disposeTokens(unit_, tokens, n);
    return last;
  }

  // A function pointer or member-function pointer anywhere in a type: through pointers,
  // references and arrays.
  bool has_function_pointer(CXType t) {
    for (int depth = 0; depth < 16; ++depth) {
      t = a_.getCanonicalType(t);
      if (t.kind == Type_MemberPointer || t.kind == Type_Pointer || t.kind == Type_LValueReference ||
          t.kind == Type_RValueReference) {
        const CXType pointee = a_.getCanonicalType(a_.getPointeeType(t));
        if (pointee.kind == Type_FunctionProto || pointee.kind == Type_FunctionNoProto)
          return t.kind != Type_LValueReference && t.kind != Type_RValueReference;
        t = pointee;
      } else if (t.kind == Type_ConstantArray || t.kind == Type_IncompleteArray) {
        t = a_.getArrayElementType(t);
      } else {
        return false;
      }
    }
    return false;
  }

  // The last child of an expression: a cast's operand.
  CXCursor last_child(CXCursor c) {
    struct Last { CXCursor c; bool found = false; } last{c};
    a_.visitChildren(c, [](CXCursor child, CXCursor, void* d) {
      auto* l = static_cast<Last*>(d);
      l->c = child;
      l->found = true;
      return CXChildVisit_Continue;
    }, &last);
    return last.c;
  }

  bool is_null_constant(CXCursor e) {
    CXEvalResult r = a_.Cursor_Evaluate(e);
    if (!r) return false;
    const bool zero = a_.EvalResult_getAsLongLong(r) == 0;
    a_.EvalResult_dispose(r);
    return zero;
  }

  void check_user_node(CXCursor c, CXCursor parent, int k) {
    // What holds a value: a type alias of a function-pointer type names one, and is no pointer.
    const bool typed = k == VarDecl || k == ParmDecl || k == FieldDecl || (k >= 100 && k < 200);
    // A named function called decays to a pointer to it (an implicit cast under the call):
    // that is the call itself, not a function pointer in the code.
    // A template's function-pointer parameter is a compile-time constant (MSL allows it).
    // `(f)(x)` calls the named function too: the decay's operand is seen through its parentheses.
    CXCursor operand = k == UnexposedExpr ? last_child(c) : c;
    while (k == UnexposedExpr && a_.getCursorKind(operand) == ParenExpr) operand = last_child(operand);
    const int named = a_.getCursorKind(a_.getCursorReferenced(operand));
    const bool callee_decay = k == UnexposedExpr && a_.getCursorKind(parent) == CallExpr && is_function_kind(named);
    // `&f` (or `+f`) of a named function, as a template's argument (`apply<&twice>`): a constant
    // naming that function; a variable or parameter that stores one is reported where declared.
    const bool function_address =
        k == UnaryOperator && is_function_kind(a_.getCursorKind(a_.getCursorReferenced(last_child(c))));
    if (typed && !callee_decay && !function_address && named != NonTypeTemplateParameter &&
        has_function_pointer(a_.getCursorType(c)))
      report(c, "a function pointer (" + a_.text(a_.getTypeSpelling(a_.getCursorType(c))) + ")");
    if (is_cast_kind(k)) {
      const CXType to = a_.getCanonicalType(a_.getCursorType(c));
      CXType target = to;
      if (to.kind == Type_LValueReference || to.kind == Type_RValueReference)
        target = a_.getCanonicalType(a_.getPointeeType(to));
      if (target.kind == Type_Pointer || target.kind == Type_MemberPointer) {
        const CXCursor operand = last_child(c);
        if (is_integer(a_.getCanonicalType(a_.getCursorType(operand))) && !is_null_constant(operand))
          report(c, "a cast from an integer to a pointer (" + a_.text(a_.getTypeSpelling(to)) + ")");
      }
    }
    check_reference(c, k);
  }

  // Everything the user's code names is the translation's or the prelude's.
  void check_reference(CXCursor c, int k) {
    if (k == OverloadedDeclRef) {
      for (unsigned i = 0, n = a_.getNumOverloadedDecls(c); i < n; ++i) check_declared_here(c, a_.getOverloadedDecl(c, i));
      return;
    }
    if (k == TypeRef || k == TemplateRef || k == NamespaceRef || k == MemberRef || k == VariableRef ||
        k == DeclRefExpr || k == MemberRefExpr || k == CallExpr)
      check_declared_here(c, a_.getCursorReferenced(c));
  }

  void check_declared_here(CXCursor use, CXCursor decl) {
    if (a_.Cursor_isNull(decl) || is_allowed_builtin(spelling(decl))) return;
    std::string place;
    if (origin(decl, &place) == Origin::foreign && !reexported_by_prelude(decl))
      report(use, "'" + spelling(decl) + "' is declared outside the translation and the prelude (" + place + ")");
  }

  // A system header's declaration the prelude makes MSL's own with a using-declaration
  // (metal::initializer_list is the host's std::initializer_list), or a member of one (of
  // an instantiation of one): the prelude's choice, not the user's reach into the host.
  bool reexported_by_prelude(CXCursor decl) {
    if (!reexported_read_) read_reexported();
    for (int depth = 0; depth < 16 && !a_.Cursor_isNull(decl); ++depth) {
      const int k = a_.getCursorKind(decl);
      if (k == 300 /* CXCursor_TranslationUnit */ || k == Namespace) return false;
      if (reexported_.count(a_.text(a_.getCursorUSR(a_.getCanonicalCursor(decl))))) return true;
      const CXCursor pattern = a_.getSpecializedCursorTemplate(decl);
      if (!a_.Cursor_isNull(pattern) && reexported_.count(a_.text(a_.getCursorUSR(a_.getCanonicalCursor(pattern)))))
        return true;
      decl = a_.getCursorSemanticParent(decl);
    }
    return false;
  }

  // The targets of the prelude's namespace-scope using-declarations that a system header
  // declares. Read once, on the first name from outside (a unit that names none never reads them).
  void read_reexported() {
    reexported_read_ = true;
    a_.visitChildren(a_.getTranslationUnitCursor(unit_), [](CXCursor c, CXCursor, void* data) {
      auto* r = static_cast<Reader*>(data);
      const int k = r->a_.getCursorKind(c);
      if ((k != Namespace && k != UsingDeclaration) || r->origin(c) != Origin::prelude) return CXChildVisit_Continue;
      if (k == Namespace) return CXChildVisit_Recurse;
      const CXCursor targets = r->a_.getCursorReferenced(c);
      for (unsigned i = 0, n = r->a_.Cursor_isNull(targets) ? 0 : r->a_.getNumOverloadedDecls(targets); i < n; ++i) {
        const CXCursor target = r->a_.getOverloadedDecl(targets, i);
        if (r->origin(target) == Origin::foreign)
          r->reexported_.insert(r->a_.text(r->a_.getCursorUSR(r->a_.getCanonicalCursor(target))));
      }
      return CXChildVisit_Continue;
    }, this);
  }

  void note_synchronising(FunctionFacts& f, const std::string& name, CXCursor use) {
    if (!f.synchronises.empty()) return;
    std::string place;
    origin(use, &place);
    f.synchronises = name + " at " + place;
  }

  void add_call(FunctionFacts& f, CXCursor callee, CXCursor use) {
    const std::string k = key(callee);
    f.calls.insert(k);
    const Origin o = origin(callee);
    // Declared and never defined: the shared object would take it from the host's libraries.
    // The builtins MSL allows (the front end's list) are the compiler's, declared by Clang
    // where they are first used.
    if (o == Origin::user && a_.getCursorKind(callee) == FunctionDecl && !undefined_calls_.count(k) &&
        written_by_user(use) && !is_allowed_builtin(spelling(callee))) {
      std::string place;
      origin(use, &place);
      undefined_calls_[k] = place + ": '" + spelling(callee) +
                            "' is declared but not defined in the translation (the host's libraries would supply it)";
    }
    if (o != Origin::prelude) return;
    const std::string name = spelling(callee);
    if (is_synchronising(name) && !in_runtime_namespace(callee)) note_synchronising(f, name, use);
    if (name == "mtl_now") f.enters_regions = true;
  }

  // Where a call names its callee (through the implicit decay under it): such a name is a
  // call, not a function used as a value.
  void note_callee_site(CXCursor call) {
    CXCursor callee = call;
    for (int depth = 0; depth < 4; ++depth) {
      struct First { CXCursor c; bool found = false; } first{callee};
      a_.visitChildren(callee, [](CXCursor child, CXCursor, void* d) {
        auto* f = static_cast<First*>(d);
        f->c = child;
        f->found = true;
        return CXChildVisit_Break;
      }, &first);
      if (!first.found) return;
      callee = first.c;
      const int k = a_.getCursorKind(callee);
      if (k == DeclRefExpr) {
        callee_sites_.insert(offset_of(callee));
        return;
      }
      if (k != UnexposedExpr && k != ParenExpr) return;
    }
  }

  bool same_file(CXCursor a, CXCursor b) {
    CXFile fa = nullptr, fb = nullptr;
    unsigned line = 0, column = 0, offset = 0;
    a_.getExpansionLocation(a_.getCursorLocation(a), &fa, &line, &column, &offset);
    a_.getExpansionLocation(a_.getCursorLocation(b), &fb, &line, &column, &offset);
    return fa == fb;
  }

  unsigned offset_of(CXCursor c) {
    CXFile file = nullptr;
    unsigned line = 0, column = 0, offset = 0;
    a_.getExpansionLocation(a_.getCursorLocation(c), &file, &line, &column, &offset);
    return offset;
  }

  // A function named as a value (its address, a template argument) in the translation.
  void note_named_function(CXCursor c) {
    const CXCursor ref = a_.getCursorReferenced(c);
    if (a_.Cursor_isNull(ref) || !is_function_kind(a_.getCursorKind(ref)) || callee_sites_.count(offset_of(c))) return;
    if (origin(c) == Origin::user && origin(ref) == Origin::user) facts_.by_name.emplace(kNamedFunctions, key(ref));
  }

  // Calls, operator calls, constructions, conversions, named functions, and the
  // destructor of each local of class type.
  void note_call(CXCursor c, int k, FunctionFacts& f) {
    if (k == CallExpr || k == DeclRefExpr || k == MemberRefExpr) {
      const CXCursor ref = a_.getCursorReferenced(c);
      if (a_.Cursor_isNull(ref)) {
        // Dependent (in a template): resolved by name; a member's name is the last token
        // of `object.name` / `p->name`, which libclang does not spell.
        const std::string name = k == MemberRefExpr ? last_token(c) : spelling(c);
        if (!name.empty()) f.unresolved.insert(name);
        if (is_synchronising(name)) note_synchronising(f, name, c);
        return;
      }
      const int rk = a_.getCursorKind(ref);
      if (is_function_kind(rk)) {
        add_call(f, ref, c);
        if (k == CallExpr) f.called.insert(key(ref));
      }
      else if (rk == NonTypeTemplateParameter && has_function_pointer(a_.getCursorType(ref))) f.unresolved.insert(kNamedFunctions);
      else if (rk == VarDecl && origin(ref) == Origin::prelude && spelling(ref) == "mtl_now") f.enters_regions = true;
    } else if (k == OverloadedDeclRef) {
      for (unsigned i = 0, n = a_.getNumOverloadedDecls(c); i < n; ++i) {
        const CXCursor d = a_.getOverloadedDecl(c, i);
        if (is_function_kind(a_.getCursorKind(d))) add_call(f, d, c);
      }
      if (is_synchronising(spelling(c))) note_synchronising(f, spelling(c), c);
    } else if (k == TypeRef || k == TemplateRef) {
      const CXCursor ref = a_.getCursorReferenced(c);
      if (!a_.Cursor_isNull(ref) && origin(ref) == Origin::prelude && starts_with(spelling(ref), "simdgroup_") &&
          !in_runtime_namespace(ref))
        note_synchronising(f, spelling(ref), c);
    } else if (k == VarDecl) {
      add_destructor(f, c);
    }
  }

  void add_destructor(FunctionFacts& f, CXCursor var) {
    const CXType t = a_.getCanonicalType(a_.getCursorType(var));
    if (t.kind != Type_Record) return;
    const CXCursor type = a_.getTypeDeclaration(t);
    if (a_.Cursor_isNull(type)) return;
    struct Found { Reader* r; FunctionFacts* f; CXCursor var; } found{this, &f, var};
    a_.visitChildren(type, [](CXCursor child, CXCursor, void* d) {
      auto* x = static_cast<Found*>(d);
      if (x->r->a_.getCursorKind(child) == Destructor) x->r->add_call(*x->f, child, x->var);
      return CXChildVisit_Continue;
    }, &found);
  }

  // Each entry point the translator wrote, and the mode it runs its kernel in: fibers
  // when it hands metalcall_thread_<n> to the worker, regions when it sets the group
  // for metal_regions.h, a plain loop otherwise (msl/targets/target_cpu.cpp).
  void find_entries() {
    for (auto& [k, f] : facts_.functions) {
      if (f.origin != Origin::translator || !starts_with(f.name, "metalcall_entry_")) continue;
      EntryFacts e;
      e.symbol = f.name;
      e.key = k;
      const std::string thread = "metalcall_thread_" + f.name.substr(std::strlen("metalcall_entry_"));
      for (const auto& callee : f.calls) {
        auto it = facts_.functions.find(callee);
        if (it != facts_.functions.end() && it->second.name == thread) e.mode = EntryMode::fibers;
      }
      if (f.enters_regions) e.mode = EntryMode::regions;
      facts_.entries.push_back(e);
    }
  }
};

}  // namespace

bool is_synchronising(const std::string& name) {
  return name == "threadgroup_barrier" || name == "simdgroup_barrier" || name == "make_filled_simdgroup_matrix" ||
         name == "thread_elements" || starts_with(name, "simd_") || starts_with(name, "quad_") ||
         starts_with(name, "simdgroup_") || starts_with(name, "__metal_simd_");
}

UserRange user_range(const std::string& code) {
  const std::string open = std::string("#line 1 \"") + kSourceName + "\"\n";
  UserRange r;
  const std::size_t begin = code.find(open);
  if (begin == std::string::npos) return r;
  const std::size_t end = code.find("\n#line 1 \"metalcall-entry-point", begin);
  r.begin = unsigned(begin + open.size());
  r.end = unsigned(end == std::string::npos ? code.size() : end);
  return r;
}

TranslationFacts read_facts(const Api& api, CXTranslationUnit unit, UserRange user) {
  return Reader(api, unit, user).run();
}

}  // namespace metalcall::msl::verify
