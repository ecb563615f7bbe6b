import re
import subprocess
import sys

import numpy as np
import pytest

from tractable import CardinalityFactor, FactorGraph, TableFactor


def small_graph():
    fg = FactorGraph([2, 3, 2], names=["a", "b", "c"])
    rng = np.random.default_rng(0)
    fg.add_factor(TableFactor([0, 1], rng.normal(size=(2, 3))))
    fg.add_factor(TableFactor([1, 2], rng.normal(size=(3, 2))))
    fg.add_factor(TableFactor([2], np.array([0.0, -np.inf])))
    return fg


def test_score_single_and_batch_agree():
    fg = small_graph()
    batch = np.array([[0, 0, 0], [1, 2, 0], [1, 1, 1]])
    scores = fg.score(batch)
    assert scores.shape == (3,)
    for row, s in zip(batch, scores):
        assert fg.score(row) == s
    assert scores[2] == -np.inf


def test_score_is_sum_of_tables():
    fg = small_graph()
    t0, t1, t2 = (f.log_table for f in fg.factors)
    assert fg.score([1, 2, 0]) == pytest.approx(t0[1, 2] + t1[2, 0] + t2[0], rel=1e-15)


def test_condition_keeps_scores_of_consistent_assignments():
    fg = small_graph()
    sub = fg.condition({"b": 1})
    assert sub.n_variables == 2 and sub.names == ("a", "c")
    assert sub.kept_variables.tolist() == [0, 2]
    for a in range(2):
        for c in range(2):
            assert sub.score([a, c]) == fg.score([a, 1, c])


def test_conditioned_factors_are_read_only_and_leave_the_graph_unchanged():
    # conditioning builds its factors without re-validating them; they must still be read-only
    # TableFactors over the new numbering, and the original graph must be untouched
    rng = np.random.default_rng(0)
    fg = FactorGraph([2, 3, 2, 2])
    tables = [rng.normal(size=(2, 3, 2)), rng.normal(size=(3, 2)), rng.normal(size=(2,))]
    for scope, t in zip([[0, 1, 2], [1, 3], [2]], tables):
        fg.add_factor(TableFactor(scope, t))
    before = [f.log_table.copy() for f in fg.factors]
    sub = fg.condition({1: 2})
    assert [f.variables.tolist() for f in sub.factors] == [[0, 1], [2], [1]]
    np.testing.assert_array_equal(sub.factors[0].log_table, tables[0][:, 2, :])
    np.testing.assert_array_equal(sub.factors[1].log_table, tables[1][2, :])
    for f in sub.factors:
        assert isinstance(f, TableFactor) and f.log_table.dtype == np.float64
        assert not f.log_table.flags.writeable and not f.variables.flags.writeable
    for f, b in zip(fg.factors, before):
        np.testing.assert_array_equal(f.log_table, b)
    for y in np.ndindex(2, 2, 2):
        assert sub.score(list(y)) == pytest.approx(fg.score([y[0], 2, y[1], y[2]]), rel=1e-15)


def test_condition_folds_fully_observed_factors_into_constant():
    fg = small_graph()
    sub = fg.condition({0: 1, 1: 2, 2: 0})
    assert sub.n_variables == 0
    assert sub.constant == pytest.approx(fg.score([1, 2, 0]), rel=1e-15)


def test_inputs_not_mutated():
    table = np.zeros((2, 2))
    f = TableFactor([0, 1], table)
    table[0, 0] = 5.0
    assert f.log_table[0, 0] == 0.0
    with pytest.raises(ValueError):
        f.log_table[0, 0] = 1.0


def test_cardinality_factor_table_matches_counts():
    f = CardinalityFactor([0, 1, 2], [0.0, 1.0, 2.0, -np.inf])
    t = f.to_table()
    assert t.shape == (2, 2, 2)
    assert t[1, 1, 0] == 2.0 and t[1, 1, 1] == -np.inf
    sub = f.condition({1: 1})
    assert sub.log_potentials.tolist() == [1.0, 2.0, -np.inf]


