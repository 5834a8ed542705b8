"""The reduction of Hermitian (real symmetric) matrices to a real tridiagonal matrix on GPUs, spread
over the whole GPU: LAPACK's hetd2/sytd2 with uplo L, H_k = I - tau v v^H (tau complex where A is,
beta = e_k real as larfg makes it, so T is real for every dtype), A = Q T Q^H with
Q = H_0 H_1 ... H_{n-2}. linalg_tridiag.py takes T's eigenvalues and vectors and applies Q.

- td_init, td_copy: W = the Hermitian matrix of the input's lower triangle (the diagonal's real
  part), scaled by a power of two (found by a threadgroup per matrix, kept to undo it on the
  eigenvalues).
- td_step, one launch per step k = -1 .. (every threadgroup of a matrix the same arithmetic up to
  its rows): w_k = tau p - (|tau|^2 / 2)(p^H v) v from p = A22 v (the previous launch's) and v_k,
  then row k + 1 of A after the rank-2 update A22 -= v w^H + w v^H, its column (the row's
  conjugate) and from it the next reflector (the same in every group, so every group has the same
  v); then the group updates its share of the rows below and forms their entries of the next
  p = A22 v in the same pass. One launch per step and no host wait: the launch boundary is the
  grid-wide barrier the step needs. Group 0 writes d, e, tau and v (row k + 1 of VS). The last
  2 x 2 block's reflector only makes e_{n-2} real (tau = 0 for real dtypes).
- td_tail: the remaining steps in one launch once the trailing matrix fits the threadgroup memory
  (dynamic: past CUDA's 48 KiB of static arrays), a threadgroup per matrix, barriers for the
  launch boundaries.
- BATCH_STEPS, GRAPH_STEPS (off; benchmarks/bench_eigh.py times both): the step launches in one
  dev.batch(), or recorded once per shape (dev.record(), its own work buffers) and replayed with
  W copied in and d, e, tau and the reflectors copied out: fewer host costs per launch, for when
  the host's launches are what the reduction waits for.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable

import numpy as np

import metalcall as mc

from . import cache, linalg_common as lc

THREADS = 256  # per step group on GPUs: 8 teams of 32 lanes, a team per row
TAIL_THREADS = 1024  # the tail's one group per matrix
BATCH_STEPS = False  # the step launches in one dev.batch() (benchmarks/bench_eigh.py times both ways)
GRAPH_STEPS = False  # the step and tail launches recorded once per shape and replayed (bench_eigh.py times it)
GRAPHS = 4  # recordings kept (each holds its own work buffers: about 2 n^2 elements a matrix)
TAIL_ROWS = None  # at most this trailing matrix for the tail (tests); it is also what threadgroup memory holds
TEAM = 32
tail_refused = None  # why td_tail was refused, if it was (the steps then run a launch each): tests read it
_STATIC_LIMIT = 48 * 1024 - 64  # fixed-size threadgroup arrays are static shared memory on CUDA (48 KiB)


def ncap(n: int) -> int:
    """The power of two (at least 64) the kernels' threadgroup vectors are sized for."""
    c = 64
    while c < n:
        c *= 2
    return c


def static_bytes(n: int, dt: np.dtype, threads: int) -> int:
    """td_step's and td_tail's fixed-size threadgroup arrays: v, w, u and two reduction arrays."""
    return (3 * ncap(n) + threads) * dt.itemsize + threads * lc.real_type(dt).itemsize


def fits(dev: mc.Device, dt: np.dtype, n: int) -> bool:
    return static_bytes(n, dt, THREADS) <= min(dev.threadgroup_memory_length, _STATIC_LIMIT)


def sum_text(x: str, out: str, arr: str, typ: str, add: str) -> str:
    """MSL: `out` = the sum of every thread's `x` (a tree over `arr`, the same order in every group)."""
    return f"""
  {arr}[tid] = {x};
  $SYNC
  for (uint h = $NTG / 2u; h > 0u; h >>= 1u) {{
    if (tid < h) {arr}[tid] = {add}({arr}[tid], {arr}[tid + h]);
    $SYNC
  }}
  const {typ} {out} = {arr}[0];
  $SYNC"""


