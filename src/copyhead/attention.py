"""The attention variants: each is one :class:`AttentionVariant` entry of :data:`ATTENTIONS`.

A variant is data: its map from the score matrix M to the attention A (and that map's pullback, for the
hand-written gradients of ``copyhead.model`` and ``copyhead.collapsed``), the theory family that computes
its action (a key of ``copyhead.theory.ranges.FAMILIES``: the action model on its grid, the grid's box,
the landscape P), its two plotted order parameters (table keys, names, TeX names, how they are read from
the stored c1, cG, m1, mP), the transition its order parameters show (name, theory key, the theory points
marked beside it) and its labels (colours, markers, long names in the run files). The modules look the
variant up here instead of testing its name; ``copyhead.config.ATTENTIONS`` (the schema's allowed values)
is this registry's keys.

Where a new attention variant goes: one entry in :data:`ATTENTIONS` below, with its map M → A and the map's
pullback (functions of torch tensors, written with tensor methods: this module imports neither torch nor
any copyhead module, so the config and the numpy-only theory can import it), and its theory functions (a
``copyhead.theory.ranges.FAMILIES`` entry: an action model class of ``copyhead.theory.models`` and its
grid range; for the research package's one-loop correction, the numpy map with its derivatives in
``research.one_loop.evidence.MAPS``). The config schema (``schemas/config.schema.yaml``) names the
attention types of the sweep and of ``theory.landscape_P`` too.

This module imports nothing from copyhead (it sits below ``copyhead.config``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


# ---- the maps M -> A (torch tensors; S: scores (..., L, L)) and their pullbacks ------------------------
def linear_attend(S, L: int):
    """Linear attention A = M/L."""
    return S / L


def linear_score_grad(dA, A, L: int, d_k: int):
    """∂U/∂(QᵀK) from ∂U/∂A for A = QᵀK/(L d_k) (``dA`` is overwritten)."""
    return dA.div_(L * d_k)


def softmax_attend(S, L: int):
    """Row softmax A_ab = exp(M_ab)/Σ_c exp(M_ac)."""
    return S.softmax(dim=-1)


def softmax_score_grad(dA, A, L: int, d_k: int):
    """∂U/∂(QᵀK) from ∂U/∂A for A = softmax_b(QᵀK/d_k) (``dA`` is overwritten)."""
    return dA.sub_((dA * A).sum(2, keepdim=True)).mul_(A).div_(d_k)


# ---- how the plotted pair is read from the stored variables c1, cG, m1, mP --------------------------------
def projections(values, L: int, suffix: str = ""):
    """(ĉ1, ĉG) = (c1, cG): the orthonormal projections."""
    return values[f"c1{suffix}"], values[f"cG{suffix}"]


def weights(values, L: int, suffix: str = ""):
    """(â1, âG) = (m1, mP/L): the weights of A ≈ (m1 J + mP I)/L, so â1 + âG = 1 inside the span."""
    return values[f"m1{suffix}"], values[f"mP{suffix}"] / L


@dataclass(frozen=True)
class AttentionVariant:
    name: str
    attend: Callable          # (S, L) -> A: the model's map from the score matrix to the attention
    score_grad: Callable      # (dA, A, L, d_k) -> ∂U/∂(QᵀK): the map's pullback through M = QᵀK/d_k
    theory: str               # its theory family: a key of copyhead.theory.ranges.FAMILIES
    sign_gauge: bool          # A -> −A is a gauge (the reported pattern is sign-fixed to c1 >= 0)
    nonnegative: bool         # A >= 0 (figures draw it on a sequential colour scale, else a diverging one)
    plotted: Callable         # (values, L, suffix) -> the two plotted order parameters from c1, cG, m1, mP
    keys: tuple               # table keys of the plotted pair (pooling, copy)
    names: tuple              # their names on pages
    tex: tuple                # their TeX names on figures
    run_names: dict           # long names of the run file's c1, cG, m1, mP
    transition: str           # the transition its order parameters show (the results' kind)
    transition_name: str      # that transition's experimental estimate, as named in the results
    theory_transition: str    # the theory's key of that transition
    marked: tuple             # the results' transition kinds marked on its order-parameter figure
    theory_marks: tuple       # the theory's transition points drawn on its order-parameter figure
    near: tuple               # the theory's points near which the agreement is not counted
    color: str                # its colour on the studies' figures
    marker: str               # its marker there
    transition_color: str     # the colour of its transition on the L-scaling figure

    @property
    def copy_key(self) -> str:
        """The key of its copy order parameter."""
        return self.keys[1]

    @property
    def complementary(self) -> bool:
        """The plotted pair sums to 1 inside the span (the weights m1, mP/L), so the pooling one's gap is minus
        the copy one's."""
        return self.plotted is weights


ATTENTIONS: dict[str, AttentionVariant] = {
    "linear": AttentionVariant(
        name="linear", attend=linear_attend, score_grad=linear_score_grad, theory="linear",
        sign_gauge=True, nonnegative=False, plotted=projections,
        keys=("c1", "cG"), names=("ĉ1", "ĉG"), tex=("$\\hat c_1$", "$\\hat c_G$"),
        run_names={"c1": "ĉ1: pooling order parameter 1ᵀĀ1/L",
                   "cG": "ĉG: copy order parameter Tr(Ā(I−J/L))/√(L−1)",
                   "m1": "uniform weight m1 of Ā ≈ (m1 J + mP I)/L",
                   "mP": "copy weight mP of Ā ≈ (m1 J + mP I)/L"},
        transition="crossover", transition_name="crossover ĉG = ĉ1", theory_transition="P_crossover",
        marked=("crossover", "onset"), theory_marks=("P_onset", "P_crossover"),
        near=("P_onset", "P_crossover", "P_star"),
        color="C0", marker="o", transition_color="tab:green"),
    "softmax": AttentionVariant(
        name="softmax", attend=softmax_attend, score_grad=softmax_score_grad, theory="softmax",
        sign_gauge=False, nonnegative=True, plotted=weights,
        keys=("a1", "aG"), names=("â1", "âG"), tex=("$\\hat a_1$", "$\\hat a_G$"),
        run_names={"c1": "pooling projection 1ᵀĀ1/L (identically 1 for softmax; the paper's â1 is m1)",
                   "cG": "copy order parameter Tr(Ā(I−J/L))/√(L−1)",
                   "m1": "â1: uniform weight m1 of Ā ≈ (m1 J + mP I)/L",
                   "mP": "copy weight mP of Ā ≈ (m1 J + mP I)/L (the paper's âG is mP/L)"},
        transition="jump", transition_name="jump of âG (logistic midpoint)", theory_transition="P_star",
        marked=("jump",), theory_marks=("P_star", "P_spinodal_low", "P_spinodal_high", "P_star_exact"),
        near=("P_star", "P_spinodal_low", "P_spinodal_high"),
        color="C3", marker="D", transition_color="tab:red"),
}


def variant(attention: str) -> AttentionVariant:
    """The registry entry of ``attention``; ValueError naming the allowed values for any other name."""
    try:
        return ATTENTIONS[attention]
    except (KeyError, TypeError):
        raise ValueError(f"attention {attention!r} is not allowed; allowed values: {list(ATTENTIONS)}") from None
