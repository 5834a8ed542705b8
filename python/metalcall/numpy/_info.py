"""The array API inspection object (mnp.__array_namespace_info__())."""

from __future__ import annotations

import metalcall as mc

from . import _dtypes as D
from . import _runtime as R


class Info:
    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self):
        return R.default_device()

    def devices(self):
        out = [mc.Device(f"{i.backend}:{i.index}") for i in mc.get_devices()]
        default = R.default_device()  # METALCALL_DEVICE may name one get_devices() does not list (metal-sim)
        return tuple(out if default in out else out + [default])  # a tuple since 2025.12

    def default_dtypes(self, *, device=None):
        dev = R.as_device(device)
        return {"real floating": D.default_float(dev), "complex floating": D.default_complex(dev), "integral": D.int64,
                "indexing": D.int64}

    def dtypes(self, *, device=None, kind=None):
        dev = R.as_device(device)
        out = {}
        for dt in D.SUPPORTED:
            if dt == D.float16:  # supported, but not an array API dtype: this dict lists those
                continue
            if dt in (D.float64, D.complex128) and not D.device_has_float64(dev):
                continue
            if kind is None or D.isdtype(dt, kind):
                out["bool" if dt == D.bool_ else str(dt)] = dt
        return out
