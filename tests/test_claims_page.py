"""`audit claims page`: the committed page is what the ledger renders, byte for byte; plots are deterministic;
retractions are struck; nothing is loaded from the network; stale plots go, other files stay."""

from __future__ import annotations

import json
import re
import shutil
import struct
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from tests.attacks import attack
from tests.claims_helpers import PAGE, copy_shipped, edit
from tests.conftest import REPO

MATPLOTLIB_OF_COMMITTED_PLOTS = "3.11.2"
"""The matplotlib that drew packages/claims/*.png: PNG bytes are compared only under the same version."""


def render(cli, root: Path, out: str = "claims", *extra: str):
    return cli("claims", "page", root / "claims.yaml", "-o", root / out, *extra)


@pytest.fixture
def shipped(tmp_path):
    """A copy of packages/ (ledger and packages) in which the page is rendered where it is committed."""
    copy_shipped(tmp_path)
    return tmp_path


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """The shipped ledger rendered once, where it is committed, in a copy of packages/ (read-only tests)."""
    from audit.cli import main

    root = tmp_path_factory.mktemp("rendered")
    copy_shipped(root)
    assert main(["claims", "page", str(root / "claims.yaml"), "-o", str(root / "claims")]) == 0
    return root


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []
        self.ids: set[str] = set()
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if "id" in a:
            self.ids.add(a["id"])
        for key in ("href", "src"):
            if key in a:
                self.refs.append((tag, key, a[key]))


def page_refs(html: str) -> Links:
    p = Links()
    p.feed(html)
    return p


def png_chunks(data: bytes) -> list[bytes]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    out, i = [], 8
    while i < len(data):
        n, kind = struct.unpack(">I4s", data[i:i + 8])
        out.append(kind)
        i += 12 + n
    return out


@pytest.mark.slow
def test_the_committed_page_is_what_the_ledger_renders(rendered):
    for name in ("index.html", "claims.md"):
        assert (rendered / "claims" / name).read_bytes() == (PAGE / name).read_bytes(), name
    made = sorted(p.name for p in (rendered / "claims").glob("claim-*.png"))
    assert made == sorted(p.name for p in PAGE.glob("claim-*.png"))
    assert (PAGE / "screenshot.png").is_file()


def test_the_committed_plots_are_what_the_ledger_renders(rendered):
    import matplotlib

    if matplotlib.__version__ != MATPLOTLIB_OF_COMMITTED_PLOTS:
        pytest.skip(f"plots were drawn with matplotlib {MATPLOTLIB_OF_COMMITTED_PLOTS}, this is {matplotlib.__version__}")
    for png in PAGE.glob("claim-*.png"):
        assert (rendered / "claims" / png.name).read_bytes() == png.read_bytes(), png.name


@pytest.mark.slow
def test_the_page_command_says_what_it_wrote(cli, shipped):
    r = render(cli, shipped)
    assert (r.code, r.err) == (0, "")
    assert r.out == ("wrote " + str(shipped / "claims") + ": claim-D1.png, claim-D10.png, claim-D11.png, "
                     "claim-D2.png, claim-D3.png, claim-D4.png, claim-E1.png, claim-E2.png, claim-E6.png, "
                     "claim-M1.png, claim-M10.png, claim-M11.png, claim-M12.png, claim-M13.png, claim-M14.png, "
                     "claim-M15.png, claim-M16.png, claim-M18.png, claim-M19.png, claim-M2.png, claim-M21.png, "
                     "claim-M3.png, claim-M4.png, claim-M6.png, claim-M9.png, claim-Q1.png, claim-Q10.png, "
                     "claim-Q11.png, claim-Q12.png, claim-Q13.png, claim-Q14.png, claim-Q15.png, claim-Q2.png, "
                     "claim-Q3.png, claim-Q9.png, claims.md, "
                     "index.html\n54 of 54 claims survive\n")


@pytest.mark.slow
def test_plots_are_byte_stable_and_carry_no_time(cli, rendered, tmp_path, monkeypatch):
    # Rendered again elsewhere, at another time, in another zone: the same plots, byte for byte.
    copy_shipped(tmp_path)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    monkeypatch.setenv("TZ", "Asia/Kathmandu")
    assert render(cli, tmp_path).code == 0
    one = sorted((rendered / "claims").iterdir())
    assert [p.name for p in one] == sorted(p.name for p in (tmp_path / "claims").iterdir())
    for p in one:
        assert p.read_bytes() == (tmp_path / "claims" / p.name).read_bytes(), p.name
        if p.suffix == ".png":
            assert png_chunks(p.read_bytes()) == [b"IHDR", b"pHYs", b"IDAT", b"IEND"]


