"""A typed client of a privbo curator (proto/privbo/curator/v1/curator.proto).

    from privbo import connect
    with connect("127.0.0.1:7070", identity="ml-team") as c:
        p = c.release_projection(dimension=5, epsilon=1.0, delta=1e-6)   # checksum verified
        answers = c.query([3, 14, 15])
        print(c.get_budget().epsilon_remaining)

Authentication (curator.proto, "Authentication"): a development curator on loopback takes
the identity named in the ``privbo-identity`` header (``identity=``); a curator with
tokens takes ``authorization: Bearer TOKEN`` (``token=``, sent over TLS only, as the Go
client does); one with client certificates takes the certificate's common name
(``cert_file=``, ``key_file=``). TLS is used when ``ca_file`` is given.

Retries follow the Go client (pkg/curatorclient), which retries UNAVAILABLE for queries
only; this client retries it for every request, and instead fails fast in connect():

* RESOURCE_EXHAUSTED with a google.rpc.RetryInfo is the curator's rate or concurrency
  limit: the client waits the delay it asks for (at least 10 ms) and sends the same
  request again.
* RESOURCE_EXHAUSTED without RetryInfo is a refusal that waiting does not change: the
  privacy budget (BudgetExhausted), the cap on distinct exact answers
  (ExactAnswerLimit), or a projection needing more memory than the curator admits for
  its releases (MemoryLimited: ask for a smaller dimension), told apart by the reason of
  the google.rpc.ErrorInfo the curator attaches. It is raised at once.
* UNAVAILABLE (a curator restarting, or unable to reach its ledger) is retried with
  exponential backoff, 100 ms doubling to 5 s. Every request this client retries is
  idempotent: a release already charged is replayed at no cost, rows already answered
  come back as replays, and a job submission carries an idempotency key (one is drawn
  when the caller gives none), so a retry never charges twice.
* ABORTED with the ErrorInfo reason RELEASE_IN_PROGRESS (the same release is being
  computed for another request of the caller) is retried the same way, at most
  ``RELEASE_IN_PROGRESS_RETRIES`` times in a call: once the other request ends, asking
  again replays its release at no cost. Then it is raised (ReleaseInProgress).

A call gives up when the next wait would end more than ``retry_timeout`` seconds after it
started, raising the last error. Every error a curator returns is raised as a
CuratorError subclass carrying the status code, the curator's message, which says what
to do, and the ErrorInfo's reason and metadata. The class is chosen by the code and the
reason, never by the message's text.

The projection arrives as a header, row-aligned chunks and a trailer with the SHA-256 of
the chunks' bytes; order, sizes and the checksum are checked before the matrix is
returned (ProjectionIntegrityError, ChecksumMismatch). The matrix is a numpy array when
numpy is installed, else a list of row lists.
"""

from __future__ import annotations

import array
import enum
import hashlib
import logging
import math
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Tuple, TypeVar, Union

import grpc

from privbo import _status
from privbo.curator.v1 import curator_pb2 as pb
from privbo.curator.v1 import curator_pb2_grpc as pb_grpc

try:  # optional: the projection as an array
    import numpy
except ImportError:  # pragma: no cover - exercised where numpy is absent
    numpy = None

log = logging.getLogger("privbo.client")

IDENTITY_HEADER = "privbo-identity"
# The least wait before a retry the curator asked for (as pkg/curatorclient).
MIN_RETRY_DELAY = 0.01
# Backoff after UNAVAILABLE (and RELEASE_IN_PROGRESS): first wait and cap, in seconds.
BACKOFF_FIRST, BACKOFF_MAX = 0.1, 5.0
# How many times one call waits for a release in progress elsewhere.
RELEASE_IN_PROGRESS_RETRIES = 5
# Largest matrix accepted from a header (elements), as pkg/curatorclient.
MAX_ELEMENTS = 1 << 31
# A response message may be this large; a projection chunk is at most ~2 MiB.
MAX_RECEIVE_BYTES = 8 << 20

T = TypeVar("T")


# ---------------------------------------------------------------------------- errors


class PrivboError(Exception):
    """Base of every error this client raises."""


class CuratorError(PrivboError):
    """A gRPC status the curator (or the transport) returned. ``message`` is the
    curator's own message, which says what to do; ``code`` is the grpc.StatusCode."""

    def __init__(self, code: grpc.StatusCode, message: str, reason: str = "",
                 metadata: Optional[Dict[str, str]] = None):
        super().__init__(f"{message} [{code.name}{', ' + reason if reason else ''}]")
        self.code = code
        self.message = message
        # The reason of the curator's google.rpc.ErrorInfo (domain "privbo.curator.v1"),
        # "" without one, and its metadata: the figures of the refusal as strings.
        self.reason = reason
        self.metadata: Dict[str, str] = dict(metadata or {})


class InvalidArgument(CuratorError):
    """A bad parameter (INVALID_ARGUMENT)."""


class DimensionAboveFeatures(InvalidArgument):
    """A projection dimension above the dataset's number of features (reason
    DIMENSION_ABOVE_FEATURES), refused for every client unless the curator runs the
    lifted mechanism."""


class FailedPrecondition(CuratorError):
    """FAILED_PRECONDITION: e.g. exact answers asked before any projection release."""


class DeltaBudgetZero(FailedPrecondition):
    """The request needs δ > 0 and the curator's δ budget is 0 (reason
    DELTA_BUDGET_ZERO): not a spent budget, no such release can ever be made; ask with
    δ = 0 where the mechanism allows it, or ask the curator's operator."""


