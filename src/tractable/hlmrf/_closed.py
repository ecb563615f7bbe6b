"""The branch-free closed forms of the ADMM kernels and of the certificate, lowered straight to LLVM IR.

The kernels' vectorized loops (:mod:`tractable.hlmrf._kernels`, :mod:`tractable.hlmrf.bound`)
spend their time in a few closed forms of two unknowns: the multiplier of a local problem or
projection (:func:`pair_multiplier`) and the dual maximizers of the certificate
(:func:`pair_dual_theta`, :func:`constraint_dual_theta`), plus the per-term updates around them.
Each is a plain Python function on floats, and it is the only source of its arithmetic:

* from Python (``NUMBA_DISABLE_JIT=1``, the tests' references) it runs as written;
* inside a compiled kernel a call to it is *lowered by tracing*: the function runs once, at
  compile time, on symbolic values (:class:`_Value`) whose operators append the same LLVM
  instructions that numba emits for the same source (the same operation order, the fast-math
  flags :data:`FLAGS` of the vectorized loops, ``min``/``max`` as selects, conditional
  expressions with a ``lambda`` arm and ``and`` as branches evaluated lazily, ``abs`` as
  ``llvm.fabs``). The ADMM iterates are bit for bit those of the former numba functions; a
  certified bound can differ in its last bit (where the compiler fuses a multiply-add across a
  branch in the scalar remainder of a loop and did not before, or vice versa).

Why: numba's front end costs about 0.3 ms per IR statement (typing, lowering) and each compiled
function costs a pipeline, a module and machine code of its own, again in every caller that
links it. Compiled as numba functions these closed forms (about 1,500 statements with the
helpers they called) were about a quarter of the first call's compilation of an HL-MRF solve. Traced,
they cost a few milliseconds of Python per call site and LLVM optimizes them once, inside their
caller.

The restricted style that makes a function traceable: arithmetic (``+ - * /``, unary ``-``) and
comparisons on floats; ``select(c, a, b)`` for ``min``/``max``-like choices (both evaluated),
``cond(c, a, b)`` for a conditional expression (an arm given as a ``lambda`` is evaluated only
in its branch), ``land(a, lambda: b)`` for ``a and b``, ``lnot`` for ``not`` and ``fabs`` for
``abs``; no Python ``if`` on a computed value. :func:`closed_form` registers such a function for
the kernels (the argument types, one letter each: ``f`` float64, ``b`` boolean).
"""

from __future__ import annotations

import inspect

import numpy as np
from llvmlite import ir
from numba.core import types
from numba.core.typing.templates import signature
from numba.extending import lower_builtin, type_callable

__all__ = [
    "FLAGS",
    "closed_form",
    "select",
    "cond",
    "land",
    "lnot",
    "fabs",
    "clip01",
    "pair_multiplier",
    "projection_multiplier",
    "pair_x",
    "pair_term_update",
    "single_term_update",
    "pair_projection",
    "single_projection",
    "pair_h",
    "pair_dual_theta",
    "constraint_dual_theta",
    "term_certificate",
    "constraint_certificate",
]

#: fast-math flags of the vectorized loops over terms with at most two unknowns: sums may be
#: reassociated (only the residual norms and the certificate's totals are sums), fused
#: multiply-adds, no signed zeros; no assumption about NaN or infinities (the squared hinges use
#: an infinite upper end)
FLAGS = ("reassoc", "contract", "nsz")

_F64 = ir.DoubleType()
_BOOL = ir.IntType(1)


# ---------------------------------------------------------------------------------------------
# the tracer