def test_the_page_loads_nothing_from_the_network_and_every_reference_resolves(rendered):
    shipped = rendered
    for name in ("index.html", "claims.md"):
        text = (shipped / "claims" / name).read_text(encoding="utf-8")
        assert not re.search(r"(?i)\b(?:https?:)?//[a-z0-9]", text.replace("http://", "").replace("https://", ""))
        assert "http" not in text.lower()
    html = (shipped / "claims" / "index.html").read_text(encoding="utf-8")
    links = page_refs(html)
    assert "script" not in links.tags and "link" not in links.tags and "iframe" not in links.tags
    targets = set()
    for tag, key, ref in links.refs:
        parts = urlsplit(ref)
        assert not parts.scheme and not parts.netloc, ref
        if not parts.path:
            assert parts.fragment in links.ids, ref
            continue
        target = (shipped / "claims" / parts.path).resolve()
        assert target.is_file(), ref
        assert target.is_relative_to(shipped), ref
        targets.add(target.relative_to(shipped).as_posix())
    assert {"claims.yaml", "demo-lab-note/math500/manifest.json", "demo-lab-note/lab-recorded/hle.jsonl",
            "evidence-h200-vllm/graded/math500-tiny-llama.json", "claims/claim-D1.png",
            "claims/claims.md"} <= targets
    md = (shipped / "claims" / "claims.md").read_text(encoding="utf-8")
    for ref in re.findall(r"\]\(([^)#]+)\)", md):
        assert (shipped / "claims" / ref).is_file(), ref


def test_retractions_are_struck_with_their_correction(rendered):
    shipped = rendered
    html = (shipped / "claims" / "index.html").read_text(encoding="utf-8")
    d1 = html[html.index('<section class="claim retracted" id="d1">'):]
    d1 = d1[:d1.index("</section>")]
    assert '<p class="value"><del>62.50%</del> → <ins>87.50%</ins>' in d1
    assert "<strong>Retracted.</strong> The lab&#x27;s normalizer compared strings: it marked <code>x = 4</code>" in d1
    assert '<span class="tag retracted">retracted</span> <span class="tag survives">survives</span>' in d1
    assert "<summary>audit diff lab-math500 (recorded) → recomputed grading: 2 verdicts changed (grader 2)</summary>" \
        in d1
    assert '<img src="claim-D1.png" width="560" height="156" alt="D1: MATH-500 accuracy">' in d1
    md = (shipped / "claims" / "claims.md").read_text(encoding="utf-8")
    assert "| [D1](#d1) | MATH-500 accuracy | retracted | ~~62.50%~~ → 87.50% | [64.11, 100.00]% (binomial_2se, " \
           "n=8 rows) | 87.50% | yes | [demo-lab-note-math500](../demo-lab-note/math500/manifest.json), " \
           "[lab-math500](../demo-lab-note/lab-recorded/math500.jsonl) |" in md
    assert "Published ~~62.50%~~, corrected to **87.50%**: The lab's normalizer compared strings" in md


@pytest.mark.slow
def test_a_claim_that_does_not_survive_is_shown_so(shipped, cli):
    edit(shipped / "claims.yaml", "    value: 19\n", "    value: 18\n")
    r = render(cli, shipped)
    assert r.code == 1
    assert r.out.endswith("53 of 54 claims survive\n")
    html = (shipped / "claims" / "index.html").read_text(encoding="utf-8")
    assert '<span class="verdict bad">1 of 54 claims do not survive</span>' in html
    assert '<section class="claim measured fails" id="e3">' in html
    assert '<dt>does not survive</dt><dd class="verdict bad">recomputed 19, recorded 18 (tolerance exact)</dd>' in html


