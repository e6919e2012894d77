"""The paper's claims, one by one: the table that opens the results page.

Each row states a claim of the paper (arXiv 2606.12058; shared/seeds/), our number with its interval, the
verdict with its margin, and where the evidence is (page section, figure). Every number is read from the
results JSON's summary (:mod:`copyhead.analysis.summary`) or a studies report (``copyhead studies-report``);
the verdict rules are the named comparisons below, stated in the table's footnote (:data:`RULES`).
"""
from __future__ import annotations

from ..analysis.scaling_claims import FORMS, jump_forms, mixing, who_copies_first
from ..analysis.results_model import AgreementVerdict, AttentionSummary, Cell, ScalingRow, Summary
from ..analysis.summary import PAPER
from ..format import METHOD, P_, ci, g, ok, pct, table, verdict_text

JUMP_SHARE = 0.5   # a jump: the steepest grid step carries at least half of âG's whole rise over the grid
RULES = {
    "jump": f"first order is supported when the steepest grid step of âG carries ≥ {JUMP_SHARE:g} of its whole "
            "rise over the swept P (sharper than the grid) — and, stronger, when one training set's prior- and "
            "copy-started HMC chains sit on two branches (per-dataset R̂ > 1.05)",
    "linear": "onset then crossover is supported when the onset's interval lies below the crossover's",
    "agreement": "effect size first: the largest |Δ| between a method and the theory (or the exact posterior, HMC, "
                 "on the same training sets), against the tolerance |Δ| ≤ {tol} in each order parameter fixed before "
                 "looking; 'not mixed' points (a training set's chains with bulk ESS < 100 or R̂ > 1.01) left out; "
                 "RMS z beside it in the sections below",
    "scaling": "on each path the studies ran (fixed d_k, d_k ∝ L), the form with the smallest spread (max/min) "
               "of P*/form across L",
    "advantage": "on each path, softmax copies first at a size when the interval of linear crossover / softmax "
                 "jump lies above 1 and the chains mixed",
    "location": "size-free ratios of transition points (the paper states no size for its numbers): the paper's "
                "range against our interval, which divides the bounds of the two 95% CIs",
}


def _posterior(sa: AttentionSummary) -> str:
    return "hmc" if sa.reference else "sgld"


def _interval(c: Cell) -> str:
    br = c.bracket
    head = f"{g(br[0])}–{g(br[1])}" if br and ok(br[0]) else g(c.estimate)
    return head + (f" {ci(c.ci_lo, c.ci_hi)}" if ok(c.ci_lo) and ok(c.ci_hi) else "")


def _jump(summ: Summary) -> list | None:
    sa = summ.attentions.get("softmax")
    r = sa.transition("jump") if sa else None
    m = _posterior(sa) if sa else None
    c = r.cell(m) if r else None
    if not c or not ok(c.estimate):
        return None
    share = c.rise_share
    conv = sa.reference.convergence if sa.reference else None
    pts = conv.paired_points if conv else ()
    sharp = ok(share) and share >= JUMP_SHARE
    verdict = (("supported: two coexisting branches on one training set" + (
                    "" if sharp else f" (the grid rule alone would not show it: the steepest step carries "
                                     f"{g(share, 2)} < {JUMP_SHARE:g} of the rise)")) if pts else
               "supported by the grid only (no coexisting branches seen)" if sharp else
               "not shown: the rise is spread over several grid steps and no training set has two branches")
    margin = f"steepest step carries {g(share, 2)} of the rise" if ok(share) else "–"
    if pts:
        margin += (f"; one training set's prior- and copy-started chains R̂ = {g(conv.largest_paired, 3)} at "
                   f"{', '.join(pts[:2])}")
    return ["softmax attention copies through a jump (first order)", f"{METHOD[m]} âG: steepest step {_interval(c)}",
            verdict, margin, "softmax table; fig4; which branch holds the posterior where the chains split "
            "(umbrella sampling): [benchmarks/metastability.md](benchmarks/metastability.md)"]


