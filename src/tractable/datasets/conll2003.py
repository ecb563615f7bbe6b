"""CoNLL-2003 English named-entity data and the collective extraction of Gupta, Diwan and Sarawagi (2007).

**Reader.** :func:`load_conll2003` reads the shared task's four-column files (``token POS chunk NER``,
one token a line, blank lines between sentences, ``-DOCSTART-`` lines between documents) into
:class:`Document` objects of :class:`Sentence` objects. Tags come out in **IOB2** (also called BIO:
every entity starts with ``B-``, continues with ``I-``): the task's files use IOB1 (``I-`` everywhere,
``B-`` only to start an entity right after one of the same type) and :func:`iob1_to_iob2` converts
them, and leaves IOB2 input unchanged (some redistributed copies, including the one at
``DATA_DIR``, are IOB2 already). The chunk column is converted the same way. Nothing is downloaded:
the text is Reuters RCV1, for research use only, and is not shipped; the files are read from
:data:`DATA_DIR` (``$TRACTABLE_CONLL_DIR``, else ``../shared/data/conll2003`` beside the project root).

**Evaluation.** :func:`entity_spans` and :func:`span_f1`: entity-level precision, recall and F1 with
the ``conlleval`` / ``seqeval`` reading of ill-formed sequences (an ``I-X`` after ``O`` or after
another type starts an entity).

**Features.** :class:`NERFeaturizer`: sparse lexical features of every token (word, lower case, word
shape, prefixes and suffixes, capitalization, digits, POS and chunk tags, neighbours' words) indexed
into a ``scipy.sparse`` matrix, the input of :class:`tractable.crf.ChainCRF`.

**Collective extraction** (Sec. 2.1 of [1]_). A linear-chain CRF labels each sentence; all occurrences
of a repeated token in a document are joined by a clique whose cardinality-based potential pulls them
toward one label (:func:`repeated_token_cliques`). :func:`collective_factor_graph` builds the cluster
graph of a document (the sentences' chains as ``TableFactor`` s, the cliques as
:class:`tractable.CliqueFactor` s) and :func:`collective_map` solves it by max-product
:func:`tractable.bp.loopy`, whose clique messages come from the clique MAP algorithms (by default on the
clique members only, the rest of each chain max-eliminated first, exactly).
:func:`majority_weights` estimates the ``W`` of the paper's majority potential from training labels.

References
----------
.. [1] R. Gupta, A. A. Diwan and S. Sarawagi. Efficient inference with cardinality-based clique
   potentials. ICML 2007.
.. [2] E. F. Tjong Kim Sang and F. De Meulder. Introduction to the CoNLL-2003 shared task:
   language-independent named entity recognition. CoNLL 2003.
"""

from __future__ import annotations

import os
import re
import time
import warnings
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .._results import CONVERGED, MAX_ITER_REACHED, MAPResult, frozen_array, stop_message, warn_stopped
from .._validate import _describe, as_float_array

__all__ = [
    "COLLECTIVE_METHODS",
    "CONLL_TAGS",
    "DATA_DIR",
    "CollectiveMAPResult",
    "Document",
    "NERFeaturizer",
    "Sentence",
    "SpanScores",
    "collective_factor_graph",
    "collective_map",
    "conll2003_available",
    "entity_spans",
    "iob1_to_iob2",
    "load_conll2003",
    "majority_weights",
    "repeated_token_cliques",
    "span_f1",
    "tag_ids",
]

_PROJECT_ROOT = Path(__file__).resolve().parents[3]
_ENV = "TRACTABLE_CONLL_DIR"


def _data_dir() -> Path:
    env = os.environ.get(_ENV)
    return Path(env) if env else _PROJECT_ROOT.parent / "shared" / "data" / "conll2003"


#: Where :func:`load_conll2003` finds ``eng.train``, ``eng.testa``, ``eng.testb`` (the value at import;
#: the environment variable ``TRACTABLE_CONLL_DIR`` is read again at each call).
DATA_DIR: Path = _data_dir()

#: The nine IOB2 tags of CoNLL-2003; a tag's index is its state in the CRF and the factor graphs.
CONLL_TAGS: tuple[str, ...] = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")
_TAG_INDEX = {t: i for i, t in enumerate(CONLL_TAGS)}
_SPLITS = ("train", "testa", "testb")
_TAG_RE = re.compile(r"^(O|[BI]-[^\s-][^\s]*)$")


