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
PRIVBO_TEST_EXACT_CURATOR    a plaintext curator over diabetes.csv with exact answers
                             (output privacy none) capped at PRIVBO_TEST_EXACT_ROWS rows
PRIVBO_TEST_NODELTA_CURATOR  a plaintext curator over diabetes.csv whose δ budget is 0

The refusals are told apart by their google.rpc.ErrorInfo reasons (one test per reason
the curator sends), never by their messages.
"""

from __future__ import annotations

import hashlib
import math
import os
import time
import unittest
import uuid

import grpc

import privbo
from privbo import pb

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
        # The answers are paid with the projection (one charge, under the record relation,
        # which counts towards the feature-unit budget too).
        self.assertAlmostEqual(p.budget.epsilon_spent, 1.0 + self.output_eps)
        self.assertIn("ε", p.guarantee)

        # The same request is replayed from storage at no cost, as lists this time.
        again = c.release_projection(dimension=3, epsilon=1.0, delta=1e-6, as_numpy=False)
        self.assertTrue(again.replayed)
        self.assertEqual(again.release_id, p.release_id)
        self.assertEqual(again.matrix, matrix_rows(p.matrix))
        self.assertAlmostEqual(c.get_budget().epsilon_spent, 1.0 + self.output_eps)

        rows = [0, 17, 441]
        r = c.query(rows)
        self.assertEqual(sorted(o.index for o in r.observations), rows)
        self.assertFalse(any(o.replayed for o in r.observations))
        # Clipped values plus Laplace noise of scale (upper − lower)/ε: finite, distinct.
        self.assertTrue(all(math.isfinite(o.value) for o in r.observations))
        self.assertEqual(len(set(r.values().values())), len(rows))
        # Already paid: the queries charge nothing more.
        self.assertAlmostEqual(r.budget.epsilon_spent, 1.0 + self.output_eps)
        rep = c.query(rows)
        self.assertTrue(all(o.replayed for o in rep.observations))
        self.assertEqual(rep.values(), r.values())

        b = c.get_budget()
        self.assertAlmostEqual(b.epsilon_spent, 1.0 + self.output_eps)
        self.assertAlmostEqual(b.epsilon_remaining, self.budget_eps - 1.0 - self.output_eps)
        self.assertAlmostEqual(b.relation("record").epsilon_spent, self.output_eps)

        # A clip range inside the public range [0, 400]: the same charge; each answer
        # states the range it was clipped to (a replay, its first one).
        clipped = c.query([1, 0], clip=(200, 300))
        self.assertEqual([o.clip for o in clipped.observations], [(200, 300), (0, 400)])
        self.assertEqual([o.replayed for o in clipped.observations], [False, True])
        self.assertAlmostEqual(clipped.budget.epsilon_spent, 1.0 + self.output_eps)
        with self.assertRaises(privbo.InvalidArgument):
            c.query([2], clip=(-10, 300))  # outside the public range
        # A confirmation pass answers a row again with fresh noise, at a charge of its own.
        again = c.query([0], confirmation_pass=1)
        self.assertFalse(again.observations[0].replayed)
        self.assertNotEqual(again.observations[0].value, r.values()[0])
        self.assertAlmostEqual(again.budget.epsilon_spent, 1.0 + 2 * self.output_eps)

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
        self.assertEqual(e.relation, "feature-unit")
        self.assertEqual(c.rate_limit_waits + c.unavailable_waits, 0)
        # Nothing was charged for the refusal.
        self.assertAlmostEqual(c.get_budget().epsilon_spent, first + self.output_eps)
        # The curator refuses it too, when asked without the quote.
        with self.assertRaises(privbo.BudgetExhausted) as cm:
            c.release_projection(dimension=2, epsilon=first, delta=1e-6, label="second", with_answers=False)
        e = cm.exception
        self.assertNotIsInstance(e, privbo.StudyUnaffordable)  # the curator's refusal, not the quote's
        # The curator's ErrorInfo: the reason, and the figures as fields.
        self.assertEqual((e.reason, e.scope, e.relation), ("BUDGET_EXCEEDED", "identity", "feature-unit"))
        self.assertAlmostEqual(e.requested_epsilon, first)
        self.assertAlmostEqual(e.remaining_epsilon, self.budget_eps - first - self.output_eps)
        self.assertAlmostEqual(e.requested_delta, 1e-6)
        self.assertAlmostEqual(c.get_budget().epsilon_spent, first + self.output_eps)

    def test_study_that_cannot_pay_its_answers_refused(self):
        # The projection alone would fit the budget; with the answers it does not. The
        # study is refused on its quote, and the curator refuses the joint charge as well:
        # nothing is charged either way.
        c = self.connect(fresh_identity("short"))
        eps = self.budget_eps - self.output_eps / 2
        with self.assertRaises(privbo.StudyUnaffordable) as cm:
            c.release_projection(dimension=3, epsilon=eps, delta=1e-6)
        q = cm.exception.quote
        self.assertFalse(q.fits)
        self.assertEqual(cm.exception.relation, q.charges[0].relation)
        self.assertTrue(q.answers.included)
        self.assertAlmostEqual(q.charges[0].epsilon, eps + self.output_eps)
        self.assertEqual(c.get_budget().epsilon_spent, 0)
        # A client that skips the quote is refused by the curator, nothing charged.
        stub_req = pb.ReleaseProjectionRequest(dimension=3, epsilon=eps, delta=1e-6, with_answers=True)
        with self.assertRaises(privbo.BudgetExhausted) as cm:
            c._call("ReleaseProjection", lambda: privbo.client.assemble_projection(
                c._stub.ReleaseProjection(stub_req, metadata=c._metadata), False))
        self.assertEqual(cm.exception.reason, "BUDGET_EXCEEDED")
        self.assertEqual(c.get_budget().epsilon_spent, 0)

    def test_r_above_d_refused_by_the_curator(self):
        c = self.connect(fresh_identity("wide"))
        for with_answers in (True, False):
            with self.assertRaises(privbo.DimensionAboveFeatures) as cm:
                c.release_projection(dimension=11, epsilon=0.5, delta=1e-6, with_answers=with_answers)
            self.assertEqual(cm.exception.reason, "DIMENSION_ABOVE_FEATURES")
        self.assertEqual(c.get_budget().epsilon_spent, 0)

    def test_quote_of_the_default_study(self):
        c = self.connect(fresh_identity("quote"))
        q = c.quote()
        p = q.projection
        self.assertTrue(p.dimension_chosen and p.default_epsilon and p.default_delta)
        self.assertTrue(1 <= p.dimension <= 10)
        self.assertGreater(p.noise_sd, 0)
        self.assertGreater(p.whole_patient_epsilon, p.epsilon)
        a = q.answers
        self.assertEqual((a.mechanism, a.epsilon, a.lower, a.upper), ("laplace", self.output_eps, 0, 400))
        self.assertAlmostEqual(a.noise_sd, math.sqrt(2) * 400 / self.output_eps, delta=1e-6 * a.noise_sd)
        self.assertIs(a.noise, privbo.NoiseFamily.LAPLACE)
        info = c.get_dataset_info().output_privacy
        self.assertEqual((info.noise, info.noise_sd, info.exact), (a.noise, a.noise_sd, False))
        self.assertTrue(q.fits)
        self.assertEqual(q.default_study.projection_epsilon, p.epsilon)
        self.assertEqual(c.get_budget().epsilon_spent, 0, "a quote costs nothing")
        # The study the quote describes is what the release gives.
        z = c.release_projection()
        self.assertEqual(z.cols, p.dimension)
        self.assertAlmostEqual(z.noise_sd, p.noise_sd, delta=1e-9 * p.noise_sd)
        self.assertAlmostEqual(z.budget.epsilon_spent, p.epsilon + self.output_eps)

    def test_bad_request_is_invalid_argument(self):
        c = self.connect(fresh_identity("careless"))
        with self.assertRaises(privbo.InvalidArgument) as cm:
            c.query([10**6])
        self.assertIs(type(cm.exception), privbo.InvalidArgument)


@unittest.skipUnless(ENV.get("PRIVBO_TEST_EXACT_CURATOR"), "no PRIVBO_TEST_EXACT_CURATOR: integration/python_test.go starts one")
class ExactCuratorTest(unittest.TestCase):
    def test_exact_row_limit_reason(self):
        cap = int(ENV["PRIVBO_TEST_EXACT_ROWS"])
        c = privbo.connect(ENV["PRIVBO_TEST_EXACT_CURATOR"], identity=fresh_identity("exact"))
        self.addCleanup(c.close)
        c.release_projection(dimension=2, epsilon=0.5, delta=1e-6)
        first = c.query(range(cap - 1))
        self.assertEqual(len(first.observations), cap - 1)
        with self.assertRaises(privbo.ExactAnswerLimit) as cm:
            c.query([cap - 1, cap])
        e = cm.exception
        self.assertEqual((e.code, e.reason), (grpc.StatusCode.RESOURCE_EXHAUSTED, "EXACT_ROW_LIMIT"))
        self.assertEqual((e.limit, e.answered, e.requested), (cap, cap - 1, 2))
        self.assertNotIsInstance(e, privbo.BudgetExhausted)
        self.assertEqual(c.rate_limit_waits, 0, "the cap is not waited on")
        # Rows already answered are still replayed, and the last row under the cap is given.
        self.assertTrue(all(o.replayed for o in c.query(range(cap - 1)).observations))
        self.assertEqual(len(c.query([cap - 1]).observations), 1)


@unittest.skipUnless(ENV.get("PRIVBO_TEST_NODELTA_CURATOR"), "no PRIVBO_TEST_NODELTA_CURATOR: integration/python_test.go starts one")
class NoDeltaCuratorTest(unittest.TestCase):
    def test_delta_budget_zero_reason(self):
        c = privbo.connect(ENV["PRIVBO_TEST_NODELTA_CURATOR"], identity=fresh_identity("nodelta"))
        self.addCleanup(c.close)
        # Asked by the quote (the default study) and by the ledger (a projection alone).
        for what, call in (("study", lambda: c.release_projection()),
                           ("projection", lambda: c.release_projection(2, 1.0, 1e-6, with_answers=False))):
            with self.subTest(what=what):
                with self.assertRaises(privbo.DeltaBudgetZero) as cm:
                    call()
                self.assertEqual(cm.exception.reason, "DELTA_BUDGET_ZERO")
                self.assertIsInstance(cm.exception, privbo.FailedPrecondition)
        self.assertEqual(c.get_budget().epsilon_spent, 0)


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
        self.assertEqual(cm.exception.reason, "BUDGET_EXCEEDED")
        with self.assertRaises(privbo.NotFound):
            c.get_job("no-such-job")


if __name__ == "__main__":
    unittest.main()