def _linear(summ: Summary) -> list | None:
    sa = summ.attentions.get("linear")
    if not sa:
        return None
    m = _posterior(sa)
    on, cr = (sa.transition(k) for k in ("onset", "crossover"))
    on, cr = (r.cell(m) if r else None for r in (on, cr))
    if not on or not cr or not ok(on.estimate) or not ok(cr.estimate):
        return None
    below = ok(on.ci_hi) and ok(cr.ci_lo) and on.ci_hi < cr.ci_lo
    return ["linear attention: second-order onset, then a smooth crossover to copying",
            f"{METHOD[m]} onset of ĉ1 {_interval(on)}; crossover ĉG = ĉ1 {_interval(cr)}",
            "supported" if below else "not shown (intervals overlap)",
            f"crossover's lower edge / onset's upper edge = {g(cr.ci_lo / on.ci_hi, 3)}" if below else "–",
            "linear table; fig3"]


def _effect(v: AgreementVerdict) -> str:
    e = v.effect
    if e.provisional:
        return f"not mixed (provisional, on unmixed chains: |Δ| ≤ {g(e.max_abs_delta, 2)})"
    if not e.n:
        return verdict_text(v)
    rel = f", {pct(e.worst_rel)}" if ok(e.worst_rel) else ""
    return f"|Δ| ≤ {g(e.max_abs_delta, 2)} (P = {P_(e.worst_P)} {e.worst_param}{rel})"


def _agreement(summ: Summary) -> list | None:
    """The paper's central claim split into its two questions: does the theory agree with the exact posterior
    (HMC; its error is the theory's own finite-size error) and does each method agree with the exact posterior
    on the same data (SGLD against HMC) or with its own theory curve (Adam: the minimiser). Effect sizes."""
    theory, methods, words = [], [], []
    for a, sa in summ.attentions.items():
        for r in sa.agreement:
            if not r.n_away:
                continue
            v = r.verdict
            line = f"{a} {METHOD[r.method]} (`{r.recipe}`): {_effect(v)}"
            (theory if r.method == "hmc" else methods).append(line)
            if r.method != "sgld" or not sa.reference:
                words.append((f"{a} {METHOD[r.method]}", v.outcome, v.effect.max_abs_delta))
        for s in (sa.reference.sgld if sa.reference else ()):
            e = s.effect
            if e.n:
                methods.append(f"{a} SGLD − HMC, same training sets (`{s.recipe}`): |Δ| ≤ {g(e.max_abs_delta, 2)}")
                words.append((f"{a} SGLD − HMC", "agrees within tolerance" if e.n_within_tol == e.n else
                              "deviates", e.max_abs_delta))
    if not words:
        return None
    tol = g(summ.tolerance)
    bad = [(w, d) for w, o, d in words if o != "agrees within tolerance"]
    verdict = (f"reproduced within |Δ| ≤ {tol}" if not bad else
               "deviates: " + "; ".join(f"{w} by {g(d, 2)}" if ok(d) else f"{w} not mixed" for w, d in bad))
    ours = (("theory against the exact posterior — " + "; ".join(theory) if theory else "")
            + ("; methods — " if theory and methods else "") + "; ".join(methods))
    return [PAPER["agreement"][1].strip('"') + " (order parameters; same-dataset theory)", ours, verdict,
            f"tolerance |Δ| ≤ {tol} in each order parameter, fixed before looking; significance in the sections below",
            "per-attention sections; reference posterior; fig3, fig4"]


def _reports(studies) -> list:
    """(folder, group name, path) of every path along L of the studies reports ((folder, StudiesReport) pairs)."""
    for folder, rep in studies:
        for part in rep.paths():
            yield folder, part.group, part


def _path(rows: list[ScalingRow]) -> str:
    """A study path named by how d_k moves with L over its rows: 'd_k = 16' (fixed) or 'd_k = 2L'."""
    dks = sorted({r.d_k for r in rows})
    if len(dks) == 1:
        return f"fixed d_k = {dks[0]}"
    ratios = sorted({r.d_k / r.L for r in rows})
    return f"d_k = {g(ratios[0])}L" if len(ratios) == 1 else "d_k = " + ", ".join(map(str, dks))