class _Value:
    """A float64 or boolean value of the LLVM IR under construction (``builder``'s)."""

    __slots__ = ("builder", "value")

    def __init__(self, builder, value):
        self.builder = builder
        self.value = value

    def _binary(self, other, op, swap=False):
        a, b = self.value, _ir(self.builder, other)
        if swap:
            a, b = b, a
        return _Value(self.builder, getattr(self.builder, op)(a, b, flags=FLAGS))

    def _compare(self, other, pred):
        fn = self.builder.fcmp_unordered if pred == "!=" else self.builder.fcmp_ordered
        return _Value(self.builder, fn(pred, self.value, _ir(self.builder, other), flags=FLAGS))

    def __add__(self, other):
        return self._binary(other, "fadd")

    def __radd__(self, other):
        return self._binary(other, "fadd", swap=True)

    def __sub__(self, other):
        return self._binary(other, "fsub")

    def __rsub__(self, other):
        return self._binary(other, "fsub", swap=True)

    def __mul__(self, other):
        return self._binary(other, "fmul")

    def __rmul__(self, other):
        return self._binary(other, "fmul", swap=True)

    def __truediv__(self, other):
        return self._binary(other, "fdiv")

    def __rtruediv__(self, other):
        return self._binary(other, "fdiv", swap=True)

    def __neg__(self):
        # numba's negation of a float: -0.0 - x (signed zeros handled)
        return _Value(self.builder, self.builder.fsub(ir.Constant(_F64, -0.0), self.value, flags=FLAGS))

    def __lt__(self, other):
        return self._compare(other, "<")

    def __le__(self, other):
        return self._compare(other, "<=")

    def __gt__(self, other):
        return self._compare(other, ">")

    def __ge__(self, other):
        return self._compare(other, ">=")

    def __eq__(self, other):
        return self._compare(other, "==")

    def __ne__(self, other):
        return self._compare(other, "!=")

    __hash__ = None

    def __bool__(self):
        raise TypeError("a traced value has no truth value: use cond, select or land")


def _ir(builder, x, ty=None):
    """The LLVM value of ``x``: a traced value, or a Python float / bool as a constant."""
    if isinstance(x, _Value):
        return x.value
    if isinstance(x, (bool, np.bool_)) or ty is _BOOL:
        return ir.Constant(_BOOL, int(bool(x)))
    return ir.Constant(_F64, float(x))


def _force(x):
    return x() if callable(x) else x


def select(c, a, b):
    """``a if c else b``, both evaluated: a select (numba's ``min`` and ``max`` of two floats are
    ``select(b > a, b, a)`` and ``select(b < a, b, a)``)."""
    if isinstance(c, _Value):
        return _Value(c.builder, c.builder.select(c.value, _ir(c.builder, a), _ir(c.builder, b)))
    return a if c else b


def cond(c, a, b):
    """``a if c else b``: a branch, as numba lowers a conditional expression or an ``if``, when an arm
    is a callable (evaluated in its branch only: a division, say); a select when both are values
    (what the compiler makes of such a branch anyway, with less code to optimize)."""
    if not isinstance(c, _Value):
        return _force(a) if c else _force(b)
    if not callable(a) and not callable(b):
        return select(c, a, b)
    builder = c.builder
    with builder.if_else(c.value) as (then, otherwise):
        with then:
            va = _force(a)
            end_a = builder.block
        with otherwise:
            vb = _force(b)
            end_b = builder.block
    known = va if isinstance(va, _Value) else vb
    ty = known.value.type if isinstance(known, _Value) else (_BOOL if isinstance(va, bool) else _F64)
    phi = builder.phi(ty)
    phi.add_incoming(_ir(builder, va, ty), end_a)
    phi.add_incoming(_ir(builder, vb, ty), end_b)
    return _Value(builder, phi)


def land(a, b):
    """``a and b`` of booleans, short-circuit (``b`` a callable evaluated only when ``a`` holds)."""
    if not isinstance(a, _Value):
        return bool(a) and bool(_force(b))
    return cond(a, b, False)


def lnot(a):
    """``not a`` of a boolean."""
    if isinstance(a, _Value):
        return _Value(a.builder, a.builder.not_(a.value))
    return not a


def fabs(x):
    """``abs(x)`` of a float (``llvm.fabs``, as numba lowers it)."""
    if not isinstance(x, _Value):
        return abs(x)
    builder = x.builder
    fn = builder.module.declare_intrinsic("llvm.fabs", [_F64])
    call = builder.call(fn, [x.value], fastmath=FLAGS)
    return _Value(builder, call)


_TYPES = {"f": types.float64, "b": types.boolean}


