"""metalcall.numpy.linalg: the array API's linear-algebra extension (2025.12), computed on the
device (docs/numpy.md, "The linalg extension"). Errors: LinAlgError (a metalcall.Error and a ValueError)
where NumPy raises numpy.linalg.LinAlgError; bad shapes and dtypes are metalcall.ArgumentError."""

from ._linalg import matmul, tensordot, vecdot
from ._linalg_decomp import (
    EigResult, EighResult, LinAlgError, QRResult, SlogdetResult, SVDResult, cholesky, det, eig, eigh, eigvals,
    eigvalsh, inv, qr, slogdet, solve, svd, svdvals,
)
from ._linalg_norms import (
    cross, diagonal, matrix_norm, matrix_power, matrix_rank, outer, pinv, trace, vector_norm,
)
from ._manip import matrix_transpose

__all__ = [
    "cholesky", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv", "matmul", "matrix_norm",
    "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot",
    "trace", "vecdot", "vector_norm",
    "LinAlgError", "EigResult", "EighResult", "QRResult", "SlogdetResult", "SVDResult",
]

for _name in ("LinAlgError", "EigResult", "EighResult", "QRResult", "SlogdetResult", "SVDResult"):
    globals()[_name].__module__ = __name__
del _name
