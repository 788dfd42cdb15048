"""GP-UCB over a curator's private projection, resumable: ``privbo.Study``.

    study = privbo.Study(curator, "diabetes-study.json")   # the state file
    result = study.run()
    print(result)             # the recommended row first

    python3 -m privbo.study HOST:PORT IDENTITY STATE_FILE [--iterations 50] ...

It does what the Go modeler does (``modeler run``, pkg/modeler), with its defaults:

1. Ask the curator to quote the study (costs nothing). Dimension, ε and δ left out are
   the curator's default study's; a study the budget cannot pay raises
   ``StudyUnaffordable`` before anything is charged or stored.
2. Store the resolved settings and a first row drawn uniformly at random, then release
   the projection Z (rows × r) with its answers paid in the same charge.
3. Model the answers with a Gaussian process over the rows of Z, its prior from public
   facts alone (pkg/gpucb NoiseRuleRatio): the answers standardised by their running
   mean and sd, signal variance 1 and noise variance σ_n²/s_f² with σ_n the answers'
   noise sd the curator states and s_f = (U − L)/4 of their public range [L, U]
   (exact answers: 1 and 1e-3). The squared-exponential kernel's lengthscale is the
   median distance of the rows to their mean, less the share of the projection's noise σ
   (sqrt(m² − r·σ²), at least m/10), and the kernel is its expectation over that noise
   (pkg/gpucb, "Noisy candidates").
4. Query one row per iteration, the unqueried row with the highest µ + √β_t σ,
   β_t = 2 log(n t² π² / (6 δ')), δ' = 0.05 (Srinivas et al. 2010), ties to the lowest row.
   Each answer is written to the state file as it arrives.
5. Recommend the queried row with the highest posterior mean, with its posterior sd.
   Under Laplace answers the posterior is first refitted under their Laplace likelihood
   (iteratively reweighted least squares, pkg/modeler robustRecommend), so that one lucky
   noise draw moves the recommendation less. The highest single answer is reported too,
   as the noisy answer it is.

A second ``run`` with the same state file resumes: it asks for the same release, which
the curator replays at no cost, checks that its SHA-256 is the stored one, replays the
stored answers into the GP without asking for them again, and queries only the rest.
A row asked again after a crash is also replayed at no cost. Needs numpy.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import secrets
import sys
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

from privbo.client import Client, CuratorError, NoiseFamily, StudyUnaffordable, connect

# Defaults of the Go modeler (pkg/modeler NewConfig) and of its GP's prior.
ITERATIONS = 50
DELTA_UCB = 0.05
EXACT_SIGNAL_VARIANCE, EXACT_NOISE_VARIANCE = 1.0, 1e-3
MIN_NOISE_RATIO = 1e-6
STATE_VERSION = 1


class StudyStateError(ValueError):
    """The state file belongs to another study: other settings, identity or release."""


@dataclass(frozen=True)
class StudyResult:
    """A study's outcome. ``recommended`` is the queried row with the highest posterior
    mean (``mean`` ± ``sd``, in the answers' units) under ``likelihood``; ``best_row``
    and ``best_answer`` are the highest single answer, with private answers mostly the
    luckiest noise draw."""

    recommended: int
    mean: float
    sd: float
    likelihood: str
    queried: Tuple[int, ...]
    answers: Tuple[float, ...]
    best_row: int
    best_answer: float
    answer_noise_sd: float
    release_id: str
    iterations: int

    def __str__(self) -> str:
        lines = [f"Recommended row {self.recommended}: posterior mean {self.mean:.4g} ± {self.sd:.4g} (1 sd), "
                 f"the highest among the {len(self.queried)} queried rows."]
        if self.answer_noise_sd > 0:
            lines.append(f"Highest noisy answer: {self.best_answer:.4g} at row {self.best_row}; "
                         f"each answer carries noise of sd {self.answer_noise_sd:.4g}, so it is not the row's value.")
        else:
            lines.append(f"Highest answer: {self.best_answer:.4g} at row {self.best_row} (exact).")
        return "\n".join(lines)


class _GP:
    """The GP posterior over the rows of z (module documentation, step 3), recomputed
    from its observations: O(n·t + t³) per call, little beside a curator's answer."""

    def __init__(self, z: np.ndarray, input_noise_sd: float, answer_noise_sd: float, lower: float, upper: float):
        n, r = z.shape
        m = float(np.median(np.linalg.norm(z - z.mean(axis=0), axis=1)))
        m = m if m > 0 else 1.0  # gpucb DefaultLengthscale (its max-distance fallback aside)
        v = input_noise_sd ** 2
        ls = math.sqrt(max(m * m - r * v, m * m / 100)) if v > 0 else m
        # The expected kernel under the projection's noise (gpucb rowPrior): rows shrunk
        # towards their mean along the eigenvectors of Cov(z) − σ²I.
        zc = z - z.mean(axis=0)
        p = np.zeros(r)
        if v > 0:
            s, vecs = np.linalg.eigh(zc.T @ zc / n)
            lam = np.maximum(s - v, 0) / (np.maximum(s - v, 0) + v)
            p, zc = v * lam, (zc @ vecs) * lam
        self.coords = zc / np.sqrt(ls * ls + 2 * p)
        self.factor = float(np.prod(np.sqrt(ls * ls / (ls * ls + 2 * p))))
        self.lengthscale = ls
        if answer_noise_sd > 0 and upper > lower:
            self.noise = max(answer_noise_sd ** 2 / ((upper - lower) / 4) ** 2, MIN_NOISE_RATIO)
        else:
            self.noise = EXACT_NOISE_VARIANCE
        self.signal = EXACT_SIGNAL_VARIANCE  # both rules: 1 in standardised units

    def _k(self, a: Sequence[int], b: Sequence[int]) -> np.ndarray:
        d = ((self.coords[a][:, None, :] - self.coords[b][None, :, :]) ** 2).sum(-1)
        k = self.signal * self.factor * np.exp(-d / 2)
        return k + self.signal * (1 - self.factor) * (np.asarray(a)[:, None] == np.asarray(b)[None, :])

    def posterior(self, rows: Sequence[int], y: Sequence[float], nf: Optional[np.ndarray] = None):
        """The posterior mean and sd at every row, in the answers' units, after answers y at
        rows, answer j's noise variance times nf[j]."""
        n = len(self.coords)
        if not rows:
            return np.zeros(n), np.full(n, math.sqrt(self.signal))
        y = np.asarray(y, dtype=float)
        mu, s = y.mean(), (y.std(ddof=1) if len(y) > 1 else 1.0) or 1.0
        a = self._k(rows, rows) + np.diag(self.noise * (np.ones(len(rows)) if nf is None else nf))
        ks = self._k(range(n), rows)
        chol = np.linalg.cholesky(a)
        v = np.linalg.solve(chol, ks.T)
        mean = mu + s * (v.T @ np.linalg.solve(chol, (y - mu) / s))
        var = np.maximum(self.signal - (v * v).sum(0), 0)
        return mean, s * np.sqrt(var)


def beta(t: int, n: int, delta: float = DELTA_UCB) -> float:
    """β_t of GP-UCB for n candidates at iteration t ≥ 1."""
    return 2 * math.log(n * t * t * math.pi ** 2 / (6 * delta))


def next_row(mean: np.ndarray, sd: np.ndarray, queried: Sequence[int], t: int, delta: float = DELTA_UCB) -> int:
    """The row not in queried with the highest µ + √β_t σ (the lowest such row on ties)."""
    ucb = mean + math.sqrt(beta(t, len(mean), delta)) * sd
    ucb[list(queried)] = -np.inf
    return int(np.argmax(ucb))


def laplace_posterior(gp: _GP, rows: Sequence[int], y: Sequence[float], noise_sd: float):
    """The posterior under the answers' Laplace likelihood (scale b = noise_sd/√2): EM for
    its mode reweights answer j to the Gaussian variance b·|r_j|, r_j its residual from
    the posterior mean, floored at b/2 (pkg/modeler robustRecommend; Rasmussen and
    Williams 2006, §9.3)."""
    b = noise_sd / math.sqrt(2)
    mean, sd = gp.posterior(rows, y)
    for _ in range(10):
        r = np.maximum(np.abs(np.asarray(y) - mean[list(rows)]), b / 2)
        mean, sd = gp.posterior(rows, y, b * r / (2 * b * b))
    return mean, sd


class Study:
    """A GP-UCB study against ``curator`` kept in the JSON file ``state`` (module
    documentation). ``dimension``, ``epsilon`` and ``delta`` None are the curator's
    default study's; ``initial_row`` None draws the first row at random. On resume a
    setting given must equal the stored one, except ``iterations``, which may change (to no
    fewer than the rows answered). ``log`` receives a line per answer."""

    def __init__(self, curator: Client, state: str, *, iterations: Optional[int] = None,
                 dimension: Optional[int] = None, epsilon: Optional[float] = None, delta: Optional[float] = None,
                 initial_row: Optional[int] = None, delta_ucb: Optional[float] = None,
                 log: Optional[Callable[[str], None]] = None):
        self.curator, self.path, self.log = curator, state, log or (lambda line: None)
        self.asked = {"iterations": iterations, "dimension": dimension, "epsilon": epsilon, "delta": delta,
                      "initial_row": initial_row, "delta_ucb": delta_ucb}

    def _save(self, st: dict) -> None:
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(st, f, indent=1)
        os.replace(tmp, self.path)

    def _load_or_create(self) -> dict:
        if os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as f:
                st = json.load(f)
            if st.get("version") != STATE_VERSION:
                raise StudyStateError(f"{self.path}: state version {st.get('version')}, want {STATE_VERSION}")
            for k, v in self.asked.items():
                if v is not None and k != "iterations" and v != st["settings"][k]:
                    raise StudyStateError(f"{self.path}: the study was created with {k} = {st['settings'][k]}, not {v}; "
                                          "give the stored value or none to resume, or name a new state file")
            who = self.curator.get_budget().identity  # costs nothing; a release to another identity would
            if who != st["identity"]:
                raise StudyStateError(f"{self.path}: the study runs as identity {st['identity']!r}, not {who!r}: "
                                      "its answers and budget belong to that identity")
            it = self.asked["iterations"]
            if it is not None and it < len(st["queried"]):
                raise StudyStateError(f"{self.path}: {len(st['queried'])} rows are answered already, more than {it} iterations")
            st["settings"]["iterations"] = it or st["settings"]["iterations"]
            self.log(f"Resuming the study in {self.path}: {len(st['queried'])} of {st['settings']['iterations']} rows answered.")
            return st
        a = self.asked
        q = self.curator.quote(a["dimension"], a["epsilon"], a["delta"])
        if not q.fits:
            raise StudyUnaffordable(q)
        info = self.curator.get_dataset_info()
        first = a["initial_row"] if a["initial_row"] is not None else secrets.randbelow(info.rows)
        settings = dict(iterations=a["iterations"] or ITERATIONS, dimension=q.projection.dimension,
                        epsilon=q.projection.epsilon, delta=q.projection.delta, initial_row=first,
                        delta_ucb=a["delta_ucb"] or DELTA_UCB)
        if not 0 <= first < info.rows or settings["iterations"] > info.rows:  # refused before any charge
            raise ValueError(f"initial row {first} and {settings['iterations']} iterations: the dataset has {info.rows} rows")
        op = info.output_privacy
        st = {"version": STATE_VERSION, "identity": info.budget.identity, "settings": settings,
              "answers_noise": [op.lower, op.upper, op.noise_sd, op.noise.name], "release": None, "queried": [], "answers": []}
        self._save(st)  # before anything is charged: a crash from here on resumes this study
        self.log(f"New study in {self.path}: r = {q.projection.dimension}, ε = {q.projection.epsilon:.4g}, "
                 f"δ = {q.projection.delta:.4g}, {settings['iterations']} iterations.")
        return st

    def run(self) -> StudyResult:
        """Runs (or resumes) the study to its iterations and returns its result."""
        st = self._load_or_create()
        s = st["settings"]
        z = self.curator.release_projection(s["dimension"], s["epsilon"], s["delta"], as_numpy=True)
        got = {"id": z.release_id, "sha256": z.sha256.hex(), "noise_sd": z.noise_sd}
        if st["release"] is None:
            st["release"] = got
            self._save(st)
        elif st["release"] != got:
            raise StudyStateError(f"{self.path}: the curator released {got['id']} (SHA-256 {got['sha256'][:12]}…), "
                                  f"the study holds {st['release']['id']} ({st['release']['sha256'][:12]}…)")
        if s["iterations"] > z.rows:
            raise StudyStateError(f"{self.path}: {s['iterations']} iterations, but the projection has {z.rows} rows to query")
        lower, upper, noise_sd, family = st["answers_noise"]
        gp = _GP(np.asarray(z.matrix), z.noise_sd, noise_sd, lower, upper)
        rows, ys = st["queried"], st["answers"]
        for t in range(len(rows) + 1, s["iterations"] + 1):
            mean, sd = gp.posterior(rows, ys)
            i = s["initial_row"] if t == 1 else next_row(mean, sd, rows, t, s["delta_ucb"])
            (obs,) = self.curator.query([i]).observations
            rows.append(i)
            ys.append(obs.value)
            self._save(st)
            self.log(f"Query {t}: row {i}, answer {obs.value:.4g}" + (" (replayed at no cost)." if obs.replayed else "."))
        laplace = family == NoiseFamily.LAPLACE.name and noise_sd > 0 and len(rows) > 1
        mean, sd = laplace_posterior(gp, rows, ys, noise_sd) if laplace else gp.posterior(rows, ys)
        best = max(rows, key=lambda i: mean[i])  # iterations ≥ 1: rows is not empty
        j = int(np.argmax(ys))
        return StudyResult(recommended=best, mean=float(mean[best]), sd=float(sd[best]),
                           likelihood="laplace" if laplace else "gaussian", queried=tuple(rows), answers=tuple(ys),
                           best_row=rows[j], best_answer=ys[j], answer_noise_sd=noise_sd, release_id=z.release_id,
                           iterations=s["iterations"])


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m privbo.study", description=__doc__.split("\n", 1)[0])
    ap.add_argument("target", help="the curator, HOST:PORT (plaintext: a development curator on loopback)")
    ap.add_argument("identity", help="the identity charged (the privbo-identity header)")
    ap.add_argument("state", help="the study's state file: created if absent, resumed otherwise")
    ap.add_argument("--iterations", type=int, help=f"rows to query, one per iteration (new study: {ITERATIONS})")
    ap.add_argument("--dimension", type=int, help="r, the projection's dimension (default: the curator's choice)")
    ap.add_argument("--epsilon", type=float, help="the projection's ε (default: the curator's default study's)")
    ap.add_argument("--delta", type=float, help="the projection's δ (default: the curator's default study's)")
    args = ap.parse_args(argv)
    with connect(args.target, identity=args.identity) as curator:
        try:
            res = Study(curator, args.state, iterations=args.iterations, dimension=args.dimension,
                        epsilon=args.epsilon, delta=args.delta, log=print).run()
        except (CuratorError, StudyStateError) as e:
            print(f"The study was refused: {getattr(e, 'message', e)}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print(f"Stopped. The answers so far are in {args.state}; the same command resumes the study.", file=sys.stderr)
            return 130
        print(res)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
