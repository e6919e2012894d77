"""The paper's claims, one by one: the table that opens the results page.

Each row states a claim of the paper (arXiv 2606.12058; shared/seeds/), our number with its interval, the
verdict with its margin, and where the evidence is (page section, figure). Every number is read from the
results JSON's summary (:mod:`copyhead.analysis.summary`) or a studies report (``copyhead studies-report``);
the verdict rules are the named comparisons below, stated in the table's footnote (:data:`RULES`).
"""
from __future__ import annotations

from ..analysis.scaling import FORMS, jump_forms, mixing, ratio_interval, who_copies_first
from ..analysis.summary import PAPER
from .format import METHOD, ci, g, ok, table, verdict_text

JUMP_SHARE = 0.5   # a jump: the steepest grid step carries at least half of âG's whole rise over the grid
RULES = {
    "jump": f"first order is supported when the steepest grid step of âG carries ≥ {JUMP_SHARE:g} of its whole "
            "rise over the swept P (sharper than the grid) — and, stronger, when one training set's prior- and "
            "copy-started HMC chains sit on two branches (per-dataset R̂ > 1.05)",
    "linear": "onset then crossover is supported when the onset's interval lies below the crossover's",
    "agreement": "the agreement verdicts of the sections below (every point within 2σ and RMS z ≤ 1.5: agrees; "
                 "'not mixed' where a training set's chains have bulk ESS < 100 or R̂ > 1.01)",
    "scaling": "the form with the smallest spread (max/min) of P*/form across L",
    "advantage": "softmax copies first at a size when the interval of linear crossover / softmax jump lies above 1",
    "location": "the paper's value on our σ² against our interval",
}


def _posterior(sa: dict) -> str:
    return "hmc" if sa.get("reference") else "sgld"


def _kind(sa: dict, kind: str) -> dict | None:
    return next((r for r in sa.get("transitions", []) if r["kind"] == kind), None)


def _interval(c: dict) -> str:
    br = c.get("bracket")
    head = f"{g(br[0])}–{g(br[1])}" if br and ok(br[0]) else g(c["estimate"])
    return head + (f" {ci(c['ci_lo'], c['ci_hi'])}" if ok(c["ci_lo"]) and ok(c["ci_hi"]) else "")


def _jump(summ: dict) -> list | None:
    sa = summ["attentions"].get("softmax")
    r = _kind(sa, "jump") if sa else None
    m = _posterior(sa) if sa else None
    c = r.get(m) if r else None
    if not c or not ok(c["estimate"]):
        return None
    share = c.get("rise_share")
    conv = ((sa.get("reference") or {}).get("convergence") or {})
    pts = conv.get("paired_points", [])
    sharp = ok(share) and share >= JUMP_SHARE
    verdict = ("supported: two coexisting branches on one training set" if pts else
               "supported by the grid only (no coexisting branches seen)" if sharp else
               "not shown: the rise is spread over several grid steps and no training set has two branches")
    margin = f"steepest step carries {g(share, 2)} of the rise" if ok(share) else "–"
    if pts:
        margin += (f"; one training set's prior- and copy-started chains R̂ = {g(conv.get('largest_paired'), 3)} at "
                   f"{', '.join(pts[:2])}")
    return ["softmax attention copies through a jump (first order)", f"{METHOD[m]} âG: steepest step {_interval(c)}",
            verdict, margin, "softmax table; fig4"]


def _linear(summ: dict) -> list | None:
    sa = summ["attentions"].get("linear")
    if not sa:
        return None
    m = _posterior(sa)
    on, cr = (_kind(sa, k) for k in ("onset", "crossover"))
    on, cr = (r.get(m) if r else None for r in (on, cr))
    if not on or not cr or not ok(on["estimate"]) or not ok(cr["estimate"]):
        return None
    below = ok(on["ci_hi"]) and ok(cr["ci_lo"]) and on["ci_hi"] < cr["ci_lo"]
    return ["linear attention: second-order onset, then a smooth crossover to copying",
            f"{METHOD[m]} onset of ĉ1 {_interval(on)}; crossover ĉG = ĉ1 {_interval(cr)}",
            "supported" if below else "not shown (intervals overlap)",
            f"crossover's lower edge / onset's upper edge = {g(cr['ci_lo'] / on['ci_hi'], 3)}" if below else "–",
            "linear table; fig3"]


def _agreement(summ: dict) -> list | None:
    parts, words = [], []
    for a, sa in summ["attentions"].items():
        for r in sa.get("agreement", []):
            if r.get("n_away"):
                v = r["verdict"]
                parts.append(f"{a} {METHOD[r['method']]}: RMS z {g(r['rms_z'])}, {r['n_within_2']} of {r['n_away']} "
                             "within 2σ")
                words.append(f"{a} {METHOD[r['method']]} {verdict_text(v).split(' (')[0]}")
    if not parts:
        return None
    agree = all(w.endswith("agrees") and "not" not in w for w in words)
    return [PAPER["agreement"][1].strip('"') + " (order parameters against the same-dataset theory)",
            "; ".join(parts), "supported" if agree else "not reproduced", "; ".join(words),
            "per-attention sections; fig3, fig4; appendix"]