class ReleaseUninformative(FailedPrecondition):
    """A Kusner job refused before anything was charged: its forecast finds its releases
    no better than a uniform pick by the curator's margin. ``forecast`` is the
    curator's pb.KusnerForecast (``forecast.epsilon_needed`` is the least ε at which a
    release would help); set ``force=True`` in the KusnerSpec to run and pay anyway."""

    def __init__(self, code: grpc.StatusCode, message: str, reason: str = "",
                 metadata: Optional[Dict[str, str]] = None, forecast: Optional[pb.KusnerForecast] = None):
        super().__init__(code, message, reason, metadata)
        self.forecast = forecast


class NotFound(CuratorError):
    """NOT_FOUND (jobs)."""


class AlreadyExists(CuratorError):
    """ALREADY_EXISTS (an idempotency key reused with another job spec)."""


class Aborted(CuratorError):
    """ABORTED: an evaluation failed; asking again evaluates again."""


class ReleaseInProgress(Aborted):
    """ABORTED, RELEASE_IN_PROGRESS: the same release (or job) is being computed for
    another request, still so after the client's retries; run again once it ends (the
    release is then replayed at no cost)."""


class Unavailable(CuratorError):
    """UNAVAILABLE after the retries: the curator is unreachable, restarting or cannot
    reach its privacy ledger."""


class Unimplemented(CuratorError):
    """UNIMPLEMENTED: e.g. jobs on a curator that runs none."""


class Unauthenticated(CuratorError):
    """UNAUTHENTICATED: no usable certificate, token or identity."""


class PermissionDenied(CuratorError):
    """PERMISSION_DENIED."""


class DeadlineExceeded(CuratorError):
    """DEADLINE_EXCEEDED: the per-attempt ``timeout`` passed."""


class Cancelled(CuratorError):
    """CANCELLED."""


class Internal(CuratorError):
    """INTERNAL: the message holds a request id the curator's operator can look up."""


class ResourceExhausted(CuratorError):
    """RESOURCE_EXHAUSTED: base of the refusals below; raised as itself for a reason this
    client does not know (see ``reason``)."""


class RateLimited(ResourceExhausted):
    """The curator's rate or concurrency limit, still refusing when ``retry_timeout``
    ran out. ``retry_delay`` is the last wait it asked for, in seconds."""

    def __init__(self, code: grpc.StatusCode, message: str, retry_delay: float, reason: str = "",
                 metadata: Optional[Dict[str, str]] = None):
        super().__init__(code, message, reason, metadata)
        self.retry_delay = retry_delay


class BudgetExhausted(ResourceExhausted):
    """The privacy budget refused the request (reason BUDGET_EXCEEDED); nothing was
    charged. Waiting does not change it. ``scope`` (identity or dataset), ``relation``
    (the neighbour relation whose budget is spent) and the (ε, δ) requested and remaining
    come from the ErrorInfo's metadata (None where the curator sent none)."""

    @property
    def scope(self) -> Optional[str]:
        return self.metadata.get("scope")

    @property
    def relation(self) -> Optional[str]:
        return self.metadata.get("relation")

    @property
    def requested_epsilon(self) -> Optional[float]:
        return _float(self.metadata.get("requested_epsilon"))

    @property
    def requested_delta(self) -> Optional[float]:
        return _float(self.metadata.get("requested_delta"))

    @property
    def remaining_epsilon(self) -> Optional[float]:
        return _float(self.metadata.get("remaining_epsilon"))

    @property
    def remaining_delta(self) -> Optional[float]:
        return _float(self.metadata.get("remaining_delta"))


class StudyUnaffordable(BudgetExhausted):
    """The curator's quote of a study (``quote``, a StudyQuote) says the budget cannot pay
    the projection and its answers together; nothing was charged. Raised by
    release_projection before it asks for the release."""

    def __init__(self, quote: "StudyQuote"):
        super().__init__(grpc.StatusCode.RESOURCE_EXHAUSTED, quote.describe_shortfall())
        self.quote = quote
        for c in quote.charges:  # the relation that does not fit, as BudgetExhausted says it
            if not c.fits:
                self.metadata.update(relation=c.relation,
                                     requested_epsilon=repr(c.epsilon), requested_delta=repr(c.delta),
                                     remaining_epsilon=repr(c.epsilon_available), remaining_delta=repr(c.delta_available))
                break


class ExactAnswerLimit(ResourceExhausted):
    """The curator's cap on distinct rows answered exactly to one caller is reached
    (output privacy "none", reason EXACT_ROW_LIMIT); rows already answered are still
    replayed. ``limit``, ``answered`` and ``requested`` are the cap, the distinct rows
    this identity has received and the new rows it asked for."""

    @property
    def limit(self) -> Optional[int]:
        return _int(self.metadata.get("limit"))

    @property
    def answered(self) -> Optional[int]:
        return _int(self.metadata.get("answered"))

    @property
    def requested(self) -> Optional[int]:
        return _int(self.metadata.get("requested"))


class MemoryLimited(ResourceExhausted):
    """The projection asked for needs more memory while the curator computes it than
    the curator admits for its releases at once (ErrorInfo reason MEMORY_LIMIT); nothing
    was computed or charged. ``max_dimension`` is the largest dimension that fits (0
    when none does), ``needed_bytes`` and ``available_bytes`` the figures."""

    @property
    def needed_bytes(self) -> Optional[int]:
        return _int(self.metadata.get("needed_bytes"))

    @property
    def available_bytes(self) -> Optional[int]:
        return _int(self.metadata.get("available_bytes"))

    @property
    def max_dimension(self) -> Optional[int]:
        return _int(self.metadata.get("max_dimension"))


