#!/usr/bin/python3
"""GP-UCB's incremental loop (pkg/gpucb, docs/EXPERIMENTS.md) in numpy, for timing.

The same algorithm as BenchmarkLoop's eager case: squared-exponential kernel,
lengthscale the median distance of the candidates to their mean, signal
variance 1, noise variance 1e-3, standardised outputs, beta_t = 2 log(n t^2
pi^2 / (6 delta)) with delta = 0.05, V = L^-1 k(Z_t, .) stored as t rows of
length n and extended by one row per observation. The candidates are standard
normal, drawn by numpy (so not the benchmark's values), and the objective is
the benchmark's smooth(z) = sum_k sin(3 z_k + k) (1 + 0.3 k).

Usage: /usr/bin/python3 scripts/gpucb_numpy.py [n] [T] [dim]   (defaults 1000000 200 20)
It prints the loop's time, candidates generated outside it. Debian's python3-numpy only.
"""
import math
import sys
import time

import numpy as np


def smooth(z):
    k = np.arange(z.shape[-1])
    return float(np.sum(np.sin(3 * z + k) * (1 + 0.3 * k)))


def loop(cands, steps, noise=1e-3, delta=0.05):
    n, _ = cands.shape
    mean = cands.mean(axis=0)
    ls = float(np.median(np.sqrt(((cands - mean) ** 2).sum(axis=1))))
    coef = -1 / (2 * ls * ls)
    sqn = (cands * cands).sum(axis=1)
    kdiag = 1.0
    V = np.empty((steps, n))
    u, e = np.zeros(steps), np.zeros(steps)
    a, b = np.zeros(n), np.zeros(n)
    vr = np.full(n, kdiag)
    shift = dmean = m2 = 0.0
    chosen = []
    for t in range(steps):
        # Acquisition: mu + sqrt(beta_{t+1}) s sigma, in original units.
        s = 1.0
        if t >= 2:
            sd = math.sqrt(m2 / (t - 1))
            if sd > 0:
                s = sd
        beta = 2 * math.log(n * (t + 1) ** 2 * math.pi ** 2 / (6 * delta))
        score = (shift + dmean) + a - dmean * b + math.sqrt(beta) * s * np.sqrt(np.maximum(vr, 0))
        i = int(np.argmax(score))
        chosen.append(i)
        y = smooth(cands[i])
        # Observation: one new row of L (col, ltt) and of V (a rank-one extension).
        col = V[:t, i].copy()
        ltt = math.sqrt(kdiag + noise - float(col @ col))
        if t == 0:
            shift = y
        d = y - shift
        delta_ = d - dmean
        dmean += delta_ / (t + 1)
        m2 += delta_ * (d - dmean)
        ut = (d - float(col @ u[:t])) / ltt
        et = (1 - float(col @ e[:t])) / ltt
        u[t], e[t] = ut, et
        d2 = np.maximum(sqn - 2 * (cands @ cands[i]) + sqn[i], 0)
        row = kdiag * np.exp(coef * d2)
        row[i] = kdiag
        if t > 0:
            row -= col @ V[:t]
        row /= ltt
        V[t] = row
        vr -= row * row
        a += ut * row
        b += et * row
    return chosen


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    dim = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    cands = np.random.default_rng(11).standard_normal((n, dim))
    start = time.perf_counter()
    chosen = loop(cands, steps)
    elapsed = time.perf_counter() - start
    print(f"numpy GP-UCB loop: n = {n}, T = {steps}, dim = {dim}: {elapsed:.4g} s (last choice {chosen[-1]})")


if __name__ == "__main__":
    main()
