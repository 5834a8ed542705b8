#!/usr/bin/env python3
"""Generate Metal/Foundation declarations to compile cpp/src/backends/metal against.

Reads Metal/_metadata.py from the pyobjc-framework-Metal wheel (parsed with `ast`,
never imported, so no PyObjC is needed), checks every entry of metal_api.py against it,
and writes, for each SDK level asked for, an include directory with <Metal/Metal.h>,
<Foundation/Foundation.h> (minimal_foundation.h), <dispatch/dispatch.h>,
<malloc/malloc.h> and <Availability.h>. Nothing of Apple's SDK is used.

    generate_headers.py --wheel W.whl --out DIR --sdk 13.0 --sdk 14.0 --sdk latest
"""

import argparse
import ast
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))

# The record the check is built on; bump both together (docs/metal-backend.md).
PYOBJC_METAL_VERSION = "12.2.2"
PYOBJC_METAL_WHEEL = "pyobjc_framework_metal-12.2.2-cp311-cp311-macosx_10_9_universal2.whl"
PYOBJC_METAL_SHA256 = "9e56862fd12eb3d3da429f15d6721f966d5791e27419ea0fa08f5f3dd0981fe8"


class CheckError(Exception):
    pass


# ---- the wheel ---------------------------------------------------------------------

def download_wheel(directory):
    """pip download of the pinned wheel; its hash must match the recorded one."""
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
               "--platform", "macosx_11_0_universal2", "--python-version", "3.11",
               "--implementation", "cp", "--abi", "cp311",
               "pyobjc-framework-Metal==" + PYOBJC_METAL_VERSION, "-d", directory]
    subprocess.run(command, check=True)
    path = os.path.join(directory, PYOBJC_METAL_WHEEL)
    if not os.path.exists(path):
        raise CheckError("pip did not fetch %s (got %s)" % (PYOBJC_METAL_WHEEL, os.listdir(directory)))
    return path


def read_wheel(path):
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if digest != PYOBJC_METAL_SHA256:
        raise CheckError("%s has sha256 %s, expected %s" % (path, digest, PYOBJC_METAL_SHA256))
    with zipfile.ZipFile(path) as wheel:
        metadata = wheel.read("Metal/_metadata.py").decode("utf-8")
        build_info = ""
        for name in wheel.namelist():
            if name.endswith("pyobjc-build-info.txt"):
                build_info = wheel.read(name).decode("utf-8")
    match = re.search(r"SDK:\s*macOS\s*([0-9.]+)", build_info)
    return metadata, (match.group(1) if match else None)


# ---- the metadata ------------------------------------------------------------------

class Metadata:
    """What Metal/_metadata.py records, read with ast (literal parts only)."""

    def __init__(self, source):
        tree = ast.parse(source)
        self.selectors = {}   # (class, selector) -> metadata dict; class "NSObject": protocol methods
        self.enums = {}       # value name -> int
        self.functions = {}   # name -> (encoding, ...)
        self.structs = {}     # name -> (encoding, field names)
        self.type_names = set()  # NewType names: the enum and option types
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                target = node.targets[0].id
                if target == "enums":
                    for item in ast.literal_eval(node.value).strip("$").split("$"):
                        name, _, value = item.partition("@")
                        self.enums[name] = int(value)
                elif target == "functions":
                    self.functions = ast.literal_eval(node.value)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "r":
                cls, selector, info = (ast.literal_eval(a) for a in node.args)
                self.selectors[(cls.decode(), selector.decode())] = info
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr == "update" and isinstance(node.func.value, ast.Name) and \
                    node.func.value.id == "misc" and node.args and isinstance(node.args[0], ast.Dict):
                for key, value in zip(node.args[0].keys, node.args[0].values):
                    name = ast.literal_eval(key)
                    call = value if isinstance(value, ast.Call) else None
                    callee = call and (call.func.attr if isinstance(call.func, ast.Attribute) else
                                       call.func.id if isinstance(call.func, ast.Name) else None)
                    if callee == "createStructType":
                        self.structs[name] = (ast.literal_eval(call.args[1]).decode(),
                                              ast.literal_eval(call.args[2]))
                    elif callee == "NewType":
                        self.type_names.add(name)
        if len(self.selectors) < 500 or len(self.enums) < 500:
            raise CheckError("the metadata looks truncated (%d selectors, %d enum values)"
                             % (len(self.selectors), len(self.enums)))