class ProjectionIntegrityError(PrivboError):
    """The projection stream was malformed: missing header or trailer, chunks out of
    order or of the wrong size."""


class ChecksumMismatch(ProjectionIntegrityError):
    """The SHA-256 of the received matrix bytes differs from the trailer's."""


_BY_CODE = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExists,
    grpc.StatusCode.ABORTED: Aborted,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.UNIMPLEMENTED: Unimplemented,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.CANCELLED: Cancelled,
    grpc.StatusCode.INTERNAL: Internal,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
}

# The ErrorInfo reasons of a curator's refusals (pkg/refusal, curator.proto "Errors"): the
# names of curator.proto's RefusalReason, in which a reason travels; CuratorError.reason
# compares equal to its member.
RefusalReason = enum.Enum("RefusalReason", [(n, n) for n, v in pb.RefusalReason.items() if v], type=str)

# Each reason with the status code it comes with and the error it is raised as.
_BY_REASON = {
    (grpc.StatusCode.RESOURCE_EXHAUSTED, RefusalReason.BUDGET_EXCEEDED.value): BudgetExhausted,
    (grpc.StatusCode.RESOURCE_EXHAUSTED, RefusalReason.EXACT_ROW_LIMIT.value): ExactAnswerLimit,
    (grpc.StatusCode.RESOURCE_EXHAUSTED, RefusalReason.MEMORY_LIMIT.value): MemoryLimited,
    (grpc.StatusCode.FAILED_PRECONDITION, RefusalReason.KUSNER_RELEASE_UNINFORMATIVE.value): ReleaseUninformative,
    (grpc.StatusCode.FAILED_PRECONDITION, RefusalReason.DELTA_BUDGET_ZERO.value): DeltaBudgetZero,
    (grpc.StatusCode.INVALID_ARGUMENT, RefusalReason.DIMENSION_ABOVE_FEATURES.value): DimensionAboveFeatures,
    (grpc.StatusCode.ABORTED, RefusalReason.RELEASE_IN_PROGRESS.value): ReleaseInProgress,
}


def _float(s: Optional[str]) -> Optional[float]:
    try:
        return float(s) if s is not None else None
    except ValueError:
        return None


def _int(s: Optional[str]) -> Optional[int]:
    try:
        return int(s) if s is not None else None
    except ValueError:
        return None


def _release_in_progress(err: grpc.RpcError) -> bool:
    """Whether err is ABORTED with the reason RELEASE_IN_PROGRESS."""
    return err.code() == grpc.StatusCode.ABORTED and _status.details(err).reason == RefusalReason.RELEASE_IN_PROGRESS


def _retry_delay(err: grpc.RpcError) -> Optional[float]:
    """The wait a RESOURCE_EXHAUSTED error's RetryInfo asks for, or None for any other
    error (a refusal that waiting does not change carries no RetryInfo)."""
    if err.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
        return None
    return _status.details(err).retry_delay


def error_from_rpc(err: grpc.RpcError) -> CuratorError:
    """Returns the typed error of a gRPC error: chosen by its code, its RetryInfo and the
    reason of its ErrorInfo (domain privbo.curator.v1), never by its message."""
    code = err.code() if hasattr(err, "code") else grpc.StatusCode.UNKNOWN
    message = (err.details() if hasattr(err, "details") else None) or str(err)
    d = _status.details(err)
    reason = d.reason if d.domain == _status.DOMAIN else ""
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED and d.retry_delay is not None:
        return RateLimited(code, message, d.retry_delay, reason, d.metadata)
    cls = _BY_REASON.get((code, reason)) or _BY_CODE.get(code, CuratorError)
    if cls is ReleaseUninformative:
        return ReleaseUninformative(code, message, reason, d.metadata, _status.detail(err, pb.KusnerForecast))
    return cls(code, message, reason, d.metadata)


# ------------------------------------------------------------------------ results


@dataclass(frozen=True)
class RelationBudget:
    """An identity's budget under one neighbour relation (curator.proto RelationBudget)."""

    relation: str
    epsilon_limit: float
    delta_limit: float
    epsilon_spent: float
    delta_spent: float
    epsilon_remaining: float
    delta_remaining: float
    dataset_epsilon_limit: float
    dataset_delta_limit: float
    dataset_epsilon_spent: float
    dataset_delta_spent: float
    dataset_epsilon_remaining: float
    dataset_delta_remaining: float
    # What releases being computed hold (reserved, not yet spent; out of remaining);
    # 0 from curators that predate reservations.
    epsilon_reserved: float = 0.0
    delta_reserved: float = 0.0
    dataset_epsilon_reserved: float = 0.0
    dataset_delta_reserved: float = 0.0

    @classmethod
    def from_pb(cls, m: pb.RelationBudget) -> "RelationBudget":
        return cls(**{f: getattr(m, f) for f in cls.__dataclass_fields__})


@dataclass(frozen=True)
class Budget:
    """An identity's (ε, δ) budget: its own fields are the feature-unit budget (the one a
    projection is charged to, which also holds the answers' record-level charges);
    ``relations`` lists every relation (filled by get_budget and get_dataset_info only)."""

    identity: str
    epsilon_limit: float
    delta_limit: float
    epsilon_spent: float
    delta_spent: float
    epsilon_remaining: float
    delta_remaining: float
    relations: Tuple[RelationBudget, ...] = ()
    # The feature-unit budget this identity's releases being computed hold (reserved,
    # not yet spent; out of remaining).
    epsilon_reserved: float = 0.0
    delta_reserved: float = 0.0

    @classmethod
    def from_pb(cls, m: pb.Budget) -> "Budget":
        return cls(
            identity=m.identity,
            epsilon_limit=m.epsilon_limit,
            delta_limit=m.delta_limit,
            epsilon_spent=m.epsilon_spent,
            delta_spent=m.delta_spent,
            epsilon_remaining=m.epsilon_remaining,
            delta_remaining=m.delta_remaining,
            relations=tuple(RelationBudget.from_pb(r) for r in m.relations),
            epsilon_reserved=m.epsilon_reserved,
            delta_reserved=m.delta_reserved,
        )

    def relation(self, name: str) -> Optional[RelationBudget]:
        """The budget under the neighbour relation ``name`` ("feature-unit", "record",
        "training-add-remove", "validation-record"), or None if not listed."""
        for r in self.relations:
            if r.relation == name:
                return r
        return None


