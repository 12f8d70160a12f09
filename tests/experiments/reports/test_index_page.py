"""The results page, results/reports/index.html: it is what `report` writes for the committed reports, and a real
browser (headless Chromium, Debian's package) shows every artifact's heading at every scale, every figure loaded and
no link to a missing file."""

import re
from html.parser import HTMLParser

import pytest

from experiments.config.artifacts import ARTIFACTS, EXTRA_ARTIFACTS_VARIABLE
from experiments.reports.browser import INSTALL_HINT, chromium, rendered_dom
from experiments.reports.index_page import INDEX, SCALE_ORDER, index_html
from tests.repository_copy import REPOSITORY_ROOT

REPORTS = REPOSITORY_ROOT / "results" / "reports"
PAPER_ARTIFACTS = sorted(path.stem for path in ARTIFACTS.glob("*.yaml"))  # the tests' fixture artifacts are not listed
# appended to a copy of the page: marks each image with whether the browser decoded it (the page itself has no script)
IMAGE_PROBE = (
    "<script>window.addEventListener('load', () => { for (const image of document.images) "
    "image.setAttribute('data-loaded', String(image.complete && image.naturalWidth > 0)); });</script>"
)


class Elements(HTMLParser):
    """The headings' ids and texts, the images and the links of a DOM."""

    def __init__(self):
        super().__init__()
        self.headings, self.images, self.links, self.ids = {}, [], [], set()
        self._heading = None

    def handle_starttag(self, tag, attributes):
        attributes = dict(attributes)
        if "id" in attributes:
            self.ids.add(attributes["id"])
        if tag in ("h2", "h3"):
            self._heading = attributes.get("id")
            self.headings[self._heading] = ""
        elif tag == "img":
            self.images.append(attributes)
        elif tag == "a":
            self.links.append(attributes["href"])

    def handle_endtag(self, tag):
        if tag in ("h2", "h3"):
            self._heading = None

    def handle_data(self, data):
        if self._heading is not None:
            self.headings[self._heading] += data


def test_the_committed_results_page_is_the_one_the_reports_give(monkeypatch):
    monkeypatch.delenv(EXTRA_ARTIFACTS_VARIABLE, raising=False)
    assert (REPORTS / INDEX).read_text() == index_html(REPORTS), (
        "results/reports/index.html is stale: `xlstm-suite report all --scale mini` writes it"
    )


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Elements:
    if chromium() is None:
        pytest.skip(f"no Chromium to render the results page: {INSTALL_HINT}")
    folder = tmp_path_factory.mktemp("index")  # the page with the probe, beside links to the committed reports
    for scale in SCALE_ORDER:
        if (REPORTS / scale).is_dir():
            (folder / scale).symlink_to(REPORTS / scale)
    (folder / INDEX).write_text((REPORTS / INDEX).read_text().replace("</body>", IMAGE_PROBE + "</body>"))
    elements = Elements()
    elements.feed(rendered_dom(folder / INDEX))
    return elements


def test_a_browser_shows_every_artifact_at_every_scale(rendered):
    for scale in SCALE_ORDER:
        assert re.fullmatch(rf"{scale} scale: \d+ of \d+ artifacts have a report", rendered.headings[scale])
        for name in PAPER_ARTIFACTS:  # its report, its ablations' (<artifact>-<hash>) or a line saying it has none
            shown = [
                text
                for heading, text in rendered.headings.items()
                if re.fullmatch(rf"{scale}-{re.escape(name)}(-[0-9a-f]{{8}})?", heading)
            ]
            # a report made with overrides (<artifact>-<hash>) names them: "(mini scale; made with task=offline_docs)"
            assert shown and all(
                re.fullmatch(rf"{re.escape(name)} \({scale} scale\)", text)
                or re.fullmatch(rf"{re.escape(name)}-[0-9a-f]{{8}} \({scale} scale; made with [^)]+\)", text)
                for text in shown
            ), (scale, name, shown)


def test_a_browser_loads_every_figure_and_every_link_has_its_target(rendered):
    figures = [  # a report's figure, not its learning curves (the page links those)
        path
        for scale in SCALE_ORDER
        for path in (REPORTS / scale).glob("*.png")
        if not path.name.endswith(".curves.png")
    ]
    assert len(rendered.images) == len(figures)
    assert [image["src"] for image in rendered.images if image.get("data-loaded") != "true"] == []
    for link in rendered.links:
        if link.startswith("#"):
            assert link[1:] in rendered.ids, link
        else:
            assert not re.match(r"^[a-z]+:", link), f"{link}: the page links nothing outside the folder"
            assert (REPORTS / link).is_file(), link
