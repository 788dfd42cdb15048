"""Unit tests of privbo.client against a fake curator served by grpcio in this process.

The fake speaks the curator's protocol (curator_pb2_grpc.CuratorServiceServicer) and can
be told to refuse requests as the real curator does: rate limits with a google.rpc
RetryInfo in grpc-status-details-bin, refusals with a google.rpc.ErrorInfo reason,
UNAVAILABLE. The tests against a real curator are in test_live.py.

The tests import the privbo that Python finds: the installed package when run from
outside clients/python (integration/python_test.go installs it into a virtual
environment), the source tree when run from clients/python.
"""

from __future__ import annotations

import hashlib
import socket
import struct
import sys
import threading
import unittest
from concurrent import futures

import grpc

import privbo
from privbo import _status, client as pc
from privbo.curator.v1 import curator_pb2 as pb
from privbo.curator.v1 import curator_pb2_grpc as pb_grpc

try:
    import numpy
except ImportError:
    numpy = None

ROWS, COLS = 7, 3
# Values whose binary64 form is exact and distinct per cell.
MATRIX = [[r * 10 + c + 0.25 * (-1) ** c for c in range(COLS)] for r in range(ROWS)]
BUDGET_MSG = (
    'ledger: budget exceeded for identity "alice" on dataset "d" under the feature-unit '
    "neighbour relation: requested ε=5, δ=1e-06; remaining ε=1, δ=0.5"
)


def matrix_bytes(rows):
    return b"".join(struct.pack("<%dd" % COLS, *row) for row in rows)


class _Status(grpc.Status):
    def __init__(self, code, details, trailing_metadata=()):
        self.code, self.details, self.trailing_metadata = code, details, trailing_metadata


def rate_limited(delay):
    msg = "identity \"alice\" is over its rate limit of 1 requests per second; retry after %gs" % delay
    body = _status.encode(grpc.StatusCode.RESOURCE_EXHAUSTED, msg, retry_delay=delay)
    return _Status(grpc.StatusCode.RESOURCE_EXHAUSTED, msg, ((_status.DETAILS_KEY, body),))


def refused(code, msg, reason, metadata=None):
    """A refusal with a google.rpc.ErrorInfo of reason, as the curator sends it."""
    body = _status.encode(code, msg, reason=reason, metadata=metadata)
    return _Status(code, msg, ((_status.DETAILS_KEY, body),))


# The metadata of a curator's BUDGET_EXCEEDED (pkg/server).
BUDGET_META = {"scope": "identity", "relation": "feature-unit", "requested_epsilon": "5", "requested_delta": "1e-06",
               "remaining_epsilon": "1", "remaining_delta": "0.5"}


