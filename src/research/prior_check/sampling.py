"""The prior of the order parameters at d_k < L, = L, > L checked by sampling Q and K (docs/theory.md,
Sec. 12.3; rendered on docs/prior_check.md).

The projection of M = QᵀK/d_k on span{J, I} (least squares, M ≈ m1 J + mP I) is the pair
x = L m1 + mP = 1ᵀM1/L (pooling eigenvalue) and mP = Tr(M(I − J/L))/(L − 1) (copy eigenvalue). With
q_i, k_i the rows of Q, K, d_k x/√c is a sum of d_k products of independent standard normals and
d_k (L−1) mP/√c a sum of d_k (L−1) of them, independent of the first: the exact density of the projection
is a product of two variance-gamma (Bessel-K) densities at *any* d_k, rank deficient or not, and Eq. (9)
is its Cramér rate. ``projection_density`` estimates −ln p(x, mP) from brute-force samples of Q, K
(exponentially tilted along span{J, I} to reach the tails, then reweighted with the exact Eq. (6));
``rates`` gives the large-deviation (Eq. 7/9), Gaussian (Eq. 8) and exact values at the same points.
``rank_samples`` draws M at a prescribed projection (the tilted ensemble): at d_k < L every draw has rank
≤ d_k, so most of its norm lies outside span{J, I}; ``coverage`` measures how much.
"""
from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from copyhead.theory.prior import phi
from research.one_loop.blocks import block_dirs, isotypic_bases
from research.one_loop.prior import prior_rate_form


def tilt(lam):
    """Per-coordinate correlation τ of the tilted pair (q, k) whose product has mean λ (c = 1):
    τ/(1 − τ²) = λ, i.e. τ = (√(1 + 4λ²) − 1)/(2λ) (the saddle h of Eq. (7))."""
    lam = np.asarray(lam, float)
    safe = np.where(lam == 0, 1.0, lam)
    return np.where(lam == 0, 0.0, (np.sqrt(1 + 4 * safe**2) - 1) / (2 * safe))


def _basis(L):
    """Orthonormal basis of R^L whose first column is 1/√L (the J direction), the rest traceless."""
    A = np.eye(L)
    A[:, 0] = 1.0
    return np.linalg.qr(A)[0]     # column signs do not matter: q and k share the basis


def rank_samples(x, mP, L, d_k, n, rng, c=1.0):
    """n draws of M = QᵀK/d_k from the prior tilted so that E[x] = x, E[mP] = mP (along span{J, I});
    returns (M (n, L, L), log importance weight back to the untilted prior (n,), τ_x, τ_P)."""
    tx, tp = float(tilt(x / np.sqrt(c))), float(tilt(mP / np.sqrt(c)))
    tau = np.full(L, tp)
    tau[0] = tx
    s = 1 / np.sqrt(1 - tau**2)
    z1, z2 = rng.standard_normal((2, n, d_k, L))
    a, b = np.sqrt((1 + tau) / 2), np.sqrt((1 - tau) / 2)
    U = _basis(L)
    q = (s * (a * z1 + b * z2)) @ U.T * c**0.25       # rows q_i in the position basis
    k = (s * (a * z1 - b * z2)) @ U.T * c**0.25
    M = np.einsum("nia,nib->nab", q, k) / d_k
    px, pP = project(M)
    log_Z = -0.5 * d_k * (np.log1p(-tx**2) + (L - 1) * np.log1p(-tp**2))
    logw = -d_k * (tx * px + tp * (L - 1) * pP) / np.sqrt(c) + log_Z
    return M, logw, tx, tp


def project(M):
    """(x, mP) of M (..., L, L): x = 1ᵀM1/L, mP = (Tr M − x)/(L − 1)."""
    L = M.shape[-1]
    x = M.sum(axis=(-2, -1)) / L
    return x, (np.trace(M, axis1=-2, axis2=-1) - x) / (L - 1)


