"""Collective named-entity extraction on CoNLL-2003 (Gupta, Diwan and Sarawagi 2007, Sec. 2.1).

A linear-chain CRF labels each sentence on its own; then, in each document, all occurrences of a repeated
capitalized token are tied by a clique whose majority potential pulls them toward one label, and max-product
belief propagation (``tractable.bp.loopy``, clique messages by alpha-pass) finds the document's labelling.

Trains on the first 250 documents of ``eng.train`` (about a minute), chooses the clique strength on half of
the ``eng.testa`` documents and reports entity F1 on the other half. The data (research use only) is read
from ``$TRACTABLE_CONLL_DIR`` or ``../shared/data/conll2003``; without it the script says so and stops.
"""

import warnings

import numpy as np

from tractable import ConvergenceWarning
from tractable.clique import LinearMajority
from tractable.crf import ChainCRF
from tractable.datasets.conll2003 import (
    CONLL_TAGS,
    NERFeaturizer,
    collective_map,
    conll2003_available,
    load_conll2003,
    majority_weights,
    repeated_token_cliques,
    span_f1,
    tag_ids,
)

if not conll2003_available("train", "testa"):
    print("CoNLL-2003 (eng.train, eng.testa) not found: set TRACTABLE_CONLL_DIR to its folder. Nothing to show.")
    raise SystemExit(0)

train = load_conll2003("train")[:250]
test = load_conll2003("testa")
sentences = [s for d in train for s in d.sentences]
featurizer = NERFeaturizer()
X, lengths = featurizer.fit_transform(sentences)
y = np.concatenate([tag_ids(s.tags) for s in sentences])
crf = ChainCRF(C=5.0, max_iter=200).fit(X, y, lengths=lengths)
print(f"chain CRF: {len(sentences)} sentences, {X.shape[1]} features, {crf.fit_time_:.0f} s, {crf.n_iter_} iterations")

# max-product may stop at its iteration budget on a few documents; collective_map then returns the better of
# its decoding and Viterbi's, and warns: quiet here
warnings.simplefilter("ignore", ConvergenceWarning)
W = majority_weights(train)  # log P(member label | majority label of its clique), from the training labels
models = []  # per test document: node scores, transitions, sentence lengths, cliques
for doc in test:
    Xd, Ld = featurizer.transform(list(doc.sentences))
    pot = crf.potentials(Xd, lengths=Ld)
    models.append((pot.unary, pot.transitions, Ld, repeated_token_cliques(doc)))


def f1(docs, strength):
    """Entity F1 over documents ``docs``: the chain alone (strength 0) or with majority cliques."""
    true, pred = [], []
    for i in docs:
        unary, trans, lens, cliques = models[i]
        res = collective_map(unary, trans, lens, cliques if strength else [], LinearMajority(strength * W))
        bounds = np.concatenate([[0], np.cumsum(lens)])
        pred += [[CONLL_TAGS[t] for t in res.assignment[a:b]] for a, b in zip(bounds[:-1], bounds[1:])]
        true += [list(s.tags) for s in test[i].sentences]
    return 100 * span_f1(true, pred).f1


tune, held_out = range(0, len(test), 2), range(1, len(test), 2)
grid = (0.1, 0.25, 0.5, 1.0)
best = max(grid, key=lambda s: f1(tune, s))
print(f"clique strength chosen on {len(tune)} documents: {best}")
f1_chain, f1_joint = f1(held_out, 0), f1(held_out, best)
print(f"entity F1 on the other {len(held_out)} documents: chain {f1_chain:.2f}, chain + cliques {f1_joint:.2f}")

# one token the cliques relabelled, in its sentence
for i in held_out:
    unary, trans, lens, cliques = models[i]
    alone = collective_map(unary, trans, lens, [], LinearMajority(W)).assignment
    joint = collective_map(unary, trans, lens, cliques, LinearMajority(best * W)).assignment
    members = np.concatenate(cliques) if cliques else np.zeros(0, dtype=int)
    changed = members[alone[members] != joint[members]]
    if changed.size:
        t = int(changed[0])
        tokens, gold = test[i].tokens, [g for s in test[i].sentences for g in s.tags]
        clique = next(c for c in cliques if t in c)
        print(
            f"document {i}: {tokens[t]!r} (token {t}) chain says {CONLL_TAGS[alone[t]]}, with its {clique.size} "
            f"occurrences tied: {CONLL_TAGS[joint[t]]} (true: {gold[t]}); the others are "
            + ", ".join(f"{CONLL_TAGS[alone[j]]}" for j in clique if j != t)
        )
        break
