"""Order parameters and coverage of an L×L attention matrix (design file, section 4).

Pure functions of the attention matrix ``A`` (numpy array or torch tensor, last two axes L×L, any
leading batch axes). With ``J`` the all-ones matrix, the two permutation-invariant directions are the
orthonormal (Frobenius) pair ``e1 = J/L`` and ``eG = (I − J/L)/√(L−1)``:

- pooling   ``c1 = <A, e1> = 1ᵀA1/L``                      (ĉ1 linear; ≡ 1 for softmax),
- copy      ``cG = <A, eG> = Tr(A(I − J/L))/√(L−1)``        (ĉG linear, âG softmax),
- the same plane in the non-orthogonal basis ``A ≈ (m1 J + mP I)/L`` (least squares; exact inverse of
  ``c1 = m1 + mP/L``, ``cG = mP √(L−1)/L``); for softmax the paper's â1 is ``m1`` (uniform weight),
- coverage: ``ΠA = c1 e1 + cG eG`` is the orthogonal projection onto span{J, I − J/L} = span{J, I};
  ``coverage_ratio = ||ΠA||/||A||`` and ``coverage_cosine = <A, ΠA>/(||A|| ||ΠA||)``. For an orthogonal
  projection ``<A, ΠA> = ||ΠA||²``, so the two are equal in exact arithmetic (both are cos of the angle
  between A and the plane); the residual outside the plane is ``||A − ΠA||/||A|| = √(1 − ratio²)``.
- linear attention has the Z2 gauge (Q, K, W) → (−Q, K, −W), i.e. A → −A: :func:`sign_fix` flips A
  (and the scores, with the same sign) so that c1 ≥ 0.
"""
from __future__ import annotations

import math
import sys

import numpy as np

from .attention import ATTENTIONS, variant

NAMES = ("c1", "cG", "m1", "mP", "coverage_ratio", "coverage_cosine")


def _torch():
    """torch if it is loaded, else None. A torch tensor can only exist once torch is imported, so the numpy
    path (aggregation, pages, figures: processes that never train) does not pay torch's ~1 s import."""
    return sys.modules.get("torch")


def _is_torch(A) -> bool:
    torch = _torch()
    return torch is not None and isinstance(A, torch.Tensor)


def _total(A):
    return A.sum(dim=(-2, -1)) if _is_torch(A) else np.sum(A, axis=(-2, -1))


def _trace(A):
    if _is_torch(A):
        return A.diagonal(dim1=-2, dim2=-1).sum(-1)
    return np.trace(A, axis1=-2, axis2=-1)


def _sqrt(x):
    return _torch().sqrt(x) if _is_torch(x) else np.sqrt(x)


def pooling(A):
    """c1 = 1ᵀA1/L (mean row sum)."""
    return _total(A) / A.shape[-1]


def copy_overlap(A):
    """cG = Tr(A (I − J/L)) / √(L−1)."""
    L = A.shape[-1]
    return (_trace(A) - _total(A) / L) / math.sqrt(L - 1)


def basis_coefficients(A):
    """(m1, mP) of the least-squares fit A ≈ (m1 J + mP I)/L."""
    L = A.shape[-1]
    c1, cG = pooling(A), copy_overlap(A)
    mP = cG * L / math.sqrt(L - 1)
    return c1 - mP / L, mP


def projection(A):
    """ΠA: orthogonal (Frobenius) projection of A onto span{J, I − J/L}."""
    L = A.shape[-1]
    c1, cG = pooling(A), copy_overlap(A)
    if _is_torch(A):
        torch = _torch()
        J = torch.ones(L, L, dtype=A.dtype, device=A.device) / L
        G = (torch.eye(L, dtype=A.dtype, device=A.device) - J) / math.sqrt(L - 1)
    else:
        J = np.ones((L, L)) / L
        G = (np.eye(L) - J) / math.sqrt(L - 1)
    return c1[..., None, None] * J + cG[..., None, None] * G


def coverage(A):
    """(ratio, cosine): ||ΠA||_F/||A||_F and <A, ΠA>/(||A||_F ||ΠA||_F) (equal for an orthogonal Π)."""
    c1, cG = pooling(A), copy_overlap(A)
    normA = _sqrt(_total(A * A))
    normP = _sqrt(c1 * c1 + cG * cG)
    PA = projection(A)
    cosine = _total(A * PA) / (normA * _sqrt(_total(PA * PA)))
    return normP / normA, cosine


def sign_fix(A, *others):
    """Linear-attention Z2 gauge: multiply A (and each of ``others``, e.g. the scores) by sign(c1)≥0."""
    c1 = pooling(A)
    if _is_torch(A):
        s = _torch().where(c1 < 0, -1.0, 1.0).to(A.dtype)[..., None, None]
    else:
        s = np.where(c1 < 0, -1.0, 1.0)[..., None, None]
    return (A * s, *(o * s for o in others)) if others else A * s


def order_parameters(A) -> dict:
    """All order parameters of A as a dict keyed by :data:`NAMES` (no sign fix applied here)."""
    m1, mP = basis_coefficients(A)
    ratio, cosine = coverage(A)
    return {"c1": pooling(A), "cG": copy_overlap(A), "m1": m1, "mP": mP,
            "coverage_ratio": ratio, "coverage_cosine": cosine}


def order_parameter_vector(A):
    """torch: the order parameters of A stacked in the order of :data:`NAMES` (shape (..., 6))."""
    d = order_parameters(A)
    return _torch().stack([d[k] for k in NAMES], dim=-1)


PAPER_NAMES = {a: v.names for a, v in ATTENTIONS.items()}   # the plotted pair's names per attention


def paper_order_parameters(values, attention: str, L: int, suffix: str = ""):
    """The two order parameters the paper plots, read from stored ``c1``/``cG``/``m1``/``mP`` variables
    (with ``suffix``, e.g. ``_mean`` or ``_saddle``) of a run, aggregate or theory dataset: linear
    (ĉ1, ĉG) = (c1, cG); softmax (â1, âG) = (m1, mP/L), so â1 + âG = 1 for a pattern inside the span."""
    return variant(attention).plotted(values, L, suffix)