# --------------------------------------------------------------------------- reading
@dataclass(frozen=True)
class Sentence:
    """One sentence: parallel tuples of tokens and their tags (IOB2).

    Attributes
    ----------
    tokens, pos, chunks, tags : tuple of str, length n_tokens
        Words, part-of-speech tags, chunk tags (IOB2) and named-entity tags (IOB2).
    line : int
        The 1-based line of its first token in the file (0 when not read from a file).
    """

    tokens: tuple[str, ...]
    pos: tuple[str, ...]
    chunks: tuple[str, ...]
    tags: tuple[str, ...]
    line: int = 0

    def __len__(self) -> int:
        return len(self.tokens)


@dataclass(frozen=True)
class Document:
    """One document (the lines between two ``-DOCSTART-`` lines): its sentences in order.

    Attributes
    ----------
    sentences : tuple of Sentence
    line : int
        The 1-based line of its ``-DOCSTART-`` (0 for sentences before any, or not read from a file).
    """

    sentences: tuple[Sentence, ...]
    line: int = 0

    @property
    def n_tokens(self) -> int:
        """The number of tokens of all its sentences."""
        return sum(len(s) for s in self.sentences)

    @property
    def tokens(self) -> list[str]:
        """All its tokens in order (the flat positions of :func:`repeated_token_cliques`)."""
        return [t for s in self.sentences for t in s.tokens]

    @property
    def lengths(self) -> list[int]:
        """The number of tokens of each sentence."""
        return [len(s) for s in self.sentences]


def iob1_to_iob2(tags: Sequence[str]) -> list[str]:
    """IOB1 (or IOB2) tags of one sentence as IOB2: an ``I-X`` that starts an entity becomes ``B-X``.

    An entity starts at ``B-X``, and at ``I-X`` after ``O`` or after a tag of another type (IOB1 writes
    ``B-`` only to separate two adjacent entities of the same type). IOB2 input comes back unchanged.

    Examples
    --------
    >>> iob1_to_iob2(["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG"])
    ['B-PER', 'I-PER', 'B-PER', 'O', 'B-LOC', 'B-ORG']
    """
    out = []
    prev = "O"
    for i, tag in enumerate(tags):
        if not isinstance(tag, str) or not _TAG_RE.match(tag):
            raise ValueError(f"`tags[{i}]` must be 'O' or 'B-TYPE' / 'I-TYPE'; got {tag!r}.")
        if tag.startswith("I-") and (prev == "O" or prev[2:] != tag[2:]):
            tag = "B-" + tag[2:]
        out.append(tag)
        prev = tag
    return out


def conll2003_available(*splits: str) -> bool:
    """Whether the files of ``splits`` (default ``"train"`` and ``"testa"``) are in the data folder.

    An unknown split is a ``ValueError`` (not a missing file): the splits are ``"train"``, ``"testa"``, ``"testb"``.
    """
    for s in splits:
        if s not in _SPLITS:
            raise ValueError(f"`splits` must be among {', '.join(repr(x) for x in _SPLITS)}; got {_describe(s)}.")
    folder = _data_dir()
    return all((folder / f"eng.{s}").is_file() for s in (splits or ("train", "testa")))


def _resolve(path) -> Path:
    if isinstance(path, str) and path in _SPLITS:
        p = _data_dir() / f"eng.{path}"
    elif isinstance(path, (str, os.PathLike)):
        p = Path(path)
    else:
        raise TypeError(
            f"`path` must be a file path or one of {', '.join(repr(s) for s in _SPLITS)}; got {_describe(path)}."
        )
    if not p.is_file():
        raise FileNotFoundError(
            f"CoNLL-2003 file {str(p)!r} not found. The data is not shipped with tractable (Reuters text, research "
            f"use only) and is never downloaded: put eng.train / eng.testa in {str(_data_dir())!r} or set "
            f"{_ENV} to their folder."
        )
    return p


