"""The energy of position-only scores from the data's sufficient statistics (token co-occurrence counts).

With position-only scores the attention A (L×L) is shared by all sequences of a chain, and everything
U and ∇U need from the data are the counts

    n[b, u]       = #{α: t_αb = u}                      (L × V, per position),
    N[b, c, u, v] = #{α: t_αb = u, t_αc = v},  b < c    (L(L−1)/2 position pairs × V², per pair),

built once per chain. With the readout W = [W_t | W_p] (V × V, V × L) and H_αb = W_t e_{t_αb} + W_p e_b,
the Gram matrix of the values and the target cross term are

    G_bc = Σ_α H_αb·H_αc = Σ_uv N[b,c,u,v] (W_tᵀW_t)_uv + (n W_tᵀW_p)_bc + (n W_tᵀW_p)_cb + P (W_pᵀW_p)_bc,
    C_ab = Σ_α H_αb[t_αa] = Σ_uv N[a,b,u,v] (W_t)_uv + (n W_p)_ab

(N[b,c] for b > c is N[c,b] transposed in (u, v); N[b,b] = diag n[b]), so that

    Σ_{α,a} ||f_αa − y_αa||² = <A G, A> − 2 <A, C> + P L,      ∂/∂A = 2 (A G − C),

and ∂/∂G = AᵀA, ∂/∂C = −2A carry the gradient to W through the same counts read the other way
(Nᵀ). One step then costs O(L² V²) (dense counts) or O(nnz) (sparse counts, nnz ≤ P·L(L−1)/2) per chain
instead of the direct O(P L² V), and chains of different P share every tensor shape. The choice between
the direct path and dense or sparse counts is :func:`copyhead.schedules.energy_kind`'s cost rule
(calibrated by ``benchmarks/bench_train.py --energy``, docs/engine.md). Equal to the direct path to rounding
(tests/test_engine_counts.py).
"""
from __future__ import annotations

import warnings

import numpy as np
import torch

def _csr32(m: torch.Tensor) -> torch.Tensor:
    """The CSR matrix with int32 indices (what MKL's sparse product takes; int64 is converted per call)."""
    return torch.sparse_csr_tensor(m.crow_indices().int(), m.col_indices().int(), m.values(), m.shape)