def _reports(studies) -> list:
    for folder, rep in studies:
        parts = ([("scaling", rep["scaling"])] if rep.get("scaling") else []) + \
            [(p.get("group", "fixed_dk"), p) for p in rep.get("fixed_dk", [])]
        for name, part in parts:
            yield folder, name, part


def _scaling(studies) -> list | None:
    """The measured jumps across L of the fixed-d_k path with the most sizes (else the scaling group)."""
    best = None
    for folder, name, part in _reports(studies):
        for f in jump_forms(part.get("rows", [])):
            current = all((r.get("softmax") or {}).get("bracket") for r in part.get("rows", []) if r["L"] in f["L"])
            key = (current, len(f["L"]))   # current tables (grid brackets) first, then the most sizes
            if best is None or key > best[0]:
                best = (key, folder, name, f)
    if best is None:
        return None
    _, folder, name, f = best
    names = list(FORMS)
    spreads = "; ".join(f"{n.split(' (')[0]}: {g(f['spread'][n], 3)}" for n in names)
    rows = [r for r in next(p for fo, n, p in _reports(studies) if (fo, n) == (folder, name))["rows"]
            if r["L"] in f["L"] and r.get("softmax")]
    reading = ("bracket midpoints" if all(r["softmax"].get("bracket") for r in rows)
               else "logistic midpoints of older tables")
    verdict = "supported" if f["closest"] == names[1] else f"not supported: closest is '{f['closest'].split(' (')[0]}'"
    return [f"{PAPER['scaling'][1]} (softmax jump against L)",
            f"jumps {', '.join(g(x) for x in f['P_star'])} at L = {', '.join(map(str, f['L']))} "
            f"(d_k = {', '.join(map(str, sorted(set(f['d_k']))))}, {reading})", verdict,
            f"spread max/min {spreads}", f"[{folder}/studies.md]({folder}/studies.md) ({name})"]


def _advantage(studies) -> list | None:
    best = None
    for folder, name, part in _reports(studies):
        rows = [r for r in part.get("rows", []) if r.get("ratio") and ok(r["ratio"].get("experiment"))]
        key = (all(r["ratio"].get("lo") is not None for r in rows), len(rows))   # current tables first
        if rows and (best is None or key > best[0]):
            best = (key, folder, name, rows)
    if best is None:
        return None
    _, folder, name, rows = best
    items, first, unmixed = [], [], []
    for r in sorted(rows, key=lambda r: (r["V"], r["L"])):
        lo, hi, basis = ratio_interval(r["ratio"])
        mixed, _ = mixing(r)
        items.append(f"L = {r['L']}, V = {r['V']}, d_k = {r['d_k']}: [{g(lo)}, {g(hi)}]"
                     + (f" ({basis})" if basis != "interval" else "") + (" (not mixed)" if mixed is False else ""))
        if who_copies_first(lo, hi) == "softmax copies first":
            (unmixed if mixed is False else first).append(str(r["L"]))
    verdict = ("supported at L = " + ", ".join(first) if first else
               "not mixed; the intervals alone would say softmax first at L = " + ", ".join(unmixed) if unmixed else
               "not shown at these sizes")
    method = "/".join(dict.fromkeys(r.get("method", "SGLD") for r in rows))
    return ["softmax copies with O(√(LV)) fewer samples than linear attention (ratio linear crossover / softmax "
            "jump > 1, growing)", f"{method}: " + "; ".join(items), verdict,
            "largest lower edge " + g(max(ratio_interval(r["ratio"])[0] for r in rows), 3),
            f"[{folder}/studies.md]({folder}/studies.md) ({name})"]


def _locations(summ: dict) -> list:
    out = []
    for a, sa in summ["attentions"].items():
        m = _posterior(sa)
        for r in sa.get("transitions", []):
            c, p = r.get(m), r.get("paper")
            if not c or not p or not ok(c["estimate"]) or not (ok(c["ci_lo"]) and ok(c["ci_hi"])):
                continue
            inside = c["ci_lo"] <= p["hi_ours"] and p["lo_ours"] <= c["ci_hi"]
            paper = g(p["lo_ours"]) + (f"–{g(p['hi_ours'])}" if p["hi"] != p["lo"] else "")
            out.append([f"{p['what']} at {p['quoted']} (σ² = {g(p['sigma2_paper'])}; {paper} on our σ² = {g(sa['sigma2'])})",
                        f"{METHOD[m]} {_interval(c)}", "agrees" if inside else "does not agree",
                        f"paper / ours = {g(p['lo_ours'] / c['estimate'], 3)}", f"{a} table"])
    return out


def claims(summ: dict, studies=()) -> list[list[str]]:
    """Rows [claim, ours, verdict, margin, where] in the order of the paper's abstract."""
    rows = [_jump(summ), _linear(summ), _agreement(summ), _scaling(studies), _advantage(studies)]
    return [r for r in rows if r] + _locations(summ)


def claims_section(summ: dict, studies=()) -> list[str]:
    rows = claims(summ, studies)
    if not rows:
        return []
    return (["## The paper's claims", "", table(["claim (paper)", "ours [95% interval]", "verdict", "margin", "where"],
                                                rows), "",
             "Verdict rules: " + "; ".join(f"*{k}*: {v}" for k, v in RULES.items()) + ".", "",
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
