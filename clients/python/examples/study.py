"""A GP-UCB study over a curator's private projection: a loop a vendor can start from.

    python3 examples/study.py HOST:PORT IDENTITY [--iterations 10] [--dimension 3] ...

It does what the Go modeler (`modeler run`, pkg/modeler) does, in a few lines of
scikit-learn:

1. Ask the curator to quote the study (costs nothing): the projection's noise σ per
   entry, the answers' mechanism, public range [L, U] and noise sd per answer.
2. Release the projection Z (rows × r) with its answers paid in the same charge.
3. Model the objective over the rows of Z with a Gaussian process whose prior is set from
   those public facts alone, before any answer (pkg/gpucb NoiseRulePublicRange): prior
   mean the range's midpoint (L + U)/2, signal sd s_f = (U − L)/4 (values in [L, U] as
   the midpoint ± 2 sd), noise variance σ_n² with σ_n the stated answer noise sd; a
   squared-exponential kernel whose lengthscale is the median distance m of the rows to
   their mean, less the share the projection's noise σ adds (sqrt(m² − r·σ²), at least
   m/10: pkg/gpucb DebiasLengthscale). The posterior mean and sd are then in the answers'
   units and mean what they say. (The Go modeler's default rule instead standardises the
   answers by their running mean and sd, which picked the best rows more often in its
   simulations, and also integrates the projection noise into the kernel: pkg/gpucb,
   "Noisy candidates". Exact answers, which state no range, are standardised here too.)
4. Each iteration queries the row not yet queried with the highest upper confidence bound
   µ(z) + √β_t σ(z), β_t = 2 log(n t² π² / (6 δ')), δ' = 0.05 (Srinivas et al. 2010,
   finite decision set), ties to the lowest row.
5. Recommend the queried row with the highest posterior mean, printed with its posterior
   sd: under private answers the single highest answer is mostly noise, and is printed
   only as the noisy answer it is.

Needs the package with its "study" extra: numpy and scikit-learn (Debian:
python3-numpy, python3-sklearn). See README.md, "The example".
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from typing import List, Sequence, Tuple

import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

import privbo

# δ' of the β_t schedule, as the Go modeler's default (pkg/modeler Config.DeltaUCB).
DELTA_UCB = 0.05
# The least noise variance relative to the signal's, keeping the GP's Cholesky factor
# well conditioned when answers are exact (pkg/gpucb minNoiseRatio).
MIN_NOISE_RATIO = 1e-6


@dataclass(frozen=True)
class Prior:
    """The GP prior, from public facts only (module documentation, step 3): the prior
    mean ``offset``, ``signal_variance`` and ``noise_variance`` in the answers' units (or
    in standardised units when ``standardise``), and the kernel's ``lengthscale``."""

    offset: float
    signal_variance: float
    noise_variance: float
    lengthscale: float
    standardise: bool = False


def prior(z: np.ndarray, projection_noise_sd: float, answer_noise_sd: float, lower: float, upper: float) -> Prior:
    """The prior for the released rows z, the projection's stated noise sd per entry, and
    the answers' stated noise sd and public range [lower, upper] (none when
    lower ≥ upper, as for exact answers: the answers are then standardised)."""
    r = z.shape[1]
    m = float(np.median(np.linalg.norm(z - z.mean(axis=0), axis=1))) or 1.0
    lengthscale = math.sqrt(max(m * m - r * projection_noise_sd ** 2, m * m / 100))
    if not upper > lower:
        return Prior(offset=0.0, signal_variance=1.0, noise_variance=max(answer_noise_sd ** 2, MIN_NOISE_RATIO),
                     lengthscale=lengthscale, standardise=True)
    s_f2 = ((upper - lower) / 4) ** 2
    return Prior(offset=(lower + upper) / 2, signal_variance=s_f2,
                 noise_variance=max(answer_noise_sd ** 2, MIN_NOISE_RATIO * s_f2), lengthscale=lengthscale)


def posterior(z: np.ndarray, p: Prior, rows: Sequence[int], answers: Sequence[float]) -> Tuple[np.ndarray, np.ndarray]:
    """The GP's posterior mean and sd of the objective at every row of z, in the answers'
    units, after the answers at rows."""
    if not rows:
        return np.full(len(z), p.offset), np.full(len(z), math.sqrt(p.signal_variance))
    kernel = (ConstantKernel(p.signal_variance, constant_value_bounds="fixed")
              * RBF(p.lengthscale, length_scale_bounds="fixed"))
    gp = GaussianProcessRegressor(kernel=kernel, alpha=p.noise_variance, normalize_y=p.standardise, optimizer=None)
    gp.fit(z[list(rows)], np.asarray(answers, dtype=float) - p.offset)
    mean, sd = gp.predict(z, return_std=True)
    return mean + p.offset, sd