def load_conll2003(path) -> tuple[Document, ...]:
    """Read a CoNLL-2003 file into documents of sentences, with IOB2 tags.

    Parameters
    ----------
    path : str or path-like
        A file in the shared task's format, or ``"train"``, ``"testa"``, ``"testb"`` for
        ``eng.<split>`` in :data:`DATA_DIR` (``$TRACTABLE_CONLL_DIR`` when set).

    Returns
    -------
    tuple of Document
        In file order. Each non-blank line is ``token POS chunk NER`` (whitespace-separated); blank
        lines end sentences; a ``-DOCSTART-`` line ends the document (sentences before the first one
        form a document of their own; a document without sentences is dropped). NER and chunk tags are
        converted to IOB2 (:func:`iob1_to_iob2`).

    Raises
    ------
    FileNotFoundError
        The file (or split) is absent; the message says where the data is expected.
    ValueError
        A malformed line: not four columns, a tag that is neither ``O`` nor ``B-``/``I-`` + type, or
        bytes that are not UTF-8; the message names the file and the line.

    Examples
    --------
    >>> from tractable.datasets.conll2003 import conll2003_available, load_conll2003
    >>> if conll2003_available("testa"):  # doctest: +SKIP
    ...     docs = load_conll2003("testa")
    ...     len(docs), sum(len(d.sentences) for d in docs)
    (216, 3250)
    """
    p = _resolve(path)
    docs: list[Document] = []
    sents: list[Sentence] = []
    cur: list[tuple[str, str, str, str]] = []
    cur_line = 0
    doc_line = 0

    def close_sentence():
        nonlocal cur
        if cur:
            tok, pos, chk, ner = zip(*cur)
            sents.append(Sentence(tok, pos, tuple(iob1_to_iob2(chk)), tuple(iob1_to_iob2(ner)), cur_line))
            cur = []

    def close_document():
        nonlocal sents
        close_sentence()
        if sents:
            docs.append(Document(tuple(sents), doc_line))
        sents = []

    with open(p, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise ValueError(f"{p}:{lineno}: the line is not valid UTF-8 ({err.reason}).") from err
            cols = line.split()
            if not cols:
                close_sentence()
                continue
            if cols[0] == "-DOCSTART-":
                close_document()
                doc_line = lineno
                continue
            if len(cols) != 4:
                raise ValueError(
                    f"{p}:{lineno}: expected 4 whitespace-separated columns (token POS chunk NER); got "
                    f"{len(cols)}: {line.rstrip()!r}."
                )
            for name, tag in (("chunk", cols[2]), ("NER", cols[3])):
                if not _TAG_RE.match(tag):
                    raise ValueError(
                        f"{p}:{lineno}: the {name} tag must be 'O' or 'B-TYPE' / 'I-TYPE'; got {tag!r} in "
                        f"{line.rstrip()!r}."
                    )
            if not cur:
                cur_line = lineno
            cur.append((cols[0], cols[1], cols[2], cols[3]))
    close_document()
    return tuple(docs)


def tag_ids(tags: Sequence[str]) -> np.ndarray:
    """The indices in :data:`CONLL_TAGS` of a sequence of IOB2 tags, int64 of shape (len(tags),)."""
    try:
        return np.fromiter((_TAG_INDEX[t] for t in tags), dtype=np.int64, count=len(tags))
    except KeyError as err:
        raise ValueError(f"`tags` must be IOB2 tags of CONLL_TAGS {CONLL_TAGS}; got {err.args[0]!r}.") from None


# --------------------------------------------------------------------------- evaluation
def entity_spans(tags: Sequence[str], *, name: str = "tags") -> list[tuple[str, int, int]]:
    """The entities of one tag sequence as ``(type, start, end)`` with ``end`` exclusive.

    An entity starts at ``B-X``, at ``I-X`` after ``O`` and at ``I-X`` after another type; it ends
    before ``O``, ``B-``, or a tag of another type (``conlleval``'s and ``seqeval``'s default reading).

    Examples
    --------
    >>> entity_spans(["B-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-ORG"])
    [('PER', 0, 2), ('LOC', 3, 4), ('LOC', 4, 5), ('ORG', 5, 6)]
    """
    spans = []
    start, typ = -1, None
    for i, tag in enumerate(tags):
        if not isinstance(tag, str) or not _TAG_RE.match(tag):
            raise ValueError(f"`{name}[{i}]` must be 'O' or 'B-TYPE' / 'I-TYPE'; got {tag!r}.")
        kind, t = (tag, None) if tag == "O" else (tag[0], tag[2:])
        begins = kind == "B" or (kind == "I" and t != typ)
        if typ is not None and (kind == "O" or begins):
            spans.append((typ, start, i))
            typ = None
        if begins:
            start, typ = i, t
    if typ is not None:
        spans.append((typ, start, len(tags)))
    return spans


@dataclass(frozen=True)
class SpanScores:
    """Entity-level (micro-averaged) scores of :func:`span_f1`."""

    precision: float
    recall: float
    f1: float
    n_true: int
    n_pred: int
    n_correct: int


def span_f1(y_true: Sequence[Sequence[str]], y_pred: Sequence[Sequence[str]]) -> SpanScores:
    """Entity-level precision, recall and F1 over sentences of IOB2 tags (as ``seqeval``'s default mode).

    An entity counts as correct when its type, start and end all match (:func:`entity_spans`).

    Parameters
    ----------
    y_true, y_pred : sequence of sequences of str
        One tag sequence per sentence, the same lengths in both.

    Returns
    -------
    SpanScores
        ``precision``, ``recall``, ``f1`` (0 where undefined) and the counts behind them.

    Examples
    --------
    >>> s = span_f1([["B-PER", "I-PER", "O", "B-LOC"]], [["B-PER", "I-PER", "O", "B-ORG"]])
    >>> round(s.precision, 2), round(s.recall, 2), round(s.f1, 2)
    (0.5, 0.5, 0.5)
    """
    if isinstance(y_true, (str, bytes)) or isinstance(y_pred, (str, bytes)):
        raise ValueError("`y_true` and `y_pred` must be sequences of tag sequences (one per sentence); got a string.")
    if len(y_true) != len(y_pred):
        raise ValueError(
            f"`y_true` and `y_pred` must have the same number of sentences; got {len(y_true)} and {len(y_pred)}."
        )
    n_true = n_pred = n_correct = 0
    for i, (t, p) in enumerate(zip(y_true, y_pred)):
        if isinstance(t, str) or isinstance(p, str) or len(t) != len(p):
            raise ValueError(
                f"`y_true[{i}]` and `y_pred[{i}]` must be tag sequences of the same length; got "
                f"{_describe(t)} and {_describe(p)}."
            )
        st = set(entity_spans(t, name=f"y_true[{i}]"))
        ps = set(entity_spans(p, name=f"y_pred[{i}]"))
        n_true += len(st)
        n_pred += len(ps)
        n_correct += len(st & ps)
    precision = n_correct / n_pred if n_pred else 0.0
    recall = n_correct / n_true if n_true else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return SpanScores(precision, recall, f1, n_true, n_pred, n_correct)


# --------------------------------------------------------------------------- features
def _shape(word: str) -> str:
    out = []
    for ch in word:
        c = "X" if ch.isupper() else "x" if ch.islower() else "d" if ch.isdigit() else ch
        if not out or out[-1] != c:
            out.append(c)
    return "".join(out)


class NERFeaturizer:
    """Sparse lexical features of every token, indexed on the training sentences.

    Features of token ``t`` (indicators; a ``bias`` feature on every token):

    * the word, its lower case, its shape (``Xxx``-style, runs collapsed), prefixes and suffixes of
      1 to 4 characters, and whether it is title case, all capitals, has a digit, a hyphen, a period;
    * its POS and chunk tags (``use_tags=True``), and the sentence position (``BOS`` / ``EOS``);
    * the lower-cased words, title case and POS tags of the tokens at ``t - 1`` and ``t + 1``, the
      lower-cased words at ``t - 2`` and ``t + 2``, and the bigrams ``(t - 1, t)``, ``(t, t + 1)``.

    Parameters
    ----------
    min_count : int, default 1
        Keep the features seen on at least this many training tokens.
    use_tags : bool, default True
        Use the POS and chunk columns of the data.

    Attributes
    ----------
    vocabulary_ : dict of str to int
        Feature name -> column, after :meth:`fit`.
    """

    def __init__(self, *, min_count: int = 1, use_tags: bool = True) -> None:
        if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 1:
            raise ValueError(f"`min_count` must be an integer >= 1; got {_describe(min_count)}.")
        if not isinstance(use_tags, bool):
            raise ValueError(f"`use_tags` must be True or False; got {_describe(use_tags)}.")
        self.min_count = min_count
        self.use_tags = use_tags

    def token_features(self, sentence: Sentence) -> list[list[str]]:
        """The feature names of each token of ``sentence`` (the crfsuite input: one list per token)."""
        words = sentence.tokens
        low = [w.lower() for w in words]
        n = len(words)
        out = []
        for i, w in enumerate(words):
            lw = low[i]
            f = ["bias", "w=" + w, "lw=" + lw, "sh=" + _shape(w)]
            f += [f"p{j}={lw[:j]}" for j in range(1, 5) if len(lw) >= j]
            f += [f"s{j}={lw[-j:]}" for j in range(1, 5) if len(lw) >= j]
            if w.istitle():
                f.append("title")
            if w.isupper():
                f.append("upper")
            if any(c.isdigit() for c in w):
                f.append("digit")
            if "-" in w:
                f.append("hyphen")
            if "." in w:
                f.append("period")
            if self.use_tags:
                f += ["pos=" + sentence.pos[i], "chunk=" + sentence.chunks[i]]
            if i == 0:
                f.append("BOS")
            else:
                f += ["-1:lw=" + low[i - 1], "-1|0=" + low[i - 1] + "|" + lw]
                if words[i - 1].istitle():
                    f.append("-1:title")
                if self.use_tags:
                    f.append("-1:pos=" + sentence.pos[i - 1])
            if i == n - 1:
                f.append("EOS")
            else:
                f += ["+1:lw=" + low[i + 1], "0|+1=" + lw + "|" + low[i + 1]]
                if words[i + 1].istitle():
                    f.append("+1:title")
                if self.use_tags:
                    f.append("+1:pos=" + sentence.pos[i + 1])
            if i > 1:
                f.append("-2:lw=" + low[i - 2])
            if i < n - 2:
                f.append("+2:lw=" + low[i + 2])
            out.append(f)
        return out

    def fit(self, sentences: Sequence[Sentence]) -> NERFeaturizer:
        """Index the features seen on at least ``min_count`` tokens of ``sentences``."""
        counts: Counter = Counter()
        for s in _check_sentences(sentences):
            for f in self.token_features(s):
                counts.update(f)
        kept = sorted(f for f, c in counts.items() if c >= self.min_count)
        self.vocabulary_ = {f: i for i, f in enumerate(kept)}
        return self

    def transform(self, sentences: Sequence[Sentence]) -> tuple[sp.csr_matrix, np.ndarray]:
        """Features of every token of ``sentences``, unseen features dropped.

        Returns
        -------
        X : scipy.sparse.csr_matrix of shape (n_tokens, n_features), float64
            0/1 rows, the tokens of all sentences in order.
        lengths : ndarray of shape (n_sentences,), int64
            Tokens per sentence (the ``lengths`` of :class:`tractable.crf.ChainCRF`).
        """
        if not hasattr(self, "vocabulary_"):
            raise ValueError("this NERFeaturizer is not fitted yet; call `fit` first.")
        vocab = self.vocabulary_
        indices: list[int] = []
        indptr = [0]
        lengths = []
        for s in _check_sentences(sentences):
            for f in self.token_features(s):
                indices.extend(sorted({vocab[x] for x in f if x in vocab}))
                indptr.append(len(indices))
            lengths.append(len(s))
        ind = np.asarray(indices, dtype=np.int64)
        X = sp.csr_matrix((np.ones(ind.size), ind, np.asarray(indptr)), shape=(len(indptr) - 1, len(vocab)))
        return X, np.asarray(lengths, dtype=np.int64)

    def fit_transform(self, sentences: Sequence[Sentence]) -> tuple[sp.csr_matrix, np.ndarray]:
        """:meth:`fit`, then :meth:`transform` on the same sentences."""
        return self.fit(sentences).transform(sentences)


def _check_sentences(sentences) -> list[Sentence]:
    if isinstance(sentences, Sentence) or not isinstance(sentences, Sequence):
        raise ValueError(f"`sentences` must be a sequence of Sentence objects; got {_describe(sentences)}.")
    for i, s in enumerate(sentences):
        if not isinstance(s, Sentence):
            raise ValueError(f"`sentences[{i}]` must be a Sentence; got {type(s).__name__}.")
        if len(s) == 0:
            raise ValueError(f"`sentences[{i}]` must have at least one token.")
    return list(sentences)


# --------------------------------------------------------------------------- collective extraction
def repeated_token_cliques(document: Document, *, min_count: int = 2) -> list[np.ndarray]:
    """The cliques of collective extraction: all positions of each repeated capitalized token of a document.

    Following Sec. 2.1 of [1]_ (and the skip-chain CRF of Sutton and McCallum 2004 it builds on), the
    positions of a document that share a word ``w`` form one clique ``C_w``; as there, the words are
    the *capitalized* ones (first character an upper-case letter: names, where collective labelling
    helps; lower-case words are almost always ``O``), compared by exact surface form, occurring at
    least ``min_count`` times in the document.

    Parameters
    ----------
    document : Document
    min_count : int, default 2
        The smallest clique.

    Returns
    -------
    list of ndarray of int64
        Each clique's positions in the document's flat token order (:attr:`Document.tokens`),
        increasing; the cliques in order of their first position.
    """
    if not isinstance(document, Document):
        raise ValueError(f"`document` must be a Document; got {type(document).__name__}.")
    if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 2:
        raise ValueError(f"`min_count` must be an integer >= 2; got {_describe(min_count)}.")
    where: dict[str, list[int]] = defaultdict(list)
    for i, tok in enumerate(document.tokens):
        if tok[:1].isalpha() and tok[:1].isupper():
            where[tok].append(i)
    return [np.asarray(p, dtype=np.int64) for p in where.values() if len(p) >= min_count]


def majority_weights(documents: Sequence[Document], *, min_count: int = 2, smoothing: float = 1.0) -> np.ndarray:
    """The ``W`` of the majority clique potential, estimated from labelled documents.

    Over the cliques of :func:`repeated_token_cliques` in ``documents`` with their true labels, count
    ``N[a, y]``: members labelled ``y`` in cliques whose majority label is ``a`` (ties to the lowest
    index, as :class:`tractable.clique.LinearMajority`). Then ``W[a, y] = log((N[a, y] + smoothing) /
    (sum_y' N[a, y'] + k smoothing))``: the log-probability that a member is labelled ``y`` given the
    clique's majority ``a``. The potential ``sum_y W[a, y] n_y`` of a clique is then its members'
    log-likelihood given the majority, to be scaled by a strength chosen on held-out data.

    Returns
    -------
    ndarray of shape (9, 9)
        Indexed as :data:`CONLL_TAGS`.
    """
    if isinstance(documents, Document) or not isinstance(documents, Sequence) or not documents:
        raise ValueError(f"`documents` must be a non-empty sequence of Document; got {_describe(documents)}.")
    if isinstance(smoothing, bool) or not isinstance(smoothing, (int, float)) or not 0 < smoothing < np.inf:
        raise ValueError(f"`smoothing` must be a finite number > 0; got {_describe(smoothing)}.")
    k = len(CONLL_TAGS)
    counts = np.zeros((k, k))
    for d in documents:
        labels = tag_ids([t for s in d.sentences for t in s.tags])
        for clique in repeated_token_cliques(d, min_count=min_count):
            c = np.bincount(labels[clique], minlength=k)
            counts[int(np.argmax(c))] += c
    return np.log((counts + smoothing) / (counts.sum(axis=1, keepdims=True) + k * smoothing))


def _clique_potential(potential, n: int):
    from ..potentials import CliquePotential

    pot = potential(n) if callable(potential) and not isinstance(potential, CliquePotential) else potential
    if not isinstance(pot, CliquePotential):
        raise ValueError(
            "`potential` must be a tractable.clique.CliquePotential or a callable clique size -> CliquePotential; "
            f"got {_describe(pot)}."
        )
    return pot


def _check_doc_model(unary, transitions, lengths):
    u = as_float_array(unary, "unary", ndim=2)
    if u.shape[0] == 0 or u.shape[1] < 2:
        raise ValueError(f"`unary` must have shape (n_tokens >= 1, k >= 2); got {u.shape}.")
    k = u.shape[1]
    tr = as_float_array(transitions, "transitions", ndim=2)
    if tr.shape != (k, k):
        raise ValueError(f"`transitions` must have shape ({k}, {k}); got {tr.shape}.")
    lens = np.asarray(lengths)
    if lens.ndim != 1 or lens.size == 0 or lens.dtype.kind not in "iu" or lens.min() < 1:
        raise ValueError(f"`lengths` must be a non-empty 1-D sequence of positive integers; got {_describe(lengths)}.")
    if int(lens.sum()) != u.shape[0]:
        raise ValueError(f"`lengths` must sum to the rows of `unary` ({u.shape[0]}); got {int(lens.sum())}.")
    return u, tr, np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)