@pytest.mark.parametrize(
    "build, exc, message",
    [
        (lambda: FactorGraph([2, 1]), ValueError, "`cardinalities` must be integers >= 2; got 1 for variable 1."),
        (lambda: TableFactor([0, 0], np.zeros((2, 2))), ValueError, "`variables` must list distinct variables"),
        (lambda: TableFactor([0], [np.nan, 0.0]), ValueError, "`log_table` must not contain NaN"),
        (lambda: TableFactor([0], [np.inf, 0.0]), ValueError, "`log_table` must not contain +inf"),
        (lambda: TableFactor([0, 1], np.zeros(2)), ValueError, "`log_table` must have one axis per variable"),
        (
            lambda: FactorGraph([2]).add_factor(TableFactor([0], np.zeros(3))),
            ValueError,
            "must have shape (2,) (their cardinalities); got (3,)",
        ),
        (
            lambda: FactorGraph([2]).add_factor(TableFactor([1], np.zeros(2))),
            ValueError,
            "refers to variable 1, but the graph has 1 variables",
        ),
        (lambda: FactorGraph([2]).add_factor(np.zeros(2)), TypeError, "`factor` must be a Factor"),
        (lambda: small_graph().condition({"z": 0}), ValueError, "unknown variable 'z'"),
        (lambda: small_graph().condition({1: 3}), ValueError, "`evidence` gives variable 1 the state 3, outside 0..2"),
        (lambda: small_graph().score([0, 3, 0]), ValueError, "`assignment` gives variable 1 the state 3"),
        (lambda: small_graph().score([0, 1]), ValueError, "`assignment` must have 3 entries per row"),
        (
            lambda: FactorGraph([3]).add_factor(CardinalityFactor([0], [0, 0])),
            ValueError,
            "a CardinalityFactor needs binary variables",
        ),
        (
            lambda: CardinalityFactor([0, 1], [0.0, 1.0]),
            ValueError,
            "`log_potentials` must have shape (3,) (one entry per count 0..2); got (2,).",
        ),
        (lambda: FactorGraph([2], constant=np.nan), ValueError, "`constant` must be a real number or -inf; got nan."),
        (lambda: FactorGraph([2], constant=np.inf), ValueError, "`constant` must be a real number or -inf; got inf."),
        (lambda: FactorGraph([2], constant="a"), TypeError, "`constant` must be a real number or -inf; got 'a'."),
        (
            lambda: FactorGraph([2, 3], state_names=[("a", "b")]),
            ValueError,
            "`state_names` must have one entry per variable (2); got 1.",
        ),
        (
            lambda: FactorGraph([2, 3], state_names=[("a", "b"), ("x", "y")]),
            ValueError,
            "`state_names[1]` must name the 3 states of variable 1; got 2 names.",
        ),
        (
            lambda: FactorGraph([2], state_names=[("a", "a")]),
            ValueError,
            "`state_names[0]` must be distinct; got ['a', 'a'].",
        ),
        (lambda: FactorGraph([2], state_names=["ab"]), TypeError, "`state_names[0]` must be a sequence of state names"),
        (lambda: FactorGraph([2], state_names=[([1], [2])]), TypeError, "`state_names[0]` must contain hashable names"),
    ],
)
def test_bad_input_messages(build, exc, message):
    with pytest.raises(exc, match=re.escape(message)):
        build()


def test_evidence_type_errors():
    fg = small_graph()
    with pytest.raises(TypeError, match=re.escape("`evidence` must be a dict {variable: state}; got list.")):
        fg.condition([0, 1])
    with pytest.raises(TypeError, match=re.escape("`evidence` state of variable 'a' must be an integer; got 0.5.")):
        fg.condition({"a": 0.5})
    with pytest.raises(TypeError, match=re.escape("a variable must be given by index or name; got 1.5.")):
        fg.condition({1.5: 0})
    with pytest.raises(ValueError, match=re.escape("`names` must have one name per variable (3); got 2.")):
        FactorGraph([2, 2, 2], names=["a", "b"])
    with pytest.raises(ValueError, match=re.escape("`names` must be distinct.")):
        FactorGraph([2, 2], names=["a", "a"])


def test_constant_is_read_only_and_never_nan():
    fg = FactorGraph([2], constant=-np.inf)
    assert fg.constant == -np.inf
    with pytest.raises(AttributeError):
        fg.constant = np.nan
    sub = small_graph().condition({0: 1})
    with pytest.raises(AttributeError):
        sub.constant = 1.0
    with pytest.raises(AttributeError):
        sub.kept_variables = np.arange(2)
    with pytest.raises(ValueError, match="read-only"):
        sub.kept_variables[0] = 5