class _NoiseFamily(enum.Enum):
    @classmethod
    def from_pb(cls, v: int) -> "NoiseFamily":
        try:
            return cls(v)
        except ValueError:  # a family added after this client
            return cls["UNSPECIFIED"]


# The distribution of an answer's noise as the curator states it: curator.proto's
# NoiseFamily without its prefix (NONE, LAPLACE, GAUSSIAN, …). UNSPECIFIED comes from
# curators that predate the statement.
NoiseFamily = _NoiseFamily("NoiseFamily", [(n.removeprefix("NOISE_FAMILY_"), v) for n, v in pb.NoiseFamily.items()],
                           module=__name__)


@dataclass(frozen=True)
class OutputPrivacy:
    """How the curator releases query answers (curator.proto OutputPrivacy): the noise of
    each answer is ``noise`` with standard deviation ``noise_sd`` at the public range
    [``lower``, ``upper``], as the curator states them; a client reads them rather than
    calibrating the mechanism from its name."""

    mechanism: str
    epsilon_per_index: float
    delta_per_index: float
    lower: float
    upper: float
    relation: str
    guarantee: str
    exact_answers_max_rows: int
    noise_sd: float = 0.0
    noise: NoiseFamily = NoiseFamily.UNSPECIFIED

    @property
    def exact(self) -> bool:
        """True when the curator states that the answers carry no noise."""
        return self.noise is NoiseFamily.NONE

    @classmethod
    def from_pb(cls, m: pb.OutputPrivacy) -> "OutputPrivacy":
        return _fields(cls, m)


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    dataset_id: str
    rows: int
    dimension: int
    budget: Budget
    output_privacy: OutputPrivacy
    protected_unit: str
    max_query_indices: int
    projection_mechanism: str
    projection_relation: str
    guarantee: str


def _fields(cls, m):
    """cls from the message m's fields of the same names (a NoiseFamily from its enum)."""
    values = {}
    for f, spec in cls.__dataclass_fields__.items():
        v = getattr(m, f)
        if spec.type in (NoiseFamily, "NoiseFamily"):
            v = NoiseFamily.from_pb(v)
        values[f] = v
    return cls(**values)


@dataclass(frozen=True)
class ProjectionQuote:
    """The projection a study resolves to (curator.proto ProjectionQuote): the dimension
    (``dimension_chosen`` when the curator chose it), ε and δ (``default_*`` when the
    curator's default study's), the noise σ per entry, the whole-patient ε, and whether
    this identity holds it already (``paid``)."""

    dimension: int
    dimension_chosen: bool
    epsilon: float
    delta: float
    default_epsilon: bool
    default_delta: bool
    label: str
    mechanism: str
    relation: str
    noise_sd: float
    whole_patient_epsilon: float
    whole_patient_units: float
    whole_patient: str
    paid: bool


@dataclass(frozen=True)
class AnswersQuote:
    """The answers of a study (curator.proto AnswersQuote): paid with the projection
    (``included``), their one charge, the target's public range and each answer's noise
    sd and family (``noise``), as the curator states them."""

    included: bool
    mechanism: str
    relation: str
    epsilon: float
    delta: float
    lower: float
    upper: float
    noise_sd: float
    paid: bool
    noise: NoiseFamily = NoiseFamily.UNSPECIFIED

    @property
    def exact(self) -> bool:
        """True when the curator states that the answers carry no noise."""
        return self.noise is NoiseFamily.NONE


@dataclass(frozen=True)
class RelationCharge:
    """A study's new charge under one neighbour relation and what the identity can still
    spend under it."""

    relation: str
    epsilon: float
    delta: float
    epsilon_available: float
    delta_available: float
    fits: bool


@dataclass(frozen=True)
class DefaultStudy:
    """The curator's default study and how many such studies its budgets hold."""

    projection_epsilon: float
    projection_delta: float
    answers_epsilon: float
    answers_delta: float
    per_identity: int
    dataset: int
    dataset_left: int


@dataclass(frozen=True)
class StudyQuote:
    """What a study would cost and receive, stated before anything is charged
    (Client.quote)."""

    projection: ProjectionQuote
    answers: AnswersQuote
    charges: Tuple[RelationCharge, ...]
    fits: bool
    refusal: str
    default_study: DefaultStudy

    @classmethod
    def from_pb(cls, m: pb.QuoteStudyResponse) -> "StudyQuote":
        return cls(
            projection=_fields(ProjectionQuote, m.projection),
            answers=_fields(AnswersQuote, m.answers),
            charges=tuple(_fields(RelationCharge, c) for c in m.charges),
            fits=m.fits,
            refusal=m.refusal,
            default_study=_fields(DefaultStudy, m.default_study),
        )

    def describe_shortfall(self) -> str:
        p, a = self.projection, self.answers
        text = f"the study's projection (r={p.dimension}, ε={p.epsilon:g}, δ={p.delta:g})"
        if a.included:
            text += f" and its answers ({a.mechanism}, ε={a.epsilon:g}, δ={a.delta:g})"
        for c in self.charges:
            if not c.fits:
                text += (f" would charge ε={c.epsilon:g}, δ={c.delta:g} under the {c.relation} relation, where this "
                         f"identity can spend ε={c.epsilon_available:g}, δ={c.delta_available:g}")
                break
        text += "; nothing was charged"
        if self.refusal:
            text += f" ({self.refusal})"
        return text