def _check_cliques(cliques, n_tok: int) -> list[np.ndarray]:
    if isinstance(cliques, np.ndarray) or not isinstance(cliques, Sequence):
        raise ValueError(f"`cliques` must be a list of 1-D arrays of token positions; got {_describe(cliques)}.")
    out = []
    seen = np.zeros(n_tok, dtype=bool)
    for i, c in enumerate(cliques):
        arr = np.asarray(c)
        if arr.ndim != 1 or arr.size < 2 or arr.dtype.kind not in "iu":
            raise ValueError(f"`cliques[{i}]` must be a 1-D array of at least 2 token positions; got {_describe(c)}.")
        if arr.min() < 0 or arr.max() >= n_tok or np.unique(arr).size != arr.size:
            raise ValueError(f"`cliques[{i}]` must hold distinct positions in [0, {n_tok - 1}]; got {arr.tolist()}.")
        if seen[arr].any():
            raise ValueError(f"`cliques[{i}]` shares a position with an earlier clique; cliques must be disjoint.")
        seen[arr] = True
        out.append(arr.astype(np.int64))
    return out


def collective_factor_graph(unary, transitions, lengths, cliques, potential):
    """The cluster graph of one document: its sentences' chains plus one clique factor per repeated token.

    Parameters
    ----------
    unary : array_like of shape (n_tokens, k)
        Node scores of the document's tokens (start and end scores folded in, as
        :meth:`tractable.crf.ChainCRF.potentials` gives them), sentences in order.
    transitions : array_like of shape (k, k)
        The chain's transition scores.
    lengths : sequence of int
        Tokens per sentence (summing to ``n_tokens``).
    cliques : list of array_like of int
        Disjoint sets of at least two token positions (:func:`repeated_token_cliques`).
    potential : CliquePotential or callable
        The clique potential, or a function of the clique size returning it (the paper's
        ``Potts(0.9 / n)``: ``lambda n: Potts(0.9 / n)``).

    Returns
    -------
    FactorGraph
        ``n_tokens`` variables with ``k`` states; one unary :class:`~tractable.TableFactor` per token,
        one pairwise ``TableFactor`` per pair of neighbours in a sentence, one
        :class:`~tractable.CliqueFactor` per clique. Its score is the document's collective score
        (Eq. 1 of [1]_ with the cliques' potentials).
    """
    u, tr, offsets = _check_doc_model(unary, transitions, lengths)
    cl = _check_cliques(cliques, u.shape[0])
    return _graph(u, tr, offsets, cl, [_clique_potential(potential, c.size) for c in cl])


