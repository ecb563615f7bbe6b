"""Multiple instance learning with cardinality potentials (Sec. 6.3 of Tarlow et al. 2012).

A bag of instances x_1..x_D has a label t; instance labels y_d are latent, with
``theta_d = w . x_d + b`` and ``p(t, y | x) ∝ exp(f_t(sum_d y_d)) prod_d exp(theta_d y_d)``, so

    p(t | x) = Z_t / (Z_0 + Z_1),    Z_t = sum_y exp(f_t(sum y) + theta . y).

``d log p(t | x) / d theta = E[y | t] - E[y]`` (E[y] under the mixture over t): two calls of
``marginals`` per bag give everything (the paper: "two calls to our algorithm").

Two bag-count potentials are compared:

* Noisy-OR, Eq. (5): ``P(t = 1 | y) = 1 - (1 - eps)(1 - lam)^c``, i.e.
  ``f_1(c) = log(1 - (1 - eps)(1 - lam)^c)``, ``f_0(c) = log((1 - eps)(1 - lam)^c)``;
* "Normal": ``f_0(c) = -(c/D)^2 / (2 sigma^2)``, ``f_1(c) = -(mu - c/D)^2 / (2 sigma^2)`` (the
  paper prints these without the squares; a Gaussian in the fraction of positive instances is
  what the name and Fig. 5 describe).

Data: a clearly labelled SYNTHETIC data set (the paper's Musk data is not available here).
Instances are 10-D Gaussians; an instance is positive iff a fixed hidden linear score is > 0;
negative bags contain only negative instances, positive bags contain a random fraction
(30-80 %) of positive ones, as in data where "positive" means "many positive parts". Bags have
8-30 instances. Reported: bag-level test error and instance-level test error.

    python examples/cardinality_mil.py
"""

import numpy as np
from scipy.optimize import minimize

from tractable.cardinality import marginals


def make_bags(rng, n_bags, dim=10):
    w_true = rng.normal(size=dim)
    bags, labels, inst = [], [], []
    while len(bags) < n_bags:
        size = int(rng.integers(8, 31))
        t = int(rng.random() < 0.5)
        x = rng.normal(size=(4 * size, dim))
        s = x @ w_true
        pos, neg = x[s > 0.5], x[s < -0.5]  # a margin keeps instance labels unambiguous
        n_pos = int(round(rng.uniform(0.3, 0.8) * size)) if t else 0
        if len(pos) < n_pos or len(neg) < size - n_pos:
            continue
        xb = np.vstack([pos[:n_pos], neg[: size - n_pos]])
        yb = np.r_[np.ones(n_pos), np.zeros(size - n_pos)]
        bags.append(xb)
        labels.append(t)
        inst.append(yb)
    return bags, np.array(labels), inst


def potentials(kind, size, par):
    c = np.arange(size + 1)
    if kind == "noisy-or":
        eps, lam = 0.01, par
        log_off = np.log1p(-eps) + c * np.log1p(-lam)
        return log_off, np.log(-np.expm1(log_off))
    mu, sigma = par, 0.2
    return -((c / size) ** 2) / (2 * sigma**2), -((mu - c / size) ** 2) / (2 * sigma**2)


def fit(bags, labels, kind, par, reg=1e-2):
    dim = bags[0].shape[1]
    pots = [potentials(kind, len(x), par) for x in bags]

    def objective(params):
        w, b = params[:dim], params[dim]
        nll, gw, gb = 0.0, reg * w, 0.0
        for x, t, (f0, f1) in zip(bags, labels, pots):
            theta = x @ w + b
            r0, r1 = marginals(theta, f0), marginals(theta, f1)
            lz = np.logaddexp(r0.log_partition, r1.log_partition)
            rt = r1 if t else r0
            nll -= rt.log_partition - lz
            p1 = np.exp(r1.log_partition - lz)
            g = rt.p_on - ((1 - p1) * r0.p_on + p1 * r1.p_on)
            gw -= x.T @ g
            gb -= g.sum()
        return nll / len(bags) + 0.5 * reg * w @ w, np.r_[gw / len(bags), gb / len(bags)]

    res = minimize(objective, np.zeros(dim + 1), jac=True, method="L-BFGS-B", options={"maxiter": 50})
    return res.x


def evaluate(params, bags, labels, inst, kind, par):
    dim = bags[0].shape[1]
    bag_err, inst_wrong, inst_total = 0, 0, 0
    for x, t, y in zip(bags, labels, inst):
        theta = x @ params[:dim] + params[dim]
        f0, f1 = potentials(kind, len(x), par)
        r0, r1 = marginals(theta, f0), marginals(theta, f1)
        t_hat = int(r1.log_partition > r0.log_partition)
        bag_err += t_hat != t
        mu = r1.p_on if t_hat else r0.p_on  # P(instance on) given the predicted bag label
        inst_wrong += int(np.sum((mu > 0.5) != (y > 0.5)))
        inst_total += len(y)
    return bag_err / len(bags), inst_wrong / inst_total


def main():
    rng = np.random.default_rng(0)
    bags, labels, inst = make_bags(rng, 120)
    print("synthetic MIL data: 60 training bags, 60 test bags")
    for kind, pars in [("noisy-or", [0.3, 0.7]), ("normal", [0.4, 0.6])]:
        for par in pars:
            w = fit(bags[:60], labels[:60], kind, par)
            be, ie = evaluate(w, bags[60:], labels[60:], inst[60:], kind, par)
            name = f"lambda={par}" if kind == "noisy-or" else f"mu={par}"
            print(f"{kind:9s} {name:12s} bag error {be:.3f}   instance error {ie:.3f}")


if __name__ == "__main__":
    main()
