"""metalcall.numpy.fft: the array API's fft extension (and numpy.fft's names), computed on the
device with metalcall.numpy's own MSL kernels (_fft.py, _kernels/fft.py)."""

from ._fft import (
    fft, fftfreq, fftn, fftshift, hfft, ifft, ifftn, ifftshift, ihfft, irfft, irfftn, rfft, rfftfreq, rfftn,
)

__all__ = ["fft", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifftn", "ifftshift", "ihfft", "irfft", "irfftn",
           "rfft", "rfftfreq", "rfftn"]