def test_state_names_are_validated_read_only_and_kept_by_condition():
    fg = FactorGraph([2, 3], names=["a", "b"], state_names=[["no", "yes"], ("lo", "mid", "hi")])
    assert fg.state_names == (("no", "yes"), ("lo", "mid", "hi"))
    assert FactorGraph([2]).state_names is None
    with pytest.raises(AttributeError):
        fg.state_names = None
    assert fg.condition({"a": 1}).state_names == (("lo", "mid", "hi"),)
    assert FactorGraph([2]).condition({}).state_names is None


def test_cardinality_factor_keeps_its_log_potentials_read_only():
    f = CardinalityFactor([0, 1], log_potentials=[0.0, 1.0, -np.inf])
    assert f.log_potentials.tolist() == [0.0, 1.0, -np.inf]
    with pytest.raises(ValueError, match="read-only"):
        f.log_potentials[0] = 1.0


def test_recursive_cardinality_factor_builds_its_count_tree_in_the_model_layer():
    """The count tree is a model concept (``tractable._count_tree``): building a factor imports no algorithm
    area, and the factor and the cardinality model build the same structure, with the same errors."""
    code = (
        "import sys\n"
        "from tractable import RecursiveCardinalityFactor\n"
        "f = RecursiveCardinalityFactor([3, 4, 5, 6], [[3, 4], [3, 4, 5, 6]], [[0, 0, 0], [0, 0, 0, 0, 0]])\n"
        "print(type(f._structure).__module__, *sorted(m for m in sys.modules if m.startswith('tractable.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "tractable._count_tree"
    assert "tractable.factorgraph" in out[1:]
    assert not [m for m in out[1:] if m.split(".")[1] in ("cardinality", "bp", "exact", "clique", "hlmrf")]

    from tractable import RecursiveCardinalityFactor
    from tractable.cardinality import RecursiveCardinalityModel

    subsets, pots = [[0, 1], [0, 1, 2, 3]], [[0.0, 0.5, -np.inf], [0.0, 1.0, 2.0, 1.0, 0.0]]
    a = RecursiveCardinalityFactor([0, 1, 2, 3], subsets, pots)._structure
    b = RecursiveCardinalityModel(4, subsets, pots)._structure
    assert type(a) is type(b)
    for x, y in zip((a.tree.left, a.tree.right, a.leaf_potentials), (b.tree.left, b.tree.right, b.leaf_potentials)):
        np.testing.assert_array_equal(x, y)
    message = "`subsets` must be nested (any two disjoint or one inside the other); subsets[0] and subsets[1] overlap"
    for build in (
        lambda: RecursiveCardinalityFactor([0, 1, 2], [[0, 1], [1, 2]], [[0, 0, 0], [0, 0, 0]]),
        lambda: RecursiveCardinalityModel(3, [[0, 1], [1, 2]], [[0, 0, 0], [0, 0, 0]]),
    ):
        with pytest.raises(ValueError, match=re.escape(message)):
            build()
    with pytest.raises(
        ValueError, match=re.escape("is -inf at every count: no configuration has non-zero probability")
    ):
        RecursiveCardinalityFactor([0, 1], [[0, 1]], [[-np.inf] * 3])


def test_grid_factor_graph_names_a_bad_coupling_or_field():
    from tractable.datasets import grid_factor_graph

    with pytest.raises(TypeError, match=r"`coupling` must be a real number; got '1'"):
        grid_factor_graph(2, 2, coupling="1")
    with pytest.raises(ValueError, match=r"`coupling` must be finite; got nan"):
        grid_factor_graph(2, 2, coupling=np.nan)
    with pytest.raises(ValueError, match=r"`field` must be finite; got inf"):
        grid_factor_graph(2, 2, field=np.inf)


def test_constant_is_a_real_number_not_text_or_a_bool():
    for bad in ("1.5", True, None):
        with pytest.raises(TypeError, match=re.escape(f"`constant` must be a real number or -inf; got {bad!r}.")):
            FactorGraph([2], constant=bad)
    assert FactorGraph([2], constant=np.float64(2.0)).constant == 2.0
    assert FactorGraph([2], constant=-np.inf).constant == -np.inf