def closed_form(argtypes: str, n_out: int = 1):
    """Register a traceable function for the kernels: ``argtypes`` one letter per argument (``f``
    float64, ``b`` boolean), returning a float or a tuple of ``n_out`` floats. A kernel's call
    casts its arguments to these types and is lowered by running the function on traced values;
    the function itself is returned unchanged (Python calls run it as written)."""

    def register(fn):
        params = inspect.signature(fn)
        if len(params.parameters) != len(argtypes):
            raise TypeError(f"{fn.__name__}: {len(params.parameters)} parameters, {len(argtypes)} types")
        args = tuple(_TYPES[c] for c in argtypes)
        ret = types.float64 if n_out == 1 else types.UniTuple(types.float64, n_out)
        sig = signature(ret, *args)

        @type_callable(fn)
        def _type(context):
            def typer(*actual):
                return sig

            typer.pysig = params
            return typer

        @lower_builtin(fn, *args)
        def _lower(context, builder, s, values):
            out = fn(*(_Value(builder, v) for v in values))
            if n_out == 1:
                return _ir(builder, out)
            return context.make_tuple(builder, ret, [_ir(builder, o) for o in out])

        return fn

    return register


# ---------------------------------------------------------------------------------------------
# ADMM: local updates and projections of terms with at most two unknowns


def clip01(v):
    """``min(max(v, 0.0), 1.0)``."""
    m = select(0.0 > v, 0.0, v)
    return select(1.0 < m, 1.0, m)


def _clamp(v, top):
    """``min(max(v, 0.0), top)``."""
    m = select(0.0 > v, 0.0, v)
    return select(top < m, top, m)


def _pair_g(lam, d0, d1, c0, c1, e0, e1, b, ik):
    """``c·clip(d - lam e) + b - ik lam`` for two unknowns."""
    return b + c0 * clip01(d0 - lam * e0) + c1 * clip01(d1 - lam * e1) - ik * lam


def _pair_keep(p, fp, lo, flo, hi, fhi):
    """Bracket update: ``p`` replaces ``lo`` (largest point with F > 0) or ``hi`` (smallest with F <= 0)."""
    pos = fp > 0.0
    to_lo = land(pos, lambda: p > lo)
    to_hi = land(lnot(pos), lambda: p < hi)
    return cond(to_lo, p, lo), cond(to_lo, fp, flo), cond(to_hi, p, hi), cond(to_hi, fp, fhi)


@closed_form("fffffffff")
def pair_multiplier(d0, d1, c0, c1, e0, e1, b, ik, top):
    """The multiplier ``lam`` of a local problem or projection with at most two unknowns.

    The minimizer is ``x = clip(d - lam e, 0, 1)`` (see :mod:`tractable.hlmrf._kernels`;
    ``e_i = c_i sc_i``, the step scaled per component as in
    :func:`tractable.hlmrf._kernels.root_multiplier`, ``e = c`` for the ADMM local updates) with
    ``lam`` the root in ``[0, top]`` of ``F(lam) = c·clip(d - lam e) + b - ik lam``: ``ik = 0`` and
    ``top = w / rho`` for a hinge (``lam = top`` on the linear side, when ``F(top) > 0``),
    ``ik = rho / (2 w)`` and ``top = inf`` for a squared hinge (``w > 0`` in both), ``ik = 0`` and
    ``top = inf`` for a constraint ``<= 0`` (``inf`` when the hyperplane misses the box: the caller
    takes the limit). ``lam = 0`` when ``F(0) <= 0`` (clip first). ``F`` is continuous,
    non-increasing and linear between the breakpoints ``d_i / e_i`` and ``(d_i - 1) / e_i``;
    evaluated at 0, ``top`` and the breakpoints clipped into ``[0, top]``, the largest point with
    ``F > 0`` and the smallest with ``F <= 0`` bracket the root with no breakpoint between them, so
    linear interpolation is exact (beyond the last breakpoint every component is clipped and ``F``
    has slope ``-ik``). One unknown: pass ``d1 = c1 = e1 = 0``. No data-dependent branch that the
    compiler cannot turn into a select, so loops over many terms vectorize.
    """
    f0 = _pair_g(0.0, d0, d1, c0, c1, e0, e1, b, ik)
    ftop = _pair_g(top, d0, d1, c0, c1, e0, e1, b, ik)  # may be -inf or NaN for top = inf
    top_pos = ftop > 0.0
    top_neg = ftop <= 0.0
    lo = cond(top_pos, top, 0.0)
    flo = cond(top_pos, ftop, f0)
    hi = cond(top_neg, top, np.inf)
    fhi = cond(top_neg, ftop, -np.inf)
    i0 = cond(e0 != 0.0, lambda: 1.0 / e0, 0.0)
    i1 = cond(e1 != 0.0, lambda: 1.0 / e1, 0.0)
    for d, inv, shift in ((d0, i0, False), (d0, i0, True), (d1, i1, False), (d1, i1, True)):
        p = _clamp(((d - 1.0) if shift else d) * inv, top)
        lo, flo, hi, fhi = _pair_keep(p, _pair_g(p, d0, d1, c0, c1, e0, e1, b, ik), lo, flo, hi, fhi)
    # the divisors are positive whenever their quotient is used (flo > 0 >= fhi; ik > 0)
    span = flo - fhi
    lam = cond(
        hi < np.inf,
        lambda: lo + flo * (hi - lo) / cond(span > 0.0, span, 1.0),
        lambda: cond(ik > 0.0, lambda: lo + flo / ik, top),
    )
    return cond(f0 <= 0.0, 0.0, lam)


