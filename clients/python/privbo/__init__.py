"""privbo: a Python client of a privbo curator (see README.md and privbo.client).

The generated message and service stubs are privbo.curator.v1.curator_pb2 and
curator_pb2_grpc (scripts/generate.sh); ``pb`` is the messages module, for building job
specs. ``Study`` (privbo.study, which needs numpy) is a resumable GP-UCB study.
"""

__version__ = "0.1.0"

from privbo.client import (
    Aborted,
    AlreadyExists,
    AnswersQuote,
    Budget,
    BudgetExhausted,
    Cancelled,
    ChecksumMismatch,
    Client,
    CuratorError,
    DatasetInfo,
    DeadlineExceeded,
    DefaultStudy,
    DeltaBudgetZero,
    DimensionAboveFeatures,
    ExactAnswerLimit,
    FailedPrecondition,
    Internal,
    InvalidArgument,
    Job,
    JobEvent,
    JobResult,
    JobState,
    MemoryLimited,
    NoiseFamily,
    NotFound,
    Observation,
    OutputPrivacy,
    PermissionDenied,
    PrivboError,
    Projection,
    ProjectionIntegrityError,
    ProjectionQuote,
    QueryResult,
    RateLimited,
    RefusalReason,
    RelationBudget,
    RelationCharge,
    ReleaseInProgress,
    ReleaseUninformative,
    ResourceExhausted,
    StudyQuote,
    StudyUnaffordable,
    Unauthenticated,
    Unavailable,
    Unimplemented,
    connect,
)
from privbo.curator.v1 import curator_pb2 as pb

_STUDY = ("Study", "StudyResult", "StudyStateError")


def __getattr__(name: str):
    """privbo.Study and its result and error, from privbo.study, which needs numpy:
    imported when first named."""
    if name in _STUDY:
        from privbo import study

        return getattr(study, name)
    raise AttributeError(f"module 'privbo' has no attribute {name!r}")


__all__ = [name for name in dir() if not name.startswith("_") and name not in ("client", "curator")]
__all__ += ["__version__", *_STUDY]