def _sd(lam, n_products, c=1.0):
    t = tilt(lam / np.sqrt(c))
    return np.sqrt(c) * np.sqrt(1 + t**2) / (1 - t**2) / np.sqrt(n_products)


def projection_density(points, L, d_k, n, rng, box=0.25, c=1.0):
    """−ln p(x, mP) at points (k, 2) from n brute-force draws of Q, K per point, tilted so that the point
    is the mean (density of (x, mP), Lebesgue measure): the tilted density from the fraction of draws in a
    box of ±box sd around the point, times the exact likelihood ratio e^{−Tr(HᵀM) + Λ(H)} (Eq. (6)) at the
    point. Returns (value, standard error) arrays."""
    out, err = [], []
    for x0, p0 in np.asarray(points, float):
        M, _, tx, tp = rank_samples(x0, p0, L, d_k, n, rng, c)
        px, pP = project(M)
        hx, hp = box * _sd(x0, d_k, c), box * _sd(p0, d_k * (L - 1), c)
        k = int(np.sum((np.abs(px - x0) < hx) & (np.abs(pP - p0) < hp)))
        log_Z = -0.5 * d_k * (np.log1p(-tx**2) + (L - 1) * np.log1p(-tp**2))
        logw0 = -d_k * (tx * x0 + tp * (L - 1) * p0) / np.sqrt(c) + log_Z
        out.append(-(np.log(k / n) - np.log(4 * hx * hp) + logw0) if k else np.nan)
        err.append(1 / np.sqrt(k) if k else np.nan)
    return np.array(out), np.array(err)


def _log_k(nu, z, n_t=801):
    """ln K_ν(z) for z > 0, ν ≥ 0, by quadrature of K_ν(z) = ∫₀^∞ e^{−z cosh t} cosh(νt) dt (log-sum-exp,
    on ±25 widths around the integrand's peak t* = asinh(ν/z); no overflow at the large ν, z of a sum of
    d_k (L−1) products)."""
    t_star = np.arcsinh(nu / z)
    w = (z * z + nu * nu) ** -0.25
    t = np.linspace(max(0.0, t_star - 25 * w), min(700.0, t_star + 25 * w + np.arccosh(1 + 40 / z) * (z < 1)), n_t)
    f = -z * np.cosh(t) + nu * t + np.log1p(np.exp(-2 * nu * t)) - np.log(2.0)
    m = f.max()
    return m + np.log(np.trapezoid(np.exp(f - m), t))


def log_vg(z, n):
    """ln density of a sum of n products of independent standard normals (variance-gamma, λ = n/2):
    |z|^{(n−1)/2} K_{(n−1)/2}(|z|) / (2^{(n−1)/2} √π Γ(n/2)); at z = 0 (n > 1) the limit
    Γ((n−1)/2)/(2√π Γ(n/2))."""
    nu = (n - 1) / 2
    norm = -nu * np.log(2) - 0.5 * np.log(np.pi) - gammaln(n / 2)
    out = []
    for zi in np.abs(np.atleast_1d(np.asarray(z, float))):
        if zi < 1e-12:
            out.append(gammaln(nu) + (nu - 1) * np.log(2) + norm if nu > 0 else np.inf)
        else:
            out.append(nu * np.log(zi) + _log_k(nu, zi) + norm)
    return np.array(out).reshape(np.shape(z))


def rates(points, L, d_k, c=1.0):
    """−ln p(x, mP) (up to constants) at points (k, 2): {"large_deviation": Eq. (9) with (7), "gaussian":
    Eq. (9) with (8), "exact": the product of the two variance-gamma densities (Lebesgue measure)}."""
    x, mP = np.asarray(points, float).T
    n_x, n_p = d_k, d_k * (L - 1)
    exact = -(log_vg(n_x * x / np.sqrt(c), n_x) + np.log(n_x / np.sqrt(c))
              + log_vg(n_p * mP / np.sqrt(c), n_p) + np.log(n_p / np.sqrt(c)))
    return {"large_deviation": d_k * phi(x, c) + d_k * (L - 1) * phi(mP, c),
            "gaussian": d_k * (x**2 + (L - 1) * mP**2) / (2 * c), "exact": exact}


