"""CoNLL-2003 reader, span F1, the linear-chain CRF and collective extraction (Gupta et al. 2007, Sec. 2.1).

Everything runs on small synthetic files and documents; the real data is never needed here.
"""

from __future__ import annotations

import itertools
import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from scipy.optimize import check_grad
from scipy.special import logsumexp

from tractable.crf import ChainCRF, chain_map
from tractable.crf.chain import (
    _eliminate,
    _eliminate_python,
    _fb_log,
    _forward_backward,
    _forward_backward_python,
    _Objective,
)
from tractable.datasets import conll2003 as conll
from tractable.datasets.conll2003 import (
    CONLL_TAGS,
    Document,
    NERFeaturizer,
    Sentence,
    collective_factor_graph,
    collective_map,
    conll2003_available,
    entity_spans,
    iob1_to_iob2,
    load_conll2003,
    majority_weights,
    repeated_token_cliques,
    span_f1,
    tag_ids,
)

IOB1_FILE = """-DOCSTART- -X- O O

EU NNP I-NP I-ORG
rejects VBZ I-VP O
German JJ I-NP I-MISC
call NN I-NP O
. . O O

Peter NNP I-NP I-PER
Blackburn NNP I-NP I-PER
Smith NNP B-NP B-PER

-DOCSTART- -X- O O

-DOCSTART- -X- O O

BRUSSELS NNP I-NP I-LOC
1996-08-22 CD I-NP O
"""


def _write(tmp_path, text, name="eng.testa"):
    p = tmp_path / name
    p.write_text(text)
    return p


# --------------------------------------------------------------------------- reader
def test_reader_converts_iob1_and_splits_documents(tmp_path):
    docs = load_conll2003(_write(tmp_path, IOB1_FILE))
    assert len(docs) == 2  # the empty document between two -DOCSTART- lines is dropped
    assert [len(d.sentences) for d in docs] == [2, 1]
    s0, s1 = docs[0].sentences
    assert s0.tokens == ("EU", "rejects", "German", "call", ".")
    assert s0.tags == ("B-ORG", "O", "B-MISC", "O", "O")
    assert s0.pos == ("NNP", "VBZ", "JJ", "NN", ".")
    assert s0.chunks == ("B-NP", "B-VP", "B-NP", "I-NP", "O")
    # IOB1: B- only separates two adjacent entities of one type; IOB2 starts every entity with B-
    assert s1.tags == ("B-PER", "I-PER", "B-PER")
    assert (docs[0].line, s0.line, s1.line) == (1, 3, 9)
    assert docs[1].sentences[0].tags == ("B-LOC", "O") and docs[1].line == 15
    assert docs[0].n_tokens == 8 and docs[0].lengths == [5, 3]
    assert docs[0].tokens[5:] == ["Peter", "Blackburn", "Smith"]


def test_reader_leaves_iob2_unchanged_and_reads_without_docstart(tmp_path):
    text = "A NN B-NP B-PER\nB NN I-NP I-PER\nC NN B-NP B-PER\n\nD NN B-NP O\n"  # no -DOCSTART-, no final blank
    (doc,) = load_conll2003(_write(tmp_path, text))
    assert doc.line == 0
    assert [s.tags for s in doc.sentences] == [("B-PER", "I-PER", "B-PER"), ("O",)]


@pytest.mark.parametrize(
    ("text", "line", "what"),
    [
        ("-DOCSTART- -X- O O\n\nEU NNP I-ORG\n", 3, "expected 4 whitespace-separated columns"),
        ("EU NNP I-NP I-ORG\nx y z w v\n", 2, "expected 4 whitespace-separated columns"),
        ("EU NNP I-NP X-ORG\n", 1, "the NER tag must be 'O' or 'B-TYPE' / 'I-TYPE'; got 'X-ORG'"),
        ("EU NNP I-NP B-\n", 1, "the NER tag must be"),
        ("EU NNP NP B-ORG\n", 1, "the chunk tag must be"),
    ],
)
def test_reader_names_file_and_line_of_malformed_lines(tmp_path, text, line, what):
    p = _write(tmp_path, text)
    with pytest.raises(ValueError, match=re.escape(f"{p}:{line}: {what}")):
        load_conll2003(p)


