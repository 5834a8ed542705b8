"""METALCALL_POISON_UNINITIALIZED=1 on the CPU device: memory handed out uninitialized reads as
0xFF bytes (NaN in floats), so a kernel that reads what it never wrote shows in tests (CI runs
metalcall.numpy's tests so); zero-filled Buffers stay zero. Without the variable an uninitialized
Buffer's contents are whatever the memory held (not checked: undefined)."""

from __future__ import annotations

import textwrap

SNIPPET = textwrap.dedent(
    """
    import numpy as np
    import metalcall as mc
    dev = mc.Device("cpu")
    for n in (1, 16, 1000, 100000, 1 << 20):  # inline, malloc'd and mapped sizes
        a = np.asarray(dev.empty(n, np.float32, uninitialized=True))
        assert np.isnan(a).all(), n
        assert (a.view(np.uint32) == 0xFFFFFFFF).all(), n
        assert not np.asarray(dev.empty(n, np.float32)).any(), n  # zero-filled by default
        assert not np.asarray(dev.zeros(n, np.float32)).any(), n
    # a mapped block reused uninitialized is poisoned again, not left with the last values
    big = dev.zeros(1 << 20, np.float32)
    del big
    again = np.asarray(dev.empty(1 << 20, np.float32, uninitialized=True))
    assert np.isnan(again).all()
    print("poisoned")
    """
)


def test_uninitialized_memory_is_poisoned_when_asked(run_python):
    done = run_python(SNIPPET, env={"METALCALL_POISON_UNINITIALIZED": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "poisoned"


def test_without_the_variable_nothing_is_poisoned(run_python):
    done = run_python(SNIPPET, env={"METALCALL_POISON_UNINITIALIZED": None})
    assert done.returncode != 0 and "AssertionError" in done.stderr