_LARFG = """
inline $R td_plus($R a, $R b) { return a + b; }

// LAPACK's larfg for a column whose first entry is alpha and whose others' |x|^2 sum to ss: beta
// (real: T's off-diagonal entry), tau and the factor 1 / (alpha - beta) of v's other entries; tau = 0
// (H = I) for a real alpha and nothing below it. NaN stays NaN. The column is scaled: no overflow.
inline void td_larfg($T alpha, $R ss, thread $R& beta, thread $T& tau, thread $T& scal) {
  beta = la_re(alpha) + (ss + la_im(alpha)) * $R(0);
  tau = la_make($R(0), $R(0));
  scal = tau;
  if (ss > $R(0) || la_im(alpha) != $R(0)) {
    beta = -copysign(sqrt(la_abs2(alpha) + ss), la_re(alpha));
    tau = la_make((beta - la_re(alpha)) / beta, -la_im(alpha) / beta);
    scal = la_div(la_make($R(1), $R(0)), la_sub(alpha, la_make(beta, $R(0))));
  }
}
"""

_INIT = """
kernel void td_init(const device $T* in [[buffer(0)]], device $R* SC [[buffer(1)]], constant uint& n [[buffer(2)]],
                    uint g [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup $R partial_max[$NTG];
  const device $T* x = in + ulong(g) * n * n;
  $R largest = $R(0);
  for (uint e = tid; e < n * n; e += $NTG)
    if (e % n <= e / n) largest = fmax(largest, la_abs1(x[e]));  // the lower triangle alone is read
  partial_max[tid] = largest;
  $SYNC
  if (tid == 0u) {
    for (uint t = 1u; t < $NTG; ++t) largest = fmax(largest, partial_max[t]);
    const $R exponent = fmin(fmax(-floor(log2(largest)), $R(-$MAXEXP)), $R($MAXEXP));
    SC[g] = largest > $R(0) && isfinite(largest) ? exp2(exponent) : $R(1);
  }
}
"""

_COPY = """
// W = the scaled Hermitian matrix, a thread per element (all of the GPU: the upper triangle's reads are strided)
kernel void td_copy(const device $T* in [[buffer(0)]], device $T* W [[buffer(1)]], const device $R* SC [[buffer(2)]],
                    constant uint& n [[buffer(3)]], constant ulong& total [[buffer(4)]],
                    uint gid [[thread_position_in_grid]]) {
  if (ulong(gid) >= total) return;
  const ulong nn = ulong(n) * n, g = gid / nn;
  const uint e = uint(gid - g * nn), i = e / n, j = e % n;
  const $T x = j <= i ? in[g * nn + e] : la_conj(in[g * nn + j * n + i]);
  W[gid] = i == j ? la_make(la_re(x) * SC[g], $R(0)) : la_scale(x, SC[g]);
}
"""

# What td_step and td_tail share, as text: $ROW(j) reads row r1 of the trailing matrix.
# (1) w from p (in w) and v: w = tau p - (|tau|^2 / 2)(p^H v) v.
_W_FROM_P = """
      $T acc = la_make($R(0), $R(0));
      for (uint i = r1 + tid; i < n; i += $NTG) acc = la_add(acc, la_mul(la_conj(w[i]), v[i]));
$SUM_PV
      const $T half = la_scale(pv, $R(0.5) * la_abs2(tk));
      for (uint i = r1 + tid; i < n; i += $NTG) w[i] = la_sub(la_mul(tk, w[i]), la_mul(half, v[i]));
"""
# (2) u = row r1 after the update; the last 2 x 2 block ends the reduction ($END: return or break).
_ROW_AND_LAST = """
    const $T vr = v[r1], wr = w[r1];
    for (uint j = r1 + tid; j < n; j += $NTG)
      u[j] = la_sub(la_sub($ROW(j), la_mul(vr, la_conj(w[j]))), la_mul(wr, la_conj(v[j])));
    $SYNC
    if (r1 + 2u >= n) {
      if ($LEAD && tid == 0u) {
        $R beta;
        $T tn, scal;
        td_larfg(la_conj(u[n - 1u]), $R(0), beta, tn, scal);  // e_{n-2} made real
        D[g * n + r1] = la_re(u[r1]);
        E[g * n + r1] = beta;
        TAU[g * n + r1] = tn;
        VS[(ulong(g) * n + r1) * n + n - 1u] = la_make($R(1), $R(0));
        const $T vl = v[n - 1u], wl = w[n - 1u];
        D[g * n + n - 1u] = la_re($ROW_LAST) - $R(2) * la_re(la_mul(vl, la_conj(wl)));
      }
      $END;
    }
"""
# (3) the next reflector from u's column (the row's conjugate): u becomes v_{r1}.
_REFLECTOR = """
    $R acc2 = $R(0);
    for (uint j = r1 + 2u + tid; j < n; j += $NTG) acc2 += la_abs2(u[j]);
$SUM_SS
    const $T alpha = la_conj(u[r1 + 1u]);
    const $R dval = la_re(u[r1]);
    $R beta;
    $T tn, scal;
    td_larfg(alpha, ss, beta, tn, scal);
    $SYNC
    for (uint j = r1 + 1u + tid; j < n; j += $NTG)
      u[j] = j == r1 + 1u ? la_make($R(1), $R(0)) : la_mul(la_conj(u[j]), scal);
    $SYNC
    if ($LEAD) {
      device $T* vn = VS + (ulong(g) * n + r1) * n;
      for (uint j = r1 + 1u + tid; j < n; j += $NTG) vn[j] = u[j];
      if (tid == 0u) {
        D[g * n + r1] = dval;
        E[g * n + r1] = beta;
        TAU[g * n + r1] = tn;
      }
    }
"""