@closed_form("fff")
def pair_x(d, e, lam):
    """``clip(d - lam e, 0, 1)``, with the limit for ``lam = inf`` (and ``clip(d)`` where ``e = 0``)."""
    return clip01(d - cond(e != 0.0, lambda: lam * e, 0.0))


@closed_form("fffffffb", 2)
def projection_multiplier(d0, d1, c0, c1, e0, e1, b, eq):
    """``(lam, sign)`` of the projection onto ``{c·x + b <= 0}`` (``== 0`` when ``eq``) ∩ box; the
    point is ``clip(d - lam sign e)`` (:func:`pair_x`)."""
    f0 = b + c0 * clip01(d0) + c1 * clip01(d1)
    sgn = cond(land(eq, lambda: f0 < 0.0), -1.0, 1.0)
    return pair_multiplier(d0, d1, sgn * c0, sgn * c1, sgn * e0, sgn * e1, sgn * b, 0.0, np.inf), sgn


@closed_form("ffffffffffbfffffff", 7)
def pair_term_update(z0, z1, x0, x1, y0, y1, c0, c1, b, w, sq, rho, inv_rho, alpha, beta, primal, xnorm, ynorm):
    """Steps 1-3 of :func:`tractable.hlmrf._kernels.block_pass` for a hinge (``sq`` false) or squared
    hinge of weight ``w > 0`` with two unknowns: copies ``x``, multipliers ``y``, consensus values
    ``z``; returns ``(y0, y1, x0, x1)`` updated and the three partial squared norms
    ``(primal, xnorm, ynorm)`` with this term's share added."""
    r0 = x0 - z0
    r1 = x1 - z1
    primal = primal + (r0 * r0 + r1 * r1)
    xnorm = xnorm + (x0 * x0 + x1 * x1)
    y0 = y0 + rho * r0
    y1 = y1 + rho * r1
    ynorm = ynorm + (y0 * y0 + y1 * y1)
    d0 = z0 - y0 * inv_rho
    d1 = z1 - y1 * inv_rho
    ik = cond(sq, lambda: rho / (2.0 * w), 0.0)
    lam = pair_multiplier(d0, d1, c0, c1, c0, c1, b, ik, cond(sq, np.inf, lambda: w * inv_rho))
    x0 = alpha * clip01(d0 - lam * c0) + beta * z0
    x1 = alpha * clip01(d1 - lam * c1) + beta * z1
    return y0, y1, x0, x1, primal, xnorm, ynorm


@closed_form("ffffffbfffffff", 5)
def single_term_update(z0, x0, y0, c0, b, w, sq, rho, inv_rho, alpha, beta, primal, xnorm, ynorm):
    """:func:`pair_term_update` for a term with one unknown: ``(y0, x0, primal, xnorm, ynorm)``."""
    r0 = x0 - z0
    primal = primal + r0 * r0
    xnorm = xnorm + x0 * x0
    y0 = y0 + rho * r0
    ynorm = ynorm + y0 * y0
    d0 = z0 - y0 * inv_rho
    ik = cond(sq, lambda: rho / (2.0 * w), 0.0)
    lam = pair_multiplier(d0, 0.0, c0, 0.0, c0, 0.0, b, ik, cond(sq, np.inf, lambda: w * inv_rho))
    x0 = alpha * clip01(d0 - lam * c0) + beta * z0
    return y0, x0, primal, xnorm, ynorm


