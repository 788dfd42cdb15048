"""Tests of privbo.Study (privbo/study.py): its prior, its posterior against the closed
form of a GP, the expected kernel under the projection's noise, its acquisition, its
Laplace recommendation, and its loop, state file and resumption against the fake curator
of test_client.py. integration/python_test.go runs it against a real curator and checks
that it queries the rows the Go modeler queries.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import tempfile
import unittest

import numpy as np

import privbo
import test_client
from privbo import study


def closed_form(z, rows, y, sv, nv, ls):
    """Posterior mean and sd of a GP over standardised answers (mean m, sample sd s) with
    kernel sv·exp(−‖a − b‖²/(2 ls²)) and noise variance nv (Rasmussen and Williams 2006,
    eq. 2.23–2.24), computed directly."""
    def k(a, b):
        d = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
        return sv * np.exp(-d / (2 * ls * ls))

    y = np.asarray(y)
    m, s = y.mean(), y.std(ddof=1)
    x = z[rows]
    a = k(x, x) + nv * np.eye(len(rows))
    ks = k(z, x)
    mean = m + ks @ np.linalg.solve(a, y - m)
    var = sv - np.einsum("ij,ji->i", ks, np.linalg.solve(a, ks.T))
    return mean, s * np.sqrt(var)


class GPTest(unittest.TestCase):
    def test_prior_from_public_facts(self):
        # Rows at distances 3, 4, 5 (median 4) from their mean in r = 2 coordinates,
        # projection noise sd 1: lengthscale sqrt(16 − 2·1) = sqrt(14).
        z = np.array([[3.0, 0], [-3, 0], [0, 4], [0, -4], [5, 0], [-5, 0]])
        gp = study._GP(z, 1.0, 50.0, 0.0, 400.0)
        self.assertAlmostEqual(gp.lengthscale, math.sqrt(14))
        # NoiseRuleRatio: signal 1, noise σ_n²/s_f² with s_f = 400/4.
        self.assertEqual((gp.signal, gp.noise), (1.0, 0.25))
        # Noise that accounts for nearly all the spread leaves a tenth of the median.
        self.assertAlmostEqual(study._GP(z, 10.0, 50.0, 0.0, 400.0).lengthscale, 0.4)
        # Exact answers: pkg/modeler's exact prior; no projection noise: the median.
        exact = study._GP(z, 0.0, 0.0, 0.0, 0.0)
        self.assertEqual((exact.lengthscale, exact.signal, exact.noise, exact.factor), (4, 1, 1e-3, 1))

    def test_posterior_is_the_gp_closed_form(self):
        rng = np.random.default_rng(7)
        z = rng.normal(size=(30, 3))
        rows, y = [4, 11, 27, 0], [250.0, -40.0, 900.0, 180.0]
        gp = study._GP(z, 0.0, 300.0, 0.0, 1200.0)
        mean, sd = gp.posterior(rows, y)
        want_mean, want_sd = closed_form(z, rows, y, 1.0, gp.noise, gp.lengthscale)
        np.testing.assert_allclose(mean, want_mean, rtol=1e-9)
        np.testing.assert_allclose(sd, want_sd, rtol=1e-9)
        # Before any answer: the standardised prior.
        mean, sd = gp.posterior([], [])
        self.assertTrue(np.all(mean == 0) and np.all(sd == 1))

    def test_expected_kernel_under_projection_noise(self):
        # In one coordinate the expected kernel has a closed form (pkg/gpucb, "Noisy
        # candidates"): with S = Var(z) − σ², λ = S/Var(z) and p = σ²λ, the rows behind
        # z_i are N(m + λ(z_i − m), p), and E k(x_i, x_j) = √(l²/(l² + 2p))·
        # exp(−λ²(z_i − z_j)²/(2(l² + 2p))) for i ≠ j, k(x_i, x_i) = 1.
        z = np.array([[-3.0], [-1.0], [0.5], [2.0], [4.5]])
        sigma = 0.8
        gp = study._GP(z, sigma, 1.0, 0.0, 4.0)
        var = z.var()
        lam = (var - sigma ** 2) / var
        p = sigma ** 2 * lam
        l2 = gp.lengthscale ** 2
        want = math.sqrt(l2 / (l2 + 2 * p)) * np.exp(-(lam * (z - z.T)) ** 2 / (2 * (l2 + 2 * p)))
        np.fill_diagonal(want, 1)
        np.testing.assert_allclose(gp._k(range(5), range(5)), want, rtol=1e-12)
        self.assertLess(gp.factor, 1)

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

    def test_laplace_posterior_moves_less_for_an_outlier(self):
        # Eight rows on a line with answers near 0 and one lucky draw of 40 at row 4:
        # under the Laplace likelihood the outlier pulls its row's posterior mean less
        # than under the Gaussian of the same variance.
        z = np.arange(9.0)[:, None]
        rows = list(range(9))
        y = [0.5, -0.3, 0.2, -0.1, 40.0, 0.1, -0.4, 0.3, 0.0]
        gp = study._GP(z, 0.0, 3.0, -10.0, 10.0)
        gauss, _ = gp.posterior(rows, y)
        laplace, _ = study.laplace_posterior(gp, rows, y, 3.0)
        self.assertLess(laplace[4], gauss[4])
        self.assertLess(abs(laplace[0] - 0.5), abs(gauss[0] - 0.5) + 1)


class StudyTest(unittest.TestCase):
    def setUp(self):
        fixture = test_client.ClientTest("test_query")
        fixture.setUp()
        self.addCleanup(fixture.tearDown)
        self.fake, self.client, self.target = fixture.fake, fixture.client, "127.0.0.1:%d" % fixture.port
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.state = os.path.join(tmp.name, "study.json")

    def stored(self):
        with open(self.state, encoding="utf-8") as f:
            return json.load(f)

    def test_loop_queries_distinct_rows_and_recommends_a_queried_one(self):
        lines = []
        res = privbo.Study(self.client, self.state, iterations=5, initial_row=2, log=lines.append).run()
        # The fake answers 100 + row.
        self.assertEqual(len(set(res.queried)), 5)
        self.assertEqual(res.queried[0], 2)
        self.assertEqual(res.answers, tuple(100.0 + i for i in res.queried))
        self.assertEqual([list(q.indices) for q in self.fake.queries], [[i] for i in res.queried])
        # The curator's default study (the fake's quote: r = 3, ε = 1, δ = 2e-7).
        self.assertEqual([(r.dimension, r.epsilon, r.delta, r.with_answers) for r in self.fake.releases], [(3, 1.0, 2e-7, True)])
        # The recommendation: the queried row with the highest posterior mean under the
        # answers' Laplace likelihood (the fake states Laplace noise of sd 1131.4).
        gp = study._GP(np.asarray(test_client.MATRIX), 0.625, 1131.4, 0.0, 400.0)
        mean, sd = study.laplace_posterior(gp, list(res.queried), list(res.answers), 1131.4)
        self.assertEqual(res.likelihood, "laplace")
        self.assertEqual(res.recommended, max(res.queried, key=lambda i: mean[i]))
        self.assertAlmostEqual(res.mean, mean[res.recommended])
        self.assertAlmostEqual(res.sd, sd[res.recommended])
        self.assertEqual((res.best_row, res.best_answer), (max(res.queried), 100.0 + max(res.queried)))
        # The result leads with the recommended row; the noisy answer comes second.
        text = str(res).split("\n")
        self.assertTrue(text[0].startswith(f"Recommended row {res.recommended}: posterior mean "), text)
        self.assertTrue(text[1].startswith(f"Highest noisy answer: {res.best_answer:.4g} at row {res.best_row}"), text)
        self.assertEqual(lines[0], "New study in %s: r = 3, ε = 1, δ = 2e-07, 5 iterations." % self.state)
        self.assertEqual(lines[1], "Query 1: row 2, answer 102.")
        self.assertEqual(len(lines), 6)
        st = self.stored()
        self.assertEqual((st["queried"], st["answers"]), (list(res.queried), list(res.answers)))
        self.assertEqual(st["identity"], "alice")

    def test_resume_repeats_no_query_and_asks_the_same_release(self):
        first = privbo.Study(self.client, self.state, iterations=3).run()
        lines = []
        res = privbo.Study(self.client, self.state, iterations=6, log=lines.append).run()
        self.assertEqual(res.queried[:3], first.queried)
        self.assertEqual(len(set(res.queried)), 6)
        # Every row asked once; the second release is the first request again, which the
        # curator replays at no cost.
        self.assertEqual(sorted(q.indices[0] for q in self.fake.queries), sorted(res.queried))
        self.assertEqual(len(self.fake.releases), 2)
        self.assertEqual(self.fake.releases[0], self.fake.releases[1])
        self.assertEqual(len(self.fake.quotes), 3, "the new study's quote, then one per release")
        self.assertEqual(lines[0], "Resuming the study in %s: 3 of 6 rows answered." % self.state)
        # A finished study asks no row again.
        again = privbo.Study(self.client, self.state).run()
        self.assertEqual((again.queried, again.recommended), (res.queried, res.recommended))
        self.assertEqual(len(self.fake.queries), 6)

    def test_resume_after_a_crash_keeps_every_answer(self):
        def crash(line):
            if line.startswith("Query 2:"):
                raise KeyboardInterrupt

        with self.assertRaises(KeyboardInterrupt):
            privbo.Study(self.client, self.state, iterations=4, initial_row=0, log=crash).run()
        self.assertEqual(len(self.stored()["queried"]), 2, "each answer is stored as it arrives")
        res = privbo.Study(self.client, self.state).run()
        self.assertEqual(res.iterations, 4)
        self.assertEqual(len(self.fake.queries), 4)
        self.assertEqual(len(set(res.queried)), 4)

    def test_other_settings_refused_before_any_query(self):
        privbo.Study(self.client, self.state, iterations=2, dimension=3, initial_row=0).run()
        for kw in ({"dimension": 2}, {"epsilon": 2.0}, {"initial_row": 6}, {"iterations": 1}, {"iterations": test_client.ROWS + 1}):
            with self.subTest(kw=kw), self.assertRaises(privbo.StudyStateError):
                privbo.Study(self.client, self.state, **kw).run()
        self.assertEqual(len(self.fake.releases), 2, "the one before the check of iterations against the rows")
        self.assertEqual(len(self.fake.queries), 2)

    def test_another_release_refused(self):
        privbo.Study(self.client, self.state, iterations=2).run()
        st = self.stored()
        st["release"]["sha256"] = "00" * 32
        with open(self.state, "w", encoding="utf-8") as f:
            json.dump(st, f)
        with self.assertRaises(privbo.StudyStateError):
            privbo.Study(self.client, self.state).run()
        self.assertEqual(len(self.fake.queries), 2)

    def test_another_identity_refused_before_any_release(self):
        privbo.Study(self.client, self.state, iterations=2).run()
        st = self.stored()
        st["identity"] = "bob"
        with open(self.state, "w", encoding="utf-8") as f:
            json.dump(st, f)
        with self.assertRaisesRegex(privbo.StudyStateError, "runs as identity 'bob', not 'alice'"):
            privbo.Study(self.client, self.state).run()
        self.assertEqual(len(self.fake.releases), 1)

    def test_more_iterations_than_rows_refused_before_any_charge(self):
        with self.assertRaises(ValueError):
            privbo.Study(self.client, self.state, iterations=test_client.ROWS + 1).run()
        self.assertFalse(os.path.exists(self.state))
        self.assertEqual(self.fake.releases, [])

    def test_unaffordable_study_refused_before_it_is_stored(self):
        self.fake.quote_fits = False
        with self.assertRaises(privbo.StudyUnaffordable):
            privbo.Study(self.client, self.state).run()
        self.assertFalse(os.path.exists(self.state))
        self.assertEqual(self.fake.releases, [])

    def test_command_prints_the_recommendation_first_and_says_why_it_stopped(self):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = study.main([self.target, "alice", self.state, "--iterations", "3"])
        self.assertEqual((code, err.getvalue()), (0, ""))
        lines = out.getvalue().splitlines()
        starts = ["New study in ", "Query 1: ", "Query 2: ", "Query 3: ", "Recommended row ", "Highest noisy answer: "]
        self.assertEqual(len(lines), len(starts), lines)
        for line, start in zip(lines, starts):
            self.assertTrue(line.startswith(start), (line, start))
        self.assertTrue(all(len(l) <= 300 for l in lines), lines)
        # A refusal: its message, and the exit status 1.
        self.fake.quote_fits = False
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = study.main([self.target, "alice", self.state + ".new"])
        self.assertEqual(code, 1)
        self.assertTrue(err.getvalue().startswith("The study was refused: the study's projection (r=3"), err.getvalue())


if __name__ == "__main__":
    unittest.main()
