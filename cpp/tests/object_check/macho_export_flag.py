"""Sets the export trie flags of one symbol of a linked Mach-O dylib, in place (macho.sh's crafted
resolver, re-export and absolute exports, which ld64.lld does not write): macho_export_flag.py
FILE SYMBOL FLAGS. The flags byte of a regular export is one ULEB byte; FLAGS must fit one too."""

import struct
import sys


def uleb(b: bytes, p: int) -> tuple[int, int]:
    v = shift = 0
    while True:
        byte = b[p]
        p += 1
        v |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return v, p


def trie(b: bytes) -> tuple[int, int]:
    ncmds = struct.unpack_from("<I", b, 16)[0]
    off = 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", b, off)
        if cmd & 0x7FFFFFFF == 0x22:  # LC_DYLD_INFO(_ONLY): export_off, export_size
            return struct.unpack_from("<II", b, off + 40)
        if cmd == 0x80000033:  # LC_DYLD_EXPORTS_TRIE
            return struct.unpack_from("<II", b, off + 8)
        off += size
    raise SystemExit("no export trie")


def main() -> None:
    path, symbol, flags = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3], 0)
    b = bytearray(open(path, "rb").read())
    start, _ = trie(b)
    pending = [(start, b"")]
    while pending:
        p, name = pending.pop()
        terminal, q = uleb(b, p)
        if terminal and name == symbol:
            assert b[q] < 0x80 and flags < 0x80
            b[q] = flags
            open(path, "wb").write(bytes(b))
            return
        q += terminal
        count = b[q]
        q += 1
        for _ in range(count):
            end = b.index(b"\0", q)
            edge = bytes(b[q:end])
            child, q = uleb(b, end + 1)
            pending.append((start + child, name + edge))
    raise SystemExit(f"no export named {symbol!r}")


if __name__ == "__main__":
    main()
