"""Sampling over binary factor graphs: a compiled Gibbs sampler and adaptive maximum-marginal prediction.

:func:`gibbs` runs a systematic-scan Gibbs sampler whose sweep is one compiled kernel over flat arrays
(pairwise couplings in CSR form, general table and cardinality factors). :func:`adaptive_mmp` (Lampert
2012) decides each variable's most probable state as soon as the samples make the decision
``epsilon``-certain and then removes the variable from the factor graph (:func:`prune`), so the
sampler spends its time on the uncertain variables only.
"""

from ._result import GibbsResult, MMPResult
from .adaptive import adaptive_mmp
from .gibbs import gibbs
from .prune import prune

__all__ = ["GibbsResult", "MMPResult", "adaptive_mmp", "gibbs", "prune"]
