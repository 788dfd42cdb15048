"""Tests of privbo.client against real curators, which integration/python_test.go starts
(`go test ./integration -run TestPythonClient`). Without the environment below they skip.

PRIVBO_TEST_CURATOR      a plaintext development curator over examples/data/diabetes.csv
                         with private (laplace) answers of ε = PRIVBO_TEST_OUTPUT_EPSILON
                         and a budget of ε = PRIVBO_TEST_BUDGET_EPSILON per identity
PRIVBO_TEST_TLS_CURATOR  a TLS curator over examples/data/breast_cancer.csv with jobs,
                         bearer tokens, client certificates and a rate limit of a few
                         requests per second
PRIVBO_TEST_CA           its CA (PEM)
PRIVBO_TEST_TOKEN, PRIVBO_TEST_TOKEN_IDENTITY    a token and the identity it maps to
PRIVBO_TEST_CERT, PRIVBO_TEST_KEY, PRIVBO_TEST_CERT_IDENTITY   a client certificate
"""

from __future__ import annotations

import hashlib
import math
import os
import sys
import time
import unittest
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import privbo  # noqa: E402
from privbo import pb  # noqa: E402

ENV = os.environ


def fresh_identity(name: str) -> str:
    """A new identity per test run, so that each test starts with a whole budget."""
    return f"py-{name}-{uuid.uuid4().hex[:8]}"


def matrix_rows(m):
    return m.tolist() if hasattr(m, "tolist") else m


def matrix_sha256(m) -> bytes:
    import struct

    return hashlib.sha256(b"".join(struct.pack("<%dd" % len(r), *r) for r in matrix_rows(m))).digest()


@unittest.skipUnless(ENV.get("PRIVBO_TEST_CURATOR"), "no PRIVBO_TEST_CURATOR: integration/python_test.go starts one")
class DevCuratorTest(unittest.TestCase):
    def connect(self, identity):
        c = privbo.connect(ENV["PRIVBO_TEST_CURATOR"], identity=identity)
        self.addCleanup(c.close)
        return c

    def setUp(self):
        self.budget_eps = float(ENV["PRIVBO_TEST_BUDGET_EPSILON"])
        self.output_eps = float(ENV["PRIVBO_TEST_OUTPUT_EPSILON"])

    def test_release_checksum_query_budget(self):
        c = self.connect(fresh_identity("study"))
        info = c.get_dataset_info()
        self.assertEqual((info.rows, info.dimension), (442, 10))
        self.assertEqual(info.output_privacy.mechanism, "laplace")
        self.assertEqual(info.budget.epsilon_spent, 0)

        p = c.release_projection(dimension=3, epsilon=1.0, delta=1e-6)
        self.assertEqual((p.rows, p.cols), (442, 3))
        self.assertEqual(len(matrix_rows(p.matrix)), 442)
        self.assertTrue(all(len(r) == 3 for r in matrix_rows(p.matrix)))
        self.assertEqual(p.sha256, matrix_sha256(p.matrix), "the matrix returned is not the one checksummed")
        self.assertFalse(p.replayed)
        self.assertAlmostEqual(p.budget.epsilon_spent, 1.0)
        self.assertIn("ε", p.guarantee)

        # The same request is replayed from storage at no cost, as lists this time.
        again = c.release_projection(dimension=3, epsilon=1.0, delta=1e-6, as_numpy=False)
        self.assertTrue(again.replayed)
        self.assertEqual(again.release_id, p.release_id)
        self.assertEqual(again.matrix, matrix_rows(p.matrix))
        self.assertAlmostEqual(c.get_budget().epsilon_spent, 1.0)

        rows = [0, 17, 441]
        r = c.query(rows)
        self.assertEqual(sorted(o.index for o in r.observations), rows)
        self.assertFalse(any(o.replayed for o in r.observations))
        # Clipped values plus Laplace noise of scale (upper − lower)/ε: finite, distinct.
        self.assertTrue(all(math.isfinite(o.value) for o in r.observations))
        self.assertEqual(len(set(r.values().values())), len(rows))
        # The answers are charged once, under the record relation, which counts towards
        # the feature-unit budget too.
        self.assertAlmostEqual(r.budget.epsilon_spent, 1.0 + self.output_eps)
        rep = c.query(rows)
        self.assertTrue(all(o.replayed for o in rep.observations))
        self.assertEqual(rep.values(), r.values())

        b = c.get_budget()
        self.assertAlmostEqual(b.epsilon_spent, 1.0 + self.output_eps)
        self.assertAlmostEqual(b.epsilon_remaining, self.budget_eps - 1.0 - self.output_eps)
        self.assertAlmostEqual(b.relation("record").epsilon_spent, self.output_eps)

    def test_over_budget_release_refused_with_typed_error(self):
        c = self.connect(fresh_identity("greedy"))
        first = self.budget_eps * 0.6
        c.release_projection(dimension=2, epsilon=first, delta=1e-6)
        start = time.monotonic()
        with self.assertRaises(privbo.BudgetExhausted) as cm:
            c.release_projection(dimension=2, epsilon=first, delta=1e-6, label="second")
        self.assertLess(time.monotonic() - start, 5, "a budget refusal must not be waited on")
        e = cm.exception
        self.assertNotIsInstance(e, privbo.RateLimited)
        self.assertIn("budget exceeded", e.message)
        self.assertIn("feature-unit", e.message)
        self.assertEqual(c.rate_limit_waits + c.unavailable_waits, 0)
        # Nothing was charged for the refusal.
        self.assertAlmostEqual(c.get_budget().epsilon_spent, first)

    def test_bad_request_is_invalid_argument(self):
        c = self.connect(fresh_identity("careless"))
        with self.assertRaises(privbo.InvalidArgument):
            c.query([10**6])


