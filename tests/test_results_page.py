"""The results page's opening and its reference-posterior section, rendered by the current code from the
committed results JSON: the opening is three plain sentences generated from the numbers, and the paragraph
on metastable points is there only where a point is metastable."""
import copy
import json
import re
from pathlib import Path

from copyhead.analysis.results_tables import jsonable
from copyhead.analysis.summary import build_summary
from copyhead.format import P_, ci
from copyhead.results.page import render_page

ROOT = Path(__file__).resolve().parents[1]
METASTABLE = "At a metastable point the posterior mean"


def _tables() -> dict:
    tables = json.loads((ROOT / "docs/results.json").read_text())
    tables["summary"] = jsonable(build_summary(tables))
    return tables


def _opening(page: str) -> str:
    head = page.split("\n## ", 1)[0]
    return [p for p in head.split("\n\n") if p.strip() and not p.startswith(("# ", "*Generated"))][0]


def _depth(text: str) -> int:
    depth = deepest = 0
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        deepest = max(deepest, depth)
    return deepest


def test_the_opening_is_three_plain_sentences_from_the_numbers():
    tables = _tables()
    opening = _opening(render_page(tables))
    sentences = re.split(r"(?<=\.) (?=[A-Z])", opening)
    assert len(sentences) == 3, sentences
    holds, differs, claims = sentences
    assert holds.startswith("At this study's size") and "exact posterior (HMC)" in holds and "|Δ| ≤ 0.02" in holds
    assert all(f"for {a}" in holds for a in tables["summary"]["attentions"])
    assert "SGLD" in differs and "HMC" in differs and "Adam" in differs
    assert claims.startswith("The paper's qualitative claim")
    assert ";" not in opening and _depth(opening) <= 1
    words = [len(re.findall(r"[^\W\d_]{2,}", s)) for s in sentences]   # words, not symbols or numbers
    assert max(words) <= 35, words


def test_the_opening_follows_the_numbers_where_the_theory_misses():
    tables = copy.deepcopy(_tables())
    for r in tables["summary"]["attentions"]["softmax"]["agreement"]:
        if r["method"] == "hmc":
            r["verdict"]["effect"].update(n_within_tol=0, max_abs_delta=0.5)
    holds = re.split(r"(?<=\.) (?=[A-Z])", _opening(render_page(tables)))[0]
    assert "within the tolerance |Δ| ≤ 0.02 for linear attention only" in holds and "0.5 for softmax" in holds


def test_the_key_figures_say_what_to_see_with_the_summarys_numbers():
    """fig3's and fig4's captions place the reference's measured transition against the closed form's with the
    numbers of the summary, not typed ones: moving the HMC estimate moves the caption."""
    tables = _tables()
    for attention, kind, fig in (("linear", "crossover", "fig3"), ("softmax", "jump", "fig4")):
        row = next(t for t in tables["summary"]["attentions"][attention]["transitions"] if t["kind"] == kind)
        cell, cf = row["hmc"], row["closed_form"]["value"]
        caption = next(l for l in render_page(tables).splitlines() if l.startswith(f"*{fig}_"))
        where = "inside" if cell["ci_lo"] <= cf <= cell["ci_hi"] else "below" if cell["ci_lo"] > cf else "above"
        assert f"at P = {P_(cell['estimate'])} {ci(cell['ci_lo'], cell['ci_hi'])} in HMC" in caption
        assert f"is at P = {P_(cf)}" in caption and f"{where} that interval" in caption
        cell.update(estimate=1.5 * cf, ci_lo=1.4 * cf, ci_hi=1.6 * cf)
        caption = next(l for l in render_page(tables).splitlines() if l.startswith(f"*{fig}_"))
        assert f"at P = {P_(1.5 * cf)}" in caption and "below that interval" in caption


def test_the_metastable_paragraph_only_where_a_point_is_metastable():
    tables = _tables()
    refs = [sa["reference"] for sa in tables["summary"]["attentions"].values() if sa.get("reference")]
    assert any(ref["convergence"]["paired_points"] for ref in refs)
    assert METASTABLE in render_page(tables)
    for ref in refs:
        ref["convergence"]["paired_points"] = []
    page = render_page(tables)
    assert METASTABLE not in page and "## The reference posterior" in page


def test_the_appendix_evidence_gives_the_effect_size_before_the_rms_z():
    """Issue 49: where the appendix compares two theory curves as evidence, each line gives the largest |Δ|
    against both curves first (the same rows as the RMS z), the RMS z beside it."""
    from copyhead.results.appendix import render_appendix
    text = render_appendix(json.loads((ROOT / "docs/results.json").read_text()))
    evidence = text.split("Evidence on the likely reasons for the differences")[1].split("## ")[0]
    compared = [line for line in evidence.splitlines() if "RMS z" in line]
    assert compared, "the committed results have no curve comparison in the evidence section"
    for line in compared:
        assert re.search(r"largest \|Δ\| against the .+ [\d.e+-]+, against .+ [\d.e+-]+ \(RMS z ", line), line


def test_the_two_adam_recipes_are_compared_by_their_largest_difference_first():
    """Issue 49: the appendix's Adam recipes against each other (prior warm-up against plain MAP) give the
    largest |difference| and the pairs within the tolerance before the count beyond 2σ, from the table above."""
    from copyhead.results.appendix import render_appendix
    tables = json.loads((ROOT / "docs/results.json").read_text())
    text = render_appendix(tables)
    for a, att in tables["attentions"].items():
        pairs = att["adam"]["map_vs_prior_warmup"]
        if not pairs:
            continue
        worst = max(abs(p["difference"]) for p in pairs)
        section = text.split(f"**{a}: Adam recipes against each other**")[1]
        line = next(l for l in section.splitlines() if l.startswith("Largest |difference|"))
        assert line.index("within |Δ| ≤ 0.02") < line.index("more than 2σ"), line
        assert f"Largest |difference| {worst:.3g}" in line, (a, line)