def kl_to_exact(L, d_k, prior, c=1.0, n_grid=801):
    """KL(exact ‖ formula) of the projection density, the formula normalised on the plane (nats). The
    two coordinates are independent under both, so KL = KL_x + KL_mP, each a 1-D quadrature."""
    total = 0.0
    for n_products in (d_k, d_k * (L - 1)):
        sd = np.sqrt(c / n_products)
        lam = np.linspace(-12 * sd, 12 * sd, n_grid)
        dl = lam[1] - lam[0]
        lp = log_vg(n_products * lam / np.sqrt(c), n_products) + np.log(n_products / np.sqrt(c))
        r = n_products * (phi(lam, c) if prior == "large_deviation" else lam**2 / (2 * c))
        lq = -r - np.log(np.sum(np.exp(-r)) * dl)
        p = np.exp(lp)
        total += float(np.sum(p * (lp - lq)) * dl)
    return total


def coverage(M):
    """Fraction of ||M||²_F inside span{J, I} (mean over draws; the rest is off the order-parameter plane)."""
    L = M.shape[-1]
    x, mP = project(M)
    m1 = (x - mP) / L
    inside = (L * m1 + mP) ** 2 + (L - 1) * mP**2      # ||m1 J + mP I||²_F
    return inside / np.sum(M**2, axis=(-2, -1))


def transverse_covariance(m1, mP, L, d_k, n, rng, c=1.0):
    """Eq. (27)'s transverse law checked by sampling: the covariance of M's components off
    span{J, I} among n draws of M = QᵀK/d_k tilted to the plane point M(m) = m1 J + mP I, reduced to the
    blocks of Eq. (29) (the 3×3 standard block, averaged over the L − 1 copies; the sym22 and anti211
    variances), against Σ = (d_k H_I⊥(m))⁻¹ of the large-deviation rate (Eq. (28)) and of the Gaussian
    rate (c/d_k). The tilt only moves the plane coordinates, so the transverse law of a tilted draw is the
    prior's conditional law up to the O(1/√d_k) spread of the draws' plane coordinates around m.
    Returns {"sampled", "large_deviation", "gaussian": {"standard" (3×3), "sym22", "anti211"},
    "mean_abs" (largest |mean| of a transverse coefficient, in units of its sd)}."""
    M, _, _, _ = rank_samples(L * m1 + mP, mP, L, d_k, n, rng, c)
    b = isotypic_bases(L)
    v = M.reshape(n, -1)
    Cs = np.einsum("inw,kn->kiw", b["standard"], v)                      # (n, 3, L−1)
    Cs = Cs - Cs.mean(0)
    sampled = {"standard": np.einsum("kiw,kjw->ij", Cs, Cs) / (n - 1) / (L - 1)}
    coef = {name: v @ b[name] for name in ("sym22", "anti211")}
    sampled.update({name: float(np.mean(np.var(x, axis=0, ddof=1))) for name, x in coef.items()})
    sds = np.concatenate([np.sqrt(np.var(Cs.reshape(n, -1), axis=0, ddof=1))] +
                         [np.sqrt(np.var(x, axis=0, ddof=1)) for x in coef.values()])
    means = np.concatenate([np.einsum("inw,kn->kiw", b["standard"], v).mean(0).ravel()] +
                           [x.mean(0) for x in coef.values()])
    Mp = m1 * np.ones((L, L)) + mP * np.eye(L)
    D = block_dirs(L)
    out = {"sampled": sampled, "mean_abs": float(np.max(np.abs(means) / sds))}
    for prior in ("large_deviation", "gaussian"):
        H = d_k * prior_rate_form(Mp, c, D.reshape(-1, L, L), prior)
        out[prior] = {"standard": np.linalg.inv(H[:3, :3]), "sym22": 1.0 / H[3, 3], "anti211": 1.0 / H[4, 4]}
    return out