def _graph(u, tr, offsets, cliques, pots):
    from .. import CliqueFactor, FactorGraph, TableFactor

    n_tok, k = u.shape
    fg = FactorGraph([k] * n_tok)
    for t in range(n_tok):
        fg.add_factor(TableFactor([t], u[t]))
    inner = np.ones(n_tok, dtype=bool)
    inner[offsets[:-1]] = False
    for t in np.flatnonzero(inner).tolist():
        fg.add_factor(TableFactor([t - 1, t], tr))
    for c, pot in zip(cliques, pots):
        fg.add_factor(CliqueFactor(c, pot, n_states=k))
    return fg


def _chain_score(u, tr, offsets, labels) -> float:
    inner = np.ones(labels.size, dtype=bool)
    inner[offsets[:-1]] = False
    t = np.flatnonzero(inner)
    return float(u[np.arange(labels.size), labels].sum() + tr[labels[t - 1], labels[t]].sum())


@dataclass(frozen=True)
class CollectiveMAPResult(MAPResult):
    """The result of :func:`collective_map`: a labelling of one document and its collective score.

    Attributes
    ----------
    assignment : ndarray of shape (n_tokens,), int64
        The label (index in :data:`CONLL_TAGS`, or state of the chain model) of every token (read-only).
    score : float
        Its collective score: the chains' scores plus the cliques' potentials.
    chain_score : float
        The chains' part of ``score``.
    n_cliques : int
    time, method, converged, n_iter, status, message
        As in every result; ``method`` is ``"reduced"`` or ``"full"``, ``n_iter`` and ``converged`` those of
        max-product belief propagation (``0`` and ``True``, status ``"optimal"``, for a document without
        cliques: Viterbi is exact).
    """

    chain_score: float
    n_cliques: int