class FakeCurator(pb_grpc.CuratorServiceServicer):
    """Answers from a script: ``refusals[method]`` is a list of statuses returned (in
    order) before the method answers normally."""

    def __init__(self):
        self.lock = threading.Lock()
        self.refusals = {}
        self.calls = {}
        self.identities = []
        self.chunk_rows = 2
        self.corrupt = None  # "checksum", "order", "no-trailer", "short"
        self.job_polls = 0
        self.submitted = []
        self.queries = []
        self.watch_from = []  # after_seq of each WatchJob
        self.watch_break_after = None  # seq after which the next watch breaks
        self.quote_fits = True
        self.quotes = []  # QuoteStudyRequests received
        self.releases = []  # ReleaseProjectionRequests received

    def _enter(self, method, context):
        with self.lock:
            self.calls[method] = self.calls.get(method, 0) + 1
            md = dict(context.invocation_metadata())
            self.identities.append(md.get(pc.IDENTITY_HEADER))
            queue = self.refusals.get(method) or []
            st = queue.pop(0) if queue else None
        if st is not None:
            context.abort_with_status(st)

    def _budget(self, spent=1.0):
        return pb.Budget(
            identity="alice", epsilon_limit=3, delta_limit=0.5, epsilon_spent=spent, epsilon_remaining=3 - spent,
            delta_remaining=0.5, epsilon_reserved=0.25,
            relations=[pb.RelationBudget(relation="feature-unit", epsilon_limit=3, epsilon_spent=spent,
                                         epsilon_reserved=0.25, dataset_epsilon_reserved=0.75),
                       pb.RelationBudget(relation="record", epsilon_limit=3)],
        )

    def GetBudget(self, request, context):
        self._enter("GetBudget", context)
        return pb.GetBudgetResponse(budget=self._budget())

    def GetDatasetInfo(self, request, context):
        self._enter("GetDatasetInfo", context)
        return pb.GetDatasetInfoResponse(
            name="fake", dataset_id="d", rows=ROWS, dimension=4, budget=self._budget(),
            output_privacy=pb.OutputPrivacy(mechanism="laplace", epsilon_per_index=0.5, lower=0, upper=400,
                                            relation="record", noise_sd=1131.4, noise=pb.NOISE_FAMILY_LAPLACE),
            max_query_indices=100, projection_mechanism="gaussian", projection_relation="feature-unit",
        )

    def QuoteStudy(self, request, context):
        self._enter("QuoteStudy", context)
        self.quotes.append(request)
        fits = self.quote_fits
        return pb.QuoteStudyResponse(
            projection=pb.ProjectionQuote(dimension=request.dimension or 3, dimension_chosen=request.dimension == 0,
                                          epsilon=request.epsilon or 1.0, delta=request.delta or 2e-7,
                                          default_epsilon=request.epsilon == 0, default_delta=request.delta == 0,
                                          mechanism="gaussian", relation="feature-unit", noise_sd=0.625),
            answers=pb.AnswersQuote(included=request.with_answers, mechanism="laplace", relation="record", epsilon=0.5,
                                    lower=0, upper=400, noise_sd=1131.4, noise=pb.NOISE_FAMILY_LAPLACE),
            charges=[pb.RelationCharge(relation="feature-unit", epsilon=1.5, delta=2e-7, epsilon_available=1 if not fits else 3,
                                       delta_available=0.5, fits=fits)],
            fits=fits, refusal="" if fits else "ledger: budget exceeded",
            default_study=pb.DefaultStudy(projection_epsilon=1, projection_delta=2e-7, answers_epsilon=0.5,
                                          per_identity=2, dataset=2, dataset_left=1),
        )

    def ReleaseProjection(self, request, context):
        self._enter("ReleaseProjection", context)
        self.releases.append(request)
        yield pb.ReleaseProjectionResponse(header=pb.ProjectionHeader(
            release_id="rel-1", rows=ROWS, cols=request.dimension, budget=self._budget(2), noise_sd=0.625))
        rows = MATRIX
        sha = hashlib.sha256()
        starts = list(range(0, ROWS, self.chunk_rows))
        if self.corrupt == "order":
            starts[0], starts[1] = starts[1], starts[0]
        for s in starts:
            n = min(self.chunk_rows, ROWS - s)
            data = matrix_bytes(rows[s:s + n])
            if self.corrupt == "short" and s == 0:
                data = data[:-8]
            sha.update(data)
            yield pb.ReleaseProjectionResponse(chunk=pb.MatrixChunk(first_row=s, row_count=n, data=data))
        if self.corrupt == "no-trailer":
            return
        digest = sha.digest()
        if self.corrupt == "checksum":
            digest = bytes([digest[0] ^ 1]) + digest[1:]
        yield pb.ReleaseProjectionResponse(trailer=pb.ProjectionTrailer(sha256=digest))

    def Query(self, request, context):
        self._enter("Query", context)
        with self.lock:
            self.queries.append(request)
        clip = request.clip if request.HasField("clip") else pb.ClipRange(lower=0, upper=400)
        return pb.QueryResponse(
            observations=[pb.Observation(index=i, value=100.0 + i, replayed=False, clip=clip) for i in request.indices],
            budget=self._budget(1.5))

    def SubmitJob(self, request, context):
        self._enter("SubmitJob", context)
        with self.lock:
            self.submitted.append(request)
        return pb.Job(id="job-1", identity="alice", spec=request.spec, state=pb.JOB_STATE_QUEUED,
                      epsilon_charged=2.0)

    def GetJob(self, request, context):
        self._enter("GetJob", context)
        if request.id != "job-1":
            context.abort(grpc.StatusCode.NOT_FOUND, "jobs: no job %s for this identity" % request.id)
        with self.lock:
            self.job_polls += 1
            polls = self.job_polls
        if polls < 3:
            return pb.Job(id="job-1", state=pb.JOB_STATE_RUNNING)
        return pb.Job(id="job-1", state=pb.JOB_STATE_SUCCEEDED, epsilon_charged=2.0, result=pb.JobResult(
            hyperparameters={"lambda": 0.01}, has_hyperparameters=True, score=0.9, epsilon=2.0))

    def WatchJob(self, request, context):
        self._enter("WatchJob", context)
        with self.lock:
            self.watch_from.append(request.after_seq)
            break_after = self.watch_break_after
            self.watch_break_after = None
        states = [pb.JOB_STATE_QUEUED, pb.JOB_STATE_RUNNING, pb.JOB_STATE_RUNNING, pb.JOB_STATE_SUCCEEDED]
        for seq, st in enumerate(states, start=1):
            if seq > request.after_seq:
                yield pb.JobEvent(job_id=request.id, seq=seq, state=st, step=seq, total=len(states))
            if seq == break_after:
                context.abort(grpc.StatusCode.UNAVAILABLE, "curator shutting down")

    def CancelJob(self, request, context):
        self._enter("CancelJob", context)
        return pb.Job(id=request.id, state=pb.JOB_STATE_CANCELLED, epsilon_charged=2.0)

    def ListJobs(self, request, context):
        self._enter("ListJobs", context)
        return pb.ListJobsResponse(jobs=[pb.Job(id="job-1", state=pb.JOB_STATE_SUCCEEDED)])

    def QuoteJob(self, request, context):
        self._enter("QuoteJob", context)
        return pb.JobQuote(epsilon=2.0, delta=2e-3, relation="validation-record", guarantee="(2, 0.002)-DP",
                           kusner_forecast=FORECAST, refused=not request.spec.kusner.force)