def beta(t: int, n: int) -> float:
    """β_t of GP-UCB for n candidates at iteration t ≥ 1."""
    return 2 * math.log(n * t * t * math.pi ** 2 / (6 * DELTA_UCB))


def next_row(mean: np.ndarray, sd: np.ndarray, queried: Sequence[int], t: int) -> int:
    """The row not in queried with the highest µ + √β_t σ (the lowest such row on ties)."""
    ucb = mean + math.sqrt(beta(t, len(mean))) * sd
    ucb[list(queried)] = -np.inf
    return int(np.argmax(ucb))


@dataclass(frozen=True)
class Result:
    queried: List[int]
    answers: List[float]
    recommended: int
    mean: float
    sd: float


def run(curator: privbo.Client, z: np.ndarray, p: Prior, iterations: int, log=print) -> Result:
    """Runs GP-UCB for ``iterations`` queries of one row each and returns the rows, their
    answers and the recommendation."""
    rows: List[int] = []
    answers: List[float] = []
    for t in range(1, min(iterations, len(z)) + 1):
        mean, sd = posterior(z, p, rows, answers)
        i = next_row(mean, sd, rows, t)
        (obs,) = curator.query([i]).observations
        rows.append(i)
        answers.append(obs.value)
        log(f"query {t}: row {i}, noisy answer {obs.value:.1f}" + (" (replayed)" if obs.replayed else ""))
    mean, sd = posterior(z, p, rows, answers)
    best = max(rows, key=lambda i: (mean[i], -i))
    return Result(rows, answers, best, float(mean[best]), float(sd[best]))


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("target", nargs="?", default="127.0.0.1:7070", help="the curator (HOST:PORT, a development curator on loopback)")
    ap.add_argument("identity", nargs="?", default="py-example", help="the identity charged (privbo-identity header)")
    ap.add_argument("--iterations", type=int, default=10, help="rows to query, one per iteration")
    ap.add_argument("--dimension", type=int, default=3, help="r, the projection's dimension")
    ap.add_argument("--epsilon", type=float, default=1.0, help="the projection's ε")
    ap.add_argument("--delta", type=float, default=1e-6, help="the projection's δ")
    args = ap.parse_args(argv)

    with privbo.connect(args.target, identity=args.identity) as curator:
        info = curator.get_dataset_info()
        print(f"dataset {info.name}: {info.rows} rows, {info.dimension} features")
        q = curator.quote(args.dimension, args.epsilon, args.delta)
        a = q.answers
        print(f"answers: {a.mechanism} on [{a.lower:g}, {a.upper:g}], noise sd {a.noise_sd:.6g} per answer (stated by the curator)")
        try:
            z = curator.release_projection(args.dimension, args.epsilon, args.delta)  # checksum verified
        except privbo.StudyUnaffordable as e:
            print(f"study refused: {e.message}", file=sys.stderr)
            return 1
        print(f"projection {z.release_id}: {z.rows} x {z.cols}, sha256 {z.sha256.hex()}, noise sd {z.noise_sd:.4g} per entry")
        matrix = np.asarray(z.matrix)
        p = prior(matrix, z.noise_sd, a.noise_sd, a.lower, a.upper)
        if p.standardise:
            print(f"prior: answers standardised (no public range), lengthscale {p.lengthscale:.4g}")
        else:
            print(f"prior: mean {p.offset:g}, signal sd {math.sqrt(p.signal_variance):.4g}, "
                  f"answer noise sd {math.sqrt(p.noise_variance):.4g}, lengthscale {p.lengthscale:.4g}")
        res = run(curator, matrix, p, args.iterations)
        print(f"recommended row {res.recommended}: posterior mean {res.mean:.4g} ± {res.sd:.3g} (1 sd), "
              f"the highest posterior mean among the {len(set(res.queried))} queried rows")
        j = int(np.argmax(res.answers))
        if a.noise_sd > 0:
            print(f"highest noisy answer: {res.answers[j]:.6g} at row {res.queried[j]} (a noisy answer, not the row's value)")
        else:
            print(f"highest answer: {res.answers[j]:.6g} at row {res.queried[j]} (exact)")
        b = curator.get_budget()
        print(f"budget of {b.identity}: epsilon spent {b.epsilon_spent:g} of {b.epsilon_limit:g}, remaining {b.epsilon_remaining:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