# ---- encodings and C types ---------------------------------------------------------

SCALARS = {"c": "char", "i": "int", "s": "short", "l": "int", "q": "NSInteger", "C": "unsigned char",
           "I": "unsigned int", "S": "unsigned short", "L": "unsigned int", "Q": "NSUInteger",
           "f": "float", "d": "double", "B": "bool", "Z": "BOOL", "v": "void", "*": "char*",
           "@": "id", "#": "Class", ":": "SEL"}
QUALIFIERS = "rnNoORV"


def bare(encoding):
    if isinstance(encoding, bytes):
        encoding = encoding.decode()
    return encoding.lstrip(QUALIFIERS)


def c_type(encoding, callable_info=None):
    """The C type an encoding stands for (objects as `id`, blocks from their signature)."""
    encoding = bare(encoding)
    if encoding == "@?":
        if not callable_info:
            raise CheckError("block without a signature")
        result = c_type(callable_info["retval"]["type"])
        arguments = [c_type(a["type"]) for i, a in sorted(callable_info.get("arguments", {}).items()) if i > 0]
        return "%s (^)(%s)" % (result, ", ".join(arguments) or "void")
    if encoding.startswith("^"):
        return c_type(encoding[1:]) + "*"
    if encoding.startswith("{"):
        name = encoding[1:encoding.index("=")]
        return {"_NSRange": "NSRange"}.get(name, name.lstrip("_"))
    if encoding in SCALARS:
        return SCALARS[encoding]
    raise CheckError("unhandled type encoding %r" % encoding)


def category(encoding):
    encoding = bare(encoding)
    if encoding == "@?":
        return "block"
    if encoding == "@":
        return "object"
    if encoding == "^@":
        return "object pointer"
    if encoding.startswith("^"):
        return "pointer"
    if encoding.startswith("{"):
        return "struct"
    if encoding in "qQiIlLsScC":
        return "integer"
    return encoding


def refined_category(ctype, api):
    if ctype in api.ENUMS or ctype in ("NSUInteger", "NSInteger"):
        return "integer"
    if re.match(r"^\w+ \(\^\)\(", ctype):
        return "block"
    if re.match(r"^(NS|MTL)\w+\*\*$", ctype):
        return "object pointer"
    if ctype in ("void*", "const void*"):
        return "pointer"
    if ctype in api.STRUCTS:
        return "struct"
    if ctype == "dispatch_data_t" or re.match(r"^id<\w+>$", ctype) or re.match(r"^(NS|MTL)\w+(<.*>)?\*$", ctype):
        return "object"
    raise CheckError("metal_api.py: cannot tell what kind of type %r is" % ctype)


def availability(macos, deprecated=None):
    text = "macos,introduced=%s" % macos
    if deprecated:
        text += ",deprecated=%s" % deprecated
    return " __attribute__((availability(%s)))" % text


def version_key(text):
    return tuple(int(part) for part in text.split("."))


# ---- checking the table against the metadata --------------------------------------

