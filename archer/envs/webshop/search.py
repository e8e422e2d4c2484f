"""BM25 product search over the catalogue (``rank_bm25``; WebShop uses a pyserini Lucene index).

Each product is indexed as WebShop indexes it: title, description, first feature and the option text
(``"color: black, white, and size: small, large"``), lower-cased. Words are lower-case letter/digit runs with a
short stop-word list removed and a plural ``s`` cut (Lucene's analyser removes stop words and stems; this is a
light stand-in). A query returns up to ``max_results`` products (WebShop: 50) that share at least one word with
it, best BM25 score first, ties in catalogue order. Results are cached by query.
"""

from __future__ import annotations

import re
import threading
from collections import defaultdict

from archer.envs.webshop.catalogue import Catalogue, Product
from archer.errors import MissingExtraError

SEARCH_RETURN_N = 50
_CACHE_SIZE = 4096
_WORD = re.compile(r"[a-z0-9]+")
_STOP_WORDS = frozenset(
    "a an and are as at be but by for from i in is it me my of on or please some than that the this to "
    "with would want need looking find get like am dollars lower price".split()
)


def search_words(text: str) -> list[str]:
    """The index words of ``text``: lower-case letter/digit runs, stop words removed, a plural ``s`` cut."""
    words = []
    for word in _WORD.findall(text.lower()):
        if word in _STOP_WORDS:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        words.append(word)
    return words


def document_text(product: Product) -> str:
    """The text WebShop indexes for a product: title, description, first feature, options."""
    option_text = ", and ".join(f"{name}: {', '.join(values)}" for name, values in product.options.items())
    first_feature = product.bullet_points[0] if product.bullet_points else ""
    return " ".join([product.title, product.description, first_feature, option_text]).lower()


class SearchEngine:
    """Ranks catalogue products for a text query with BM25 (Okapi; k1 = 1.5, b = 0.75).

    Args:
        catalogue: the products to index.
        max_results: the most products one query returns.

    Raises:
        ImportError: ``rank_bm25`` is not installed (``pip install archer[webshop]``).
    """

    def __init__(self, catalogue: Catalogue, max_results: int = SEARCH_RETURN_N) -> None:
        try:
            from rank_bm25 import BM25Okapi
        except ImportError as error:
            raise MissingExtraError(
                "the WebShop environment's search needs rank_bm25: pip install 'archer[webshop]' (or rank_bm25)"
            ) from error
        self.catalogue = catalogue
        self.max_results = max_results
        documents = [search_words(document_text(p)) for p in catalogue.products]
        # An empty document would make BM25's average length zero for a one-product catalogue; pad with a word
        # no query can contain.
        self._bm25 = BM25Okapi([words or ["\x00"] for words in documents])
        postings: dict[str, set[int]] = defaultdict(set)
        for index, words in enumerate(documents):
            for word in words:
                postings[word].add(index)
        self._postings = {word: sorted(ids) for word, ids in postings.items()}
        self._cache: dict[str, tuple[Product, ...]] = {}
        self._lock = threading.Lock()

    def search(self, query: str) -> tuple[Product, ...]:
        """The best ``max_results`` products for ``query``, best first (empty when no word matches)."""
        with self._lock:
            cached = self._cache.get(query)
        if cached is not None:
            return cached
        words = search_words(query)
        candidates = sorted({i for word in words for i in self._postings.get(word, ())})
        if candidates:
            scores = self._bm25.get_batch_scores(words, candidates)
            ranked = sorted(zip(scores, candidates, strict=True), key=lambda pair: (-pair[0], pair[1]))
            result = tuple(self.catalogue.products[i] for _, i in ranked[: self.max_results])
        else:
            result = ()
        with self._lock:
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.clear()
            self._cache[query] = result
        return result