def _both_ways(results: list[tuple[str, str]]) -> str:
    """One verdict over the paths: the same answer everywhere, or each path's answer ('both ways')."""
    answers = dict.fromkeys(a for _, a in results)
    if len(answers) == 1:
        return next(iter(answers)) + (" on every path" if len(results) > 1 else "")
    return "the evidence points both ways: " + "; ".join(f"{where}: {a}" for where, a in results)


def _scaling(studies) -> list | None:
    """The measured jumps across L, answered on every path the studies ran (fixed d_k, d_k ∝ L): on each,
    the form of P*(L) with the smallest spread."""
    names = list(FORMS)
    paths = []
    for folder, name, part in _reports(studies):
        for f in jump_forms(part.rows):
            rows = [r for r in part.rows if r.L in f["L"] and r.softmax]
            if rows:
                paths.append((folder, name, f, rows))
    if not paths:
        return None
    ours, results, margins, where = [], [], [], []
    for folder, name, f, rows in paths:
        path = _path(rows)
        ours.append(f"{path}: jumps {', '.join(g(x) for x in f['P_star'])} at L = {', '.join(map(str, f['L']))} "
                    "(bracket midpoints)")
        closest = f["closest"].split(" (")[0]
        answer = ("supported (in sequences)" if f["closest"] == names[1] else
                  "supported in tokens (N* ∝ L ln²L), P* ∝ ln²L in sequences" if f["closest"] == names[0] else
                  f"not supported: closest is '{closest}'")
        results.append((path, answer))
        margins.append(f"{path}: spread max/min " + "; ".join(f"{n.split(' (')[0]}: {g(f['spread'][n], 3)}"
                                                               for n in names))
        where.append(f"[{folder}/studies.md]({folder}/studies.md) ({name})")
    return [f"{PAPER['scaling'][1]} (softmax jump against L)", "; ".join(ours), _both_ways(results),
            "; ".join(margins), "; ".join(dict.fromkeys(where))]


def _advantage(studies) -> list | None:
    """linear crossover / softmax jump against L and V, answered on every path the studies ran."""
    paths = []
    for folder, name, part in _reports(studies):
        rows = [r for r in part.rows if r.ratio and ok(r.ratio.experiment)]
        if rows:
            paths.append((folder, name, rows))
    if not paths:
        return None
    ours, results, edges, where, methods = [], [], [], [], []
    for folder, name, rows in paths:
        path = _path(rows)
        items, first, unmixed = [], [], []
        for r in sorted(rows, key=lambda r: (r.V, r.L)):
            lo, hi = r.ratio.lo, r.ratio.hi
            mixed, _ = mixing(r)
            items.append(f"L = {r.L}, V = {r.V}: [{g(lo)}, {g(hi)}]" + (" (not mixed)" if mixed is False else ""))
            if who_copies_first(lo, hi) == "softmax copies first":
                (unmixed if mixed is False else first).append(str(r.L))
            edges.append(lo)
        ours.append(f"{path}: " + "; ".join(items))
        results.append((path, "supported at L = " + ", ".join(first) if first else
                        "above 1 at L = " + ", ".join(unmixed) + " but not mixed" if unmixed else
                        "not shown (ratio below 1)"))
        where.append(f"[{folder}/studies.md]({folder}/studies.md) ({name})")
        methods += [r.method for r in rows]
    method = "/".join(dict.fromkeys(methods))
    return ["softmax copies with O(√(LV)) fewer samples than linear attention (ratio linear crossover / softmax "
            "jump > 1, growing)", f"{method}: " + "; ".join(ours), _both_ways(results),
            "largest lower edge " + g(max(edges), 3), "; ".join(dict.fromkeys(where))]


# size-free ratios of the paper's numbers (its abstract gives no size): (what, numerator kind, denominator kind,
# the paper's numbers as (numerator range, denominator range))
RATIOS = (("linear crossover / linear onset", ("linear", "crossover"), ("linear", "onset"),
           "linear_crossover", "linear_onset"),
          ("softmax jump / linear crossover", ("softmax", "jump"), ("linear", "crossover"),
           "softmax_jump", "linear_crossover"))