@unittest.skipUnless(ENV.get("PRIVBO_TEST_TLS_CURATOR"), "no PRIVBO_TEST_TLS_CURATOR: integration/python_test.go starts one")
class TLSCuratorTest(unittest.TestCase):
    def connect(self, **kw):
        c = privbo.connect(ENV["PRIVBO_TEST_TLS_CURATOR"], ca_file=ENV["PRIVBO_TEST_CA"], **kw)
        self.addCleanup(c.close)
        return c

    def test_token_identity_and_rate_limit(self):
        c = self.connect(token=ENV["PRIVBO_TEST_TOKEN"], identity="ignored-when-authenticated")
        for _ in range(10):  # faster than the curator's rate limit allows
            b = c.get_budget()
        self.assertEqual(b.identity, ENV["PRIVBO_TEST_TOKEN_IDENTITY"])
        self.assertGreater(c.rate_limit_waits, 0, "ten requests at once should have met the rate limit")

    def test_client_certificate_identity(self):
        c = self.connect(cert_file=ENV["PRIVBO_TEST_CERT"], key_file=ENV["PRIVBO_TEST_KEY"])
        self.assertEqual(c.get_budget().identity, ENV["PRIVBO_TEST_CERT_IDENTITY"])

    def test_no_credentials_unauthenticated(self):
        c = self.connect(identity="someone")
        with self.assertRaises(privbo.Unauthenticated) as cm:
            c.get_budget()
        self.assertIn("certificate", cm.exception.message)

    def test_jobs_submit_poll_cancel_and_refusal(self):
        c = self.connect(cert_file=ENV["PRIVBO_TEST_CERT"], key_file=ENV["PRIVBO_TEST_KEY"])
        grid = [pb.HyperparameterRange(name="lambda", scale=pb.HyperparameterRange.SCALE_LOG, low=1e-4, high=10, count=16)]
        spec = pb.KusnerSpec(algorithm=pb.KusnerSpec.ALGORITHM_NOISY_GP, space=grid, iterations=10, epsilon=0.5,
                             delta=1e-4)
        # At ε = 0.5 the forecast finds the releases no better than a uniform pick: the
        # quote says so for free and the submission is refused before any charge.
        before = c.get_budget()
        quote = c.quote_job(spec)
        self.assertTrue(quote.refused)
        self.assertEqual(quote.relation, "validation-record")
        with self.assertRaises(privbo.ReleaseUninformative) as cm:
            c.submit_job(spec)
        self.assertGreater(cm.exception.forecast.epsilon_needed, 0.5)
        self.assertEqual(c.get_budget().relation("validation-record").epsilon_spent,
                         before.relation("validation-record").epsilon_spent)
        spec.force = True
        job = c.submit_job(spec)
        self.assertGreater(job.epsilon_charged, 0)
        done = c.wait_job(job.id, timeout=120)
        self.assertEqual(done.state, privbo.JobState.SUCCEEDED, done.error)
        self.assertTrue(done.result.has_hyperparameters)
        self.assertIn("lambda", done.result.hyperparameters)
        self.assertIn(job.id, [j.id for j in c.list_jobs()])
        events = list(c.watch_job(job.id))
        self.assertEqual(events[-1].state, privbo.JobState.SUCCEEDED)
        self.assertEqual([e.seq for e in events], sorted(e.seq for e in events))

        # A finished job is returned as it is by cancel; its charge stays spent.
        self.assertEqual(c.cancel_job(job.id).state, privbo.JobState.SUCCEEDED)
        long_job = c.submit_job(pb.KusnerSpec(algorithm=pb.KusnerSpec.ALGORITHM_NOISY_GP, space=grid, iterations=400,
                                              epsilon=0.5, delta=1e-4, force=True))
        stopped = c.cancel_job(long_job.id)
        self.assertTrue(stopped.state.done, stopped.state)
        self.assertEqual(stopped.epsilon_charged, long_job.epsilon_charged)

        # A job the budget cannot pay is refused at once, with the typed error.
        with self.assertRaises(privbo.BudgetExhausted) as cm:
            c.submit_job(pb.KusnerSpec(algorithm=pb.KusnerSpec.ALGORITHM_NOISY_GP, space=grid, iterations=10,
                                       epsilon=1000, delta=1e-4, force=True))
        self.assertIn("budget exceeded", cm.exception.message)
        with self.assertRaises(privbo.NotFound):
            c.get_job("no-such-job")


if __name__ == "__main__":
    unittest.main()
