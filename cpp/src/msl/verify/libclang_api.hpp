// libclang's stable C API (clang-c/Index.h), loaded with dlopen at run time: the
// extension builds and imports without LLVM, and the translation verifier
// (translation_verifier.hpp) runs only where a libclang is found. Only the types,
// values and entry points the verifier uses are declared here, by their documented
// C layout.
#pragma once

#include <string>

namespace metalcall::msl::clang_c {

typedef void* CXIndex;
typedef struct CXTranslationUnitImpl* CXTranslationUnit;
typedef void* CXDiagnostic;
typedef void* CXFile;
typedef void* CXEvalResult;

struct CXString {
  const void* data;
  unsigned private_flags;
};
struct CXCursor {
  int kind;
  int xdata;
  const void* data[3];
};
struct CXType {
  int kind;
  void* data[2];
};
struct CXSourceLocation {
  const void* ptr_data[2];
  unsigned int_data;
};
struct CXSourceRange {
  const void* ptr_data[2];
  unsigned begin_int_data;
  unsigned end_int_data;
};
struct CXToken {
  unsigned int_data[4];
  void* ptr_data;
};
struct CXUnsavedFile {
  const char* Filename;
  const char* Contents;
  unsigned long Length;
};

// CXChildVisitResult
constexpr int CXChildVisit_Break = 0, CXChildVisit_Continue = 1, CXChildVisit_Recurse = 2;
typedef int (*CXCursorVisitor)(CXCursor cursor, CXCursor parent, void* client_data);

// CXCursorKind values the verifier reads.
enum CursorKind : int {
  UnexposedDecl = 1, StructDecl = 2, UnionDecl = 3, ClassDecl = 4, FieldDecl = 6, FunctionDecl = 8, VarDecl = 9,
  ParmDecl = 10, TypedefDecl = 20, CXXMethod = 21, Namespace = 22, LinkageSpec = 23, Constructor = 24,
  Destructor = 25, ConversionFunction = 26, NonTypeTemplateParameter = 28, FunctionTemplate = 30, ClassTemplate = 31,
  ClassTemplatePartialSpecialization = 32, UsingDeclaration = 35, TypeAliasDecl = 36,
  TypeRef = 43, TemplateRef = 45, NamespaceRef = 46, MemberRef = 47, OverloadedDeclRef = 49, VariableRef = 50,
  UnexposedExpr = 100, DeclRefExpr = 101, MemberRefExpr = 102, CallExpr = 103, IntegerLiteral = 106,
  ParenExpr = 111, UnaryOperator = 112, CStyleCastExpr = 117, CXXStaticCastExpr = 124, CXXReinterpretCastExpr = 126,
  CXXFunctionalCastExpr = 128, LambdaExpr = 144, GCCAsmStmt = 215, MSAsmStmt = 229, BuiltinBitCastExpr = 280,
  AsmLabelAttr = 407, MacroDefinition = 501, MacroExpansion = 502, StaticAssert = 602,
};

// CXTypeKind values the verifier reads.
enum TypeKind : int {
  Type_Invalid = 0, Type_Bool = 3, Type_Int128 = 20, Type_Pointer = 101, Type_LValueReference = 103,
  Type_RValueReference = 104, Type_Record = 105, Type_Enum = 106, Type_FunctionNoProto = 110,
  Type_FunctionProto = 111, Type_ConstantArray = 112, Type_IncompleteArray = 114, Type_MemberPointer = 117,
};

constexpr int CXDiagnostic_Error = 3;
constexpr unsigned CXTranslationUnit_DetailedPreprocessingRecord = 0x01, CXTranslationUnit_Incomplete = 0x02,
                   CXTranslationUnit_ForSerialization = 0x10, CXTranslationUnit_KeepGoing = 0x200;
constexpr int CXError_Success = 0;

/** The loaded library: every pointer is non-null once loaded. */
struct Api {
  CXIndex (*createIndex)(int, int);
  void (*toggleCrashRecovery)(unsigned);
  void (*disposeIndex)(CXIndex);
  int (*parseTranslationUnit2)(CXIndex, const char*, const char* const*, int, CXUnsavedFile*, unsigned, unsigned,
                               CXTranslationUnit*);
  void (*disposeTranslationUnit)(CXTranslationUnit);
  int (*saveTranslationUnit)(CXTranslationUnit, const char*, unsigned);
  CXString (*getClangVersion)();
  CXCursor (*getTranslationUnitCursor)(CXTranslationUnit);
  unsigned (*visitChildren)(CXCursor, CXCursorVisitor, void*);
  int (*getCursorKind)(CXCursor);
  CXCursor (*getCursorReferenced)(CXCursor);
  CXCursor (*getCanonicalCursor)(CXCursor);
  CXCursor (*getCursorSemanticParent)(CXCursor);
  CXCursor (*getSpecializedCursorTemplate)(CXCursor);
  CXCursor (*getCursorDefinition)(CXCursor);
  unsigned (*isCursorDefinition)(CXCursor);
  unsigned (*Cursor_isNull)(CXCursor);
  unsigned (*getNumOverloadedDecls)(CXCursor);
  CXCursor (*getOverloadedDecl)(CXCursor, unsigned);
  CXString (*getCursorSpelling)(CXCursor);
  CXString (*getCursorUSR)(CXCursor);
  CXType (*getCursorType)(CXCursor);
  CXType (*getCanonicalType)(CXType);
  CXString (*getTypeSpelling)(CXType);
  CXType (*getPointeeType)(CXType);
  CXType (*getArrayElementType)(CXType);
  CXCursor (*getTypeDeclaration)(CXType);
  CXSourceLocation (*getCursorLocation)(CXCursor);
  void (*getExpansionLocation)(CXSourceLocation, CXFile*, unsigned*, unsigned*, unsigned*);
  void (*getFileLocation)(CXSourceLocation, CXFile*, unsigned*, unsigned*, unsigned*);
  void (*getPresumedLocation)(CXSourceLocation, CXString*, unsigned*, unsigned*);
  CXString (*getFileName)(CXFile);
  const char* (*getCString)(CXString);
  void (*disposeString)(CXString);
  unsigned (*getNumDiagnostics)(CXTranslationUnit);
  CXDiagnostic (*getDiagnostic)(CXTranslationUnit, unsigned);
  int (*getDiagnosticSeverity)(CXDiagnostic);
  CXString (*formatDiagnostic)(CXDiagnostic, unsigned);
  void (*disposeDiagnostic)(CXDiagnostic);
  CXEvalResult (*Cursor_Evaluate)(CXCursor);
  long long (*EvalResult_getAsLongLong)(CXEvalResult);
  void (*EvalResult_dispose)(CXEvalResult);
  CXSourceRange (*getCursorExtent)(CXCursor);
  void (*tokenize)(CXTranslationUnit, CXSourceRange, CXToken**, unsigned*);
  CXString (*getTokenSpelling)(CXTranslationUnit, CXToken);
  void (*disposeTokens)(CXTranslationUnit, CXToken*, unsigned);

  std::string path;      // the library loaded
  std::string identity;  // its path, version, size and modification time: what a precompiled header was made by

  /** A CXString's text, disposed. */
  std::string text(CXString s) const;
};

/** Where the libclang wheel's library is (set by the Python package at import), tried after METALCALL_LIBCLANG. */
void set_wheel_libclang(const std::string& path);

/**
 * The process's libclang, loaded once: METALCALL_LIBCLANG, the `libclang` wheel's library,
 * then the system's (libclang.so.1, LLVM's usual folders). Null with `why` set when none loads.
 */
const Api* libclang(std::string* why);

}  // namespace metalcall::msl::clang_c
