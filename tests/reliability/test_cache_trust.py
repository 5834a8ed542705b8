"""The disk cache trusts nothing it did not write (issue P1.5, item 6).

Each attack of the issue, on the CPU backend: entries swapped between keys, a planted
object in the old format, a cache folder another user made (also the /tmp fallback
used when HOME and XDG_CACHE_HOME are unset) or that others may write, FIFOs and
symbolic links in place of entries, temporary folders left behind; then the size
limit (METALCALL_CACHE_SIZE) with least-recently-used eviction, `python -m metalcall
cache info|clear`, and several processes racing on one tiny cache.

Every test runs kernels in fresh interpreters with its own cache folder; a compiler
wrapper (METALCALL_CXX) logs each build, so a test can tell a trusted hit (no build)
from a refused entry (rebuilt). "Another user" is uid 65534 (nobody): those tests
need root to chown, and are skipped otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import metalcall as mc

pytestmark = pytest.mark.skipif("cpu" not in mc.backends(), reason="the cpu backend is not built in")

NOBODY = 65534
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
needs_root = pytest.mark.skipif(not IS_ROOT, reason="chown to another user needs root")

# One kernel name, many bodies: x = x * a + b. A variant is (a, b).
TEMPLATE = "kernel void k(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {{ x[i] = x[i] * {a}.0f + {b}.0f; }}"
A, B = (1, 1), (10, 0)
PREPROCESSED = """#define TWO 2.0f
kernel void k(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = x[i] * TWO + FIVE; }
"""

# Compiles each variant, runs k on [0, 1, 2, 3], prints {"a,b": result}.
RUNNER = """
import json, sys
import numpy as np
import metalcall as mc
dev = mc.Device("cpu")
out = {}
for a, b in json.loads(sys.argv[1]):
    x = np.arange(4, dtype=np.float32)
    dev.compile(TEMPLATE.format(a=a, b=b)).k(4, x)
    out[f"{a},{b}"] = x.tolist()
print(json.dumps(out))
""".replace("TEMPLATE", repr(TEMPLATE))


def _real_compiler():
    for name in ("g++", "clang++", "c++"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no host C++ compiler")


class Cache:
    """Runs kernels in new processes against one cache folder, logging the compiler's builds."""

    def __init__(self, tmp_path: Path, folder: Path | None = None):
        self.tmp = tmp_path
        self.folder = folder if folder is not None else tmp_path / "cache"
        self.log = tmp_path / "cxx.log"
        self.compiler = tmp_path / "cxx"
        self.compiler.write_text(f'#!/bin/sh\necho "$*" >> "{self.log}"\nexec "{_real_compiler()}" "$@"\n')
        self.compiler.chmod(0o755)

    def env(self, extra=None):
        env = dict(os.environ)
        env.pop("METALCALL_DEVICE", None)
        env["METALCALL_CACHE_DIR"] = str(self.folder)
        env["METALCALL_CXX"] = str(self.compiler)
        for k, v in (extra or {}).items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        return env

    def run(self, variants, extra_env=None, timeout=120.0):
        """Runs the variants in one new process; checks every result; returns (stderr, builds)."""
        if self.log.exists():
            self.log.unlink()
        r = subprocess.run([sys.executable, "-c", RUNNER, json.dumps([list(v) for v in variants])],
                           capture_output=True, text=True, env=self.env(extra_env), timeout=timeout, cwd=self.tmp)
        assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
        out = json.loads(r.stdout.strip().splitlines()[-1])
        for a, b in variants:
            assert out[f"{a},{b}"] == [i * a + b for i in range(4)], (a, b, out)
        log = self.log.read_text().splitlines() if self.log.exists() else []
        return r.stderr, sum("-shared" in line for line in log)

    def entries(self, area="cpu", ext=".so"):
        return sorted((self.folder / area).glob("*" + ext))

    def all_files(self):
        return sorted(str(p) for p in self.folder.rglob("*"))


def _entry_of(cache: Cache, variant, area="cpu", ext=".so"):
    """The entry file `variant` adds to `area` (compiled alone, in its own process)."""
    before = set(cache.entries(area, ext))
    cache.run([variant])
    (new,) = set(cache.entries(area, ext)) - before
    return new


def _chown_tree(path: Path, uid: int):
    os.chown(path, uid, uid, follow_symlinks=False)
    for p in path.rglob("*"):
        os.chown(p, uid, uid, follow_symlinks=False)


# ---- entries bind their key ----