_ARGS = """device $T* W [[buffer(0)]], device $T* VS [[buffer(1)]], device $T* TAU [[buffer(2)]],
                    device $T* P [[buffer(3)]], device $R* D [[buffer(4)]], device $R* E [[buffer(5)]],
                    constant uint& n [[buffer(6)]]"""

_STEP = """
kernel void td_step($ARGS, constant int& step [[buffer(7)]], constant uint& gpm [[buffer(8)]],
                    uint grp [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup $T v[$NCAP];
  threadgroup $T w[$NCAP];
  threadgroup $T u[$NCAP];
  threadgroup $T red[$NTG];
  threadgroup $R redr[$NTG];
  const uint g = grp / gpm, part = grp % gpm;
  const int k = step;
  const uint r1 = uint(k + 1);  // the row (and column) the next reflector comes from
  device $T* A = W + ulong(g) * n * n;
  device $T* PV = P + ulong(g) * 2u * n;  // p of even and odd steps
  for (uint j = r1 + tid; j < n; j += $NTG) u[j] = A[ulong(r1) * n + j];  // row r1, read while w is made
  if (k >= 0) {  // w_k from p = A22 v_k (the previous launch's) and v_k
    const uint kk = uint(k);
    for (uint i = r1 + tid; i < n; i += $NTG) {
      v[i] = VS[(ulong(g) * n + kk) * n + i];
      w[i] = PV[(kk & 1u) * n + i];
    }
    $SYNC
    const $T tk = TAU[g * n + kk];
$W_FROM_P
  } else {
    for (uint i = tid; i < n; i += $NTG) { v[i] = la_make($R(0), $R(0)); w[i] = v[i]; }
  }
  $SYNC
$ROW_AND_LAST
$REFLECTOR
  // Rows i > r1, a team of TEAM lanes a row: A_ij -= v_i conj(w_j) + w_i conj(v_j) (j > r1), p_i = sum_j A_ij u_j.
  const uint team = tid / $TEAM, lane = tid % $TEAM, teams = $NTG / $TEAM;
  const uint rows = n - r1 - 1u, per = gpm * teams, rounds = (rows + per - 1u) / per;
  device $T* pn = PV + (r1 & 1u) * n;
  for (uint q = 0u; q < rounds; ++q) {
    const uint i = r1 + 1u + q * per + part * teams + team;
    $T acc3 = la_make($R(0), $R(0));
    if (i < n) {
      const $T vi = v[i], wi = w[i];
      device $T* row = A + ulong(i) * n;
      for (uint j = r1 + 1u + lane; j < n; j += $TEAM) {
        const $T a = la_sub(la_sub(row[j], la_mul(vi, la_conj(w[j]))), la_mul(wi, la_conj(v[j])));
        row[j] = a;
        acc3 = la_add(acc3, la_mul(a, u[j]));
      }
    }
    red[tid] = acc3;
    $SYNC
    for (uint h = $TEAM / 2u; h > 0u; h >>= 1u) {  // a tree over the team's lanes
      if (lane < h) red[tid] = la_add(red[tid], red[tid + h]);
      $SYNC
    }
    if (lane == 0u && i < n) pn[i] = red[tid];  // (the next round's writes to red[tid] are this thread's)
  }
}
"""

