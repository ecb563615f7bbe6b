"""The documentation's examples run: ``>>>`` examples as doctests, ```python blocks as scripts."""

import doctest
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)
DOCTEST_PAGES = [p for p in PAGES if ">>>" in p.read_text()]
SCRIPT_PAGES = [p for p in PAGES if any(">>>" not in b for b in BLOCK.findall(p.read_text()))]


@pytest.mark.parametrize("page", DOCTEST_PAGES, ids=[p.name for p in DOCTEST_PAGES])
def test_doctest_examples(page):
    result = doctest.testfile(
        str(page), module_relative=False, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
    )
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("page", SCRIPT_PAGES, ids=[p.name for p in SCRIPT_PAGES])
def test_python_blocks_run(page, tmp_path, monkeypatch):
    blocks = [b for b in BLOCK.findall(page.read_text()) if ">>>" not in b]
    monkeypatch.chdir(tmp_path)  # blocks that write files write them here
    namespace: dict = {}
    for block in blocks:  # blocks of one page build on each other, like a session
        exec(compile(block, page.name, "exec"), namespace)


def test_every_page_with_code_is_checked():
    assert {p.name for p in DOCTEST_PAGES + SCRIPT_PAGES} >= {"README.md", "exact.md", "cardinality.md"}
