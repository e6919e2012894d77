"""The committed documents agree with what generated them: the README's results are the committed results
page's opening (never typed by hand), the README is short, and every page it links to exists."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _section(text: str, title: str) -> list[str]:
    m = re.search(rf"^## {re.escape(title)}\n\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert m, f"no section '## {title}'"
    return [line for line in m.group(1).splitlines() if line.startswith("- ")]


def _opening(page: str) -> str:
    """The results page's opening: the paragraph between its header line and its first section."""
    head = page.split("\n## ", 1)[0]
    paras = [p.strip() for p in head.split("\n\n") if p.strip() and not p.startswith(("# ", "*Generated"))]
    return paras[0] if paras else ""


def test_the_readme_results_are_the_committed_results_pages_opening():
    page = (ROOT / "docs/results.md").read_text()
    readme = (ROOT / "README.md").read_text()
    opening = _opening(page)
    assert opening.startswith("At this study's size") and opening.count(". ") >= 1
    m = re.search(r"<!-- opening of docs/results\.md -->\n(.*?)<!-- end opening -->", readme, re.S)
    assert m, "README.md has no results block"
    assert m.group(1).strip() == opening, (
        "README.md's results differ from docs/results.md's opening: copy the page's opening paragraph")


def test_the_readme_is_short():
    words = len((ROOT / "README.md").read_text().split())
    assert words <= 1000, words


def test_the_pages_the_readme_links_exist():
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(((?:docs|results)/[^)#]+)\)", readme)
    assert links
    for link in links:
        if link.startswith("results/"):
            continue   # made by the user's own run
        assert (ROOT / link).exists(), link
