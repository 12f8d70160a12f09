"""WikiText's records as documents: the hub's WikiText-103 (``Salesforce/wikitext``, Merity et al. 2017) holds one
record per line of the original files, an article's title line `` = Title = `` followed by its paragraphs and its
section headings (`` = = Section = = ``). ``wikitext_articles`` joins the records of each article into one document,
so that a document's end-of-text token falls between articles, not after every line."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

ARTICLE_TITLE = re.compile(r" = [^=].* = \n?")  # a title line; section headings start " = = "
DOCUMENT_LAYOUTS = ("records", "wikitext_articles")  # each record a document, or WikiText's lines joined by article


def wikitext_articles(batches: Iterable[list[str]], per_batch: int) -> Iterator[list[str]]:
    """The articles of a stream of WikiText line records, ``per_batch`` at a time: each title line starts an
    article and the lines up to the next title belong to it (blank lines before the first title join the first
    article), joined as they are (each line keeps its newline)."""
    article: list[str] = []
    articles: list[str] = []
    for batch in batches:
        for line in batch:
            if ARTICLE_TITLE.fullmatch(line) and any(part.strip() for part in article):
                articles.append("".join(article))
                article = []
                if len(articles) == per_batch:
                    yield articles
                    articles = []
            article.append(line)
    if any(part.strip() for part in article):
        articles.append("".join(article))
    if articles:
        yield articles