class Declarations:
    def __init__(self, api, metadata):
        self.api = api
        self.metadata = metadata
        self.from_metadata = 0
        self.documented_only = []  # selectors only Apple's docs vouch for
        self.completed = []        # in the metadata, with types it leaves open taken from the docs
        self.problems = []
        self.protocols = {name: self._members(name, members, protocol=True)
                          for name, (_, _, members) in api.PROTOCOLS.items()}
        self.classes = {name: self._members(name, members, protocol=False)
                        for name, (_, _, members) in api.CLASSES.items()}
        self._check_enums()
        self._check_functions()
        self._check_structs()
        if self.problems:
            raise CheckError("metal_api.py does not match the pyobjc metadata:\n  " + "\n  ".join(self.problems))

    def _members(self, owner, members, protocol):
        out = []
        for entry in members:
            selector, macos = entry[0], entry[1]
            options = entry[2] if len(entry) > 2 else {}
            declared = self._member(owner, selector, macos, options, protocol)
            if declared:
                out.append(declared)
        return out

    def _member(self, owner, selector, macos, options, protocol):
        where = "%s %s" % (owner, selector)
        arity = selector.count(":")
        # Protocol methods are recorded on NSObject (informal protocols), class methods on the class.
        record = self.metadata.selectors.get(("NSObject" if protocol else owner, selector))
        if record is None and protocol:
            classes = sorted(c for (c, s) in self.metadata.selectors if s == selector)
            if classes:
                self.problems.append("%s: the metadata records it only on the class(es) %s, not as a protocol "
                                     "method" % (where, ", ".join(classes)))
                return None
        supplement = options.get("encoding")
        if record is None and supplement is None:
            near = sorted(s for (_, s) in self.metadata.selectors if s.lower() == selector.lower() or
                          s.split(":")[0] == selector.split(":")[0])
            self.problems.append("%s: no such selector in the pyobjc metadata%s" % (
                where, " (it has: %s)" % ", ".join(near[:6]) if near else ""))
            return None
        result, arguments, blocks = None, [None] * arity, [None] * arity
        if record is not None:
            if "retval" in record:
                result = record["retval"]["type"]
            for index, info in record.get("arguments", {}).items():
                if not 2 <= index < 2 + arity:
                    self.problems.append("%s: the metadata has an argument %d; the selector takes %d"
                                         % (where, index - 2, arity))
                    return None
                arguments[index - 2] = info.get("type")
                blocks[index - 2] = info.get("callable")
            if protocol and not record.get("required", False):
                self.problems.append("%s: an optional protocol method; check respondsToSelector: and list it "
                                     "as such" % where)
        if supplement is not None:
            # Documented encodings complete what the metadata leaves open; None: take the metadata's.
            supplement_result, supplement_arguments = supplement
            if len(supplement_arguments) != arity:
                self.problems.append("%s: the documented encoding has %d arguments; the selector takes %d"
                                     % (where, len(supplement_arguments), arity))
                return None
            if result is not None and supplement_result is not None and bare(result) != supplement_result:
                self.problems.append("%s: returns %r in the metadata, %r in metal_api.py"
                                     % (where, bare(result), supplement_result))
            result = result or supplement_result
            for i, encoding in enumerate(supplement_arguments):
                if arguments[i] is not None and encoding is not None and bare(arguments[i]) != encoding:
                    self.problems.append("%s: argument %d is %r in the metadata, %r in metal_api.py"
                                         % (where, i, bare(arguments[i]), encoding))
                arguments[i] = arguments[i] or encoding
        if result is None or any(a is None for a in arguments):
            self.problems.append("%s: the metadata leaves its types open; add \"encoding\" from Apple's docs" % where)
            return None
        if record is None:
            self.documented_only.append(where)
        elif supplement is not None:
            self.completed.append(where)
        else:
            self.from_metadata += 1

        types = []
        refined = options.get("args")
        if refined is not None and len(refined) != arity:
            self.problems.append("%s: metal_api.py refines %d arguments of %d" % (where, len(refined), arity))
            return None
        for i, encoding in enumerate(arguments):
            types.append(self._refine(where, "argument %d" % i, encoding, blocks[i], refined and refined[i]))
        return_type = self._refine(where, "the result", result, None, options.get("returns"))
        sdk = options.get("sdk", macos)
        return dict(selector=selector, result=return_type, arguments=types, macos=macos,
                    deprecated=options.get("deprecated"), sdk=sdk)

    def _refine(self, where, what, encoding, callable_info, refined):
        plain = c_type(encoding, callable_info)
        if not refined:
            return plain
        expected = category(encoding)
        got = refined_category(refined, self.api)
        if expected != got:
            self.problems.append("%s: %s is %s (%r) in the metadata but metal_api.py gives %s %r"
                                 % (where, what, expected, bare(encoding), got, refined))
        if got == "struct" and expected == "struct" and plain != refined:
            self.problems.append("%s: %s is struct %s in the metadata but metal_api.py gives %s"
                                 % (where, what, plain, refined))
        if got == "integer" and refined in self.api.ENUMS:
            underlying = self.api.ENUMS[refined][1]
            # PyObjC keeps one record per selector, so a selector shared by protocols (status:
            # MTLCommandBufferStatus is unsigned, MTLIOStatus signed) may carry the other's sign.
            if c_type(encoding) not in ("NSInteger", "NSUInteger") or underlying not in ("NSInteger", "NSUInteger"):
                self.problems.append("%s: %s %r is not a 64-bit integer like %s" % (where, what, encoding, refined))
        return refined

    def _check_enums(self):
        for type_name, (kind, underlying, _, values) in self.api.ENUMS.items():
            if type_name not in self.metadata.type_names:
                self.problems.append("enum type %s: not a type in the pyobjc metadata" % type_name)
            if kind not in ("enum", "options") or underlying not in ("NSInteger", "NSUInteger"):
                self.problems.append("enum type %s: unknown kind or underlying type" % type_name)
            for entry in values:
                if entry[0] not in self.metadata.enums:
                    self.problems.append("enum value %s: not in the pyobjc metadata" % entry[0])

    def _check_functions(self):
        for name, (_, result, arguments) in self.api.FUNCTIONS.items():
            record = self.metadata.functions.get(name)
            if record is None:
                self.problems.append("function %s: not in the pyobjc metadata" % name)
                continue
            encoding = record[0].decode()
            # A function encoding is the result followed by the arguments, one type each.
            parts = re.findall(r"[rnNoORV]*(?:\^+)?(?:\{[^}]*\}|@\?|.)", encoding)
            if len(parts) - 1 != len(arguments):
                self.problems.append("function %s: takes %d arguments, metal_api.py lists %d"
                                     % (name, len(parts) - 1, len(arguments)))
            self._refine("function " + name, "the result", parts[0], None, result)

    def _check_structs(self):
        for name in self.api.STRUCTS:
            if name not in self.metadata.structs:
                self.problems.append("struct %s: not in the pyobjc metadata" % name)