Matrix = Union["numpy.ndarray", List[List[float]]]


@dataclass(frozen=True)
class Projection:
    """A released projection Z (rows × cols), its checksum verified."""

    release_id: str
    rows: int
    cols: int
    replayed: bool
    guarantee: str
    budget: Budget
    matrix: Matrix = field(repr=False)
    sha256: bytes = field(repr=False)
    # Standard deviation of the Gaussian noise in every entry (mechanism "gaussian"); 0
    # for the lifted mechanism and from curators that do not state it.
    noise_sd: float = 0.0


@dataclass(frozen=True)
class Observation:
    index: int
    value: float
    replayed: bool
    # The range (lower, upper) the value was clipped to before its noise: the public
    # output range unless a narrower ``clip`` was asked when the row was first answered;
    # None for exact answers.
    clip: Optional[Tuple[float, float]] = None


@dataclass(frozen=True)
class QueryResult:
    observations: Tuple[Observation, ...]
    budget: Budget

    def values(self) -> Dict[int, float]:
        """The answers by row index."""
        return {o.index: o.value for o in self.observations}


class JobState(enum.IntEnum):
    UNSPECIFIED = pb.JOB_STATE_UNSPECIFIED
    QUEUED = pb.JOB_STATE_QUEUED
    RUNNING = pb.JOB_STATE_RUNNING
    SUCCEEDED = pb.JOB_STATE_SUCCEEDED
    FAILED = pb.JOB_STATE_FAILED
    CANCELLED = pb.JOB_STATE_CANCELLED

    @property
    def done(self) -> bool:
        return self in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)


@dataclass(frozen=True)
class JobResult:
    hyperparameters: Dict[str, float]
    has_hyperparameters: bool
    score: float
    runs: int
    epsilon: float
    delta: float
    guarantee: str
    constants: Dict[str, float]


@dataclass(frozen=True)
class Job:
    id: str
    identity: str
    state: JobState
    epsilon_charged: float
    delta_charged: float
    guarantee: str
    result: Optional[JobResult]
    error: str
    created_unix_ms: int
    updated_unix_ms: int
    spec: pb.JobSpec = field(repr=False)

    @classmethod
    def from_pb(cls, m: pb.Job) -> "Job":
        result = None
        if m.HasField("result"):
            r = m.result
            result = JobResult(
                hyperparameters=dict(r.hyperparameters),
                has_hyperparameters=r.has_hyperparameters,
                score=r.score,
                runs=r.runs,
                epsilon=r.epsilon,
                delta=r.delta,
                guarantee=r.guarantee,
                constants=dict(r.constants),
            )
        return cls(
            id=m.id,
            identity=m.identity,
            state=JobState(m.state),
            epsilon_charged=m.epsilon_charged,
            delta_charged=m.delta_charged,
            guarantee=m.guarantee,
            result=result,
            error=m.error,
            created_unix_ms=m.created_unix_ms,
            updated_unix_ms=m.updated_unix_ms,
            spec=m.spec,
        )


@dataclass(frozen=True)
class JobEvent:
    job_id: str
    seq: int
    time_unix_ms: int
    state: JobState
    step: int
    total: int
    message: str


# ------------------------------------------------------------------------ matrix


def _decode_matrix(data: bytearray, rows: int, cols: int, as_numpy: bool) -> Matrix:
    """Row-major little-endian binary64 values as a rows × cols matrix."""
    if as_numpy:
        # Over the bytearray itself: no copy, and writable (unlike over bytes).
        return numpy.frombuffer(data, dtype="<f8").reshape(rows, cols)
    values = array.array("d")
    values.frombytes(data)
    if sys.byteorder != "little":
        values.byteswap()
    return [values[i * cols : (i + 1) * cols].tolist() for i in range(rows)]


def assemble_projection(responses: Iterable[pb.ReleaseProjectionResponse], as_numpy: bool) -> Projection:
    """Reassembles a ReleaseProjection stream: a header, chunks of whole rows in order,
    and a trailer whose SHA-256 must equal that of the chunks' bytes."""
    it = iter(responses)
    first = next(it, None)
    if first is None or first.WhichOneof("part") != "header":
        raise ProjectionIntegrityError("projection stream did not start with a header")
    h = first.header
    rows, cols = h.rows, h.cols
    if rows == 0 or cols == 0 or rows * cols > MAX_ELEMENTS:
        raise ProjectionIntegrityError(f"projection header announces an unusable {rows} × {cols} matrix")
    row_bytes = cols * 8
    buf = bytearray(rows * row_bytes)
    digest = hashlib.sha256()
    nxt = 0
    for msg in it:
        part = msg.WhichOneof("part")
        if part == "chunk":
            c = msg.chunk
            n = c.row_count
            if c.first_row != nxt or n <= 0 or nxt + n > rows:
                raise ProjectionIntegrityError(
                    f"projection chunk for rows [{c.first_row}, {c.first_row + n}) out of order "
                    f"(expected row {nxt} of {rows})"
                )
            if len(c.data) != n * row_bytes:
                raise ProjectionIntegrityError(
                    f"projection chunk at row {nxt} holds {len(c.data)} bytes, want {n * row_bytes}"
                )
            buf[nxt * row_bytes : (nxt + n) * row_bytes] = c.data
            digest.update(c.data)
            nxt += n
        elif part == "trailer":
            if nxt != rows:
                raise ProjectionIntegrityError(f"projection stream ended after {nxt} of {rows} rows")
            got = digest.digest()
            if got != msg.trailer.sha256:
                raise ChecksumMismatch(
                    "projection checksum mismatch; the matrix was damaged in transit "
                    f"(SHA-256 {got.hex()}, trailer says {msg.trailer.sha256.hex()})"
                )
            return Projection(
                release_id=h.release_id,
                rows=rows,
                cols=cols,
                replayed=h.replayed,
                guarantee=h.guarantee,
                budget=Budget.from_pb(h.budget),
                matrix=_decode_matrix(buf, rows, cols, as_numpy),
                sha256=got,
                noise_sd=h.noise_sd,
            )
        else:
            raise ProjectionIntegrityError(f"unexpected {part or 'empty'} message in projection stream")
    raise ProjectionIntegrityError("projection stream ended without a trailer")