def test_reader_refuses_non_utf8(tmp_path):
    p = tmp_path / "bad"
    p.write_bytes(b"EU NNP I-NP I-ORG\nM\xfcnchen NNP I-NP I-LOC\n")
    with pytest.raises(ValueError, match=re.escape(f"{p}:2: the line is not valid UTF-8")):
        load_conll2003(p)


def test_reader_missing_files_and_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACTABLE_CONLL_DIR", str(tmp_path))
    assert not conll2003_available("testa")
    with pytest.raises(FileNotFoundError, match=r"not shipped with tractable .* never downloaded"):
        load_conll2003("testa")
    _write(tmp_path, IOB1_FILE, "eng.testa")
    assert conll2003_available("testa") and not conll2003_available("train", "testa")
    with pytest.raises(ValueError, match=r"`splits` must be among 'train', 'testa', 'testb'; got 'nope'"):
        conll2003_available("nope")  # a typo is not a missing file
    assert len(load_conll2003("testa")) == 2  # a split name reads eng.<split> from $TRACTABLE_CONLL_DIR
    with pytest.raises(FileNotFoundError, match="not found"):
        load_conll2003(tmp_path / "nothing")
    with pytest.raises(TypeError, match=re.escape("`path` must be a file path or one of 'train'")):
        load_conll2003(3)


def test_data_dir_default_is_beside_the_project_root(monkeypatch):
    monkeypatch.delenv("TRACTABLE_CONLL_DIR", raising=False)
    assert conll._PROJECT_ROOT.joinpath("src", "tractable", "datasets", "conll2003.py").is_file()
    assert conll._data_dir() == conll._PROJECT_ROOT.parent / "shared" / "data" / "conll2003"


def test_iob1_to_iob2_and_tag_ids():
    assert iob1_to_iob2(["I-LOC", "B-LOC", "I-LOC", "I-PER", "O", "I-PER"]) == [
        "B-LOC",
        "B-LOC",
        "I-LOC",
        "B-PER",
        "O",
        "B-PER",
    ]
    assert iob1_to_iob2([]) == []
    with pytest.raises(ValueError, match=re.escape("`tags[1]` must be 'O' or 'B-TYPE' / 'I-TYPE'; got 'PER'")):
        iob1_to_iob2(["O", "PER"])
    assert tag_ids(["O", "B-PER", "I-MISC"]).tolist() == [0, 1, 8]
    with pytest.raises(ValueError, match="IOB2 tags of CONLL_TAGS"):
        tag_ids(["B-FOO"])


# --------------------------------------------------------------------------- span F1
def test_entity_spans_reads_ill_formed_sequences_as_conlleval():
    assert entity_spans(["O", "I-PER", "I-PER", "I-LOC", "B-LOC", "I-LOC", "O", "B-ORG"]) == [
        ("PER", 1, 3),
        ("LOC", 3, 4),
        ("LOC", 4, 6),
        ("ORG", 7, 8),
    ]
    assert entity_spans([]) == []
    with pytest.raises(ValueError, match=re.escape("`tags[0]` must be 'O' or 'B-TYPE' / 'I-TYPE'; got 'B'")):
        entity_spans(["B"])


def test_span_f1_matches_seqeval():
    seqeval = pytest.importorskip("seqeval.metrics")
    rng = np.random.default_rng(0)
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "I-ORG"]  # I-ORG without B-: ill-formed on purpose
    for _ in range(30):
        n_sent = int(rng.integers(1, 6))
        y_true = [list(rng.choice(tags, size=int(rng.integers(1, 9)))) for _ in range(n_sent)]
        y_pred = [[t if rng.random() < 0.7 else str(rng.choice(tags)) for t in s] for s in y_true]
        ours = span_f1(y_true, y_pred)
        # seqeval's default (conlleval) mode, micro-averaged; it returns 0 where a ratio is undefined
        with warnings.catch_warnings():  # seqeval warns on sentences without entities
            warnings.simplefilter("ignore")
            assert_allclose(ours.f1, seqeval.f1_score(y_true, y_pred), atol=1e-12)  # same counts: exact
            assert_allclose(ours.precision, seqeval.precision_score(y_true, y_pred), atol=1e-12)
            assert_allclose(ours.recall, seqeval.recall_score(y_true, y_pred), atol=1e-12)