def test_entries_swapped_between_keys_are_refused(tmp_path):
    cache = Cache(tmp_path)
    so_a, so_b = _entry_of(cache, A), _entry_of(cache, B)
    tr = cache.entries("translations", ".tr")
    assert len(tr) == 2
    # Swap everything both kernels have on disk (object and translation), as the issue did
    # with .so + .so.sum: each file is intact, only under the other key's name.
    for x, y in [(so_a, so_b), (tr[0], tr[1])]:
        for suffix in ("", ".sum"):  # the checksum files of the format before headers, if any
            xs, ys = Path(str(x) + suffix), Path(str(y) + suffix)
            if xs.exists() and ys.exists():
                xb, yb = xs.read_bytes(), ys.read_bytes()
                xs.write_bytes(yb)
                ys.write_bytes(xb)
    _, builds = cache.run([A, B])  # results checked: each runs its own body
    assert builds == 2, "both swapped objects were refused and rebuilt"
    _, builds = cache.run([A, B])
    assert builds == 0, "the rebuilt entries are good"


def test_planted_object_without_a_header_is_never_loaded(tmp_path):
    cache = Cache(tmp_path)
    so_a = _entry_of(cache, A)
    # A shared object whose constructor would leave a mark if anything dlopen'ed it.
    marker = tmp_path / "loaded"
    src = tmp_path / "evil.cpp"
    src.write_text('#include <cstdio>\n__attribute__((constructor)) static void mark() { '
                   f'std::FILE* f = std::fopen("{marker}", "w"); if (f) std::fclose(f); }}\n')
    evil = tmp_path / "evil.so"
    subprocess.run([_real_compiler(), "-shared", "-fPIC", "-o", str(evil), str(src)], check=True, timeout=120)
    shutil.copyfile(evil, so_a)
    _, builds = cache.run([A])
    assert builds == 1 and not marker.exists(), "the planted object was loaded"
    assert so_a.read_bytes() != evil.read_bytes(), "the entry was rewritten"


# ---- folders and files of another user ----


@needs_root
@pytest.mark.parametrize("what", ["root", "area", "files"])
def test_cache_of_another_user_is_not_trusted(tmp_path, what):
    cache = Cache(tmp_path)
    cache.run([A])
    assert cache.run([A])[1] == 0  # a warm cache of ours is trusted
    if what == "root":
        _chown_tree(cache.folder, NOBODY)
    elif what == "area":
        _chown_tree(cache.folder / "cpu", NOBODY)
    else:
        for p in cache.folder.rglob("*"):
            if p.is_file():
                os.chown(p, NOBODY, NOBODY)
    before = cache.all_files()
    stderr, builds = cache.run([A])
    assert builds == 1, "another user's entries were used"
    if what != "files":
        assert "owned by another user" in stderr, stderr
        assert stderr.count("warning") == 1, stderr
        assert cache.all_files() == before, "nothing is written into another user's folder"


def test_folder_others_may_write_is_not_trusted(tmp_path):
    cache = Cache(tmp_path)
    cache.run([A])
    cache.folder.chmod(0o777)
    try:
        before = cache.all_files()
        stderr, builds = cache.run([A])
        assert builds == 1 and "other users may write" in stderr, stderr
        assert cache.all_files() == before
    finally:
        cache.folder.chmod(0o700)


@needs_root
def test_tmp_fallback_made_by_another_user_is_refused(tmp_path):
    fallback = Path(f"/tmp/metalcall-cache-{os.geteuid()}")
    if os.path.lexists(fallback):
        pytest.skip(f"{fallback} exists already; not touching it")
    # A good cache of A, then the same files planted where the fallback lives, by "nobody".
    good = Cache(tmp_path)
    good.run([A])
    shutil.copytree(good.folder, fallback, symlinks=True)
    try:
        _chown_tree(fallback, NOBODY)
        before = sorted(str(p) for p in fallback.rglob("*"))
        stderr, builds = good.run([A], extra_env={"METALCALL_CACHE_DIR": None, "HOME": None, "XDG_CACHE_HOME": None})
        assert builds == 1 and "owned by another user" in stderr, stderr
        assert sorted(str(p) for p in fallback.rglob("*")) == before
    finally:
        shutil.rmtree(fallback, ignore_errors=True)


# ---- FIFOs, links, devices ----


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifos_in_place_of_entries_do_not_block(tmp_path):
    cache = Cache(tmp_path)
    cache.run([A])
    replaced = [p for p in cache.folder.rglob("*") if p.is_file() and p.suffix in (".so", ".tr", ".id")]
    assert len(replaced) >= 3
    for p in replaced:
        p.unlink()
        os.mkfifo(p)
    # A blocked open would hang here: the subprocess timeout turns that into a failure.
    _, builds = cache.run([A], timeout=60.0)
    assert builds == 1