# The last steps in one launch, a threadgroup per matrix: once the trailing matrix (mt x mt, from
# row r0 = first + 1) fits the threadgroup memory, M holds it (rows padded to mt + 1: no bank
# conflicts) and the group runs td_step's arithmetic for k = first .. with barriers for the
# launch boundaries. w holds p = M v between steps.
_TAIL = """
kernel void td_tail($ARGS, constant int& first [[buffer(7)]], threadgroup $T* M [[threadgroup(0)]],
                    uint g [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup $T v[$NCAP];
  threadgroup $T w[$NCAP];
  threadgroup $T u[$NCAP];
  threadgroup $T red[$NTG];
  threadgroup $R redr[$NTG];
  const uint r0 = uint(first + 1), mt = n - r0, ld = mt + 1u;
  const device $T* A = W + ulong(g) * n * n;
  for (uint i = tid / $TEAM; i < mt; i += $NTG / $TEAM)
    for (uint j = tid % $TEAM; j < mt; j += $TEAM) M[i * ld + j] = A[ulong(r0 + i) * n + r0 + j];
  $T tk = la_make($R(0), $R(0));
  if (first >= 0) {
    const uint kk = uint(first);
    for (uint i = r0 + tid; i < n; i += $NTG) {
      v[i] = VS[(ulong(g) * n + kk) * n + i];
      w[i] = P[ulong(g) * 2u * n + (kk & 1u) * n + i];
    }
    tk = TAU[g * n + kk];
  } else {
    for (uint i = tid; i < n; i += $NTG) { v[i] = la_make($R(0), $R(0)); w[i] = v[i]; }
  }
  $SYNC
  for (int k = first;; ++k) {
    const uint r1 = uint(k + 1);
    if (k >= 0) {
$W_FROM_P
      $SYNC
    }
$ROW_AND_LAST
$REFLECTOR
    // M_ij -= v_i conj(w_j) + w_i conj(v_j) for i, j > r1, a team of TEAM lanes a row
    for (uint i = r1 + 1u + tid / $TEAM; i < n; i += $NTG / $TEAM) {
      const $T vi = v[i], wi = w[i];
      threadgroup $T* row = M + (i - r0) * ld;
      for (uint j = r1 + 1u + tid % $TEAM; j < n; j += $TEAM)
        row[j - r0] = la_sub(la_sub(row[j - r0], la_mul(vi, la_conj(w[j]))), la_mul(wi, la_conj(v[j])));
    }
    $SYNC
    // p = M u over rows i > r1: `parts` threads a row, each summing a stretch of it
    const uint rows = n - r1 - 1u, parts = rows >= $NTG ? 1u : min($NTG / rows, 8u);
    const uint len = (rows + parts - 1u) / parts;
    if (parts == 1u) {
      for (uint l = tid; l < rows; l += $NTG) {
        const threadgroup $T* row = M + (r1 + 1u + l - r0) * ld;
        $T acc3 = la_make($R(0), $R(0));
        for (uint j = r1 + 1u; j < n; ++j) acc3 = la_add(acc3, la_mul(row[j - r0], u[j]));
        w[r1 + 1u + l] = acc3;
      }
    } else if (tid < rows * parts) {
      const uint i = r1 + 1u + tid % rows, c = tid / rows;
      const threadgroup $T* row = M + (i - r0) * ld;
      $T acc3 = la_make($R(0), $R(0));
      for (uint j = r1 + 1u + c * len; j < min(n, r1 + 1u + (c + 1u) * len); ++j)
        acc3 = la_add(acc3, la_mul(row[j - r0], u[j]));
      red[tid] = acc3;
    }
    $SYNC
    if (parts > 1u && tid < rows) {
      $T pi = la_make($R(0), $R(0));
      for (uint c = 0u; c < parts; ++c) pi = la_add(pi, red[c * rows + tid]);
      w[r1 + 1u + tid] = pi;
    }
    for (uint i = r1 + 1u + tid; i < n; i += $NTG) v[i] = u[i];
    tk = tn;
    $SYNC
  }
}
"""