def _method_cell(summ: Summary, attention: str, kind: str):
    sa = summ.attentions.get(attention)
    if not sa:
        return None, None
    m = _posterior(sa)
    r = sa.transition(kind)
    c = r.cell(m) if r else None
    return (c, m) if c and ok(c.estimate) and ok(c.ci_lo) and ok(c.ci_hi) else (None, m)


def _locations(summ: Summary) -> list:
    """The paper's transition points as size-free ratios (our σ², L, V and d_k differ from the paper's, and a
    ratio of two transitions of one size cancels the common scale); the paper's raw numbers only as context."""
    out = []
    for what, (a1, k1), (a2, k2), p1, p2 in RATIOS:
        (c1, m1), (c2, m2) = _method_cell(summ, a1, k1), _method_cell(summ, a2, k2)
        if not c1 or not c2 or c2.ci_lo <= 0:
            continue
        _, q1, lo1, hi1 = PAPER[p1]
        _, q2, lo2, hi2 = PAPER[p2]
        plo, phi = lo1 / hi2, hi1 / lo2
        est = c1.estimate / c2.estimate
        lo, hi = c1.ci_lo / c2.ci_hi, c1.ci_hi / c2.ci_lo
        inside = lo <= phi and plo <= hi
        out.append([f"{what} = {g(plo, 2)}–{g(phi, 2)} (paper: {q1} / {q2}, size not stated)",
                    f"{METHOD[m1]}/{METHOD[m2]} {g(est, 3)} [{g(lo, 3)}, {g(hi, 3)}]",
                    "agrees (intervals overlap)" if inside else "differs",
                    f"ours / paper's midpoint = {g(est / ((plo + phi) / 2), 3)}",
                    f"{a1} table" if a1 == a2 else f"{a1} and {a2} tables"])
    return out


# the two qualitative claims in a few words, for the page's opening, with the row that judges each
QUALITATIVE = (("softmax attention's jump to copying", _jump),
               ("linear attention's second-order onset followed by a smooth crossover to copying", _linear))


def qualitative(summ: Summary) -> list[tuple[str, bool]]:
    """The paper's qualitative claims that this study answers: (the claim in a few words, supported?)."""
    rows = [(what, row(summ)) for what, row in QUALITATIVE]
    return [(what, r[2].startswith("supported")) for what, r in rows if r]


def claims(summ: Summary, studies=()) -> list[list[str]]:
    """Rows [claim, ours, verdict, margin, where] in the order of the paper's abstract."""
    rows = [_jump(summ), _linear(summ), _agreement(summ), _scaling(studies), _advantage(studies)]
    return [r for r in rows if r] + _locations(summ)


def claims_section(summ: Summary, studies=()) -> list[str]:
    rows = claims(summ, studies)
    if not rows:
        return []
    return (["## The paper's claims", "", table(["claim (paper)", "ours [95% interval]", "verdict", "margin", "where"],
                                                rows), "",
             "Verdict rules: " + "; ".join(f"*{k}*: {v}" for k, v in RULES.items()).replace(
                 "{tol}", g(summ.tolerance)) + ".", "",
             SYMBOLS, ""])


SYMBOLS = ("Symbols and names. The attention matrix A (L × L) is read in two directions: the pooling direction J/L "
           "(every position attends to all, A = J/L) and the copy direction I (each position attends to itself). "
           "Linear attention: ĉ1 and ĉG are the orthonormal projections of A on the pooling direction and on the "
           "traceless copy direction (ĉG > ĉ1: copying dominates). Softmax attention: A ≈ â1·J/L + âG·I with "
           "â1 + âG = 1 (âG: the weight on copying; 0 = uniform pooling). P: training-set size in sequences. "
           "*Same dataset*: the theory evaluated on each run's own training set (what a chain on that set "
           "samples); *closed form*: the large-N theory; *natural curve*: the theory quantity a method estimates "
           "— the posterior mean for the samplers (HMC: Hamiltonian Monte Carlo, the reference; SGLD: Langevin "
           "dynamics, the paper's method), the minimiser for Adam. Recipes: `hmc`/`sgld` chains start from a "
           "prior draw, `hmc_copy`/`sgld_copy` from the copy solution; `sgld_half`: SGLD at half the step size.")