def test_symbolic_links_are_not_followed(tmp_path):
    cache = Cache(tmp_path)
    so_a = _entry_of(cache, A)
    (tr_a,) = cache.entries("translations", ".tr")
    # The object: a link to /dev/zero (reading it would grow without bound); the
    # translation: a link to an intact copy of itself outside the folder.
    outside = tmp_path / "outside.tr"
    shutil.copyfile(tr_a, outside)
    intact = outside.read_bytes()
    so_a.unlink()
    so_a.symlink_to("/dev/zero")
    tr_a.unlink()
    tr_a.symlink_to(outside)
    _, builds = cache.run([A], timeout=60.0)
    assert builds == 1
    assert outside.read_bytes() == intact, "the link's target was not written through"


def test_area_folder_that_is_a_link_is_refused(tmp_path):
    cache = Cache(tmp_path)
    cache.run([A])
    elsewhere = tmp_path / "elsewhere"
    (cache.folder / "cpu").rename(elsewhere)
    (cache.folder / "cpu").symlink_to(elsewhere)
    before = sorted(p.name for p in elsewhere.iterdir())
    stderr, builds = cache.run([A])
    assert builds == 1 and "symbolic link" in stderr, stderr
    assert sorted(p.name for p in elsewhere.iterdir()) == before


def test_entries_are_private_files(tmp_path):
    cache = Cache(tmp_path)
    cache.run([A])
    for p in [cache.folder, *cache.folder.rglob("*")]:
        mode = stat.S_IMODE(os.lstat(p).st_mode)
        assert mode & 0o077 == 0, (p, oct(mode))


# ---- temporary folders ----