@closed_form("fffffffb", 2)
def pair_projection(d0, d1, sc0, sc1, c0, c1, b, eq):
    """The projection of ``d`` onto ``{c·x + b <= 0}`` (``== 0`` when ``eq``) ∩ box in the norm
    ``sum_i (x_i - d_i)^2 / sc_i``, two unknowns (the consensus step's constraints)."""
    e0 = c0 * sc0
    e1 = c1 * sc1
    lam, sgn = projection_multiplier(d0, d1, c0, c1, e0, e1, b, eq)
    return pair_x(d0, sgn * e0, lam), pair_x(d1, sgn * e1, lam)


@closed_form("ffffb")
def single_projection(d0, sc0, c0, b, eq):
    """:func:`pair_projection` for a constraint with one unknown."""
    e0 = c0 * sc0
    lam, sgn = projection_multiplier(d0, 0.0, c0, 0.0, e0, 0.0, b, eq)
    return pair_x(d0, sgn * e0, lam)


# ---------------------------------------------------------------------------------------------
# the certificate (tractable.hlmrf.bound): dual values of terms with at most two unknowns


@closed_form("fffffff")
def pair_h(theta, y0, y1, c0, c1, b, q):
    """``h(theta)`` of a term with at most two unknowns (pad with ``y1 = c1 = 0``)."""
    # (in the order of ``theta b - q theta^2 + min(0, y0 + theta c0) + min(0, y1 + theta c1)``: with
    # reassociation allowed, the order of the instructions can change how the sum is rounded)
    h = theta * b - q * theta * theta
    m0 = y0 + theta * c0
    h = h + select(m0 < 0.0, m0, 0.0)
    m1 = y1 + theta * c1
    return h + select(m1 < 0.0, m1, 0.0)


def _pair_pick(theta, y0, y1, c0, c1, b, q, best, hbest):
    h = pair_h(theta, y0, y1, c0, c1, b, q)
    better = h > hbest
    return cond(better, theta, best), cond(better, h, hbest)


def _stationary_picks(y0, y1, c0, c1, b, q, top, best, hbest):
    iq = cond(q > 0.0, lambda: 0.5 / q, 0.0)
    for with0, with1 in ((False, False), (True, False), (False, True), (True, True)):
        s = b + c0 if with0 else b
        s = s + c1 if with1 else s
        best, hbest = _pair_pick(_clamp(s * iq, top), y0, y1, c0, c1, b, q, best, hbest)
    return best


@closed_form("fffffffb")
def pair_dual_theta(y0, y1, c0, c1, b, q, top, stationary):
    """A maximizer in ``[0, top]`` of ``h`` for a hinge or squared hinge with at most two unknowns.

    ``q = 0, top = w`` (hinge) or ``q = 1 / (4 w), top = inf`` (squared hinge, ``w > 0``). The
    maximum of the concave ``h`` lies at 0, at ``top``, at a breakpoint ``-y_i / c_i`` or at the
    stationary point ``S / (2 q)`` of a piece, ``S = b + sum of c_i over a subset of the unknowns``:
    ``h`` is evaluated at all of these (clipped into ``[0, top]``, so each value is a valid bound)
    and the best kept, with no data-dependent branch (the loops over terms vectorize).
    ``stationary=False`` skips the stationary points (hinges only: ``q = 0``).
    """
    best, hbest = 0.0, pair_h(0.0, y0, y1, c0, c1, b, q)
    best, hbest = _pair_pick(cond(top < np.inf, top, 0.0), y0, y1, c0, c1, b, q, best, hbest)
    i0 = cond(c0 != 0.0, lambda: 1.0 / c0, 0.0)
    i1 = cond(c1 != 0.0, lambda: 1.0 / c1, 0.0)
    best, hbest = _pair_pick(_clamp(-y0 * i0, top), y0, y1, c0, c1, b, q, best, hbest)
    best, hbest = _pair_pick(_clamp(-y1 * i1, top), y0, y1, c0, c1, b, q, best, hbest)
    return cond(stationary, lambda: _stationary_picks(y0, y1, c0, c1, b, q, top, best, hbest), best)


