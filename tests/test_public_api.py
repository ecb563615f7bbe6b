"""The public names of every public module, pinned (as scipy pins its public API).

A name added to or removed from a module's ``__all__`` must be added to or removed from this list in the same
change, so that no public name appears or disappears by accident. Every pinned name must also exist.
"""

import importlib

import pytest

PUBLIC = {
    "tractable": [
        "CliqueFactor",
        "CardinalityFactor", "ConvergenceWarning", "Factor", "FactorGraph", "MAPResult", "MarginalsResult",
        "ModelError", "RecursiveCardinalityFactor", "Result", "TableFactor", "ZeroPartitionError", "__version__",
    ],
    "tractable.bp": [
        "BPResult", "FactorMessages", "HANDLERS", "TreeMarginals", "TreeMarginalsBatch", "loopy", "register",
        "tree_map", "tree_marginals", "tree_marginals_batch",
    ],
    "tractable.psl": [
        "ArithmeticRule", "EVALUATORS", "GroundModel", "LEARNERS", "LearnResult", "LogicalRule", "Model", "PARTITIONS",
        "evaluate_arrays", "evaluate_predicate", "parse_rule", "parse_rules",
    ],
    "tractable.sampling": ["GibbsResult", "MMPResult", "adaptive_mmp", "gibbs", "prune"],
    "tractable.crf": [
        "ChainCRF", "ChainPotentials", "ConditionalChowLiu", "ESSCRF", "METHODS", "MultiLabelCRF", "RelationalESSCRF",
        "RelationalGraph", "TreeCRF", "chain_map", "chow_liu_tree",
    ],
    "tractable.distributed": [
        "HLMRFShards", "WarmKernels", "WorkerLostError", "alpha_pass_batches", "check_client", "map_batches",
        "marginals_batches", "solve",
    ],
    "tractable.exact": [
        "DEFAULT_ENUMERATE_BELOW", "DEFAULT_MAX_STATES", "DEFAULT_MAX_TABLE_SIZE", "METHODS", "ZeroPartitionError",
        "elimination_order", "enumerate_map", "enumerate_marginals", "infer", "variable_elimination",
    ],
    "tractable.clique": [
        "CliqueMAPBatch", "CliqueMAPResult", "CliquePotential", "CountPotential", "Entropy", "LinearMajority",
        "METHODS", "Makespan", "MaxPotential", "Potts", "SquareMakespan", "SumPotential", "alpha_expansion",
        "alpha_pass", "alpha_pass_batch", "clique_map", "exact_clique_map", "generalized_alpha_pass", "icm",
        "majority_alpha_pass", "majority_exact", "score",
    ],
    "tractable.cardinality": [
        "CardinalityMarginals", "CardinalityMarginalsBatch", "METHODS", "RecursiveCardinalityModel",
        "TreeCardinalityModel", "chain_marginals", "log_partition", "map_assignment", "marginals", "marginals_batch",
        "sample",
    ],
    "tractable.hlmrf": [
        "FILE_FORMAT", "FILE_VERSION", "HLMRF", "METHODS", "MPEResult", "SENSES", "local_update_reference",
        "local_updates", "project_feasible", "solve",
    ],
    "tractable.hlmrf.partition": [
        "Block", "Partition", "STRATEGIES", "block_certificate", "block_start", "block_step", "combine",
        "consensus_certificate", "consensus_step", "split_terms",
    ],
    "tractable.io": [
        "from_pgmpy", "read_bif", "read_evidence", "read_factor_graph", "read_map", "read_mar", "read_uai",
        "write_evidence", "write_factor_graph", "write_map", "write_mar", "write_mmp", "write_pr", "write_uai",
    ],
    "tractable.datasets": [
        "BipartiteMatching", "CLIQUE_KINDS", "CONLL_TAGS", "CollectiveMAPResult", "Document", "Inpainting",
        "NERFeaturizer", "Sentence", "SpanScores", "YEAST_N_TRAIN", "bipartite_matching", "clique_benchmark",
        "collective_factor_graph", "collective_map", "conll2003_available", "entity_spans", "grid_factor_graph",
        "inpainting", "iob1_to_iob2", "load_conll2003", "load_yeast", "majority_weights", "opinion_diffusion",
        "random_factor_graph", "repeated_token_cliques", "span_f1", "tag_ids", "yeast_split",
    ],
}  # fmt: skip


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_public_names_are_pinned(module):
    mod = importlib.import_module(module)
    assert sorted(mod.__all__) == sorted(PUBLIC[module])
    missing = [name for name in mod.__all__ if not hasattr(mod, name)]
    assert not missing, f"{module}.__all__ lists names it does not define: {missing}"


#: the areas whose functions take ``method=``, each resolving it through one ``METHODS`` dict of callables
WITH_METHODS = ["tractable.cardinality", "tractable.clique", "tractable.crf", "tractable.exact", "tractable.hlmrf"]


@pytest.mark.parametrize("module", sorted(m for m in PUBLIC if m != "tractable"))
def test_every_method_table_holds_callables(module):
    mod = importlib.import_module(module)
    if module not in WITH_METHODS:
        assert not hasattr(mod, "METHODS"), f"{module} has a METHODS table: add it to WITH_METHODS"
        return
    assert mod.METHODS and all(callable(fn) for fn in mod.METHODS.values()), module