def _text(template: str, step: bool) -> str:
    """The kernel text with the shared pieces in place."""
    lead, end = ("part == 0u", "return") if step else ("true", "break")
    row, last = (("u[$J]", "A[ulong(n - 1u) * n + n - 1u]") if step else
                 ("M[(r1 - r0) * ld + $J - r0]", "M[(mt - 1u) * ld + mt - 1u]"))
    pieces = _ROW_AND_LAST.replace("$ROW_LAST", last).replace("$ROW(j)", row.replace("$J", "j"))
    text = template.replace("$ARGS", _ARGS).replace("$W_FROM_P", _W_FROM_P).replace("$ROW_AND_LAST", pieces)
    text = text.replace("$REFLECTOR", _REFLECTOR).replace("$LEAD", lead).replace("$END", end)
    return (_LARFG + text.replace("$SUM_PV", sum_text("acc", "pv", "red", "$T", "la_add"))
            .replace("$SUM_SS", sum_text("acc2", "ss", "redr", "$R", "td_plus")))


def group_kernel(dev: mc.Device, text: str, name: str, dt: np.dtype, n: int, threads: int,
                 extra: Callable[[int], dict[str, str]] | None = None) -> tuple[mc.Kernel, int]:
    """(kernel, threads a group): `threads` on GPUs, 32 on the CPU backend running these kernels
    (the tests), whose barriers switch fibers; `extra(threads)`: more substitutions."""
    def source(tg: int, _w: int) -> str:
        return lc.render(text, dt, tg, NCAP=f"{ncap(n)}u", TEAM=f"{TEAM}u", **(extra(tg) if extra else {}))
    return cache.sized_kernel(dev, source, name, 32 if dev.backend == "cpu" else threads, fast_math=False)


