"""metalcall.numpy: a NumPy-like array namespace built on metalcall's own MSL kernels."""