def _reduced_graph(u, tr, offsets, cliques, pots):
    """The document's graph over the clique members only, the rest of each chain max-eliminated
    (:func:`tractable.crf.chain._eliminate`): ``(graph, members)`` with graph variable ``i`` the token
    ``members[i]``."""
    from .. import CliqueFactor, FactorGraph, TableFactor
    from ..crf.chain import _eliminate

    members = np.sort(np.concatenate(cliques))
    index = np.full(u.shape[0], -1, dtype=np.int64)
    index[members] = np.arange(members.size)
    k = u.shape[1]
    fg = FactorGraph([k] * members.size)
    sent = np.searchsorted(offsets, members, side="right") - 1
    cuts = np.flatnonzero(np.diff(sent)) + 1
    for group in np.split(np.arange(members.size), cuts):
        s = int(sent[group[0]])
        lo = int(offsets[s])
        un, pw = _eliminate(u[lo : int(offsets[s + 1])], tr, members[group] - lo)
        for i, v in enumerate(group.tolist()):
            fg.add_factor(TableFactor([v], un[i]))
        for i in range(len(group) - 1):
            fg.add_factor(TableFactor([int(group[i]), int(group[i + 1])], pw[i]))
    for c, pot in zip(cliques, pots):
        fg.add_factor(CliqueFactor(index[c], pot, n_states=k))
    return fg, members