class Cooccurrence:
    """Counts (n, N) of K chains' token sequences ((P_k, L) arrays, P_k may differ between chains), stored
    dense ((K, pairs, V²)) or sparse (one block-diagonal CSR matrix and its transpose)."""

    def __init__(self, tokens, V: int, kind: str, dtype=torch.float64, device="cpu"):
        if kind not in ("dense", "sparse"):
            raise ValueError(f"counts kind must be dense or sparse, got {kind!r}")
        tokens = [np.asarray(t, dtype=np.int64) for t in tokens]
        self.V, self.L, self.K, self.kind = V, tokens[0].shape[1], len(tokens), kind
        L, V2 = self.L, V * V
        iu = np.triu_indices(L, 1)
        self.pairs = len(iu[0])
        kw = dict(dtype=dtype, device=device)
        self.P = torch.tensor([t.shape[0] for t in tokens], **kw)
        self.n = torch.tensor(np.stack([np.stack([np.bincount(t[:, b], minlength=V) for b in range(L)])
                                        for t in tokens]), **kw)                        # (K, L, V)
        flat = [(np.arange(self.pairs) * V2)[None] + t[:, iu[0]] * V + t[:, iu[1]] for t in tokens]
        if kind == "dense":
            self.N = torch.tensor(np.stack([np.bincount(f.ravel(), minlength=self.pairs * V2) for f in flat]),
                                  **kw).view(self.K, self.pairs, V2)
        else:
            rows, cols, vals = [], [], []
            for k, f in enumerate(flat):
                u, c = np.unique(f, return_counts=True)
                rows.append(u // V2 + k * self.pairs), cols.append(u % V2 + k * V2), vals.append(c)
            idx = torch.tensor(np.stack([np.concatenate(rows), np.concatenate(cols)]), device=device)
            coo = torch.sparse_coo_tensor(idx, torch.tensor(np.concatenate(vals), **kw),
                                          (self.K * self.pairs, self.K * V2), check_invariants=False)
            with warnings.catch_warnings():  # "sparse CSR support is in beta state"
                warnings.simplefilter("ignore", UserWarning)
                self.csr, self.csr_t = (_csr32(m.coalesce().to_sparse_csr()) for m in (coo, coo.t()))
        self.nnz = int(sum(len(np.unique(f)) for f in flat)) if kind == "sparse" else self.K * self.pairs * V2
        # gather indices: G (upper, lower from column 0 of the pair side, diagonal after the 3·pairs
        # pair-side entries) and C (upper from column 1, lower from column 2, its own diagonal), and the
        # token side's input [2S (b<c), A (b<c), A (c<b)] from [2S | A] flattened (K, 2L²)
        P3, LL = 3 * self.pairs, L * L
        gc = np.empty((2, LL), dtype=np.int64)
        for m, (cu, cl) in enumerate(((0, 0), (1, 2))):
            gc[m, iu[0] * L + iu[1]] = 3 * np.arange(self.pairs) + cu
            gc[m, iu[1] * L + iu[0]] = 3 * np.arange(self.pairs) + cl
            gc[m, np.arange(L) * (L + 1)] = P3 + m * L + np.arange(L)
        self._gc_index = torch.tensor(gc.ravel(), device=device)
        self._tok_index = torch.tensor(np.stack([iu[0] * L + iu[1], LL + iu[0] * L + iu[1],
                                                 LL + iu[1] * L + iu[0]], 1).ravel(), device=device)

    def pair_side(self, X: torch.Tensor) -> torch.Tensor:
        """N @ X: (K, V², j) -> (K, pairs, j)."""
        if self.kind == "dense":
            return torch.bmm(X.transpose(1, 2), self.N.transpose(1, 2)).transpose(1, 2)
        return (self.csr @ X.reshape(-1, X.shape[-1])).view(self.K, self.pairs, -1)

    def token_side(self, Y: torch.Tensor) -> torch.Tensor:
        """Nᵀ @ Y: (K, pairs, j) -> (K, V², j)."""
        if self.kind == "dense":
            return torch.bmm(Y.transpose(1, 2), self.N).transpose(1, 2)
        return (self.csr_t @ Y.reshape(-1, Y.shape[-1])).view(self.K, self.V * self.V, -1)

    def _assemble(self, src: torch.Tensor, index: torch.Tensor, m: int) -> torch.Tensor:
        """(K, m, L, L) matrices gathered from the columns of ``src`` (K, ·) by a precomputed ``index``
        (one gather instead of one scatter per triangle and diagonal; the entries are moved, not computed)."""
        return src.index_select(1, index).view(self.K, m, self.L, self.L)

    def gram_cross(self, W: torch.Tensor):
        """(G, C) of the values H at readout W (K, V, V+L): each (K, L, L)."""
        V, K = self.V, self.K
        Wt, Wp = W[:, :, :V], W[:, :, V:]
        Wtg = torch.bmm(Wt.transpose(1, 2), Wt)
        Y = self.pair_side(torch.stack([Wtg, Wt, Wt.transpose(1, 2)], -1).view(K, V * V, 3))
        diag = [(self.n * X.diagonal(0, 1, 2)[:, None]).sum(-1) for X in (Wtg, Wt)]     # N[b, b] = diag n[b]
        G, C = self._assemble(torch.cat([Y.reshape(K, -1), *diag], 1), self._gc_index, 2).unbind(1)
        nWx = torch.bmm(self.n, torch.bmm(Wt.transpose(1, 2), Wp))
        G += nWx + nWx.transpose(1, 2) + self.P[:, None, None] * torch.bmm(Wp.transpose(1, 2), Wp)
        return G, C.add_(torch.bmm(self.n, Wp))

    def sse(self, A: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
        """Σ_{α,a} ||f_αa − y_αa||² per chain (K,)."""
        G, C = self.gram_cross(W)
        return (A * (torch.bmm(A, G) - 2 * C)).sum((1, 2)) + self.P * self.L

    def sse_grad(self, A: torch.Tensor, W: torch.Tensor, gW: torch.Tensor, with_sse: bool = True):
        """∂SSE/∂A / 2 = A G − C (K, L, L), written ∂SSE/∂W into ``gW`` (K, V, V+L), and SSE (K,) (None
        when ``with_sse`` is false: the loop needs it at record and check steps only)."""
        V, K = self.V, self.K
        Wt, Wp = W[:, :, :V], W[:, :, V:]
        G, C = self.gram_cross(W)
        R = torch.bmm(A, G).sub_(C)
        sse = (A * (R - C)).sum((1, 2)) + self.P * self.L if with_sse else None
        S = torch.bmm(A.transpose(1, 2), A)
        Z = self.token_side(torch.cat([2 * S.reshape(K, -1), A.reshape(K, -1)], 1).index_select(
            1, self._tok_index).view(K, self.pairs, 3))
        Z = Z.view(K, V, V, 3)
        dWtg = Z[..., 0] + torch.diag_embed(torch.bmm(S.diagonal(0, 1, 2).contiguous()[:, None], self.n)[:, 0])
        dC_t = Z[..., 1] + Z[..., 2].transpose(1, 2) + torch.diag_embed(
            torch.bmm(A.diagonal(0, 1, 2).contiguous()[:, None], self.n)[:, 0])
        dWx = 2 * torch.bmm(self.n.transpose(1, 2), S)                    # ∂/∂(W_tᵀ W_p)  (K, V, L)
        gW[:, :, :V] = torch.bmm(Wt, dWtg + dWtg.transpose(1, 2)) + torch.bmm(Wp, dWx.transpose(1, 2)) - 2 * dC_t
        gW[:, :, V:] = (torch.bmm(Wt, dWx) + 2 * self.P[:, None, None] * torch.bmm(Wp, S)
                        - 2 * torch.bmm(self.n.transpose(1, 2), A))
        return sse, R