def test_span_f1_counts_and_errors():
    s = span_f1([["B-PER", "I-PER", "O"], ["B-LOC"]], [["B-PER", "O", "O"], ["B-LOC"]])
    assert (s.n_true, s.n_pred, s.n_correct) == (2, 2, 1)
    assert s.f1 == 0.5
    assert span_f1([["O"]], [["O"]]).f1 == 0.0
    with pytest.raises(ValueError, match="same number of sentences; got 1 and 2"):
        span_f1([["O"]], [["O"], ["O"]])
    with pytest.raises(ValueError, match=re.escape("`y_true[0]` and `y_pred[0]` must be tag sequences of the same")):
        span_f1([["O", "O"]], [["O"]])
    with pytest.raises(ValueError, match=re.escape("`y_pred[0][1]` must be 'O' or 'B-TYPE'")):
        span_f1([["O", "O"]], [["O", "PER"]])


# --------------------------------------------------------------------------- the chain CRF against enumeration
def _enumerate(unary, trans, start, end):
    """Every labelling of one chain with its score: (labels (K^n, n), scores (K^n,))."""
    n, k = unary.shape
    ys = np.array(list(itertools.product(range(k), repeat=n)))
    sc = unary[np.arange(n), ys].sum(axis=1) + start[ys[:, 0]] + end[ys[:, -1]]
    if n > 1:
        sc += trans[ys[:, :-1], ys[:, 1:]].sum(axis=1)
    return ys, sc


def _random_chains(rng, k, lengths, scale=1.0):
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return (
        rng.normal(size=(offsets[-1], k)) * scale,
        offsets,
        rng.normal(size=(k, k)) * scale,
        rng.normal(size=k),
        rng.normal(size=k),
    )


@pytest.mark.parametrize("seed", range(5))
def test_forward_backward_matches_enumeration(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 4))
    lengths = rng.integers(1, 5, size=3)
    unary, offsets, trans, start, end = _random_chains(rng, k, lengths)
    marg, pair, logz = _forward_backward(unary, offsets, trans, start, end)
    exp_pair = np.zeros((k, k))
    for s in range(len(lengths)):
        u = unary[offsets[s] : offsets[s + 1]]
        ys, sc = _enumerate(u, trans, start, end)
        z = logsumexp(sc)
        p = np.exp(sc - z)
        # enumeration sums at most 81 terms: agreement to rounding (1e-12 absolute on values of order 1)
        assert_allclose(logz[s], z, rtol=1e-12, atol=1e-12)
        node = np.stack([np.bincount(ys[:, t], weights=p, minlength=k) for t in range(len(u))])
        assert_allclose(marg[offsets[s] : offsets[s + 1]], node, atol=1e-12)
        for t in range(1, len(u)):
            np.add.at(exp_pair, (ys[:, t - 1], ys[:, t]), p)
    assert_allclose(pair, exp_pair, atol=1e-12)
    # the readable twin and the log-space kernel give the same outputs
    for out in (
        _forward_backward_python(unary, offsets, trans, start, end),
        _log_kernel(unary, offsets, trans, start, end),
    ):
        for a, b in zip(out, (marg, pair, logz)):
            assert_allclose(a, b, atol=1e-12)


def _log_kernel(unary, offsets, trans, start, end):
    n, k = unary.shape
    marg, pair, logz = np.empty((n, k)), np.zeros((k, k)), np.empty(len(offsets) - 1)
    assert _fb_log(unary, offsets, trans, start, end, marg, pair, logz)
    return marg, pair, logz