@pytest.mark.slow
def test_stale_plots_go_and_other_files_stay(shipped, cli):
    out = shipped / "claims"
    out.mkdir()
    shutil.copyfile(REPO / "packages" / "claims" / "index.html", out / "index.html")  # a page rendered before
    (out / "screenshot.png").write_bytes(b"mine")
    (out / "claim-Z9.png").write_bytes(b"old plot")
    (out / "README.md").write_text("notes", encoding="utf-8")
    assert render(cli, shipped).code == 0
    assert (out / "screenshot.png").read_bytes() == b"mine"
    assert (out / "README.md").read_text(encoding="utf-8") == "notes"
    assert not (out / "claim-Z9.png").exists()
    assert not [p for p in shipped.iterdir() if p.name.startswith(".")]  # no temporary directory left


def test_bad_output_directory(shipped, cli):
    (shipped / "file").write_text("x", encoding="utf-8")
    r = cli("claims", "page", shipped / "claims.yaml", "-o", shipped / "file")
    assert r.code == 2 and r.err.startswith("audit: error: ")
    r = cli("claims", "page", shipped / "claims.yaml", "-o", shipped / "no" / "such")
    assert (r.code, r.err) == (2, f"audit: error: {shipped / 'no'}: parent directory does not exist\n")


def test_a_series_gets_its_plot(tmp_path, cli):
    from audit.packages import PackageWriter

    with PackageWriter(tmp_path / "bench", kind="throughput", package_id="bench") as w:
        w.add_text("t.csv", "task,a,b\n" + "".join(f"t{i},{10 + i},{5 + i % 3}\n" for i in range(9)))
    from audit.packages import open_package

    with open_package(tmp_path / "bench") as pkg:
        digest = pkg.digest
    (tmp_path / "claims.yaml").write_text(f"""\
schema_version: 1
title: series
packages: [{{id: bench, path: bench, sha256: {digest}}}]
claims:
  - id: S1
    text: speed-up
    value: 2.2
    unit: ratio
    status: measured
    sources: [bench]
    recipe: {{name: stats.paired_log_ratio, args: {{package: bench, file: t.csv, numerator: a, denominator: b}}}}
    tolerance: {{relative: 0.2}}
""", encoding="utf-8")
    r = render(cli, tmp_path, "page")
    assert r.code == 0, r.out + r.err
    assert (tmp_path / "page" / "claim-S1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = (tmp_path / "page" / "index.html").read_text(encoding="utf-8")
    assert '<img src="claim-S1.png" width="560" height="240"' in html
    assert "(paired_log_t, n=9 tasks)" in html


def test_the_page_directory_can_be_copied_with_its_packages(rendered, tmp_path):
    # Links are relative: a copy of the folder with the page and its packages keeps every link.
    moved = tmp_path / "moved"
    shutil.copytree(rendered, moved)
    html = (moved / "claims" / "index.html").read_text(encoding="utf-8")
    refs = [urlsplit(ref).path for _, _, ref in page_refs(html).refs]
    assert len([p for p in refs if p]) == 35 + 68 + 2  # plots, sources, the ledger and the Markdown
    for path in refs:
        if path:
            assert (moved / "claims" / path).is_file(), path


@attack("claims.md-ledger-html")
def test_ledger_text_reaches_claims_md_inert(shipped, cli):
    # A ledger's <script>, <img onerror> and javascript: links were copied into claims.md raw (a Markdown
    # viewer renders raw HTML and links); every ledger text now passes one escape.
    evil = ('<script>alert(1)</script> <img src=x onerror=alert(2)> [click](javascript:alert(3)) '
            '<javascript:alert(4)> ![i](http://evil/x.png) a|b')
    edit(shipped / "claims.yaml", "    text: MATH-500 accuracy\n", f"    text: {json.dumps(evil + ' `<b>code</b>`')}\n")
    edit(shipped / "claims.yaml", 'title: "Claims of the packages audit ships', 'title: "<b>x</b> Claims of the '
                                                                                 'packages audit ships')
    assert render(cli, shipped).code == 0
    md = (shipped / "claims" / "claims.md").read_text(encoding="utf-8")
    for bad in ("<script", "<img", "<javascript:", "# <b>"):
        assert bad not in md, bad
    assert not re.search(r"(?<!\\)\]\(", md.split("## D1")[1].split("\n\n")[1])  # no link or image opens
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in md and "\\[click\\](javascript:alert(3))" in md
    assert "a\\|b `<b>code</b>`" in md  # a code span shows its text as it is (inert in Markdown)
    html = (shipped / "claims" / "index.html").read_text(encoding="utf-8")
    assert "<script>alert(1)" not in html and "<img src=x" not in html