def _tail_bytes(mt: int, dt: np.dtype) -> int:
    return -(-mt * (mt + 1) * dt.itemsize // 16) * 16


def _tail_rows(dev: mc.Device, dt: np.dtype, n: int, threads: int) -> int:
    """The largest trailing matrix td_tail's dynamic threadgroup memory holds next to its arrays."""
    free = int(dev.threadgroup_memory_length) - static_bytes(n, dt, threads) - 256
    mt = int(((1 + 4 * max(free, 0) / dt.itemsize) ** 0.5 - 1) / 2)
    while mt > 0 and _tail_bytes(mt, dt) > free:
        mt -= 1
    return mt


_MOVE = """
kernel void td_move(const device $T* src [[buffer(0)]], device $T* dst [[buffer(1)]],
                    constant uint& count [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  if (gid < count) dst[gid] = src[gid];
}
"""

# (device, dtype, n, batch) -> (lock, graph, its buffers); the oldest dropped past GRAPHS.
_graphs: dict[tuple[Any, str, int, int], tuple[threading.Lock, Any, dict[str, mc.Buffer]]] = {}


def _move(dev: mc.Device, src: mc.Buffer, dst: mc.Buffer, count: int, dt: np.dtype) -> None:
    k = cache.kernel(dev, lc.render(_MOVE, dt, 1), "td_move", fast_math=False)
    cache.launch(k, -(-count // 256) * 256, src, dst, count, threadgroup=(256, 1, 1))


def _replayed(dev: mc.Device, parts: dict[str, mc.Buffer], batch: int, n: int, dt: np.dtype,
              record: Callable[[dict[str, mc.Buffer]], None]) -> None:
    """GRAPH_STEPS: the launches `record` makes on a buffer set, recorded once per shape; each call
    copies its W in, replays, and copies d, e, tau and the reflectors out into its own parts (a
    lock per recording keeps calls from other threads from meeting in its buffers)."""
    key = (dev, dt.str, n, batch)
    entry = _graphs.get(key)
    if entry is None:
        bufs = {name: cache.empty(dev, parts[name].nbytes // np.dtype(t).itemsize, t) for name, t in
                (("W", dt), ("VS", dt), ("TAU", dt), ("P", dt), ("D", lc.real_type(dt)), ("E", lc.real_type(dt)))}
        with dev.record() as graph:
            record(bufs)
        entry = (threading.Lock(), graph, bufs)
        with cache._lock:
            _graphs[key] = entry
            while len(_graphs) > GRAPHS:
                _graphs.pop(next(iter(_graphs)))
    lock, graph, bufs = entry
    with lock:
        _move(dev, parts["W"], bufs["W"], batch * n * n, dt)
        c = graph.replay()
        with cache._lock:
            cache._pending.append(c)
        for name, t in (("VS", dt), ("TAU", dt), ("D", lc.real_type(dt)), ("E", lc.real_type(dt))):
            _move(dev, bufs[name], parts[name], parts[name].nbytes // np.dtype(t).itemsize, t)


def _steps_batch(dev: mc.Device) -> contextlib.ExitStack:
    """The step launches' context: one dev.batch() with BATCH_STEPS, unless the caller's batch or
    recording is open (they do not nest; the steps then join it)."""
    stack = contextlib.ExitStack()
    if BATCH_STEPS:
        try:
            stack.enter_context(dev.batch())
        except mc.ArgumentError:
            pass
    return stack


def _refused(e: Exception) -> None:
    global tail_refused
    tail_refused = f"{type(e).__name__}: {e}"


def tridiagonal(dev: mc.Device, a: mc.Buffer, batch: int, n: int, dtype: Any) -> dict[str, mc.Buffer]:
    """Queues the reduction of the (batch, n, n) stack `a` (its lower triangles) to tridiagonal form:
    d, e (real, n each, e's last unused), the reflectors (VS rows, TAU) and the power-of-two scales."""
    dt = lc.float_type(dtype, complex_ok=True)
    rdt = lc.real_type(dt)
    parts = {name: cache.empty(dev, batch * size, t) for name, size, t in
             (("W", n * n, dt), ("VS", n * n, dt), ("TAU", n, dt), ("P", 2 * n, dt), ("D", n, rdt), ("E", n, rdt),
              ("SC", 1, rdt))}
    init, itg = group_kernel(dev, _INIT, "td_init", dt, n, THREADS)
    cache.launch(init, batch * itg, a, parts["SC"], n, threadgroup=(itg, 1, 1))
    copy = cache.kernel(dev, lc.render(_COPY, dt, 1), "td_copy", fast_math=False)
    total = batch * n * n
    cache.launch(copy, -(-total // 256) * 256, a, parts["W"], parts["SC"], n, total, threadgroup=(256, 1, 1))
    step, tg = group_kernel(dev, _text(_STEP, True), "td_step", dt, n, THREADS)
    teams = tg // TEAM

    def launches(p, record=False):
        """The step launches, then the tail's, on the buffers `p` (recorded: called directly)."""
        def launch(k, grid, *args, **kw):
            if record:
                k(grid, *args, **kw)
            else:
                cache.launch(k, grid, *args, **kw)

        def steps(ks):
            with contextlib.nullcontext() if record else _steps_batch(dev):
                for k in ks:
                    gpm = max(1, -(-(n - k - 2) // teams))
                    launch(step, batch * gpm * tg, p["W"], p["VS"], p["TAU"], p["P"], p["D"], p["E"], n, k, gpm,
                           threadgroup=(tg, 1, 1))
        steps(range(-1, first))
        if first < n - 2:
            try:
                launch(tail, batch * ttg, p["W"], p["VS"], p["TAU"], p["P"], p["D"], p["E"], n, first,
                       threadgroup=(ttg, 1, 1), threadgroup_memory=_tail_bytes(mt, dt))
            except mc.Error as e:  # (never seen: a device that refuses the dynamic threadgroup memory it reports)
                _refused(e)
                steps(range(first, n - 2))
    tt = TAIL_THREADS  # fewer where its fixed arrays would pass the static limit (complex128 from 512)
    while tt > 32 and static_bytes(n, dt, tt) > min(dev.threadgroup_memory_length, _STATIC_LIMIT):
        tt //= 2
    try:
        tail, ttg = group_kernel(dev, _text(_TAIL, False), "td_tail", dt, n, tt)
        mt = min(n, _tail_rows(dev, dt, n, ttg), n if TAIL_ROWS is None else TAIL_ROWS)  # n: from step -1
    except mc.Error as e:
        _refused(e)
        mt = 0
    first = n - 1 - mt if mt >= 3 else n - 2  # the tail's first step (n - 2: no tail)
    if GRAPH_STEPS:
        _replayed(dev, parts, batch, n, dt, lambda p: launches(p, record=True))
    else:
        launches(parts)
    return parts