def test_forward_backward_falls_back_to_log_space_on_underflow():
    # transition scores 2000 apart: exp(T - max T) underflows to 0 and the scaled kernel gives up
    rng = np.random.default_rng(1)
    unary, offsets, _, start, end = _random_chains(rng, 3, [4, 2])
    trans = np.array([[0.0, -2000.0, 0.0], [0.0, 0.0, -2000.0], [-2000.0, 0.0, 0.0]])
    unary[1] = [0.0, 3000.0, 0.0]  # forces state 1 at position 1, reachable only by the -2000 edge from 0
    unary[0] = [3000.0, 0.0, 0.0]
    marg, pair, logz = _forward_backward(unary, offsets, trans, start, end)
    ref = _forward_backward_python(unary, offsets, trans, start, end)
    for a, b in zip((marg, pair, logz), ref):
        assert_allclose(a, b, rtol=1e-12, atol=1e-9)  # log Z near 4000: relative rounding of the sums
    assert np.all(np.isfinite(logz))


@pytest.mark.parametrize("seed", range(5))
def test_chain_map_matches_enumeration(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 4))
    lengths = rng.integers(1, 5, size=3)
    unary, offsets, trans, _, _ = _random_chains(rng, k, lengths)
    labels, scores = chain_map(unary, trans, lengths=lengths)
    zero = np.zeros(k)
    for s in range(len(lengths)):
        u = unary[offsets[s] : offsets[s + 1]]
        ys, sc = _enumerate(u, trans, zero, zero)
        assert_allclose(scores[s], sc.max(), atol=1e-12)  # the MAP value, not the argmax (ties)
        y = labels[offsets[s] : offsets[s + 1]]
        own = u[np.arange(len(u)), y].sum() + trans[y[:-1], y[1:]].sum()
        assert_allclose(own, sc.max(), atol=1e-12)