# ---- writing the headers -----------------------------------------------------------

def method_declaration(member):
    attributes = availability(member["macos"], member["deprecated"])
    selector = member["selector"]
    if ":" not in selector:
        return "- (%s)%s%s;" % (member["result"], selector, attributes)
    parts = selector.split(":")[:-1]
    pieces = ["%s:(%s)a%d" % (part, ctype, i) for i, (part, ctype) in enumerate(zip(parts, member["arguments"]))]
    return "- (%s)%s%s;" % (member["result"], " ".join(pieces), attributes)


def metal_header(api, declarations, metadata, sdk):
    def present(version):
        return version_key(version) <= version_key(sdk)

    lines = ["// Generated by tools/metal_check/generate_headers.py for the macOS %s SDK, from" % sdk,
             "// pyobjc-framework-Metal %s metadata and tools/metal_check/metal_api.py. Do not commit."
             % PYOBJC_METAL_VERSION,
             "#pragma once", "#include <Foundation/Foundation.h>", "#include <dispatch/dispatch.h>", ""]
    for name in api.PROTOCOLS:
        lines.append("@protocol %s;" % name)
    for name in api.CLASSES:
        lines.append("@class %s;" % name)
    lines.append("")
    for name in api.STRUCTS:
        encoding, fields = metadata.structs[name]
        body = encoding[encoding.index("=") + 1:-1]
        types = re.findall(r"\{[^}]*\}|.", body)
        members = " ".join("%s %s;" % (c_type(t), f) for t, f in zip(types, fields))
        lines.append("typedef struct { %s } %s;" % (members, name))
    lines.append("")
    for type_name, (kind, underlying, macos, values) in api.ENUMS.items():
        if not present(macos):
            continue
        enumerators = []
        for entry in values:
            value_name, value_macos = entry[0], entry[1]
            if not present(entry[2] if len(entry) > 2 else value_macos):
                continue
            enumerators.append("  %s%s = %dULL," % (value_name, availability(value_macos),
                                                     metadata.enums[value_name]))
        if kind == "options":  # NS_OPTIONS in C++: the integer type, and anonymous constants
            lines.append("typedef %s %s;" % (underlying, type_name))
            lines.append("enum : %s {" % underlying)
            lines.extend(enumerators)
            lines.append("};")
        else:  # NS_ENUM in C++: a distinct enum type with a fixed underlying type
            lines.append("typedef enum %s : %s %s;" % (type_name, underlying, type_name))
            lines.append("enum %s : %s {" % (type_name, underlying))
            lines.extend(enumerators)
            lines.append("}%s;" % availability(macos))
        lines.append("")
    for name, (parents, macos, _) in api.PROTOCOLS.items():
        lines.append("%s@protocol %s <%s>" % (availability(macos).strip() + " ", name, ", ".join(parents)))
        for member in declarations.protocols[name]:
            if present(member["sdk"]):
                lines.append(method_declaration(member))
        lines.extend(["@end", ""])
    for name, (superclass, macos, _) in api.CLASSES.items():
        lines.append("%s@interface %s : %s" % (availability(macos).strip() + " ", name, superclass))
        for member in declarations.classes[name]:
            if present(member["sdk"]):
                lines.append(method_declaration(member))
        lines.extend(["@end", ""])
    for name, (macos, result, arguments) in api.FUNCTIONS.items():
        retained = " __attribute__((ns_returns_retained))" if \
            len(metadata.functions[name]) > 2 and \
            metadata.functions[name][2].get("retval", {}).get("already_cfretained") else ""
        lines.append('extern "C" %s %s(%s)%s%s;' % (result, name, ", ".join(arguments) or "void",
                                                     retained, availability(macos)))
    return "\n".join(lines) + "\n"


