"""The measurements page in a real headless Chromium (Debian's `chromium`): it renders, every link and image
resolves, every plot decodes, and a screenshot comes out. Under CI a missing Chromium fails the test."""

from __future__ import annotations

import os
import shutil
from urllib.parse import unquote, urlsplit

import pytest
from tests.claims_helpers import PAGE, copy_shipped
from tests.test_claims_page import page_refs

from audit.claims import browser

pytestmark = pytest.mark.slow  # starts a real Chromium: the slower tier (`make test-slow`)

PROBE = """<script>
window.addEventListener("load", function () {
  var bad = [];
  for (const img of document.images) { if (!(img.complete && img.naturalWidth > 0)) bad.push(img.getAttribute("src")); }
  document.body.setAttribute("data-probe", document.images.length + " images; broken: " + (bad.join(",") || "none"));
});
</script>"""
"""Injected into a copy of the page only: the page itself has no script."""


@pytest.fixture(scope="module")
def chromium():
    exe = browser.find_chromium()
    if exe is None:
        msg = "chromium is not installed (`make test-slow` installs it as root: apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return exe


@pytest.fixture
def site(tmp_path):
    """The committed page beside a copy of the packages it links to, as in the repository."""
    copy_shipped(tmp_path)
    shutil.copytree(PAGE, tmp_path / "claims")
    return tmp_path


def test_the_page_renders_and_every_link_and_image_resolves(chromium, site):
    page = site / "claims" / "index.html"
    page.with_name("probe.html").write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"),
                                            encoding="utf-8")
    dom = browser.dump_dom(page.with_name("probe.html"))
    # Chromium decoded every plot (a missing or broken file has naturalWidth 0).
    assert 'data-probe="35 images; broken: none"' in dom
    links = page_refs(dom)
    assert len([s for s in links.ids if len(s) <= 3]) == 54  # one section per claim
    assert dom.count("<del>") == 14  # seven retractions: in the table and in their sections
    resolved = 0
    for tag, key, ref in links.refs:
        parts = urlsplit(ref)
        assert parts.scheme in ("", "file"), ref  # nothing from the network
        if not parts.path:
            assert parts.fragment in links.ids, ref
            continue
        target = (page.parent / unquote(parts.path)).resolve()
        assert target.is_file(), ref
        resolved += 1
    assert resolved == 35 + 68 + 2  # the plots, every source link, the ledger and the Markdown


def test_a_broken_image_is_noticed(chromium, site):
    # The probe above can fail: with one plot missing, Chromium reports it.
    page = site / "claims" / "index.html"
    (site / "claims" / "claim-D1.png").unlink()
    page.with_name("probe.html").write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"),
                                            encoding="utf-8")
    assert 'data-probe="35 images; broken: claim-D1.png"' in browser.dump_dom(page.with_name("probe.html"))


def test_a_screenshot_of_the_page(chromium, site, tmp_path):
    from PIL import Image

    shot = browser.screenshot(site / "claims" / "index.html", tmp_path / "shot.png")
    with Image.open(shot) as im:
        assert im.size == (1100, 1600)
        colours = im.convert("RGB").getcolors(maxcolors=1_000_000)
    assert colours is not None and len(colours) > 50  # text, tags and plots, not a blank page
    with Image.open(PAGE / "screenshot.png") as committed:
        assert committed.size == (1100, 1600)
