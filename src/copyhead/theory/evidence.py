"""Exact evidence of the copy-task data given an attention pattern (docs/theory.md, Sec. 2).

With A fixed, the merged readout W is Gaussian and integrates out: each output channel is a GP with the
kernel of Eq. (2). Because the features z_a = Σ_b A_ab x_b live in D = V + L dimensions, -ln p(Y|A) follows
exactly from the D×D statistics G = ZᵀZ and D×V statistics B = ZᵀY (Eq. (4), Woodbury and the matrix
determinant lemma). Along the order-parameter family A = (m1 J + mP I)/L the statistics are quadratic and
linear in (m1, mP) with four fixed data matrices (Eq. (5)); ``family_nle_grid`` evaluates a whole
(c1, cG) grid with two D×D eigendecompositions per grid row (Eq. (22)).
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla

LOG2PI = np.log(2.0 * np.pi)


def features(tokens: np.ndarray, A: np.ndarray, V: int) -> np.ndarray:
    """Z of Eq. (1): z^α_a = Σ_b A_ab (e_{t_b} ⊕ e_b); tokens (P, L), A (L, L) -> (P, L, V+L)."""
    P, L = tokens.shape
    X = np.concatenate([np.eye(V)[tokens], np.broadcast_to(np.eye(L), (P, L, L))], axis=-1)
    return np.einsum("ab,pbd->pad", A, X)


def sufficient_statistics(tokens: np.ndarray, A: np.ndarray, V: int, Y: np.ndarray | None = None):
    """(G, B, yy, N) of Eq. (4): G = ZᵀZ (D×D), B = ZᵀY (D×V), yy = Tr YᵀY, N = P·L."""
    Z = features(tokens, A, V)
    if Y is None:
        Y = np.eye(V)[tokens]
    D = Z.shape[-1]
    Zf, Yf = Z.reshape(-1, D), Y.reshape(-1, V)
    return Zf.T @ Zf, Zf.T @ Yf, float(np.sum(Yf * Yf)), Zf.shape[0]


def neg_log_evidence_from_stats(G, B, yy, N, g_O, sigma2):
    """-ln p(Y|A), Eq. (4). Broadcasts over leading axes of G (..., D, D) and B (..., D, V).

    -ln p = (N V/2) ln 2πσ² + (V/2) ln det(I + g G) + [yy - g Tr Bᵀ(I + g G)⁻¹B]/(2σ²),  g = g_O/σ².
    """
    G = np.asarray(G, float)
    B = np.asarray(B, float)
    V = B.shape[-1]
    g = g_O / sigma2
    M = np.eye(G.shape[-1]) + g * G
    c = np.linalg.cholesky(M)
    logdet = 2.0 * np.sum(np.log(np.diagonal(c, axis1=-2, axis2=-1)), axis=-1)
    sol = np.linalg.solve(M, B)
    fit = np.sum(B * sol, axis=(-2, -1))
    return 0.5 * N * V * (LOG2PI + np.log(sigma2)) + 0.5 * V * logdet + (yy - g * fit) / (2.0 * sigma2)


def neg_log_evidence(tokens, A, V, g_O, sigma2, Y=None):
    """-ln p(Y|A) for one dataset (tokens (P, L)) and one L×L attention matrix A, via Eq. (4)."""
    G, B, yy, N = sufficient_statistics(tokens, A, V, Y)
    return float(neg_log_evidence_from_stats(G, B, yy, N, g_O, sigma2))


# ----------------------------------------------------------------------------- order-parameter family
def family_statistics(tokens: np.ndarray, V: int, centred: bool = False):
    """Data matrices of Eq. (5) for one dataset: dict(G0, S1, B0, B1, yy, N).

    With X^α = [T^α, I_L] and s^α = 1ᵀX^α: G = (mP/L)² G0 + (2 m1 mP/L² + m1²/L) S1 and
    B = (mP/L) B0 + (m1/L) B1 for A = (m1 J + mP I)/L.
    """
    P, L = tokens.shape
    T = np.eye(V)[tokens]                                        # (P, L, V)
    X = np.concatenate([T, np.broadcast_to(np.eye(L), (P, L, L))], axis=-1)
    Y = T - 1.0 / V if centred else T
    s = X.sum(axis=1)                                             # (P, D)
    ysum = Y.sum(axis=1)                                          # (P, V)
    Xf, Yf = X.reshape(-1, V + L), Y.reshape(-1, V)
    return {"G0": Xf.T @ Xf, "S1": s.T @ s, "B0": Xf.T @ Yf, "B1": s.T @ ysum,
            "yy": float(np.sum(Yf * Yf)), "N": P * L, "L": L, "V": V}


def family_nle(stats: dict, m1, mP, g_O, sigma2):
    """-ln p(Y|m1, mP) by Eqs. (4)-(5) for arbitrary broadcastable arrays m1, mP (direct Cholesky)."""
    L = stats["L"]
    m1, mP = np.broadcast_arrays(np.asarray(m1, float), np.asarray(mP, float))
    a = (mP / L) ** 2
    b = 2 * m1 * mP / L**2 + m1**2 / L
    G = a[..., None, None] * stats["G0"] + b[..., None, None] * stats["S1"]
    B = (mP / L)[..., None, None] * stats["B0"] + (m1 / L)[..., None, None] * stats["B1"]
    return neg_log_evidence_from_stats(G, B, stats["yy"], stats["N"], g_O, sigma2)


def family_nle_grid(stats: dict, m1_rows: np.ndarray, mP_rows: np.ndarray, g_O, sigma2):
    """-ln p(Y|m1, mP) on a grid whose rows have constant mP (Eq. (22)); returns (len(mP_rows), n1).

    m1_rows has shape (len(mP_rows), n1). With G0 = U Λ0 Uᵀ (one eigendecomposition per dataset) and
    S1 = F Fᵀ (rank r ≤ V+1, since every s^α lies in span{e_v ⊕ 0, 0 ⊕ 1_L}), per row a = (mP/L)²:
    M0 = I + g a G0 is diagonal in U, and the rank-r update g b F Fᵀ is handled by the determinant lemma
    and Woodbury with the r×r matrix K(a) = Fᵀ M0⁻¹ F = W κ Wᵀ:
      ln det = Σ ln(1 + g a λ0) + Σ ln(1 + g b κ),
      Tr BᵀM⁻¹B = Tr BᵀM0⁻¹B - g b Σ_k |Wᵀ Fᵀ M0⁻¹ B|_k² / (1 + g b κ_k),  B = (mP/L) B0 + (m1/L) B1.
    """
    L, V, N, yy = stats["L"], stats["V"], stats["N"], stats["yy"]
    g = g_O / sigma2
    if "_eig" not in stats:
        lam0, U = sla.eigh(stats["G0"])
        lam0 = np.clip(lam0, 0.0, None)
        ls, Us = sla.eigh(stats["S1"])
        keep = ls > 1e-10 * max(ls.max(), 1.0)
        F = Us[:, keep] * np.sqrt(ls[keep])
        stats["_eig"] = (lam0, U.T @ F, U.T @ stats["B0"], U.T @ stats["B1"])
    lam0, Ft, B0t, B1t = stats["_eig"]
    mP = np.asarray(mP_rows, float)[:, None]                        # (R, 1)
    m1 = np.asarray(m1_rows, float)                                 # (R, n1)
    a = (mP[:, 0] / L) ** 2
    d = 1.0 / (1.0 + g * a[:, None] * lam0[None, :])                # (R, D) diagonal of M0^-1
    K = Ft.T[None] @ (d[:, :, None] * Ft[None])                    # (R, r, r)
    kap, W = np.linalg.eigh(K)
    kap = np.clip(kap, 0.0, None)
    t00 = d @ np.sum(B0t * B0t, -1)
    t01 = d @ np.sum(B0t * B1t, -1)
    t11 = d @ np.sum(B1t * B1t, -1)
    Wt = np.swapaxes(W, 1, 2)
    P0 = Wt @ (Ft.T[None] @ (d[:, :, None] * B0t[None]))            # Wᵀ Fᵀ M0^-1 B0, (R, r, V)
    P1 = Wt @ (Ft.T[None] @ (d[:, :, None] * B1t[None]))
    u00, u01, u11 = np.sum(P0 * P0, -1), np.sum(P0 * P1, -1), np.sum(P1 * P1, -1)   # (R, r)
    x0, x1 = mP / L, m1 / L                                         # (R, 1), (R, n1)
    bb = 2 * m1 * mP / L**2 + m1**2 / L                             # (R, n1)
    den = 1.0 + g * bb[:, :, None] * kap[:, None, :]                # (R, n1, r)
    logdet = np.sum(np.log1p(g * a[:, None] * lam0[None, :]), -1)[:, None] + np.sum(np.log(den), -1)
    fit0 = x0**2 * t00[:, None] + 2 * x0 * x1 * t01[:, None] + x1**2 * t11[:, None]
    x0e, x1e = x0[:, :, None], x1[:, :, None]
    corr = np.sum((x0e**2 * u00[:, None, :] + 2 * x0e * x1e * u01[:, None, :] + x1e**2 * u11[:, None, :])
                  / den, -1)
    fit = fit0 - g * bb * corr
    const = 0.5 * N * V * (LOG2PI + np.log(sigma2)) + yy / (2 * sigma2)
    return const + 0.5 * V * logdet - g * fit / (2 * sigma2)