# ------------------------------------------------------------------------ client

JobSpecLike = Union[pb.JobSpec, pb.KusnerSpec, pb.DPHyPOSpec]


class Client:
    """A connection to one curator. Use connect() to make one; close it (or use it as a
    context manager) when done."""

    def __init__(
        self,
        channel: grpc.Channel,
        identity: Optional[str] = None,
        *,
        retry_timeout: float = 30.0,
        timeout: Optional[float] = None,
    ):
        """``channel`` is a gRPC channel to the curator (connect() builds it);
        ``identity`` is sent in the privbo-identity header (honoured by a development
        curator only); ``retry_timeout`` bounds the waits of one call's retries (0: no
        retry); ``timeout`` is each attempt's deadline in seconds (None: none)."""
        self._channel = channel
        self._stub = pb_grpc.CuratorServiceStub(channel)
        self._metadata: Tuple[Tuple[str, str], ...] = ((IDENTITY_HEADER, identity),) if identity else ()
        self.identity = identity
        self.retry_timeout = retry_timeout
        self.timeout = timeout
        self._sleep: Callable[[float], None] = time.sleep
        self._clock: Callable[[], float] = time.monotonic
        # How many times calls waited for the curator's rate limit / after UNAVAILABLE.
        self.rate_limit_waits = 0
        self.unavailable_waits = 0
        self.in_progress_waits = 0

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the retry policy (module documentation)

    def _call(self, what: str, attempt: Callable[[], T]) -> T:
        start, backoff, in_progress = self._clock(), BACKOFF_FIRST, 0
        while True:
            try:
                return attempt()
            except grpc.RpcError as err:
                wait, backoff = self._retry_wait(what, err, start, backoff, in_progress)
                in_progress += _release_in_progress(err)
                self._sleep(wait)

    def _retry_wait(self, what: str, err: grpc.RpcError, start: float, backoff: float,
                    in_progress: int = 0) -> Tuple[float, float]:
        """Returns how long to wait before asking again after err (and the next backoff),
        or raises err's typed error when it is not retried, when it is a release in
        progress the call has waited for in_progress ≥ RELEASE_IN_PROGRESS_RETRIES times
        already, or when the wait would end beyond retry_timeout after start."""
        delay = _retry_delay(err)
        if delay is not None:
            wait = max(delay, MIN_RETRY_DELAY)
        elif err.code() == grpc.StatusCode.UNAVAILABLE or (
                _release_in_progress(err) and in_progress < RELEASE_IN_PROGRESS_RETRIES):
            wait, backoff = backoff, min(2 * backoff, BACKOFF_MAX)
        else:
            raise error_from_rpc(err) from err
        if self._clock() + wait - start > self.retry_timeout:
            raise error_from_rpc(err) from err
        if delay is not None:
            self.rate_limit_waits += 1
            log.debug("%s: rate limited by the curator; retrying in %.3f s", what, wait)
        elif _release_in_progress(err):
            self.in_progress_waits += 1
            log.debug("%s: the same release is in progress for another request; retrying in %.3f s", what, wait)
        else:
            self.unavailable_waits += 1
            log.debug("%s: curator unavailable (%s); retrying in %.3f s", what, err.details(), wait)
        return wait, backoff

    def _unary(self, what: str, method, request):
        return self._call(what, lambda: method(request, metadata=self._metadata, timeout=self.timeout))

    # -- metadata

    def get_dataset_info(self) -> DatasetInfo:
        """Describes the dataset, the caller's budget and each release's protection.
        Costs nothing."""
        m = self._unary("GetDatasetInfo", self._stub.GetDatasetInfo, pb.GetDatasetInfoRequest())
        return DatasetInfo(
            name=m.name,
            dataset_id=m.dataset_id,
            rows=m.rows,
            dimension=m.dimension,
            budget=Budget.from_pb(m.budget),
            output_privacy=OutputPrivacy.from_pb(m.output_privacy),
            protected_unit=m.protected_unit,
            max_query_indices=m.max_query_indices,
            projection_mechanism=m.projection_mechanism,
            projection_relation=m.projection_relation,
            guarantee=m.guarantee,
        )

    def get_budget(self) -> Budget:
        """The caller's budget under every neighbour relation. Costs nothing."""
        return Budget.from_pb(self._unary("GetBudget", self._stub.GetBudget, pb.GetBudgetRequest()).budget)

    # -- releases

    def quote(
        self,
        dimension: Optional[int] = None,
        epsilon: Optional[float] = None,
        delta: Optional[float] = None,
        label: str = "",
        *,
        with_answers: bool = True,
    ) -> StudyQuote:
        """What a study would cost and receive, before anything is charged: the projection
        (``dimension`` None: the curator chooses it; ``epsilon``/``delta`` None: the
        curator's default study's, δ at most what this identity can still spend), its
        noise and whole-patient ε, the answers (paid with it when ``with_answers``) and
        their noise against the target's public range, the charge per relation and
        whether it fits. Costs nothing."""
        if dimension is not None and not 1 <= dimension < 1 << 32:
            raise ValueError(f"projection dimension {dimension} out of range (None lets the curator choose)")
        req = pb.QuoteStudyRequest(dimension=dimension or 0, epsilon=epsilon or 0.0, delta=delta or 0.0, label=label,
                                   with_answers=with_answers)
        return StudyQuote.from_pb(self._unary("QuoteStudy", self._stub.QuoteStudy, req))

    def release_projection(
        self,
        dimension: Optional[int] = None,
        epsilon: Optional[float] = None,
        delta: Optional[float] = None,
        label: str = "",
        *,
        with_answers: bool = True,
        as_numpy: Optional[bool] = None,
    ) -> Projection:
        """Releases the private projection Z (rows × dimension), charged (ε, δ) unless the
        same request (dimension, ε, δ, label) was made before, when it is replayed at no
        cost. ``as_numpy`` chooses the matrix type (default: numpy when installed).

        For a study (``with_answers``, the default) the curator first quotes it (quote():
        ``dimension``, ``epsilon`` and ``delta`` left None are the curator's choice and
        its default study's), StudyUnaffordable is raised, with nothing charged, when the
        budget could not pay the projection and this identity's answers together, and the
        release then pays both in one charge. ``with_answers=False`` releases the
        projection alone (the answers are charged with the first query), with every
        parameter given. Raises BudgetExhausted when the budget cannot pay it."""
        if as_numpy is None:
            as_numpy = numpy is not None
        elif as_numpy and numpy is None:
            raise ImportError("as_numpy=True needs numpy (Debian: python3-numpy; pip: numpy)")
        if dimension is not None and not 1 <= dimension < 1 << 32:
            raise ValueError(f"projection dimension {dimension} out of range (None lets the curator choose)")
        if with_answers:
            q = self.quote(dimension, epsilon, delta, label, with_answers=True)
            if not q.fits:
                raise StudyUnaffordable(q)
            dimension, epsilon, delta = q.projection.dimension, q.projection.epsilon, q.projection.delta
        elif dimension is None or epsilon is None or delta is None:
            raise ValueError("a projection without its answers needs dimension, epsilon and delta (quote() states the curator's choice)")
        req = pb.ReleaseProjectionRequest(dimension=dimension, epsilon=epsilon, delta=delta, label=label,
                                          with_answers=with_answers)

        def attempt() -> Projection:
            stream = self._stub.ReleaseProjection(req, metadata=self._metadata, timeout=self.timeout)
            try:
                return assemble_projection(stream, as_numpy)
            finally:
                stream.cancel()  # no-op once the stream ended; frees it after an error

        return self._call("ReleaseProjection", attempt)

    def query(self, rows: Iterable[int], clip: Optional[Tuple[float, float]] = None, confirmation_pass: int = 0) -> QueryResult:
        """Asks the objective at the given 0-based row indices. Under output privacy
        "laplace"/"gaussian" the answers are noised and the caller's first answers are
        charged once; rows answered before are replayed at no cost.

        ``clip=(lower, upper)``, a range inside the curator's public output range, asks
        the fresh answers to be clipped to it: their noise is then calibrated to
        ``upper - lower`` at the same ε and under the same charge (the curator refuses a
        range outside the public one with INVALID_ARGUMENT). ``confirmation_pass=p ≥ 1``
        answers rows again with fresh noise, each at most once in pass p, paid by a charge
        of its own (the curator's ε_out again)."""
        indices = [int(i) for i in rows]
        for i in indices:
            if i < 0:
                raise ValueError(f"row {i} is negative")
        req = pb.QueryRequest(indices=indices)
        if clip is not None:
            lower, upper = float(clip[0]), float(clip[1])
            if not (math.isfinite(lower) and math.isfinite(upper) and lower < upper):
                raise ValueError(f"clip range {clip!r}: want finite lower < upper")
            req.clip.lower, req.clip.upper = lower, upper
        if int(confirmation_pass) < 0:
            raise ValueError(f"confirmation_pass {confirmation_pass} is negative")
        req.confirmation_pass = int(confirmation_pass)
        m = self._unary("Query", self._stub.Query, req)
        return QueryResult(
            observations=tuple(
                Observation(o.index, o.value, o.replayed, (o.clip.lower, o.clip.upper) if o.HasField("clip") else None)
                for o in m.observations),
            budget=Budget.from_pb(m.budget),
        )

    # -- jobs

    def submit_job(self, spec: JobSpecLike, idempotency_key: Optional[str] = None) -> Job:
        """Starts a private tuning job, charged in full when accepted. Without an
        ``idempotency_key`` one is drawn, so that a retry after UNAVAILABLE returns the
        job already accepted instead of charging a second one. A Kusner job whose
        forecast is no better than a uniform pick raises ReleaseUninformative (nothing
        charged) unless its spec sets ``force``."""
        if isinstance(spec, pb.KusnerSpec):
            spec = pb.JobSpec(kusner=spec)
        elif isinstance(spec, pb.DPHyPOSpec):
            spec = pb.JobSpec(dphypo=spec)
        key = idempotency_key or "privbo-py-" + uuid.uuid4().hex
        req = pb.SubmitJobRequest(idempotency_key=key, spec=spec)
        return Job.from_pb(self._unary("SubmitJob", self._stub.SubmitJob, req))

    def quote_job(self, spec: JobSpecLike) -> pb.JobQuote:
        """What ``submit_job(spec)`` would charge (``epsilon``, ``delta`` under
        ``relation``) and guarantee and, for a Kusner job, its ``kusner_forecast`` and
        whether the curator would refuse it (``refused``). Nothing is charged or run."""
        if isinstance(spec, pb.KusnerSpec):
            spec = pb.JobSpec(kusner=spec)
        elif isinstance(spec, pb.DPHyPOSpec):
            spec = pb.JobSpec(dphypo=spec)
        return self._unary("QuoteJob", self._stub.QuoteJob, pb.QuoteJobRequest(spec=spec))

    def get_job(self, job_id: str) -> Job:
        return Job.from_pb(self._unary("GetJob", self._stub.GetJob, pb.GetJobRequest(id=job_id)))

    def cancel_job(self, job_id: str) -> Job:
        """Stops a running job; its charge stays spent."""
        return Job.from_pb(self._unary("CancelJob", self._stub.CancelJob, pb.CancelJobRequest(id=job_id)))

    def list_jobs(self) -> List[Job]:
        """The caller's jobs, newest first."""
        return [Job.from_pb(j) for j in self._unary("ListJobs", self._stub.ListJobs, pb.ListJobsRequest()).jobs]

    def wait_job(self, job_id: str, poll_interval: float = 0.2, timeout: Optional[float] = None) -> Job:
        """Polls get_job until the job has ended (succeeded, failed or cancelled) and
        returns it; raises TimeoutError after ``timeout`` seconds."""
        start = self._clock()
        while True:
            job = self.get_job(job_id)
            if job.state.done:
                return job
            if timeout is not None and self._clock() - start > timeout:
                raise TimeoutError(f"job {job_id} is still {job.state.name} after {timeout} s")
            self._sleep(poll_interval)

    def watch_job(self, job_id: str, after_seq: int = 0) -> Iterator[JobEvent]:
        """Yields the job's progress events (those after ``after_seq``) until it ends.
        When the stream is refused or breaks (rate limit, UNAVAILABLE) it is opened again
        after the last event received, so no event is lost or repeated."""
        last = after_seq
        start, backoff = self._clock(), BACKOFF_FIRST
        while True:
            stream = self._stub.WatchJob(
                pb.WatchJobRequest(id=job_id, after_seq=last), metadata=self._metadata, timeout=self.timeout
            )
            try:
                for e in stream:
                    last = e.seq
                    start, backoff = self._clock(), BACKOFF_FIRST  # progress: a new retry budget
                    yield JobEvent(e.job_id, e.seq, e.time_unix_ms, JobState(e.state), e.step, e.total, e.message)
                return
            except grpc.RpcError as err:
                wait, backoff = self._retry_wait("WatchJob", err, start, backoff)
            finally:
                stream.cancel()
            self._sleep(wait)