@pytest.mark.parametrize("writable", [True, False], ids=["writable-cache", "unwritable-cache"])
def test_no_temporary_folders_are_left_behind(tmp_path, writable):
    if writable:
        cache = Cache(tmp_path)
    else:
        blocker = tmp_path / "a-file"
        blocker.write_text("not a folder")
        cache = Cache(tmp_path, blocker / "cache")  # can never be created, for root too
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {"TMPDIR": str(tmp)}
    cache.run([A, B], extra_env=env)
    # A failed compile and a preprocessed one (the preprocessor has its own temporary files).
    code = f"""
import metalcall as mc
dev = mc.Device("cpu")
try:
    dev.compile({TEMPLATE.format(a=1, b=1).replace("x[i] =", "x[i] = not_declared +")!r})
    raise SystemExit("compiled a kernel using an undeclared name")
except mc.CompileError:
    pass
dev.compile({PREPROCESSED!r}, defines={{"FIVE": 5}})
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=cache.env(env), timeout=120)
    assert r.returncode == 0, r.stderr
    assert list(tmp.iterdir()) == [], "temporary files left in TMPDIR"
    if writable:
        leftovers = [p for p in cache.folder.rglob("*") if "tmp-build-" in p.name or p.name.endswith(".tmp")]
        assert leftovers == []
    else:
        assert not (blocker / "cache").exists()


# ---- the size limit ----


def _cache_bytes(folder: Path):
    return sum(p.stat().st_size for area in ("cpu", "translations", "compilers") if (folder / area).is_dir()
               for p in (folder / area).iterdir() if p.is_file())


def test_size_zero_turns_the_disk_cache_off(tmp_path):
    cache = Cache(tmp_path)
    env = {"METALCALL_CACHE_SIZE": "0"}
    assert cache.run([A], extra_env=env)[1] == 1
    assert cache.run([A], extra_env=env)[1] == 1, "nothing was cached"
    assert _cache_bytes(cache.folder) == 0


def test_size_limit_evicts_the_least_recently_used(tmp_path):
    # One kernel's entries (object + translation), measured without a limit.
    probe = Cache(tmp_path, tmp_path / "probe-cache")
    probe.run([(7, 7)])
    one = _cache_bytes(probe.folder)
    limit = int(3.5 * one)
    env = {"METALCALL_CACHE_SIZE": str(limit)}
    cache = Cache(tmp_path)
    objects = {}
    for v in [(2, 1), (3, 1), (4, 1)]:
        before = set(cache.entries())
        cache.run([v], extra_env=env)
        (objects[v],) = set(cache.entries()) - before
        assert _cache_bytes(cache.folder) <= limit
    # (2, 1) is used again (a hit, from a new process): now (3, 1) is the least recently used.
    assert cache.run([(2, 1)], extra_env=env)[1] == 0
    for v in [(5, 1), (6, 1)]:
        cache.run([v], extra_env=env)
        assert _cache_bytes(cache.folder) <= limit
    assert objects[(2, 1)].exists(), "the recently used entry was kept"
    assert not objects[(3, 1)].exists(), "the least recently used entry was evicted"
    assert cache.run([(2, 1)], extra_env=env)[1] == 0
    assert cache.run([(3, 1)], extra_env=env)[1] == 1  # evicted: rebuilt, correct


# ---- python -m metalcall cache info|clear ----


def _cli(cache: Cache, *args, env=None):
    r = subprocess.run([sys.executable, "-m", "metalcall", "cache", *args], capture_output=True, text=True,
                       env=cache.env(env), timeout=120, cwd=cache.tmp)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_cache_info_and_clear(tmp_path):
    cache = Cache(tmp_path)
    cache.run([A, B])
    info = _cli(cache, "info")
    assert f"directory: {cache.folder}" in info
    entries = int(info.split("entries:")[1].split()[0])
    assert entries >= 5, info  # two objects, two translations, the compiler's identity
    assert "limit:     1.0 GiB" in info
    assert "limit:     500.0 MiB" in _cli(cache, "info", env={"METALCALL_CACHE_SIZE": "500M"})
    assert "limit:     2.0 GiB" in _cli(cache, "info", env={"METALCALL_CACHE_SIZE": "2G"})
    assert "limit:     none" in _cli(cache, "info", env={"METALCALL_CACHE_SIZE": "unlimited"})
    assert "off" in _cli(cache, "info", env={"METALCALL_CACHE_SIZE": "0"})
    # Files that are not metalcall's stay.
    (cache.folder / "notes.txt").write_text("mine")
    (cache.folder / "cpu" / "mine.so").write_text("mine")
    out = _cli(cache, "clear")
    assert f"removed {entries} entries" in out, out
    assert "entries:   0" in _cli(cache, "info")
    assert (cache.folder / "notes.txt").read_text() == "mine"
    assert (cache.folder / "cpu" / "mine.so").read_text() == "mine"
    assert cache.run([A])[1] == 1  # cleared: rebuilt


def test_unreadable_size_setting_warns_and_uses_the_default(tmp_path):
    cache = Cache(tmp_path)
    r = subprocess.run([sys.executable, "-m", "metalcall", "cache", "info"], capture_output=True, text=True,
                       env=cache.env({"METALCALL_CACHE_SIZE": "lots"}), timeout=120)
    assert r.returncode == 0 and "limit:     1.0 GiB" in r.stdout
    assert "METALCALL_CACHE_SIZE='lots' is not a size" in r.stderr


# ---- several processes, one tiny cache ----


def test_processes_racing_on_one_tiny_cache(tmp_path):
    cache = Cache(tmp_path)
    env = cache.env({"METALCALL_CACHE_SIZE": "48K"})
    shared = [[20, 1], [21, 1], [22, 1]]
    procs = []
    for p in range(4):
        # Every process compiles the shared kernels and two of its own, twice (the second
        # time from the in-memory cache), in its own order.
        own = [[30 + p, 2], [40 + p, 3]]
        variants = (shared[p % 3:] + shared[: p % 3] + own) * 2
        procs.append((variants, subprocess.Popen([sys.executable, "-c", RUNNER, json.dumps(variants)],
                                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)))
    for variants, proc in procs:
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr
        out = json.loads(stdout.strip().splitlines()[-1])
        for a, b in variants:
            assert out[f"{a},{b}"] == [i * a + b for i in range(4)], (a, b, out)
    leftovers = [p for p in cache.folder.rglob("*") if "tmp-build-" in p.name or p.name.endswith(".tmp")]
    assert leftovers == []
    # Whatever survived eviction is good: a last process gets every result right.
    cache.run([tuple(v) for v in shared] + [(30, 2), (43, 3)], extra_env={"METALCALL_CACHE_SIZE": "48K"})
    assert _cache_bytes(cache.folder) <= 48 * 1024


def test_a_permissive_umask_still_caches_privately(tmp_path):
    # With umask 002 the compiler's outputs are group-writable; they live in a private
    # folder, so they are still used, and the entries written from them are 0600.
    cache = Cache(tmp_path)
    code = f"""
import os
os.umask(0o002)
import metalcall as mc
dev = mc.Device("cpu")
dev.compile({TEMPLATE.format(a=3, b=4)!r})
dev.compile({PREPROCESSED!r}, defines={{"FIVE": 5}})
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=cache.env(), timeout=120)
    assert r.returncode == 0, r.stderr
    for p in [cache.folder, *cache.folder.rglob("*")]:
        assert stat.S_IMODE(os.lstat(p).st_mode) & 0o077 == 0, p
    assert cache.run([(3, 4)])[1] == 0
