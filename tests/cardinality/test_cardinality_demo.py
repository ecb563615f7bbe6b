"""The demo rows run, have the agreed keys and report small errors."""

import re

from tractable.demo.cardinality import demo_rows


def test_demo_rows():
    rows = demo_rows()
    assert len(rows) == 3
    for row in rows:
        assert set(row) == {"problem", "method", "quality", "time"}
        assert row["time"] >= 0
        err = float(re.search(r"err ([0-9.e+-]+)", row["quality"]).group(1))
        assert err < 1e-9  # every row compares with an exact reference