@closed_form("fffffb")
def constraint_dual_theta(y0, y1, c0, c1, b, eq):
    """A maximizer of ``h`` (``q = 0``) for a constraint with at most two unknowns: over ``[0, inf)``
    for ``<= 0``, over all reals for ``== 0`` (``eq``). The concave, piecewise linear ``h`` peaks at 0
    or at a breakpoint ``-y_i / c_i`` when it is bounded; when it is not (the constraint misses the
    box), the best of these is still a valid bound."""
    lo = cond(eq, -np.inf, 0.0)
    i0 = cond(c0 != 0.0, lambda: 1.0 / c0, 0.0)
    i1 = cond(c1 != 0.0, lambda: 1.0 / c1, 0.0)
    best, hbest = 0.0, pair_h(0.0, y0, y1, c0, c1, b, 0.0)
    for y, inv in ((y0, i0), (y1, i1)):
        t = -y * inv
        best, hbest = _pair_pick(select(lo > t, lo, t), y0, y1, c0, c1, b, 0.0, best, hbest)
    return best


@closed_form("fffffffffbbfffff", 5)
def term_certificate(y0, y1, c0, c1, z0, z1, m, b, w, sq, squared, total, tmag, yabs, obj, slack):
    """One hinge (``sq`` false) or squared hinge of weight ``w > 0`` with two unknowns (``m = 1``) or
    one (``m = 0``: ``y1``, ``c1`` are ignored) in the certificate: its dual value at the
    multipliers ``y`` and its objective at the consensus values ``z``, added to the block's
    ``(total, tmag, yabs, obj, slack)`` (:func:`tractable.hlmrf.bound.block_certificate`);
    ``squared``: whether the block has squared hinges (their stationary points are tried)."""
    y1 = m * y1
    c1 = m * c1
    q = cond(sq, lambda: 0.25 / w, 0.0)
    top = cond(sq, np.inf, w)
    sv = b + c0 * z0 + c1 * z1
    pos = select(0.0 > sv, 0.0, sv)
    obj = obj + cond(sq, lambda: w * pos * pos, lambda: w * pos)
    theta = pair_dual_theta(y0, y1, c0, c1, b, q, top, squared)
    val = pair_h(theta, y0, y1, c0, c1, b, q)
    total = total + val
    tmag = tmag + fabs(val)
    yabs = yabs + (fabs(y0) + fabs(y1))
    mag = fabs(theta * b) + q * theta * theta + fabs(y0) + fabs(theta * c0) + fabs(y1) + fabs(theta * c1)
    slack = slack + (3.0 + m + 1.0) * 2.3e-16 * mag
    return total, tmag, yabs, obj, slack


@closed_form("ffffffffbffff", 4)
def constraint_certificate(y0, y1, c0, c1, z0, z1, m, b, eq, total, tmag, slack, viol):
    """A consensus-step constraint ``<= 0`` (``== 0`` when ``eq``) with two unknowns (``m = 1``) or one
    (``m = 0``) in the certificate: its dual value at the costs ``y`` and its violation at ``z``,
    added to ``(total, tmag, slack)`` and maxed into ``viol``
    (:func:`tractable.hlmrf.bound.consensus_certificate`)."""
    y1 = m * y1
    c1 = m * c1
    sv = b + c0 * z0 + c1 * z1
    v = cond(eq, lambda: fabs(sv), sv)
    viol = select(v > viol, v, viol)
    theta = constraint_dual_theta(y0, y1, c0, c1, b, eq)
    val = pair_h(theta, y0, y1, c0, c1, b, 0.0)
    total = total + val
    tmag = tmag + fabs(val)
    slack = slack + (4.0 + m) * 2.3e-16 * (fabs(theta * b) + fabs(y0) + fabs(theta * c0) + fabs(y1) + fabs(theta * c1))
    return total, tmag, slack, viol