def write_sdk(out, api, declarations, metadata, sdk, deployment):
    sdk_number = "%d%02d00" % version_key(sdk)[:2] if len(version_key(sdk)) >= 2 else "%d0000" % version_key(sdk)[0]
    for sub in ("Metal", "Foundation", "dispatch", "malloc"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    major, minor = (version_key(deployment) + (0,))[:2]
    with open(os.path.join(out, "Availability.h"), "w") as f:
        f.write("#pragma once\n// The macOS %s SDK as generate_headers.py simulates it.\n"
                "#define __MAC_OS_X_VERSION_MAX_ALLOWED %s\n#define __MAC_OS_X_VERSION_MIN_REQUIRED %d%02d00\n"
                % (sdk, sdk_number, major, minor))
    shutil.copyfile(os.path.join(HERE, "minimal_foundation.h"), os.path.join(out, "Foundation", "Foundation.h"))
    for header in ("dispatch/dispatch.h", "malloc/malloc.h"):
        with open(os.path.join(out, header), "w") as f:
            f.write("#pragma once\n#include <Foundation/Foundation.h>\n")
    with open(os.path.join(out, "Metal", "Metal.h"), "w") as f:
        f.write(metal_header(api, declarations, metadata, sdk))


def load_api(path):
    namespace = {}
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), namespace)

    class Api:
        pass
    api = Api()
    for key in ("PROTOCOLS", "CLASSES", "ENUMS", "FUNCTIONS", "STRUCTS", "DEPLOYMENT_TARGET"):
        setattr(api, key, namespace[key])
    return api


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wheel", help="the pyobjc-framework-Metal wheel (downloaded when absent)")
    parser.add_argument("--api", default=os.path.join(HERE, "metal_api.py"))
    parser.add_argument("--out", required=True, help="directory for one include directory per SDK")
    parser.add_argument("--sdk", action="append", default=[], help="SDK level to simulate; 'latest' = "
                        "the SDK the wheel's metadata was made from")
    args = parser.parse_args()
    try:
        if args.wheel:
            source, built_with = read_wheel(args.wheel)
        else:
            with tempfile.TemporaryDirectory(prefix="pyobjc-metal-") as directory:
                source, built_with = read_wheel(download_wheel(directory))
        metadata = Metadata(source)
        api = load_api(args.api)
        declarations = Declarations(api, metadata)
        for sdk in args.sdk or ["latest"]:
            level = built_with if sdk == "latest" else sdk
            if not level:
                raise CheckError("the wheel does not say which SDK it was built with")
            write_sdk(os.path.join(args.out, "sdk-" + sdk), api, declarations, metadata, level, api.DEPLOYMENT_TARGET)
        print("metal_check: pyobjc-framework-Metal %s metadata (SDK %s) confirms %d selectors fully and %d "
              "with types completed from Apple's docs (%s); %d are documented only (%s); %d enum values "
              "and %d functions confirmed"
              % (PYOBJC_METAL_VERSION, built_with, declarations.from_metadata, len(declarations.completed),
                 ", ".join(declarations.completed), len(declarations.documented_only),
                 ", ".join(declarations.documented_only),
                 sum(len(v[3]) for v in api.ENUMS.values()), len(api.FUNCTIONS)))
    except CheckError as error:
        print("metal_check: %s" % error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
