"""The committed documents agree with what generated them: the README's headline is the committed results
page's (never typed by hand), and every page the README links to exists."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _section(text: str, title: str) -> list[str]:
    m = re.search(rf"^## {re.escape(title)}\n\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert m, f"no section '## {title}'"
    return [line for line in m.group(1).splitlines() if line.startswith("- ")]


def test_the_readme_headline_is_the_committed_results_pages():
    page = (ROOT / "docs/results.md").read_text()
    readme = (ROOT / "README.md").read_text()
    headline = _section(page, "Headline")
    assert len(headline) == 2 and all(h.startswith(("- **linear**", "- **softmax**")) for h in headline)
    m = re.search(r"<!-- headline of docs/results\.md -->\n(.*?)<!-- end headline -->", readme, re.S)
    assert m, "README.md has no headline block"
    assert [line for line in m.group(1).splitlines() if line.startswith("- ")] == headline, (
        "README.md's headline differs from docs/results.md's: copy the page's Headline section")


def test_the_pages_the_readme_links_exist():
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(((?:docs|results)/[^)#]+)\)", readme)
    assert links
    for link in links:
        if link.startswith("results/"):
            continue   # made by the user's own run
        assert (ROOT / link).exists(), link