# The forecast of Algorithm 1 at ε = 1 on 16 candidates (pkg/kusner's reference values).
FORECAST = pb.KusnerForecast(candidates=16, epsilon=1, objective_range=1, gap=0.05, margin=0.1,
                             uniform_probability=1 / 16, has_selection=True, within_gap_min=0.0626,
                             within_gap_max=0.0644, selection_lift=1.03, selection_epsilon=3.231,
                             laplace_scale=10.62, value_lift=0.047, value_epsilon=24.76, informative=False,
                             epsilon_needed=3.231)


def uninformative():
    msg = "jobs: refused before any charge: no better than uniform; resubmit with force"
    code = grpc.StatusCode.FAILED_PRECONDITION
    body = _status.encode(code, msg, reason="KUSNER_RELEASE_UNINFORMATIVE", metadata={"epsilon_needed": "3.231"}, extra=(FORECAST,))
    return _Status(code, msg, ((_status.DETAILS_KEY, body),))


class FakeClock:
    """A clock the client's sleeps advance, so that retries take no real time."""

    def __init__(self):
        self.now = 0.0
        self.sleeps = []

    def clock(self):
        return self.now

    def sleep(self, d):
        self.sleeps.append(d)
        self.now += d


class ClientTest(unittest.TestCase):
    def setUp(self):
        self.fake = FakeCurator()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        pb_grpc.add_CuratorServiceServicer_to_server(self.fake, self.server)
        self.port = port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        self.client = privbo.connect("127.0.0.1:%d" % port, identity="alice", connect_timeout=10)
        self.clock = FakeClock()
        self.client._clock, self.client._sleep = self.clock.clock, self.clock.sleep

    def tearDown(self):
        self.client.close()
        self.server.stop(None)

    # -- projection

    def test_release_reassembles_rows_and_verifies_checksum_as_lists(self):
        p = self.client.release_projection(COLS, 1.0, 1e-6, as_numpy=False)
        self.assertEqual((p.rows, p.cols, p.release_id), (ROWS, COLS, "rel-1"))
        self.assertEqual(p.matrix, MATRIX)
        self.assertEqual(p.sha256, hashlib.sha256(matrix_bytes(MATRIX)).digest())
        self.assertEqual(p.budget.epsilon_spent, 2)
        self.assertEqual(p.noise_sd, 0.625)

    @unittest.skipIf(numpy is None, "numpy not installed (Debian: python3-numpy)")
    def test_release_as_numpy(self):
        p = self.client.release_projection(COLS, 1.0, 1e-6)
        self.assertIsInstance(p.matrix, numpy.ndarray)
        self.assertEqual(p.matrix.shape, (ROWS, COLS))
        self.assertEqual(p.matrix.tolist(), MATRIX)
        p.matrix[0, 0] = 1.0  # writable

    def test_without_numpy_lists_by_default(self):
        saved, pc.numpy = pc.numpy, None
        try:
            self.assertEqual(self.client.release_projection(COLS, 1.0, 1e-6).matrix, MATRIX)
            with self.assertRaises(ImportError):
                self.client.release_projection(COLS, 1.0, 1e-6, as_numpy=True)
        finally:
            pc.numpy = saved

    def test_one_chunk_per_row_and_one_chunk_for_all(self):
        for n in (1, ROWS):
            self.fake.chunk_rows = n
            self.assertEqual(self.client.release_projection(COLS, 1.0, 1e-6, as_numpy=False).matrix, MATRIX)

    def test_checksum_mismatch_raises(self):
        self.fake.corrupt = "checksum"
        with self.assertRaises(privbo.ChecksumMismatch) as cm:
            self.client.release_projection(COLS, 1.0, 1e-6)
        self.assertIn("checksum mismatch", str(cm.exception))
        self.assertEqual(self.fake.calls["ReleaseProjection"], 1, "a damaged matrix must not be fetched again silently")

    def test_malformed_streams_raise(self):
        for corrupt, want in (("order", "out of order"), ("no-trailer", "without a trailer"), ("short", "bytes")):
            with self.subTest(corrupt=corrupt):
                self.fake.corrupt = corrupt
                with self.assertRaises(privbo.ProjectionIntegrityError) as cm:
                    self.client.release_projection(COLS, 1.0, 1e-6)
                self.assertNotIsInstance(cm.exception, privbo.ChecksumMismatch)
                self.assertIn(want, str(cm.exception))

    def test_release_dimension_checked(self):
        with self.assertRaises(ValueError):
            self.client.release_projection(0, 1.0, 1e-6)
        with self.assertRaises(ValueError):
            self.client.release_projection(with_answers=False)  # alone, every parameter is needed
        self.assertNotIn("ReleaseProjection", self.fake.calls)

    # -- studies: quote first, then the projection with its answers

    def test_study_quoted_then_released_with_its_answers(self):
        p = self.client.release_projection(as_numpy=False)
        self.assertEqual(p.cols, 3)
        (q,) = self.fake.quotes
        self.assertEqual((q.dimension, q.epsilon, q.delta, q.with_answers), (0, 0, 0, True))
        (r,) = self.fake.releases
        self.assertEqual((r.dimension, r.epsilon, r.delta, r.with_answers), (3, 1.0, 2e-7, True))

    def test_quote_fields(self):
        q = self.client.quote(epsilon=2.0)
        self.assertIsInstance(q, privbo.StudyQuote)
        self.assertTrue(q.projection.dimension_chosen and q.projection.default_delta and not q.projection.default_epsilon)
        self.assertEqual((q.projection.epsilon, q.projection.noise_sd), (2.0, 0.625))
        self.assertEqual((q.answers.mechanism, q.answers.lower, q.answers.upper, q.answers.noise_sd), ("laplace", 0, 400, 1131.4))
        self.assertIs(q.answers.noise, pc.NoiseFamily.LAPLACE)
        self.assertFalse(q.answers.exact)
        self.assertEqual(q.charges[0].relation, "feature-unit")
        self.assertEqual((q.default_study.per_identity, q.default_study.dataset_left), (2, 1))
        self.assertNotIn("ReleaseProjection", self.fake.calls)

    def test_study_that_cannot_pay_its_answers_is_refused_before_the_release(self):
        self.fake.quote_fits = False
        with self.assertRaises(privbo.StudyUnaffordable) as cm:
            self.client.release_projection(COLS, 1.0, 1e-6)
        e = cm.exception
        self.assertIsInstance(e, privbo.BudgetExhausted)
        self.assertEqual(e.code, grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertIn("nothing was charged", e.message)
        self.assertIn("feature-unit", e.message)
        self.assertFalse(e.quote.fits)
        self.assertNotIn("ReleaseProjection", self.fake.calls)

    def test_projection_alone_is_not_quoted(self):
        self.client.release_projection(COLS, 1.0, 1e-6, with_answers=False, as_numpy=False)
        self.assertNotIn("QuoteStudy", self.fake.calls)
        self.assertFalse(self.fake.releases[0].with_answers)

    # -- retries

    def test_rate_limit_waits_as_retry_info_asks(self):
        self.fake.refusals["GetBudget"] = [rate_limited(0.25), rate_limited(1.5)]
        b = self.client.get_budget()
        self.assertEqual(b.identity, "alice")
        # What releases being computed hold comes with the budget.
        self.assertEqual((b.epsilon_reserved, b.relation("feature-unit").epsilon_reserved,
                          b.relation("feature-unit").dataset_epsilon_reserved, b.relation("record").epsilon_reserved),
                         (0.25, 0.25, 0.75, 0))
        self.assertEqual(self.fake.calls["GetBudget"], 3)
        self.assertEqual(self.clock.sleeps, [0.25, 1.5])
        self.assertEqual(self.client.rate_limit_waits, 2)

    def test_rate_limit_during_release_retried(self):
        self.fake.refusals["ReleaseProjection"] = [rate_limited(0.5)]
        p = self.client.release_projection(COLS, 1.0, 1e-6, as_numpy=False)
        self.assertEqual(p.matrix, MATRIX)
        self.assertEqual(self.clock.sleeps, [0.5])

    def test_tiny_retry_delay_raised_to_minimum(self):
        self.fake.refusals["Query"] = [rate_limited(0.0)]
        self.client.query([1])
        self.assertEqual(self.clock.sleeps, [pc.MIN_RETRY_DELAY])

    def test_rate_limit_gives_up_after_retry_timeout(self):
        self.client.retry_timeout = 2.0
        self.fake.refusals["GetBudget"] = [rate_limited(0.75)] * 10
        with self.assertRaises(privbo.RateLimited) as cm:
            self.client.get_budget()
        self.assertEqual(self.clock.sleeps, [0.75, 0.75])
        self.assertAlmostEqual(cm.exception.retry_delay, 0.75)
        self.assertIn("rate limit", cm.exception.message)

    def test_budget_refusal_is_not_retried(self):
        self.fake.refusals["ReleaseProjection"] = [
            refused(grpc.StatusCode.RESOURCE_EXHAUSTED, BUDGET_MSG, "BUDGET_EXCEEDED", BUDGET_META)]
        with self.assertRaises(privbo.BudgetExhausted) as cm:
            self.client.release_projection(COLS, 5.0, 1e-6)
        e = cm.exception
        self.assertEqual(e.message, BUDGET_MSG)
        self.assertEqual((e.code, e.reason), (grpc.StatusCode.RESOURCE_EXHAUSTED, "BUDGET_EXCEEDED"))
        self.assertEqual((e.scope, e.relation), ("identity", "feature-unit"))
        self.assertEqual((e.requested_epsilon, e.requested_delta, e.remaining_epsilon, e.remaining_delta), (5, 1e-6, 1, 0.5))
        self.assertIsInstance(e, privbo.ResourceExhausted)
        self.assertNotIsInstance(e, privbo.RateLimited)
        self.assertEqual(self.fake.calls["ReleaseProjection"], 1)
        self.assertEqual(self.clock.sleeps, [])

    def test_refusals_typed_by_their_error_info_reason(self):
        # Each reason a curator sends (pkg/server), with the code it comes with, is raised as
        # its own error; the messages here say nothing a text match could use.
        cases = [
            (grpc.StatusCode.RESOURCE_EXHAUSTED, "BUDGET_EXCEEDED", BUDGET_META, privbo.BudgetExhausted),
            (grpc.StatusCode.RESOURCE_EXHAUSTED, "EXACT_ROW_LIMIT", {"limit": "200", "answered": "199", "requested": "2"},
             privbo.ExactAnswerLimit),
            (grpc.StatusCode.FAILED_PRECONDITION, "DELTA_BUDGET_ZERO", {}, privbo.DeltaBudgetZero),
            (grpc.StatusCode.INVALID_ARGUMENT, "DIMENSION_ABOVE_FEATURES", {}, privbo.DimensionAboveFeatures),
        ]
        for code, reason, meta, cls in cases:
            with self.subTest(reason=reason):
                self.fake.calls.clear()
                self.fake.refusals["Query"] = [refused(code, "refused", reason, meta)]
                with self.assertRaises(privbo.CuratorError) as cm:
                    self.client.query([1])
                e = cm.exception
                self.assertIs(type(e), cls)
                self.assertEqual((e.code, e.reason, e.metadata, e.message), (code, reason, meta, "refused"))
                self.assertEqual(self.fake.calls["Query"], 1, "a refusal is not retried")
        self.assertEqual(self.clock.sleeps, [])

    def test_exact_answer_limit_figures(self):
        meta = {"limit": "200", "answered": "199", "requested": "2"}
        self.fake.refusals["Query"] = [refused(grpc.StatusCode.RESOURCE_EXHAUSTED, "capped", "EXACT_ROW_LIMIT", meta)]
        with self.assertRaises(privbo.ExactAnswerLimit) as cm:
            self.client.query([1, 2])
        e = cm.exception
        self.assertEqual((e.limit, e.answered, e.requested), (200, 199, 2))
        self.assertNotIsInstance(e, privbo.BudgetExhausted)

    def test_no_error_text_is_read(self):
        # Without an ErrorInfo the class follows the code alone, whatever the message says:
        # neither the text of the exact-answer cap nor that of a budget refusal makes one.
        for msg in ("curator: exact-answer row limit reached: at most 200 distinct rows per identity", BUDGET_MSG):
            with self.subTest(msg=msg):
                self.fake.refusals["Query"] = [_Status(grpc.StatusCode.RESOURCE_EXHAUSTED, msg)]
                with self.assertRaises(privbo.ResourceExhausted) as cm:
                    self.client.query([1])
                self.assertIs(type(cm.exception), privbo.ResourceExhausted)
                self.assertEqual(cm.exception.reason, "")

    def test_reason_needs_its_code_and_domain(self):
        # A reason with another code than the curator gives it, or from another domain,
        # or one this client does not know, leaves the class to the code (and the reason
        # readable on the error).
        cases = [
            (refused(grpc.StatusCode.FAILED_PRECONDITION, "m", "EXACT_ROW_LIMIT"), privbo.FailedPrecondition, "EXACT_ROW_LIMIT"),
            (refused(grpc.StatusCode.RESOURCE_EXHAUSTED, "m", "SOME_NEW_LIMIT"), privbo.ResourceExhausted, "SOME_NEW_LIMIT"),
        ]
        other = _status.status_pb2.Status(code=grpc.StatusCode.RESOURCE_EXHAUSTED.value[0], message="m")
        other.details.add().Pack(_status.error_details_pb2.ErrorInfo(reason="BUDGET_EXCEEDED", domain="example.com"))
        cases.append((_Status(grpc.StatusCode.RESOURCE_EXHAUSTED, "m", ((_status.DETAILS_KEY, other.SerializeToString()),)),
                      privbo.ResourceExhausted, ""))
        for st, cls, reason in cases:
            with self.subTest(cls=cls.__name__, reason=reason):
                self.fake.refusals["Query"] = [st]
                with self.assertRaises(privbo.CuratorError) as cm:
                    self.client.query([1])
                self.assertIs(type(cm.exception), cls)
                self.assertEqual(cm.exception.reason, reason)

    def test_memory_limit_is_its_own_error(self):
        msg = ("this release (r = 1024 over 20000 rows, lifted mechanism) needs 52 MiB of memory while it is computed and "
               "stored; the curator admits 48 MiB for its releases at once; ask for r ≤ 956")
        meta = {"needed_bytes": "53477376", "available_bytes": "50331648", "dimension": "1024", "max_dimension": "956"}
        self.fake.refusals["ReleaseProjection"] = [refused(grpc.StatusCode.RESOURCE_EXHAUSTED, msg, "MEMORY_LIMIT", meta)]
        with self.assertRaises(privbo.MemoryLimited) as cm:
            self.client.release_projection(COLS, 1.0, 1e-6)
        e = cm.exception
        self.assertEqual((e.needed_bytes, e.available_bytes, e.max_dimension), (53477376, 50331648, 956))
        self.assertEqual(e.message, msg)
        self.assertIsInstance(e, privbo.ResourceExhausted)
        self.assertNotIsInstance(e, privbo.BudgetExhausted)
        self.assertEqual(self.fake.calls["ReleaseProjection"], 1)
        self.assertEqual(self.clock.sleeps, [])

    def test_unavailable_retried_with_backoff(self):
        down = _Status(grpc.StatusCode.UNAVAILABLE, "the curator cannot reach its privacy ledger right now")
        self.fake.refusals["Query"] = [down, down, down]
        r = self.client.query([2, 4])
        self.assertEqual(r.values(), {2: 102.0, 4: 104.0})
        self.assertEqual(self.clock.sleeps, [0.1, 0.2, 0.4])
        self.assertEqual(self.client.unavailable_waits, 3)

    def test_release_in_progress_retried_with_backoff(self):
        busy = refused(grpc.StatusCode.ABORTED, "the same release is being computed for another request; run again",
                       pc.RefusalReason.RELEASE_IN_PROGRESS)
        self.fake.refusals["ReleaseProjection"] = [busy, busy]
        self.client.release_projection(COLS, 1.0, 1e-6)
        self.assertEqual(self.fake.calls["ReleaseProjection"], 3)
        self.assertEqual(self.clock.sleeps, [0.1, 0.2])
        self.assertEqual(self.client.in_progress_waits, 2)

    def test_release_in_progress_gives_up_after_a_few_tries(self):
        busy = refused(grpc.StatusCode.ABORTED, "the same release is being computed for another request; run again",
                       pc.RefusalReason.RELEASE_IN_PROGRESS)
        self.fake.refusals["ReleaseProjection"] = [busy] * (pc.RELEASE_IN_PROGRESS_RETRIES + 3)
        with self.assertRaises(privbo.ReleaseInProgress) as cm:
            self.client.release_projection(COLS, 1.0, 1e-6)
        self.assertIsInstance(cm.exception, privbo.Aborted)
        self.assertEqual(cm.exception.reason, pc.RefusalReason.RELEASE_IN_PROGRESS)
        self.assertEqual(self.fake.calls["ReleaseProjection"], pc.RELEASE_IN_PROGRESS_RETRIES + 1)
        self.assertEqual(self.clock.sleeps, [0.1, 0.2, 0.4, 0.8, 1.6][:pc.RELEASE_IN_PROGRESS_RETRIES])

    def test_every_refusal_reason_known(self):
        # The reasons are the generated enum's names (the Go side keeps pkg/refusal the
        # same set): a reason the proto gains is known here without a line of this client.
        names = {n for n, v in pb.RefusalReason.items() if v}
        self.assertEqual({r.value for r in privbo.RefusalReason}, names)
        self.assertIn("LEDGER_UNAVAILABLE", names)
        for r in privbo.RefusalReason:
            with self.subTest(reason=r.name):
                self.fake.refusals["Query"] = [refused(grpc.StatusCode.RESOURCE_EXHAUSTED, "no", r.value)]
                with self.assertRaises(privbo.CuratorError) as cm:
                    self.client.query([1])
                self.assertEqual(cm.exception.reason, r)
                self.assertIs(privbo.RefusalReason(cm.exception.reason), r)

    def test_unavailable_gives_up(self):
        self.client.retry_timeout = 1.0
        down = _Status(grpc.StatusCode.UNAVAILABLE, "shutting down")
        self.fake.refusals["GetDatasetInfo"] = [down] * 10
        with self.assertRaises(privbo.Unavailable) as cm:
            self.client.get_dataset_info()
        self.assertEqual(cm.exception.message, "shutting down")
        self.assertEqual(self.clock.sleeps, [0.1, 0.2, 0.4])

    def test_other_errors_typed_and_not_retried(self):
        cases = [
            (grpc.StatusCode.INVALID_ARGUMENT, privbo.InvalidArgument),
            (grpc.StatusCode.FAILED_PRECONDITION, privbo.FailedPrecondition),
            (grpc.StatusCode.UNAUTHENTICATED, privbo.Unauthenticated),
            (grpc.StatusCode.ABORTED, privbo.Aborted),
            (grpc.StatusCode.INTERNAL, privbo.Internal),
        ]
        for code, cls in cases:
            with self.subTest(code=code):
                self.fake.calls.clear()
                self.fake.refusals["Query"] = [_Status(code, "server says: " + code.name)]
                with self.assertRaises(cls) as cm:
                    self.client.query([1])
                self.assertEqual(cm.exception.message, "server says: " + code.name)
                self.assertEqual(self.fake.calls["Query"], 1)
        self.assertEqual(self.clock.sleeps, [])

    # -- the rest of the API

    def test_identity_header_sent(self):
        self.client.get_budget()
        self.assertEqual(self.fake.identities, ["alice"])

    def test_dataset_info_and_budget_relations(self):
        info = self.client.get_dataset_info()
        self.assertEqual((info.name, info.rows, info.dimension), ("fake", ROWS, 4))
        self.assertEqual(info.output_privacy.mechanism, "laplace")
        op = info.output_privacy
        self.assertEqual((op.noise, op.noise_sd, op.exact), (pc.NoiseFamily.LAPLACE, 1131.4, False))
        self.assertIs(pc.NoiseFamily.from_pb(99), pc.NoiseFamily.UNSPECIFIED, "a family newer than the client")
        self.assertEqual({f.name: f.value for f in pc.NoiseFamily},
                         {n.removeprefix("NOISE_FAMILY_"): v for n, v in pb.NoiseFamily.items()}, "the generated enum's families")
        self.assertEqual(info.budget.relation("record").epsilon_limit, 3)
        self.assertIsNone(info.budget.relation("no-such-relation"))

    def test_query(self):
        r = self.client.query(range(3))
        self.assertEqual([o.index for o in r.observations], [0, 1, 2])
        self.assertEqual(r.budget.epsilon_spent, 1.5)
        with self.assertRaises(ValueError):
            self.client.query([-1])
        self.assertEqual(r.observations[0].clip, (0, 400))
        r = self.client.query([4], clip=(100, 250.5), confirmation_pass=2)
        sent = self.fake.queries[-1]
        self.assertEqual((sent.clip.lower, sent.clip.upper, sent.confirmation_pass), (100, 250.5, 2))
        self.assertEqual(r.observations[0].clip, (100, 250.5))
        self.assertFalse(self.fake.queries[0].HasField("clip"))
        for bad in [(300, 100), (float("nan"), 1), (0, float("inf"))]:
            with self.assertRaises(ValueError):
                self.client.query([1], clip=bad)
        with self.assertRaises(ValueError):
            self.client.query([1], confirmation_pass=-1)

    def test_jobs(self):
        spec = pb.KusnerSpec(algorithm=pb.KusnerSpec.ALGORITHM_NOISY_GP, iterations=5, epsilon=1, delta=1e-3)
        down = _Status(grpc.StatusCode.UNAVAILABLE, "restarting")
        self.fake.refusals["SubmitJob"] = [down]
        job = self.client.submit_job(spec)
        self.assertEqual(job.state, privbo.JobState.QUEUED)
        # The retry after UNAVAILABLE sent the same idempotency key: one job, one charge.
        keys = [r.idempotency_key for r in self.fake.submitted]
        self.assertEqual(len(keys), 1)
        self.assertTrue(keys[0].startswith("privbo-py-"))
        self.assertEqual(self.fake.submitted[0].spec.kusner.iterations, 5)
        done = self.client.wait_job(job.id, poll_interval=0.5)
        self.assertEqual(done.state, privbo.JobState.SUCCEEDED)
        self.assertTrue(done.state.done)
        self.assertEqual(done.result.hyperparameters, {"lambda": 0.01})
        self.assertEqual(self.fake.job_polls, 3)
        self.assertEqual(self.client.cancel_job("job-1").state, privbo.JobState.CANCELLED)
        self.assertEqual([j.id for j in self.client.list_jobs()], ["job-1"])
        with self.assertRaises(privbo.NotFound):
            self.client.get_job("job-2")

    def test_watch_job(self):
        events = list(self.client.watch_job("job-1", after_seq=1))
        self.assertEqual([e.seq for e in events], [2, 3, 4])
        self.assertEqual(events[-1].state, privbo.JobState.SUCCEEDED)

    def test_watch_job_resumes_after_last_event(self):
        self.fake.refusals["WatchJob"] = [rate_limited(0.5)]
        self.fake.watch_break_after = 2
        events = list(self.client.watch_job("job-1"))
        self.assertEqual([e.seq for e in events], [1, 2, 3, 4])
        # Refused, then broken after event 2, then resumed after it.
        self.assertEqual(self.fake.watch_from, [0, 2])
        self.assertEqual(self.clock.sleeps, [0.5, 0.1])
        self.fake.refusals["WatchJob"] = [_Status(grpc.StatusCode.NOT_FOUND, "no such job")]
        with self.assertRaises(privbo.NotFound):
            list(self.client.watch_job("job-9"))

    def test_quote_and_uninformative_refusal(self):
        spec = pb.KusnerSpec(algorithm=pb.KusnerSpec.ALGORITHM_NOISY_GP, iterations=5, epsilon=1, delta=1e-3)
        q = self.client.quote_job(spec)
        self.assertTrue(q.refused)
        self.assertEqual(q.relation, "validation-record")
        self.assertAlmostEqual(q.kusner_forecast.epsilon_needed, 3.231)
        self.fake.refusals["SubmitJob"] = [uninformative()]
        with self.assertRaises(privbo.ReleaseUninformative) as cm:
            self.client.submit_job(spec)
        self.assertIsInstance(cm.exception, privbo.FailedPrecondition)
        self.assertAlmostEqual(cm.exception.forecast.epsilon_needed, 3.231)
        self.assertFalse(cm.exception.forecast.informative)
        self.assertIn("force", cm.exception.message)
        # A FAILED_PRECONDITION without a forecast stays a plain FailedPrecondition.
        self.fake.refusals["SubmitJob"] = [_Status(grpc.StatusCode.FAILED_PRECONDITION, "δ budget is 0")]
        with self.assertRaises(privbo.FailedPrecondition) as cm:
            self.client.submit_job(spec)
        self.assertNotIsInstance(cm.exception, privbo.ReleaseUninformative)

    def test_given_idempotency_key_kept(self):
        self.client.submit_job(pb.JobSpec(kusner=pb.KusnerSpec(iterations=1)), idempotency_key="k-1")
        self.assertEqual(self.fake.submitted[0].idempotency_key, "k-1")


class ConnectTest(unittest.TestCase):
    def test_unreachable_curator_reported_within_connect_timeout(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        with self.assertRaises(privbo.Unavailable) as cm:
            privbo.connect("127.0.0.1:%d" % port, connect_timeout=0.5)
        self.assertIn("could not connect", cm.exception.message)

    def test_credentials_need_tls(self):
        with self.assertRaises(ValueError):
            privbo.connect("127.0.0.1:1", token="t", connect_timeout=None)
        with self.assertRaises(ValueError):
            privbo.connect("127.0.0.1:1", ca_file="ca.pem", cert_file="c.pem", connect_timeout=None)


class FakeCall(grpc.RpcError):
    """A finished call's error as grpcio raises it: code, details, trailing metadata."""

    def __init__(self, code, details, trailing=()):
        self._code, self._details, self._trailing = code, details, tuple(trailing)

    def code(self):
        return self._code

    def details(self):
        return self._details

    def trailing_metadata(self):
        return self._trailing


class StatusTest(unittest.TestCase):
    EXHAUSTED = grpc.StatusCode.RESOURCE_EXHAUSTED

    def call(self, body, code=EXHAUSTED):
        return FakeCall(code, "m", [("other", "x"), (_status.DETAILS_KEY, body)])

    def test_generated_google_rpc_messages(self):
        # The messages are googleapis' own (generated), not declared by hand: their full
        # names, and ErrorInfo's metadata map, are those of google/rpc/error_details.proto.
        self.assertEqual(_status.status_pb2.Status.DESCRIPTOR.full_name, "google.rpc.Status")
        self.assertEqual(_status.status_pb2.DESCRIPTOR.name, "google/rpc/status.proto")
        info = _status.error_details_pb2.ErrorInfo.DESCRIPTOR
        self.assertEqual(info.file.name, "google/rpc/error_details.proto")
        self.assertEqual([(f.name, f.number) for f in info.fields], [("reason", 1), ("domain", 2), ("metadata", 3)])
        self.assertTrue(info.fields_by_name["metadata"].message_type.GetOptions().map_entry)
        retry = _status.error_details_pb2.RetryInfo.DESCRIPTOR
        self.assertEqual(retry.fields_by_name["retry_delay"].message_type.full_name, "google.protobuf.Duration")

    def test_retry_info_round_trip(self):
        d = _status.details(self.call(_status.encode(self.EXHAUSTED, "slow down", retry_delay=1.25)))
        self.assertAlmostEqual(d.retry_delay, 1.25)
        self.assertEqual(d.reason, "")

    def test_error_info_round_trip(self):
        d = _status.details(self.call(_status.encode(self.EXHAUSTED, "no", reason="BUDGET_EXCEEDED", metadata=BUDGET_META)))
        self.assertEqual((d.reason, d.domain, d.metadata, d.retry_delay), ("BUDGET_EXCEEDED", _status.DOMAIN, BUDGET_META, None))

    def test_no_usable_status(self):
        self.assertEqual(_status.details(FakeCall(self.EXHAUSTED, "m")), _status.Details())
        self.assertEqual(_status.details(self.call(b"\xff\xff garbage")), _status.Details())
        # A status whose code is not the error's is not believed.
        body = _status.encode(grpc.StatusCode.INVALID_ARGUMENT, "m", reason="BUDGET_EXCEEDED")
        self.assertEqual(_status.details(self.call(body)), _status.Details())

    def test_grpc_status_used_where_installed(self):
        # Where grpcio-status is installed its rpc_status.from_call reads the status; a
        # stand-in records that it was asked.
        calls = []
        st = _status.status_pb2.Status(code=self.EXHAUSTED.value[0], message="m")
        st.details.add().Pack(_status.error_details_pb2.ErrorInfo(reason="EXACT_ROW_LIMIT", domain=_status.DOMAIN))

        class RpcStatus:
            @staticmethod
            def from_call(call):
                calls.append(call)
                return st

        saved, _status.rpc_status = _status.rpc_status, RpcStatus
        try:
            err = FakeCall(self.EXHAUSTED, "m")
            self.assertEqual(_status.details(err).reason, "EXACT_ROW_LIMIT")
            self.assertEqual(calls, [err])
        finally:
            _status.rpc_status = saved


if __name__ == "__main__":
    unittest.main()