def _read(path: Optional[str]) -> Optional[bytes]:
    if path is None:
        return None
    with open(path, "rb") as f:
        return f.read()


def connect(
    target: str,
    identity: Optional[str] = None,
    *,
    ca_file: Optional[str] = None,
    cert_file: Optional[str] = None,
    key_file: Optional[str] = None,
    token: Optional[str] = None,
    server_name: Optional[str] = None,
    connect_timeout: Optional[float] = 10.0,
    retry_timeout: float = 30.0,
    timeout: Optional[float] = None,
) -> Client:
    """Connects to the curator at ``target`` ("host:port").

    Plaintext without ``ca_file`` (a development curator on loopback, which takes
    ``identity``); TLS verified against ``ca_file`` with it, presenting ``cert_file`` and
    ``key_file`` for mutual TLS, and sending ``token`` as "authorization: Bearer TOKEN".
    ``server_name`` overrides the name the server certificate must carry. With a
    ``connect_timeout`` (seconds) the connection is made at once and Unavailable is raised
    if it cannot be within that time, so that a wrong address or refused TLS files are
    reported before the first request; None connects lazily.
    """
    options = [
        ("grpc.max_receive_message_length", MAX_RECEIVE_BYTES),
    ]
    if server_name:
        options.append(("grpc.ssl_target_name_override", server_name))
    if (cert_file is None) != (key_file is None):
        raise ValueError("give both cert_file and key_file for mutual TLS, or neither")
    if ca_file is None:
        if token is not None or cert_file is not None:
            raise ValueError("a bearer token or client certificate is only sent over TLS; give the curator's CA (ca_file)")
        channel = grpc.insecure_channel(target, options=options)
    else:
        creds = grpc.ssl_channel_credentials(
            root_certificates=_read(ca_file), private_key=_read(key_file), certificate_chain=_read(cert_file)
        )
        if token is not None:
            creds = grpc.composite_channel_credentials(creds, grpc.access_token_call_credentials(token))
        channel = grpc.secure_channel(target, creds, options=options)
    if connect_timeout is not None:
        try:
            grpc.channel_ready_future(channel).result(timeout=connect_timeout)
        except grpc.FutureTimeoutError:
            channel.close()
            how = "TLS" if ca_file else "plaintext"
            raise Unavailable(
                grpc.StatusCode.UNAVAILABLE,
                f"could not connect to the curator at {target} ({how}) within {connect_timeout} s: "
                "is it running there, and does it serve "
                + ("TLS with a certificate from this CA?" if ca_file else "plaintext (without --tls-cert)?"),
            ) from None
    return Client(channel, identity, retry_timeout=retry_timeout, timeout=timeout)