#: ``collective_map(method=...)``: the graph that max-product runs on
COLLECTIVE_METHODS = ("reduced", "full")


def collective_map(
    unary,
    transitions,
    lengths,
    cliques,
    potential,
    *,
    method: str = "reduced",
    max_iter: int = 100,
    tol: float = 1e-6,
    damping: float = 0.0,
) -> CollectiveMAPResult:
    """The collective MAP labelling of one document by max-product belief propagation.

    Sentences without a clique member are decoded exactly by Viterbi (:func:`tractable.crf.chain_map`).
    The others and the cliques form a cluster graph solved by :func:`tractable.bp.loopy` with
    ``task="map"``, the clique messages from the clique MAP algorithms (alpha-pass max-marginals):

    * ``method="reduced"`` (default): the chains' tokens outside the cliques are first max-eliminated,
      exactly (a sentence becomes unary scores on its clique members and one ``k x k`` table between
      consecutive members: what its chain cluster sends them), so belief propagation runs over the
      clique members only; the other tokens are then decoded by Viterbi with the members clamped.
      The same model as ``"full"``, with a graph about ten times smaller and a diameter that does not
      grow with the sentences' lengths.
    * ``method="full"``: on :func:`collective_factor_graph` (every token of those sentences a variable).

    Of the two labellings, Viterbi's and belief propagation's decoding, the one with the higher
    collective score is returned: collective inference never scores below the chains alone. When
    max-product stops at ``max_iter`` without converging, the result says so (``converged=False``,
    ``status="max_iter_reached"``) and a :class:`~tractable.ConvergenceWarning` is issued.

    Parameters
    ----------
    unary, transitions, lengths, cliques, potential
        As :func:`collective_factor_graph`.
    method : {"reduced", "full"}, default "reduced"
    max_iter, tol, damping
        Options of :func:`tractable.bp.loopy` (non-convergence is reported in the result, not warned).

    Returns
    -------
    CollectiveMAPResult
    """
    from .. import ConvergenceWarning
    from .._validate import check_choice
    from ..bp import loopy
    from ..crf.chain import chain_map

    t0 = time.perf_counter()
    check_choice(method, "method", COLLECTIVE_METHODS)
    u, tr, offsets = _check_doc_model(unary, transitions, lengths)
    n_tok, k = u.shape
    cl = _check_cliques(cliques, n_tok)
    lens = np.diff(offsets)
    labels, chain_scores = chain_map(u, tr, lengths=lens)
    if not cl:
        s = float(chain_scores.sum())
        msg = stop_message("optimal", "collective_map", 0, "no clique: Viterbi on every sentence")
        return CollectiveMAPResult(
            frozen_array(labels), s, s, 0, time=time.perf_counter() - t0, method=method, message=msg
        )
    pots = [_clique_potential(potential, c.size) for c in cl]
    sent_of = np.repeat(np.arange(lens.size), lens)
    touched = np.zeros(lens.size, dtype=bool)
    for c in cl:
        touched[sent_of[c]] = True
    keep = np.flatnonzero(touched)
    rows = np.concatenate([np.arange(offsets[s], offsets[s + 1]) for s in keep])
    sub_off = np.concatenate([[0], np.cumsum(lens[keep])]).astype(np.int64)
    index = np.full(n_tok, -1, dtype=np.int64)
    index[rows] = np.arange(rows.size)
    sub_cl = [index[c] for c in cl]
    if method == "full":
        fg, members = _graph(u[rows], tr, sub_off, sub_cl, pots), None
    else:
        fg, members = _reduced_graph(u[rows], tr, sub_off, sub_cl, pots)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = loopy(fg, task="map", max_iter=max_iter, tol=tol, damping=damping)
    found = np.asarray(res.assignment)
    if members is not None:  # the eliminated tokens: Viterbi with the members clamped
        clamped = u[rows].copy()
        clamped[members] = np.where(np.arange(k)[None, :] == found[:, None], clamped[members], -np.inf)
        found = chain_map(clamped, tr, lengths=lens[keep])[0]
    sub_u = u[rows]
    bp_score = _chain_score(sub_u, tr, sub_off, found) + sum(
        float(p(np.bincount(found[c], minlength=k))) for p, c in zip(pots, sub_cl)
    )
    vit = labels[rows]
    vit_score = _chain_score(sub_u, tr, sub_off, vit) + sum(
        float(p(np.bincount(vit[c], minlength=k))) for p, c in zip(pots, sub_cl)
    )
    if bp_score > vit_score:
        labels = labels.copy()
        labels[rows] = found
    chain = _chain_score(u, tr, offsets, labels)
    clique_part = sum(float(p(np.bincount(labels[c], minlength=k))) for p, c in zip(pots, cl))
    converged = bool(res.converged)
    status = CONVERGED if converged else MAX_ITER_REACHED
    msg = stop_message(status, "collective_map", int(res.n_iter), f"max-product belief propagation, {len(cl)} cliques")
    if not converged:
        warn_stopped(msg + "; the better of its decoding and Viterbi's is returned (raise `max_iter`)")
    return CollectiveMAPResult(
        frozen_array(labels),
        chain + clique_part,
        chain,
        len(cl),
        time=time.perf_counter() - t0,
        method=method,
        converged=converged,
        n_iter=int(res.n_iter),
        status=status,
        message=msg,
    )
