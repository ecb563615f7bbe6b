"""Small random data for the PSL programs of ``linqs/psl-examples``, in the layout their configurations expect.

The programs in ``tests/psl/programs/<name>/cli/<name>.json`` are the PSL 2.4 configurations of
``linqs/psl-examples`` unchanged. Their data sets are downloaded by ``data/fetchData.sh`` from a server that
is not reachable here, so :func:`generate` writes data of the same shape instead: the same file names (taken
from the configuration), tab-separated arguments, a truth value as the last column of observation and truth
files, no value in target files. Every generator builds a small world (people, papers, drugs, ...) with
the relations its rules join on, so that each program grounds into a non-trivial hinge-loss MRF:

- heads and bodies of the rules find their open atoms among the targets (targets are the candidate
  atoms the rules' guards select, e.g. all ``Rating(U, I)`` of rated pairs);
- observations and targets of one predicate are disjoint; where a hard rule ties two atoms
  (``interacts(D1, D2) = interacts(D2, D1) .``) both are observed with one value, or both are targets;
- categorical predicates under a functional constraint (``HasCat(A, +C) = 1 .``) are observed or
  targeted for all categories of an entity at once.

Programs whose data are in the repository (``simple-acquaintances``) or inline in the configuration
(``smokers``) are copied as they are. ``scale`` multiplies the number of entities (the number of ground
rules grows with its square or cube, depending on the rules).

Run ``python tests/psl/_generate.py OUT [--scale S] [--seed N] [PROGRAM ...]`` to write programs to ``OUT``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np

PROGRAMS_DIR = Path(__file__).resolve().parent / "programs"

PROGRAMS = (
    "citeseer",
    "cora",
    "drug-drug-interaction",
    "entity-resolution",
    "epinions",
    "friendship",
    "imdb-er",
    "jester",
    "knowledge-graph-identification",
    "lastfm",
    "simple-acquaintances",
    "smokers",
    "social-network-analysis",
    "stance-4forums",
    "stance-createdebate",
    "trust-prediction",
    "user-modeling",
    "yelp",
)

PARTITIONS = ("observations", "targets", "truth")

# Rows of one partition: a list of tuples of strings (arguments), with a float last for observations and truth.
Rows = list[tuple]
# Data of one program: lower-case predicate name -> partition -> rows.
Data = dict[str, dict[str, Rows]]


def read_config(path) -> dict:
    """Parse a PSL 2.4 JSON configuration: JSON with whole-line ``#`` and ``//`` comments.

    Parameters
    ----------
    path : str or Path
        The ``.json`` file.

    Returns
    -------
    dict
        The configuration (``rules``, ``predicates``, ``options``).
    """
    lines = Path(path).read_text().splitlines()
    kept = [line for line in lines if not line.lstrip().startswith(("#", "//"))]
    return json.loads("\n".join(kept))


def partition_files(spec, split: str) -> list | None:
    """The data files of one partition of a predicate for ``split``; ``None`` for inline data.

    ``spec`` is the partition's value in the configuration: a list of paths, a list of inline rows (lists),
    or a dict of splits (``{"learn": [...], "infer": [...]}``).
    """
    if isinstance(spec, dict):
        spec = spec.get(split, [])
    if any(isinstance(item, list) for item in spec):
        return None
    return list(spec)


def config_path(program: str) -> Path:
    """The stored configuration of ``program`` (``tests/psl/programs/<program>/cli/<program>.json``)."""
    if program not in PROGRAMS:
        raise ValueError(f"`program` must be one of {', '.join(PROGRAMS)}; got {program!r}")
    return PROGRAMS_DIR / program / "cli" / f"{program}.json"


# --------------------------------------------------------------------------------------------------------------
# Building blocks.


def _ids(n: int, prefix: str = "") -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def _pairs(rng, items, density: float, *, distinct: bool = True) -> list[tuple[str, str]]:
    """Ordered pairs of ``items`` kept with probability ``density`` (no self pairs when ``distinct``)."""
    out = []
    for a, b in itertools.product(items, items):
        if (a != b or not distinct) and rng.random() < density:
            out.append((a, b))
    return out


def _valued(rng, rows, low: float = 0.0, high: float = 1.0) -> Rows:
    """Append a uniform value in ``[low, high]`` (rounded to 4 decimals) to each row."""
    return [(*r, round(float(rng.uniform(low, high)), 4)) for r in rows]


def _ones(rows) -> Rows:
    return [(*r, 1.0) for r in rows]


def _split(rng, rows, observed_fraction: float):
    """Split candidate atoms into (observed, target) lists."""
    mask = rng.random(len(rows)) < observed_fraction
    return [r for r, m in zip(rows, mask) if m], [r for r, m in zip(rows, mask) if not m]


def _open(observed, targets, value: Callable) -> dict:
    """Partitions of an open predicate: observed rows with values, targets, and truth values of the targets."""
    return {
        "observations": [(*r, value(r)) for r in observed],
        "targets": list(targets),
        "truth": [(*r, value(r)) for r in targets],
    }


def _bernoulli(rng, p: float = 0.5) -> Callable:
    memo: dict = {}

    def value(row):
        if row not in memo:
            memo[row] = float(rng.random() < p)
        return memo[row]

    return value


def _uniform(rng) -> Callable:
    memo: dict = {}

    def value(row):
        if row not in memo:
            memo[row] = round(float(rng.random()), 4)
        return memo[row]

    return value


def _n(base: int, scale: float) -> int:
    return max(2, int(round(base * scale)))


# --------------------------------------------------------------------------------------------------------------
# One generator per program: (rng, scale) -> Data.


def _collective_classification(rng, scale, n_categories: int) -> Data:
    papers = _ids(_n(40, scale))
    cats = [str(c) for c in range(1, n_categories + 1)]
    label = {p: cats[rng.integers(n_categories)] for p in papers}
    # Homophilous citations: most links join papers of one category.
    links = set()
    for p in papers:
        for _ in range(2):
            same = [q for q in papers if q != p and label[q] == label[p]]
            pool = same if (same and rng.random() < 0.8) else [q for q in papers if q != p]
            links.add((p, pool[rng.integers(len(pool))]))
    observed = [p for p in papers if rng.random() < 0.5]
    targets = [p for p in papers if p not in observed]
    return {
        "link": {"observations": _ones(sorted(links))},
        "hascat": {
            "observations": [(p, c, float(label[p] == c)) for p in observed for c in cats],
            "targets": [(p, c) for p in targets for c in cats],
            "truth": [(p, c, float(label[p] == c)) for p in targets for c in cats],
        },
    }


def _citeseer(rng, scale):
    return _collective_classification(rng, scale, 6)


def _cora(rng, scale):
    return _collective_classification(rng, scale, 7)


def _drug_drug_interaction(rng, scale) -> Data:
    drugs = _ids(_n(10, scale))
    data: Data = {}
    for name in ("atcsimilarity", "chemicalsimilarity", "distsimilarity", "gosimilarity", "ligandsimilarity"):
        data[name] = {"observations": _valued(rng, _pairs(rng, drugs, 0.3), 0.2, 1.0)}
    for name in ("seqsimilarity", "sideeffectsimilarity"):
        data[name] = {"observations": _valued(rng, _pairs(rng, drugs, 0.3), 0.2, 1.0)}
    data["validinteraction"] = {"observations": _ones(_pairs(rng, drugs, 1.0))}
    # Symmetric interactions: both orders observed with one value, or both targets (hard symmetry rule).
    unordered = [(a, b) for a, b in itertools.combinations(drugs, 2)]
    obs, tgt = _split(rng, unordered, 0.5)
    truth = {pair: float(rng.random() < 0.3) for pair in unordered}

    def both(rows):
        return [r for a, b in rows for r in ((a, b), (b, a))]

    data["interacts"] = {
        "observations": [(a, b, truth[tuple(sorted((a, b), key=int))]) for a, b in both(obs)],
        "targets": both(tgt),
        "truth": [(a, b, truth[tuple(sorted((a, b), key=int))]) for a, b in both(tgt)],
    }
    return data


def _entity_resolution(rng, scale) -> Data:
    authors = _ids(_n(12, scale))
    papers = _ids(_n(8, scale))
    n_blocks = max(2, len(authors) // 4)
    block = {a: str(rng.integers(n_blocks)) for a in authors}
    names = {a: f"name_{a}" for a in authors}
    titles = {p: f"title_{p}" for p in papers}
    author_of = set()
    for p in papers:
        for j in rng.choice(len(authors), size=2, replace=False):
            author_of.add((authors[j], p))
    # Every pair is a target: the name-similarity rule reaches pairs across blocks, and PSL refuses open atoms
    # that its rules reach but the targets do not list.
    same_author = [(a, b) for a in authors for b in authors]
    same_paper = [(p, q) for p in papers for q in papers]
    bern = _bernoulli(rng, 0.2)
    return {
        "authorname": {"observations": _ones([(a, names[a]) for a in authors])},
        "authorblock": {"observations": _ones([(a, block[a]) for a in authors])},
        "papertitle": {"observations": _ones([(p, titles[p]) for p in papers])},
        "authorof": {"observations": _ones(sorted(author_of))},
        "simname": {"observations": _valued(rng, _pairs(rng, list(names.values()), 0.4))},
        "simtitle": {"observations": _valued(rng, _pairs(rng, list(titles.values()), 0.4))},
        "sameauthor": {
            "targets": same_author,
            "truth": [(a, b, 1.0 if a == b else bern((a, b))) for a, b in same_author],
        },
        "samepaper": {"targets": same_paper, "truth": [(p, q, 1.0 if p == q else bern((p, q))) for p, q in same_paper]},
    }


def _trust(rng, scale) -> Data:
    users = _ids(_n(12, scale))
    knows = _pairs(rng, users, 0.35)
    obs, tgt = _split(rng, knows, 0.6)
    return {
        "knows": {"observations": _ones(knows)},
        "prior": {"observations": [("0", 0.7)]},
        "trusts": _open(obs, tgt, _bernoulli(rng, 0.7)),
    }


def _friendship(rng, scale) -> Data:
    people = _ids(_n(10, scale))
    location = {p: str(rng.integers(3)) for p in people}
    pairs = _pairs(rng, people, 1.0)
    return {
        "similar": {
            "observations": [
                (a, b, round(float(np.clip(rng.normal(0.8 if location[a] == location[b] else 0.2, 0.1), 0, 1)), 4))
                for a, b in pairs
            ]
        },
        "block": {"observations": _ones([(p, location[p]) for p in people])},
        "friends": {
            "targets": pairs,
            "truth": [(a, b, float(location[a] == location[b])) for a, b in pairs],
        },
    }


def _imdb_er(rng, scale) -> Data:
    refs = _ids(_n(14, scale))
    mentions = [str(100 + i) for i in range(_n(20, scale))]  # integer ids (runtime.db.intids)
    movies = _ids(_n(4, scale))
    unordered = [p for p in itertools.combinations(refs, 2) if rng.random() < 0.35]
    cand = [r for a, b in unordered for r in ((a, b), (b, a))]
    inref = [(m, refs[rng.integers(len(refs))]) for m in mentions]
    return {
        "candsame": {"observations": _ones(cand)},
        "sim": {"observations": _valued(rng, _pairs(rng, mentions, 0.25))},
        "inref": {"observations": _ones(inref)},
        "inmovie": {"observations": _ones([(r, movies[rng.integers(len(movies))]) for r in refs])},
        "same": {"targets": cand},
    }


def _jester(rng, scale) -> Data:
    users = _ids(_n(8, scale))
    jokes = _ids(_n(10, scale))
    cells = [(u, j) for u in users for j in jokes]
    obs, tgt = _split(rng, cells, 0.6)
    return {
        "user": {"observations": _ones([(u,) for u in users])},
        "joke": {"observations": _ones([(j,) for j in jokes])},
        "avguserratingobs": {"observations": _valued(rng, [(u,) for u in users])},
        "avgjokeratingobs": {"observations": _valued(rng, [(j,) for j in jokes])},
        "ratingprior": {"observations": [("0", 0.5)]},
        "simobsrating": {"observations": _valued(rng, _pairs(rng, jokes, 0.4))},
        "rating": _open(obs, tgt, _uniform(rng)),
    }


def _knowledge_graph_identification(rng, scale) -> Data:
    entities = _ids(_n(14, scale))
    # Integer ids throughout (runtime.db.intids): entities 0.., categories 100.., relations 200..
    cats = [str(100 + i) for i in range(4)]
    rels = [str(200 + i) for i in range(3)]
    valcat = [(e, c) for e in entities for c in cats if rng.random() < 0.6]
    valrel = [(a, b, r) for a in entities for b in entities for r in rels if a != b and rng.random() < 0.15]
    cat_obs, cat_tgt = _split(rng, valcat, 0.3)
    rel_obs, rel_tgt = _split(rng, valrel, 0.3)
    data: Data = {
        "valcat": {"observations": _ones(valcat)},
        "valrel": {"observations": _ones(valrel)},
        "cat": _open(cat_obs, cat_tgt, _bernoulli(rng, 0.5)),
        "rel": _open(rel_obs, rel_tgt, _bernoulli(rng, 0.5)),
        "sameentity": {"observations": _valued(rng, _pairs(rng, entities, 0.15))},
        "sub": {"observations": _ones([(cats[0], cats[1]), (cats[2], cats[3])])},
        "mut": {"observations": _ones([(cats[0], cats[2]), (cats[1], cats[3])])},
        "rsub": {"observations": _ones([(rels[0], rels[1])])},
        "rmut": {"observations": _ones([(rels[0], rels[2])])},
        "inv": {"observations": _ones([(rels[1], rels[2])])},
        "domain": {"observations": _ones([(rels[0], cats[0]), (rels[1], cats[1])])},
        "range2": {"observations": _ones([(rels[0], cats[2]), (rels[2], cats[3])])},
    }
    for source in ("cbl", "cmc", "cpl", "general", "morph", "seal"):
        data[f"candcat_{source}"] = {"observations": _valued(rng, [r for r in valcat if rng.random() < 0.3])}
    for source in ("cbl", "cpl", "general", "seal"):
        data[f"candrel_{source}"] = {"observations": _valued(rng, [r for r in valrel if rng.random() < 0.3])}
    data["promcat_general"] = {"observations": _valued(rng, [r for r in valcat if rng.random() < 0.3])}
    data["promrel_general"] = {"observations": _valued(rng, [r for r in valrel if rng.random() < 0.3])}
    return data


def _recommendation(rng, scale) -> Data:
    users = _ids(_n(6, scale))
    items = _ids(_n(8, scale))
    rated = [(u, i) for u in users for i in items if rng.random() < 0.6]
    obs, tgt = _split(rng, rated, 0.5)
    data: Data = {
        "user": {"observations": _ones([(u,) for u in users])},
        "item": {"observations": _ones([(i,) for i in items])},
        "rated": {"observations": _ones(rated)},
        "rating": _open(obs, tgt, _uniform(rng)),
        "users_are_friends": {"observations": _ones(_pairs(rng, users, 0.3))},
        "avg_user_rating": {"observations": _valued(rng, [(u,) for u in users])},
        "avg_item_rating": {"observations": _valued(rng, [(i,) for i in items])},
    }
    for name in ("sim_content_items_jaccard", "sim_pearson_items", "sim_cosine_items", "sim_adjcos_items"):
        data[name] = {"observations": _valued(rng, _pairs(rng, items, 0.3))}
    for name in ("sim_mf_cosine_items", "sim_mf_euclidean_items"):
        data[name] = {"observations": _valued(rng, _pairs(rng, items, 0.3))}
    for name in ("sim_pearson_users", "sim_cosine_users", "sim_mf_cosine_users", "sim_mf_euclidean_users"):
        data[name] = {"observations": _valued(rng, _pairs(rng, users, 0.3))}
    for name in ("sgd_rating", "bpmf_rating", "item_pearson_rating"):
        data[name] = {"observations": _valued(rng, rated)}
    return data


def _social_network_analysis(rng, scale) -> Data:
    people = _ids(_n(15, scale))
    parties = _ids(2)
    data: Data = {
        "votes": {"targets": [(a, p) for a in people for p in parties]},
        "bias": {"observations": _valued(rng, [(a, parties[rng.integers(2)]) for a in people if rng.random() < 0.5])},
    }
    for name, density in (("boss", 0.05), ("idol", 0.05), ("knows", 0.2), ("knowswell", 0.1)):
        data[name] = {"observations": _ones(_pairs(rng, people, density))}
    for name, density in (("mentor", 0.05), ("olderrelative", 0.05)):
        data[name] = {"observations": _ones(_pairs(rng, people, density))}
    return data


def _stance(rng, scale) -> Data:
    authors = _ids(_n(12, scale))
    topics = _ids(2)
    participates = [(a, t) for a in authors for t in topics if rng.random() < 0.7]
    by_topic = {t: [a for a, u in participates if u == t] for t in topics}
    responds = sorted({(a, b) for t in topics for a, b in _pairs(rng, by_topic[t], 0.25)})
    stance = _bernoulli(rng, 0.5)
    return {
        "participates": {"observations": _ones(participates)},
        "responds": {"observations": _ones(responds)},
        "localpro": {"observations": _valued(rng, participates)},
        "localdisagrees": {"observations": _valued(rng, responds)},
        "isproauth": {"targets": participates, "truth": [(*r, stance(r)) for r in participates]},
        "disagrees": {"targets": responds, "truth": _valued(rng, responds)},
    }


def _user_modeling(rng, scale) -> Data:
    users = _ids(_n(10, scale), "u")
    attributes = {"gender": ["f", "m"], "age": ["young", "mid", "old"]}
    sources = ["text", "image"]
    label = {(u, a): vals[rng.integers(len(vals))] for u in users for a, vals in attributes.items()}
    cells = [(u, a, v) for u in users for a, vals in attributes.items() for v in vals]
    known = {u for u in users if rng.random() < 0.5}
    has = [(u, s) for u in users for s in sources if rng.random() < 0.7]
    predicts = [
        (s, u, a, v, round(float(np.clip(rng.normal(0.7 if label[(u, a)] == v else 0.3, 0.15), 0, 1)), 4))
        for u, s in has
        for a, vals in attributes.items()
        for v in vals
    ]
    value = {c: float(label[c[:2]] == c[2]) for c in cells}
    return {
        "is": {
            "observations": [(*c, value[c]) for c in cells if c[0] in known],
            "targets": [c for c in cells if c[0] not in known],
            "truth": [(*c, value[c]) for c in cells if c[0] not in known],
        },
        "predicts": {"observations": predicts},
        "has": {"observations": _ones(has)},
        "friend": {"observations": _ones(_pairs(rng, users, 0.15))},
        "likes": {"observations": _ones([(u, t) for u in users for t in _ids(5, "page") if rng.random() < 0.3])},
        "joins": {"observations": _ones([(u, g) for u in users for g in _ids(3, "group") if rng.random() < 0.3])},
    }


GENERATORS: dict[str, Callable] = {
    "citeseer": _citeseer,
    "cora": _cora,
    "drug-drug-interaction": _drug_drug_interaction,
    "entity-resolution": _entity_resolution,
    "epinions": _trust,
    "friendship": _friendship,
    "imdb-er": _imdb_er,
    "jester": _jester,
    "knowledge-graph-identification": _knowledge_graph_identification,
    "lastfm": _recommendation,
    "social-network-analysis": _social_network_analysis,
    "stance-4forums": _stance,
    "stance-createdebate": _stance,
    "trust-prediction": _trust,
    "user-modeling": _user_modeling,
    "yelp": _recommendation,
}


def _write_rows(path: Path, rows: Rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["\t".join(repr(v) if isinstance(v, float) else str(v) for v in row) for row in rows]
    path.write_text("".join(line + "\n" for line in lines))


def generate(program: str, directory, *, scale: float = 1.0, rng=0) -> Path:
    """Write ``program``'s configuration and generated data under ``directory/<program>/``.

    Parameters
    ----------
    program : str
        One of :data:`PROGRAMS`.
    directory : str or Path
        Where ``<program>/cli/<program>.json`` and ``<program>/data/...`` are written.
    scale : float
        Multiplies the number of entities (people, papers, ...); ``1`` gives programs of a few hundred to a
        few thousand ground rules.
    rng : int or numpy.random.Generator
        Seed of the data; each split (``learn``, ``infer``) draws its own data.

    Returns
    -------
    Path
        The configuration file written.
    """
    src = config_path(program)
    if not (isinstance(scale, int | float) and scale > 0):
        raise ValueError(f"`scale` must be a positive number; got {scale!r}")
    root = Path(directory) / program
    shutil.copytree(src.parent.parent, root, dirs_exist_ok=True)
    dst = root / "cli" / src.name
    make = GENERATORS.get(program)
    if make is None:  # data stored with the program (simple-acquaintances) or inline (smokers)
        return dst
    config = read_config(src)
    rng = np.random.default_rng(rng)
    splits = set()
    for spec in config["predicates"].values():
        for part in PARTITIONS:
            if isinstance(spec.get(part), dict):
                splits.update(spec[part])
    for split in sorted(splits) or ["infer"]:
        data = make(rng, scale)
        for key, spec in config["predicates"].items():
            name = key.split("/")[0].lower()
            for part in PARTITIONS:
                if part not in spec:
                    continue
                files = partition_files(spec[part], split)
                if not files:
                    continue
                rows = data.get(name, {}).get(part)
                if rows is None:
                    raise RuntimeError(f"generator of {program} has no {part} for {key}")
                for k, rel in enumerate(files):
                    _write_rows(dst.parent / rel, rows if k == 0 else [])
    return dst


def generate_all(directory, *, scale: float = 1.0, rng=0, programs=PROGRAMS) -> dict[str, Path]:
    """:func:`generate` for several programs; returns program -> configuration path."""
    return {p: generate(p, directory, scale=scale, rng=rng) for p in programs}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Write the psl-examples programs with generated data.")
    ap.add_argument("out", help="output folder")
    ap.add_argument("programs", nargs="*", default=list(PROGRAMS))
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    for program, path in generate_all(args.out, scale=args.scale, rng=args.seed, programs=args.programs).items():
        print(f"{program}: {path}")


if __name__ == "__main__":
    main()
