"""Tests of the study example (examples/study.py): its prior, its posterior against the
closed form of a GP, its acquisition, and its loop against the fake curator of
test_client.py. integration/python_test.go runs the example against a real curator.
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
import unittest

import numpy as np

import test_client

_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "study.py")
_spec = importlib.util.spec_from_file_location("privbo_study_example", _path)
study = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = study  # its dataclasses look their module up
_spec.loader.exec_module(study)


def closed_form(z, rows, y, offset, sv, nv, ls):
    """Posterior mean and sd of a GP with prior mean offset and kernel
    sv·exp(−‖a − b‖²/(2 ls²)) after noisy observations y at rows (Rasmussen and Williams
    2006, eq. 2.23–2.24), computed directly."""
    def k(a, b):
        d = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
        return sv * np.exp(-d / (2 * ls * ls))

    x = z[rows]
    a = k(x, x) + nv * np.eye(len(rows))
    ks = k(z, x)
    mean = offset + ks @ np.linalg.solve(a, np.asarray(y) - offset)
    var = sv - np.einsum("ij,ji->i", ks, np.linalg.solve(a, ks.T))
    return mean, np.sqrt(var)


class StudyTest(unittest.TestCase):
    def test_prior_from_public_facts(self):
        # Rows at distances 3, 4, 5 (median 4) from their mean in r = 2 coordinates,
        # projection noise sd 1: lengthscale sqrt(16 − 2·1) = sqrt(14).
        z = np.array([[3.0, 0], [-3, 0], [0, 4], [0, -4], [5, 0], [-5, 0]])
        p = study.prior(z, 1.0, 50.0, 0.0, 400.0)
        self.assertAlmostEqual(p.lengthscale, math.sqrt(14))
        self.assertEqual((p.offset, p.signal_variance, p.noise_variance, p.standardise), (200, 100 ** 2, 50 ** 2, False))
        # Noise that accounts for nearly all the spread leaves a tenth of the median.
        self.assertAlmostEqual(study.prior(z, 10.0, 50.0, 0.0, 400.0).lengthscale, 0.4)
        # Exact answers state no range: standardised, with the least noise.
        e = study.prior(z, 0.0, 0.0, 0.0, 0.0)
        self.assertTrue(e.standardise)
        self.assertEqual((e.offset, e.signal_variance, e.noise_variance, e.lengthscale), (0, 1, study.MIN_NOISE_RATIO, 4))

    def test_posterior_is_the_gp_closed_form(self):
        rng = np.random.default_rng(7)
        z = rng.normal(size=(30, 3))
        rows, y = [4, 11, 27, 0], [250.0, -40.0, 900.0, 180.0]
        p = study.Prior(offset=200, signal_variance=100 ** 2, noise_variance=300 ** 2, lengthscale=1.3)
        mean, sd = study.posterior(z, p, rows, y)
        want_mean, want_sd = closed_form(z, rows, y, 200, 100 ** 2, 300 ** 2, 1.3)
        np.testing.assert_allclose(mean, want_mean, rtol=1e-9)
        np.testing.assert_allclose(sd, want_sd, rtol=1e-9)
        # Before any answer: the prior.
        mean, sd = study.posterior(z, p, [], [])
        self.assertTrue(np.all(mean == 200) and np.all(sd == 100))

    def test_next_row_skips_queried_and_breaks_ties_low(self):
        mean = np.array([1.0, 5.0, 5.0, 2.0])
        sd = np.zeros(4)
        self.assertEqual(study.next_row(mean, sd, [], 1), 1)
        self.assertEqual(study.next_row(mean, sd, [1], 1), 2)
        # The bound adds √β_t σ: row 0's mean 1 + σ 0.5 beats row 3's mean 2 + σ 0.
        sd = np.array([0.5, 0.0, 0.0, 0.0])
        self.assertGreater(1 + 0.5 * math.sqrt(study.beta(1, 4)), 2)
        self.assertEqual(study.next_row(mean, sd, [1, 2], 1), 0)
        self.assertAlmostEqual(study.beta(3, 4), 2 * math.log(4 * 9 * math.pi ** 2 / (6 * 0.05)))


class StudyLoopTest(unittest.TestCase):
    def setUp(self):
        fixture = test_client.ClientTest("test_query")
        fixture.setUp()
        self.addCleanup(fixture.tearDown)
        self.fake, self.client = fixture.fake, fixture.client

    def test_loop_queries_distinct_rows_and_recommends_a_queried_one(self):
        z = np.asarray(self.client.release_projection(as_numpy=True).matrix)
        # The fake answers 100 + row; a small noise lets the GP follow it.
        p = study.prior(z, 0.0, 1.0, 90.0, 110.0)
        lines = []
        res = study.run(self.client, z, p, 5, log=lines.append)
        self.assertEqual(len(res.queried), 5)
        self.assertEqual(len(set(res.queried)), 5)
        self.assertEqual(res.answers, [100.0 + i for i in res.queried])
        self.assertEqual(res.queried[0], 0, "before any answer every bound is equal: the lowest row")
        self.assertEqual(self.fake.calls["Query"], 5)
        mean, sd = study.posterior(z, p, res.queried, res.answers)
        self.assertIn(res.recommended, res.queried)
        self.assertEqual(res.recommended, max(res.queried, key=lambda i: mean[i]))
        self.assertAlmostEqual(res.mean, mean[res.recommended])
        self.assertAlmostEqual(res.sd, sd[res.recommended])
        self.assertEqual(len(lines), 5)
        self.assertTrue(lines[0].startswith("query 1: row 0, noisy answer 100.0"), lines[0])


if __name__ == "__main__":
    unittest.main()