def test_chain_map_errors():
    with pytest.raises(ValueError, match=re.escape("`transitions` must have shape (2, 2); got (3, 3)")):
        chain_map(np.zeros((2, 2)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match=re.escape("`lengths` must sum to the number of rows of `unary` (2); got 3")):
        chain_map(np.zeros((2, 2)), np.zeros((2, 2)), lengths=[1, 2])
    with pytest.raises(ValueError, match="every labelling of sequence 0 scores -inf"):
        chain_map(np.full((1, 2), -np.inf), np.zeros((2, 2)))
    with pytest.raises(ValueError, match=re.escape("`unary` must not contain NaN")):
        chain_map(np.full((1, 2), np.nan), np.zeros((2, 2)))


def _tiny_data(rng, n_seq=4, d=3, k=3):
    lengths = rng.integers(1, 4, size=n_seq)
    X = (rng.random((int(lengths.sum()), d)) < 0.5).astype(float)
    y = rng.integers(0, k, size=int(lengths.sum()))
    return X, y, lengths


@pytest.mark.parametrize("seed", range(3))
def test_log_likelihood_and_gradient_match_enumeration(seed):
    rng = np.random.default_rng(seed)
    k, d, C = 3, 3, 2.0
    X, y, lengths = _tiny_data(rng, d=d, k=k)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    obj = _Objective(sp.csr_matrix(X), offsets, y, k, C)
    w = rng.normal(size=obj.n_weights())
    W, T, s, e = obj.split(w)
    # by enumeration: log-likelihood and gradient (observed minus expected features) of every sequence
    ll, grad = 0.0, np.zeros_like(w)
    for n in range(len(lengths)):
        x, yy = X[offsets[n] : offsets[n + 1]], y[offsets[n] : offsets[n + 1]]
        ys, sc = _enumerate(x @ W, T, s, e)
        p = np.exp(sc - logsumexp(sc))
        obs = np.flatnonzero((ys == yy).all(axis=1))[0]
        ll += sc[obs] - logsumexp(sc)

        def feats(lab, x=x):
            gw = x.T @ np.eye(k)[lab]
            gt = np.zeros((k, k))
            np.add.at(gt, (lab[:-1], lab[1:]), 1.0)
            return np.concatenate([gw.ravel(), gt.ravel(), np.eye(k)[lab[0]], np.eye(k)[lab[-1]]])

        grad += feats(ys[obs]) - sum(pi * feats(lab) for pi, lab in zip(p, ys))
    value, g = obj(w)
    n_seq = len(lengths)
    assert_allclose(value, (-ll + 0.5 * w @ w / C) / n_seq, rtol=1e-12)
    assert_allclose(g, (-grad + w / C) / n_seq, atol=1e-12)
    # and finite differences agree with the analytic gradient (central-difference error ~1e-7)
    assert check_grad(lambda v: obj(v)[0], lambda v: obj(v)[1], w) < 1e-5

    crf = ChainCRF(C=C).fit(X, y, lengths=lengths)
    crf.state_weights_, crf.transition_weights_, crf.start_weights_, crf.end_weights_ = W, T, s, e
    assert_allclose(crf.log_likelihood(X, y, lengths=lengths).sum(), ll, rtol=1e-12)


def test_fit_reaches_the_optimum_and_predicts_its_map():
    rng = np.random.default_rng(3)
    X, y, lengths = _tiny_data(rng, n_seq=12)
    crf = ChainCRF(C=1.0, tol=1e-10).fit(X, y, lengths=lengths)
    assert crf.converged_ and crf.n_iter_ >= 1 and crf.fit_time_ > 0
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    obj = _Objective(sp.csr_matrix(X), offsets, y, 3, 1.0)
    w = np.concatenate(
        [crf.state_weights_.ravel(), crf.transition_weights_.ravel(), crf.start_weights_, crf.end_weights_]
    )
    assert np.abs(obj(w)[1]).max() < 1e-5  # stationary: the objective is strictly convex
    # MAP of the fitted model equals enumeration's best score
    pot = crf.potentials(X, lengths=lengths)
    pred = crf.predict(X, lengths=lengths)
    for n in range(len(lengths)):
        u = pot.unary[offsets[n] : offsets[n + 1]]
        _, sc = _enumerate(u, pot.transitions, np.zeros(3), np.zeros(3))
        yy = pred[offsets[n] : offsets[n + 1]]
        assert_allclose(u[np.arange(len(u)), yy].sum() + pot.transitions[yy[:-1], yy[1:]].sum(), sc.max(), atol=1e-12)
    # list input and lengths input are the same model; marginals sum to one
    parts = [X[offsets[n] : offsets[n + 1]] for n in range(len(lengths))]
    labels = [y[offsets[n] : offsets[n + 1]] for n in range(len(lengths))]
    again = ChainCRF(C=1.0, tol=1e-10).fit([sp.csr_matrix(p) for p in parts], labels)
    assert_allclose(again.state_weights_, crf.state_weights_, atol=1e-12)
    assert [p.tolist() for p in again.predict(parts)] == [pred[offsets[n] : offsets[n + 1]].tolist() for n in range(12)]
    assert_allclose(crf.predict_marginals(X, lengths=lengths).sum(axis=1), 1.0, atol=1e-12)
    assert crf.score(X, y, lengths=lengths) < 0


def test_fit_stopped_early_warns():
    from tractable import ConvergenceWarning

    X, y, lengths = _tiny_data(np.random.default_rng(4), n_seq=6)
    with pytest.warns(ConvergenceWarning, match="ChainCRF: L-BFGS-B: stopped at the iteration limit"):
        crf = ChainCRF(max_iter=1).fit(X, y, lengths=lengths)
    assert not crf.converged_ and crf.n_iter_ == 1


def test_chain_crf_errors():
    X, y = np.eye(3), np.array([0, 1, 1])
    with pytest.raises(ValueError, match=re.escape("`C` must be a finite number > 0; got 0")):
        ChainCRF(C=0).fit(X, y, lengths=[3])
    with pytest.raises(ValueError, match="give `lengths`"):
        ChainCRF().fit(X, y)
    with pytest.raises(ValueError, match=re.escape("`lengths` must sum to the number of rows of `X` (3); got 2")):
        ChainCRF().fit(X, y, lengths=[2])
    with pytest.raises(ValueError, match=re.escape("`lengths` must contain positive integers; got 0 at index 1")):
        ChainCRF().fit(X, y, lengths=[3, 0])
    with pytest.raises(ValueError, match=re.escape("`y` must contain labels in [0, 1]; got 2 at token 2")):
        ChainCRF(n_states=2).fit(X, [0, 1, 2], lengths=[3])
    with pytest.raises(ValueError, match=re.escape("`y[0]` must have one label per token (3); got 2")):
        ChainCRF().fit([X], [[0, 1]])
    with pytest.raises(ValueError, match=re.escape("`X[1]` must have at least one row")):
        ChainCRF().fit([X, np.zeros((0, 3))], [y, []])
    with pytest.raises(ValueError, match=re.escape("`X` must have 3 columns (as in fit); got 2")):
        ChainCRF().fit(X, y, lengths=[3]).predict(np.eye(2), lengths=[2])
    with pytest.raises(ValueError, match=re.escape("`time_limit` must be None or a number > 0")):
        ChainCRF(time_limit=-1).fit(X, y, lengths=[3])


# --------------------------------------------------------------------------- features and cliques
def _sentence(words, tags):
    return Sentence(tuple(words), ("NNP",) * len(words), ("B-NP",) * len(words), tuple(tags))


def test_featurizer_indexes_training_features():
    s1 = _sentence(["Paris", "is", "big"], ["B-LOC", "O", "O"])
    s2 = _sentence(["Paris"], ["B-LOC"])
    fz = NERFeaturizer(min_count=2)
    X, lengths = fz.fit_transform([s1, s2])
    assert lengths.tolist() == [3, 1] and X.shape == (4, len(fz.vocabulary_))
    assert {"bias", "w=Paris", "title", "sh=Xx"} <= set(fz.vocabulary_) and "w=is" not in fz.vocabulary_
    assert X[0, fz.vocabulary_["w=Paris"]] == 1 and X[1, fz.vocabulary_["w=Paris"]] == 0
    X2, _ = fz.transform([_sentence(["Unseen-9"], ["O"])])  # unseen features are dropped
    assert X2.nnz == sum(f in fz.vocabulary_ for f in fz.token_features(_sentence(["Unseen-9"], ["O"]))[0])
    with pytest.raises(ValueError, match="`min_count` must be an integer >= 1; got 0"):
        NERFeaturizer(min_count=0)
    with pytest.raises(ValueError, match="not fitted yet"):
        NERFeaturizer().transform([s1])


def test_repeated_token_cliques_and_majority_weights():
    doc = Document(
        (
            _sentence(["Jordan", "said", "Jordan", "won"], ["B-PER", "O", "B-PER", "O"]),
            _sentence(["In", "Jordan", "said", "In"], ["O", "B-LOC", "O", "O"]),
        )
    )
    cliques = repeated_token_cliques(doc)
    assert [c.tolist() for c in cliques] == [[0, 2, 5], [4, 7]]  # "said" is lower case: no clique
    assert repeated_token_cliques(doc, min_count=3)[0].tolist() == [0, 2, 5]
    W = majority_weights([doc], smoothing=0.5)
    assert W.shape == (9, 9)
    assert_allclose(logsumexp(W, axis=1), 0.0, atol=1e-12)  # each row a distribution over member labels
    per, loc = CONLL_TAGS.index("B-PER"), CONLL_TAGS.index("B-LOC")
    # "Jordan": majority B-PER, members B-PER, B-PER, B-LOC; "In": O, O
    assert W[per, per] > W[per, loc] > W[per, 0] == W[per, 2]
    assert_allclose(np.exp(W[per, [per, loc]]), np.array([2.5, 1.5]) / (3 + 9 * 0.5), rtol=1e-12)
    with pytest.raises(ValueError, match="`min_count` must be an integer >= 2; got 1"):
        repeated_token_cliques(doc, min_count=1)


# --------------------------------------------------------------------------- collective inference
def _clique_bp_available() -> bool:
    from tractable import CliqueFactor, FactorGraph
    from tractable.bp import loopy
    from tractable.clique import Potts

    fg = FactorGraph([2, 2])
    fg.add_factor(CliqueFactor([0, 1], Potts(1.0), n_states=2))
    try:
        loopy(fg, task="map", max_iter=2)
    except TypeError as err:
        if "no belief-propagation messages are registered" in str(err):
            return False
        raise
    return True


needs_clique_bp = pytest.mark.skipif(
    not _clique_bp_available(), reason="tractable.bp has no CliqueFactor messages yet (being added)"
)


def _two_sentence_document():
    """'Jordan' twice: sentence 0 says B-PER clearly, sentence 1 leans to B-LOC a little."""
    k = len(CONLL_TAGS)
    per, loc = CONLL_TAGS.index("B-PER"), CONLL_TAGS.index("B-LOC")
    unary = np.full((5, k), -4.0)
    unary[:, 0] = 0.0  # every token: O unless told otherwise
    unary[0, per] = 5.0  # "Jordan said ." / "in Jordan"
    unary[4, loc], unary[4, per], unary[4, 0] = 1.0, 0.6, -3.0
    trans = np.zeros((k, k))
    return unary, trans, [3, 2], [np.array([0, 4])], per, loc


@needs_clique_bp
def test_collective_map_flips_a_token_to_agree():
    from tractable.clique import LinearMajority, Potts

    unary, trans, lengths, cliques, per, loc = _two_sentence_document()
    alone = collective_map(unary, trans, lengths, [], Potts(1.0))
    assert alone.assignment[4] == loc and alone.converged and alone.n_iter == 0 and alone.status == "optimal"
    assert alone.assignment.dtype == np.int64 and not alone.assignment.flags.writeable
    for potential in (lambda n: Potts(2.0 / n), LinearMajority(np.eye(9) * 1.0)):
        res = collective_map(unary, trans, lengths, cliques, potential)
        assert res.assignment[0] == per and res.assignment[4] == per  # the clique pulled the weak one over
        fg = collective_factor_graph(unary, trans, lengths, cliques, potential)
        assert_allclose(res.score, fg.score(res.assignment), atol=1e-9)
        assert res.score >= alone.score and res.n_cliques == 1
        assert res.converged and res.status == "converged" and res.method == "reduced"
        assert_allclose(res.chain_score, unary[np.arange(5), res.assignment].sum(), atol=1e-12)  # transitions 0
    # a weak clique leaves both as they are
    weak = collective_map(unary, trans, lengths, cliques, Potts(0.05))
    assert weak.assignment[4] == loc


@needs_clique_bp
def test_collective_map_warns_when_max_product_stops_early():
    from tractable import ConvergenceWarning
    from tractable.clique import Potts

    rng = np.random.default_rng(0)
    unary, trans = rng.normal(size=(8, 9)), rng.normal(size=(9, 9)) * 3
    cliques = [np.array([0, 2, 5]), np.array([1, 3, 6])]  # a loopy graph
    with pytest.warns(ConvergenceWarning, match="collective_map: stopped at the iteration limit"):
        res = collective_map(unary, trans, [4, 4], cliques, Potts(2.0), max_iter=1)
    assert not res.converged and res.status == "max_iter_reached" and res.n_iter == 1
    viterbi = chain_map(unary, trans, lengths=[4, 4])[0]
    fg = collective_factor_graph(unary, trans, [4, 4], cliques, Potts(2.0))
    assert res.score >= fg.score(viterbi) - 1e-9


@needs_clique_bp
@pytest.mark.parametrize("seed", range(4))
def test_collective_map_against_enumeration(seed):
    from tractable.clique import Potts
    from tractable.exact import infer

    rng = np.random.default_rng(seed)
    k = 9
    unary = rng.normal(size=(5, k)) * 2
    trans = rng.normal(size=(k, k))
    lengths, cliques = [2, 3], [np.array([0, 3])]
    fg = collective_factor_graph(unary, trans, lengths, cliques, Potts(1.0))
    res = collective_map(unary, trans, lengths, cliques, Potts(1.0))
    best = infer(fg, task="map")
    assert_allclose(res.score, fg.score(res.assignment), atol=1e-9)
    assert res.score <= best.score + 1e-9
    viterbi = chain_map(unary, trans, lengths=lengths)[0]
    assert res.score >= fg.score(viterbi) - 1e-9  # never below the chains' own labelling


def test_collective_graph_structure_and_errors():
    from tractable import CliqueFactor, TableFactor
    from tractable.clique import Potts

    unary, trans, lengths, cliques, _, _ = _two_sentence_document()
    fg = collective_factor_graph(unary, trans, lengths, cliques, lambda n: Potts(0.9 / n))
    kinds = [type(f) for f in fg.factors]
    assert kinds.count(TableFactor) == 5 + 3 and kinds.count(CliqueFactor) == 1  # 5 unary, 2 + 1 pairwise
    assert fg.factors[-1].potential == Potts(0.45)
    with pytest.raises(ValueError, match=re.escape("`lengths` must sum to the rows of `unary` (5); got 4")):
        collective_factor_graph(unary, trans, [2, 2], cliques, Potts(1.0))
    with pytest.raises(ValueError, match=re.escape("`cliques[0]` must hold distinct positions in [0, 4]")):
        collective_factor_graph(unary, trans, lengths, [np.array([0, 5])], Potts(1.0))
    with pytest.raises(ValueError, match="shares a position with an earlier clique"):
        collective_factor_graph(unary, trans, lengths, [np.array([0, 1]), np.array([1, 2])], Potts(1.0))
    with pytest.raises(ValueError, match="`potential` must be a tractable.clique.CliquePotential"):
        collective_factor_graph(unary, trans, lengths, cliques, "potts")
    with pytest.raises(ValueError, match=re.escape("`transitions` must have shape (9, 9); got (2, 2)")):
        collective_factor_graph(unary, np.zeros((2, 2)), lengths, cliques, Potts(1.0))


@pytest.mark.parametrize("seed", range(6))
def test_chain_elimination_is_exact(seed):
    # max over the eliminated labels of the chain's score, by enumeration, is the kept model's score
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(1, 7)), 3
    u, tr = rng.normal(size=(n, k)), rng.normal(size=(k, k))
    pos = np.sort(rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False))
    un, pw = _eliminate(u, tr, pos)
    ref = _eliminate_python(u, tr, pos)
    assert_allclose(un, ref[0], atol=1e-12)
    assert_allclose(pw, ref[1], atol=1e-12)
    ys, sc = _enumerate(u, tr, np.zeros(k), np.zeros(k))
    for kept in itertools.product(range(k), repeat=len(pos)):
        best = sc[(ys[:, pos] == kept).all(axis=1)].max()
        own = un[np.arange(len(pos)), kept].sum() + sum(pw[a, kept[a], kept[a + 1]] for a in range(len(pos) - 1))
        assert_allclose(own, best, atol=1e-12)


@needs_clique_bp
def test_reduced_and_full_graphs_agree_on_a_tree():
    # one clique of two tokens in different sentences: the graph is a tree, max-product is exact on both
    from tractable.clique import Potts
    from tractable.exact import infer

    rng = np.random.default_rng(7)
    unary, trans = rng.normal(size=(6, 9)) * 2, rng.normal(size=(9, 9))
    lengths, cliques = [3, 3], [np.array([1, 4])]
    best = infer(collective_factor_graph(unary, trans, lengths, cliques, Potts(1.5)), task="map").score
    for method in ("reduced", "full"):
        res = collective_map(unary, trans, lengths, cliques, Potts(1.5), method=method)
        assert res.converged
        assert_allclose(res.score, best, atol=1e-9)
    with pytest.raises(ValueError, match="`method` must be one of 'reduced', 'full'; got 'fast'"):
        collective_map(unary, trans, lengths, cliques, Potts(1.5), method="fast")
