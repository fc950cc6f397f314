"""The op layer: user-facing functions with broadcasting, promotion and autograd.

Each module groups one family; every differentiable op is a ``Function`` whose backward is written
with operators and ``Tensor`` methods (``-g * a / (b * b)``, ``g.sum(dim)``). The modules import
each other only downwards, in this order (bottom first): ``_common``, ``_gather`` (the two
recorded indexing primitives), ``shape``, ``_advanced``, ``indexing``, ``conversion``,
``complexnum`` (complex tensors' views and parts), ``elementwise``, ``reduction``, then
``joining``, ``sorting`` and ``matmul``; a module calls into one above it through ``Tensor``
methods.

Above those, and built only from them (``scan``'s ``cumsum`` aside, no backend primitive of their
own): ``special``, ``gammafn``, ``bits`` (more elementwise math), ``diagonal``, ``scan``,
``search``, ``stats``, ``segment`` (diagonals, prefix scans, searching, quantiles and statistics,
reductions into slots), ``contraction`` (einsum, tensordot ...), ``norms`` (cdist, renorm),
``stacking`` (meshgrid, atleast_*, *stack, *split), ``scatter`` (take, put, index_put, the
``*_scatter`` embeddings), ``rearrange`` (rot90, flips, ravel, unfold), ``sequences``, ``linalg``
(decompositions, solves, matrix functions), ``spectral`` (``eigh`` and ``svd``, backend
primitives, with their derivatives), ``linalg_ext`` (``pinv``, ``lstsq``, ``matrix_rank`` ...
composed from those two), ``linalg_ex`` (the ``*_ex`` variants, ``solve_triangular``,
``householder_product`` ... on ``linalg``'s elimination), ``lowrank`` (the randomized
``svd_lowrank``/``pca_lowrank``), ``stft`` (``stft``/``istft`` on ``fft``'s transforms),
``windows``, ``fills``, ``metadata`` and ``sparse`` (the sparse COO layout); ``orthopoly``
(the orthogonal polynomials), ``scaledfn`` (``erfcx``, ``log_ndtr``, ``i0e``, ``i1e``) and
``besselfn`` are built on ``special``, ``airyfn`` on ``besselfn``.
``sampling`` (differentiable samplers) and the ``nn`` package (the layers' nodes) sit on top, with
``checkpoint`` (activation checkpointing's recomputing node) and ``custom`` (the node of
user-defined operators, ``torch.library``).

This file is the one place an op module is registered: ``Tensor``'s methods reach every module as
``_ops.<module>.<function>`` (bound once by ``portagrad/__init__.py``), so a new module needs its
import here, its methods in ``_tensor_api.py`` and its public names in ``portagrad/__init__.py``.
"""
from . import conversion, elementwise, indexing, joining, matmul, reduction, shape, sorting
# complex tensors' views and parts (conversion below it, elementwise above it)
from . import complexnum
# composed from those above; fills and sampling use portagrad._random, which needs the ones above
from . import (bits, contraction, diagonal, fills, gammafn, linalg, metadata, norms, rearrange,
               scan, scatter, search, segment, sequences, sparse, special, stacking, stats,
               windows)
from . import besselfn, orthopoly, scaledfn
from . import airyfn
from . import spectral, linalg_ext, linalg_ex, lowrank
# the short-time Fourier transforms, on the fft module's transforms (imported by portagrad.fft)
from . import stft
# lobpcg: an iterative eigensolver on qr, eigh and cholesky
from . import lobpcg
from . import nn, sampling
from . import checkpoint, custom
from . import finite_diff

__all__ = ["complexnum", "conversion", "elementwise", "indexing", "joining", "matmul", "reduction", "shape",
           "sorting",
           "bits", "contraction", "diagonal", "fills", "gammafn", "linalg", "metadata", "norms",
           "rearrange", "scan", "scatter", "search", "segment", "sequences", "sparse", "special",
           "stacking", "stats", "windows", "besselfn", "airyfn", "orthopoly", "scaledfn", "nn", "sampling",
           "checkpoint", "custom", "spectral", "linalg_ext", "linalg_ex",
           "lowrank", "finite_diff", "stft", "lobpcg"]
