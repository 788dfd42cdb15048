from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

BUDGET_EXCEEDED: RefusalReason
DELTA_BUDGET_ZERO: RefusalReason
DESCRIPTOR: _descriptor.FileDescriptor
DIMENSION_ABOVE_FEATURES: RefusalReason
EXACT_ROW_LIMIT: RefusalReason
JOB_STATE_CANCELLED: JobState
JOB_STATE_FAILED: JobState
JOB_STATE_QUEUED: JobState
JOB_STATE_RUNNING: JobState
JOB_STATE_SUCCEEDED: JobState
JOB_STATE_UNSPECIFIED: JobState
KUSNER_RELEASE_UNINFORMATIVE: RefusalReason
LEDGER_UNAVAILABLE: RefusalReason
MEMORY_LIMIT: RefusalReason
NOISE_FAMILY_GAUSSIAN: NoiseFamily
NOISE_FAMILY_LAPLACE: NoiseFamily
NOISE_FAMILY_NONE: NoiseFamily
NOISE_FAMILY_UNSPECIFIED: NoiseFamily
REFUSAL_REASON_UNSPECIFIED: RefusalReason
RELEASE_IN_PROGRESS: RefusalReason
STORED_BYTES: RefusalReason

class AnswersQuote(_message.Message):
    __slots__ = ["delta", "epsilon", "included", "lower", "mechanism", "noise", "noise_sd", "paid", "relation", "upper"]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    EPSILON_FIELD_NUMBER: _ClassVar[int]
    INCLUDED_FIELD_NUMBER: _ClassVar[int]
    LOWER_FIELD_NUMBER: _ClassVar[int]
    MECHANISM_FIELD_NUMBER: _ClassVar[int]
    NOISE_FIELD_NUMBER: _ClassVar[int]
    NOISE_SD_FIELD_NUMBER: _ClassVar[int]
    PAID_FIELD_NUMBER: _ClassVar[int]
    RELATION_FIELD_NUMBER: _ClassVar[int]
    UPPER_FIELD_NUMBER: _ClassVar[int]
    delta: float
    epsilon: float
    included: bool
    lower: float
    mechanism: str
    noise: NoiseFamily
    noise_sd: float
    paid: bool
    relation: str
    upper: float
    def __init__(self, included: bool = ..., mechanism: _Optional[str] = ..., relation: _Optional[str] = ..., epsilon: _Optional[float] = ..., delta: _Optional[float] = ..., lower: _Optional[float] = ..., upper: _Optional[float] = ..., noise_sd: _Optional[float] = ..., paid: bool = ..., noise: _Optional[_Union[NoiseFamily, str]] = ...) -> None: ...

class Budget(_message.Message):
    __slots__ = ["delta_limit", "delta_remaining", "delta_reserved", "delta_spent", "epsilon_limit", "epsilon_remaining", "epsilon_reserved", "epsilon_spent", "identity", "relations", "whole_patient"]
    DELTA_LIMIT_FIELD_NUMBER: _ClassVar[int]
    DELTA_REMAINING_FIELD_NUMBER: _ClassVar[int]
    DELTA_RESERVED_FIELD_NUMBER: _ClassVar[int]
    DELTA_SPENT_FIELD_NUMBER: _ClassVar[int]
    EPSILON_LIMIT_FIELD_NUMBER: _ClassVar[int]
    EPSILON_REMAINING_FIELD_NUMBER: _ClassVar[int]
    EPSILON_RESERVED_FIELD_NUMBER: _ClassVar[int]
    EPSILON_SPENT_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    RELATIONS_FIELD_NUMBER: _ClassVar[int]
    WHOLE_PATIENT_FIELD_NUMBER: _ClassVar[int]
    delta_limit: float
    delta_remaining: float
    delta_reserved: float
    delta_spent: float
    epsilon_limit: float
    epsilon_remaining: float
    epsilon_reserved: float
    epsilon_spent: float
    identity: str
    relations: _containers.RepeatedCompositeFieldContainer[RelationBudget]
    whole_patient: WholePatientBudget
    def __init__(self, identity: _Optional[str] = ..., epsilon_limit: _Optional[float] = ..., delta_limit: _Optional[float] = ..., epsilon_spent: _Optional[float] = ..., delta_spent: _Optional[float] = ..., epsilon_remaining: _Optional[float] = ..., delta_remaining: _Optional[float] = ..., relations: _Optional[_Iterable[_Union[RelationBudget, _Mapping]]] = ..., whole_patient: _Optional[_Union[WholePatientBudget, _Mapping]] = ..., epsilon_reserved: _Optional[float] = ..., delta_reserved: _Optional[float] = ...) -> None: ...

class CancelJobRequest(_message.Message):
    __slots__ = ["id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class ClipRange(_message.Message):
    __slots__ = ["lower", "upper"]
    LOWER_FIELD_NUMBER: _ClassVar[int]
    UPPER_FIELD_NUMBER: _ClassVar[int]
    lower: float
    upper: float
    def __init__(self, lower: _Optional[float] = ..., upper: _Optional[float] = ...) -> None: ...

class DPHyPOSpec(_message.Message):
    __slots__ = ["beta", "c_max", "c_min", "delta", "dpsgd", "evaluator", "gamma", "space", "target_epsilon", "tau", "theta", "uniform"]
    BETA_FIELD_NUMBER: _ClassVar[int]
    C_MAX_FIELD_NUMBER: _ClassVar[int]
    C_MIN_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    DPSGD_FIELD_NUMBER: _ClassVar[int]
    EVALUATOR_FIELD_NUMBER: _ClassVar[int]
    GAMMA_FIELD_NUMBER: _ClassVar[int]
    SPACE_FIELD_NUMBER: _ClassVar[int]
    TARGET_EPSILON_FIELD_NUMBER: _ClassVar[int]
    TAU_FIELD_NUMBER: _ClassVar[int]
    THETA_FIELD_NUMBER: _ClassVar[int]
    UNIFORM_FIELD_NUMBER: _ClassVar[int]
    beta: float
    c_max: float
    c_min: float
    delta: float
    dpsgd: DPSGDSettings
    evaluator: str
    gamma: float
    space: _containers.RepeatedCompositeFieldContainer[HyperparameterRange]
    target_epsilon: float
    tau: float
    theta: float
    uniform: bool
    def __init__(self, space: _Optional[_Iterable[_Union[HyperparameterRange, _Mapping]]] = ..., theta: _Optional[float] = ..., gamma: _Optional[float] = ..., c_max: _Optional[float] = ..., c_min: _Optional[float] = ..., tau: _Optional[float] = ..., beta: _Optional[float] = ..., uniform: bool = ..., evaluator: _Optional[str] = ..., dpsgd: _Optional[_Union[DPSGDSettings, _Mapping]] = ..., delta: _Optional[float] = ..., target_epsilon: _Optional[float] = ...) -> None: ...

class DPSGDSettings(_message.Message):
    __slots__ = ["batch_size", "clip_norm", "epochs", "l2", "learning_rate", "noise_multiplier", "score_noise_multiplier"]
    BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    CLIP_NORM_FIELD_NUMBER: _ClassVar[int]
    EPOCHS_FIELD_NUMBER: _ClassVar[int]
    L2_FIELD_NUMBER: _ClassVar[int]
    LEARNING_RATE_FIELD_NUMBER: _ClassVar[int]
    NOISE_MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    SCORE_NOISE_MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    batch_size: int
    clip_norm: float
    epochs: int
    l2: float
    learning_rate: float
    noise_multiplier: float
    score_noise_multiplier: float
    def __init__(self, learning_rate: _Optional[float] = ..., clip_norm: _Optional[float] = ..., noise_multiplier: _Optional[float] = ..., epochs: _Optional[int] = ..., batch_size: _Optional[int] = ..., l2: _Optional[float] = ..., score_noise_multiplier: _Optional[float] = ...) -> None: ...

class DefaultStudy(_message.Message):
    __slots__ = ["answers_delta", "answers_epsilon", "dataset", "dataset_left", "per_identity", "projection_delta", "projection_epsilon"]
    ANSWERS_DELTA_FIELD_NUMBER: _ClassVar[int]
    ANSWERS_EPSILON_FIELD_NUMBER: _ClassVar[int]
    DATASET_FIELD_NUMBER: _ClassVar[int]
    DATASET_LEFT_FIELD_NUMBER: _ClassVar[int]
    PER_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    PROJECTION_DELTA_FIELD_NUMBER: _ClassVar[int]
    PROJECTION_EPSILON_FIELD_NUMBER: _ClassVar[int]
    answers_delta: float
    answers_epsilon: float
    dataset: int
    dataset_left: int
    per_identity: int
    projection_delta: float
    projection_epsilon: float
    def __init__(self, projection_epsilon: _Optional[float] = ..., projection_delta: _Optional[float] = ..., answers_epsilon: _Optional[float] = ..., answers_delta: _Optional[float] = ..., per_identity: _Optional[int] = ..., dataset: _Optional[int] = ..., dataset_left: _Optional[int] = ...) -> None: ...

class DimensionChoice(_message.Message):
    __slots__ = ["distortion", "noise_sd", "noise_share", "rule", "typical_squared_distance"]
    DISTORTION_FIELD_NUMBER: _ClassVar[int]
    NOISE_SD_FIELD_NUMBER: _ClassVar[int]
    NOISE_SHARE_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    TYPICAL_SQUARED_DISTANCE_FIELD_NUMBER: _ClassVar[int]
    distortion: float
    noise_sd: float
    noise_share: float
    rule: str
    typical_squared_distance: float
    def __init__(self, rule: _Optional[str] = ..., noise_sd: _Optional[float] = ..., noise_share: _Optional[float] = ..., distortion: _Optional[float] = ..., typical_squared_distance: _Optional[float] = ...) -> None: ...

class GetBudgetRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class GetBudgetResponse(_message.Message):
    __slots__ = ["budget"]
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    budget: Budget
    def __init__(self, budget: _Optional[_Union[Budget, _Mapping]] = ...) -> None: ...

class GetDatasetInfoRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class GetDatasetInfoResponse(_message.Message):
    __slots__ = ["budget", "dataset_id", "dimension", "guarantee", "max_query_indices", "name", "output_privacy", "projection_mechanism", "projection_relation", "protected_unit", "rows"]
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    DATASET_ID_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    GUARANTEE_FIELD_NUMBER: _ClassVar[int]
    MAX_QUERY_INDICES_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_PRIVACY_FIELD_NUMBER: _ClassVar[int]
    PROJECTION_MECHANISM_FIELD_NUMBER: _ClassVar[int]
    PROJECTION_RELATION_FIELD_NUMBER: _ClassVar[int]
    PROTECTED_UNIT_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    budget: Budget
    dataset_id: str
    dimension: int
    guarantee: str
    max_query_indices: int
    name: str
    output_privacy: OutputPrivacy
    projection_mechanism: str
    projection_relation: str
    protected_unit: str
    rows: int
    def __init__(self, name: _Optional[str] = ..., rows: _Optional[int] = ..., dimension: _Optional[int] = ..., budget: _Optional[_Union[Budget, _Mapping]] = ..., output_privacy: _Optional[_Union[OutputPrivacy, _Mapping]] = ..., protected_unit: _Optional[str] = ..., max_query_indices: _Optional[int] = ..., dataset_id: _Optional[str] = ..., projection_mechanism: _Optional[str] = ..., projection_relation: _Optional[str] = ..., guarantee: _Optional[str] = ...) -> None: ...

class GetJobRequest(_message.Message):
    __slots__ = ["id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class HyperparameterRange(_message.Message):
    __slots__ = ["count", "high", "low", "name", "scale", "values"]
    class Scale(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = []
    COUNT_FIELD_NUMBER: _ClassVar[int]
    HIGH_FIELD_NUMBER: _ClassVar[int]
    LOW_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCALE_FIELD_NUMBER: _ClassVar[int]
    SCALE_LINEAR: HyperparameterRange.Scale
    SCALE_LIST: HyperparameterRange.Scale
    SCALE_LOG: HyperparameterRange.Scale
    SCALE_LOG_LIST: HyperparameterRange.Scale
    SCALE_UNSPECIFIED: HyperparameterRange.Scale
    VALUES_FIELD_NUMBER: _ClassVar[int]
    count: int
    high: float
    low: float
    name: str
    scale: HyperparameterRange.Scale
    values: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, name: _Optional[str] = ..., scale: _Optional[_Union[HyperparameterRange.Scale, str]] = ..., values: _Optional[_Iterable[float]] = ..., low: _Optional[float] = ..., high: _Optional[float] = ..., count: _Optional[int] = ...) -> None: ...

class Job(_message.Message):
    __slots__ = ["created_unix_ms", "delta_charged", "epsilon_charged", "error", "guarantee", "id", "identity", "result", "spec", "state", "updated_unix_ms"]
    CREATED_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    DELTA_CHARGED_FIELD_NUMBER: _ClassVar[int]
    EPSILON_CHARGED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    GUARANTEE_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    UPDATED_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    created_unix_ms: int
    delta_charged: float
    epsilon_charged: float
    error: str
    guarantee: str
    id: str
    identity: str
    result: JobResult
    spec: JobSpec
    state: JobState
    updated_unix_ms: int
    def __init__(self, id: _Optional[str] = ..., identity: _Optional[str] = ..., spec: _Optional[_Union[JobSpec, _Mapping]] = ..., state: _Optional[_Union[JobState, str]] = ..., epsilon_charged: _Optional[float] = ..., delta_charged: _Optional[float] = ..., guarantee: _Optional[str] = ..., result: _Optional[_Union[JobResult, _Mapping]] = ..., error: _Optional[str] = ..., created_unix_ms: _Optional[int] = ..., updated_unix_ms: _Optional[int] = ...) -> None: ...

class JobEvent(_message.Message):
    __slots__ = ["job_id", "message", "seq", "state", "step", "time_unix_ms", "total"]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    TIME_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    message: str
    seq: int
    state: JobState
    step: int
    time_unix_ms: int
    total: int
    def __init__(self, job_id: _Optional[str] = ..., seq: _Optional[int] = ..., time_unix_ms: _Optional[int] = ..., state: _Optional[_Union[JobState, str]] = ..., step: _Optional[int] = ..., total: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class JobQuote(_message.Message):
    __slots__ = ["delta", "epsilon", "guarantee", "kusner_forecast", "refused", "relation"]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    EPSILON_FIELD_NUMBER: _ClassVar[int]
    GUARANTEE_FIELD_NUMBER: _ClassVar[int]
    KUSNER_FORECAST_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    RELATION_FIELD_NUMBER: _ClassVar[int]
    delta: float
    epsilon: float
    guarantee: str
    kusner_forecast: KusnerForecast
    refused: bool
    relation: str
    def __init__(self, epsilon: _Optional[float] = ..., delta: _Optional[float] = ..., relation: _Optional[str] = ..., guarantee: _Optional[str] = ..., kusner_forecast: _Optional[_Union[KusnerForecast, _Mapping]] = ..., refused: bool = ...) -> None: ...

class JobResult(_message.Message):
    __slots__ = ["constants", "delta", "epsilon", "guarantee", "has_hyperparameters", "hyperparameters", "runs", "score"]
    class ConstantsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    class HyperparametersEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    CONSTANTS_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    EPSILON_FIELD_NUMBER: _ClassVar[int]
    GUARANTEE_FIELD_NUMBER: _ClassVar[int]
    HAS_HYPERPARAMETERS_FIELD_NUMBER: _ClassVar[int]
    HYPERPARAMETERS_FIELD_NUMBER: _ClassVar[int]
    RUNS_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    constants: _containers.ScalarMap[str, float]
    delta: float
    epsilon: float
    guarantee: str
    has_hyperparameters: bool
    hyperparameters: _containers.ScalarMap[str, float]
    runs: int
    score: float
    def __init__(self, hyperparameters: _Optional[_Mapping[str, float]] = ..., has_hyperparameters: bool = ..., score: _Optional[float] = ..., runs: _Optional[int] = ..., epsilon: _Optional[float] = ..., delta: _Optional[float] = ..., guarantee: _Optional[str] = ..., constants: _Optional[_Mapping[str, float]] = ...) -> None: ...

class JobSpec(_message.Message):
    __slots__ = ["dphypo", "kusner"]
    DPHYPO_FIELD_NUMBER: _ClassVar[int]
    KUSNER_FIELD_NUMBER: _ClassVar[int]
    dphypo: DPHyPOSpec
    kusner: KusnerSpec
    def __init__(self, kusner: _Optional[_Union[KusnerSpec, _Mapping]] = ..., dphypo: _Optional[_Union[DPHyPOSpec, _Mapping]] = ...) -> None: ...

class KusnerForecast(_message.Message):
    __slots__ = ["candidates", "epsilon", "epsilon_needed", "gap", "has_selection", "informative", "laplace_scale", "margin", "objective_range", "selection_epsilon", "selection_lift", "selection_temperature", "uniform_probability", "uniform_value_within_gap", "value_epsilon", "value_lift", "value_within_gap", "within_gap_max", "within_gap_min"]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    EPSILON_FIELD_NUMBER: _ClassVar[int]
    EPSILON_NEEDED_FIELD_NUMBER: _ClassVar[int]
    GAP_FIELD_NUMBER: _ClassVar[int]
    HAS_SELECTION_FIELD_NUMBER: _ClassVar[int]
    INFORMATIVE_FIELD_NUMBER: _ClassVar[int]
    LAPLACE_SCALE_FIELD_NUMBER: _ClassVar[int]
    MARGIN_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_RANGE_FIELD_NUMBER: _ClassVar[int]
    SELECTION_EPSILON_FIELD_NUMBER: _ClassVar[int]
    SELECTION_LIFT_FIELD_NUMBER: _ClassVar[int]
    SELECTION_TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    UNIFORM_PROBABILITY_FIELD_NUMBER: _ClassVar[int]
    UNIFORM_VALUE_WITHIN_GAP_FIELD_NUMBER: _ClassVar[int]
    VALUE_EPSILON_FIELD_NUMBER: _ClassVar[int]
    VALUE_LIFT_FIELD_NUMBER: _ClassVar[int]
    VALUE_WITHIN_GAP_FIELD_NUMBER: _ClassVar[int]
    WITHIN_GAP_MAX_FIELD_NUMBER: _ClassVar[int]
    WITHIN_GAP_MIN_FIELD_NUMBER: _ClassVar[int]
    candidates: int
    epsilon: float
    epsilon_needed: float
    gap: float
    has_selection: bool
    informative: bool
    laplace_scale: float
    margin: float
    objective_range: float
    selection_epsilon: float
    selection_lift: float
    selection_temperature: float
    uniform_probability: float
    uniform_value_within_gap: float
    value_epsilon: float
    value_lift: float
    value_within_gap: float
    within_gap_max: float
    within_gap_min: float
    def __init__(self, candidates: _Optional[int] = ..., epsilon: _Optional[float] = ..., objective_range: _Optional[float] = ..., gap: _Optional[float] = ..., margin: _Optional[float] = ..., uniform_probability: _Optional[float] = ..., has_selection: bool = ..., selection_temperature: _Optional[float] = ..., within_gap_min: _Optional[float] = ..., within_gap_max: _Optional[float] = ..., selection_lift: _Optional[float] = ..., selection_epsilon: _Optional[float] = ..., laplace_scale: _Optional[float] = ..., value_within_gap: _Optional[float] = ..., uniform_value_within_gap: _Optional[float] = ..., value_lift: _Optional[float] = ..., value_epsilon: _Optional[float] = ..., informative: bool = ..., epsilon_needed: _Optional[float] = ...) -> None: ...

class KusnerSpec(_message.Message):
    __slots__ = ["a", "algorithm", "delta", "epsilon", "evaluator", "force", "forecast_gap", "gamma_t", "iterations", "k1", "lengthscale", "noise_variance", "space", "tau"]
    class Algorithm(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = []
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_LIPSCHITZ: KusnerSpec.Algorithm
    ALGORITHM_NOISE_FREE_GP: KusnerSpec.Algorithm
    ALGORITHM_NOISY_GP: KusnerSpec.Algorithm
    ALGORITHM_UNSPECIFIED: KusnerSpec.Algorithm
    A_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    EPSILON_FIELD_NUMBER: _ClassVar[int]
    EVALUATOR_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    FORECAST_GAP_FIELD_NUMBER: _ClassVar[int]
    GAMMA_T_FIELD_NUMBER: _ClassVar[int]
    ITERATIONS_FIELD_NUMBER: _ClassVar[int]
    K1_FIELD_NUMBER: _ClassVar[int]
    LENGTHSCALE_FIELD_NUMBER: _ClassVar[int]
    NOISE_VARIANCE_FIELD_NUMBER: _ClassVar[int]
    SPACE_FIELD_NUMBER: _ClassVar[int]
    TAU_FIELD_NUMBER: _ClassVar[int]
    a: float
    algorithm: KusnerSpec.Algorithm
    delta: float
    epsilon: float
    evaluator: str
    force: bool
    forecast_gap: float
    gamma_t: float
    iterations: int
    k1: float
    lengthscale: float
    noise_variance: float
    space: _containers.RepeatedCompositeFieldContainer[HyperparameterRange]
    tau: float
    def __init__(self, algorithm: _Optional[_Union[KusnerSpec.Algorithm, str]] = ..., space: _Optional[_Iterable[_Union[HyperparameterRange, _Mapping]]] = ..., iterations: _Optional[int] = ..., epsilon: _Optional[float] = ..., delta: _Optional[float] = ..., k1: _Optional[float] = ..., noise_variance: _Optional[float] = ..., gamma_t: _Optional[float] = ..., a: _Optional[float] = ..., tau: _Optional[float] = ..., lengthscale: _Optional[float] = ..., evaluator: _Optional[str] = ..., forecast_gap: _Optional[float] = ..., force: bool = ...) -> None: ...

class ListJobsRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListJobsResponse(_message.Message):
    __slots__ = ["jobs"]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[Job]
    def __init__(self, jobs: _Optional[_Iterable[_Union[Job, _Mapping]]] = ...) -> None: ...

class MatrixChunk(_message.Message):
    __slots__ = ["data", "first_row", "row_count"]
    DATA_FIELD_NUMBER: _ClassVar[int]
    FIRST_ROW_FIELD_NUMBER: _ClassVar[int]
    ROW_COUNT_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    first_row: int
    row_count: int
    def __init__(self, first_row: _Optional[int] = ..., row_count: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class Observation(_message.Message):
    __slots__ = ["clip", "index", "replayed", "value"]
    CLIP_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    clip: ClipRange
    index: int
    replayed: bool
    value: float
    def __init__(self, index: _Optional[int] = ..., value: _Optional[float] = ..., replayed: bool = ..., clip: _Optional[_Union[ClipRange, _Mapping]] = ...) -> None: ...

class OutputPrivacy(_message.Message):
    __slots__ = ["delta_per_index", "epsilon_per_index", "exact_answers_max_rows", "guarantee", "lower", "mechanism", "noise", "noise_sd", "relation", "upper"]
    DELTA_PER_INDEX_FIELD_NUMBER: _ClassVar[int]
    EPSILON_PER_INDEX_FIELD_NUMBER: _ClassVar[int]
    EXACT_ANSWERS_MAX_ROWS_FIELD_NUMBER: _ClassVar[int]
    GUARANTEE_FIELD_NUMBER: _ClassVar[int]
    LOWER_FIELD_NUMBER: _ClassVar[int]
    MECHANISM_FIELD_NUMBER: _ClassVar[int]
    NOISE_FIELD_NUMBER: _ClassVar[int]
    NOISE_SD_FIELD_NUMBER: _ClassVar[int]
    RELATION_FIELD_NUMBER: _ClassVar[int]
    UPPER_FIELD_NUMBER: _ClassVar[int]
    delta_per_index: float
    epsilon_per_index: float
    exact_answers_max_rows: int
    guarantee: str
    lower: float
    mechanism: str
    noise: NoiseFamily
    noise_sd: float
    relation: str
    upper: float
    def __init__(self, mechanism: _Optional[str] = ..., epsilon_per_index: _Optional[float] = ..., delta_per_index: _Optional[float] = ..., lower: _Optional[float] = ..., upper: _Optional[float] = ..., relation: _Optional[str] = ..., guarantee: _Optional[str] = ..., exact_answers_max_rows: _Optional[int] = ..., noise_sd: _Optional[float] = ..., noise: _Optional[_Union[NoiseFamily, str]] = ...) -> None: ...

class ProjectionHeader(_message.Message):
    __slots__ = ["budget", "cols", "guarantee", "noise_sd", "release_id", "replayed", "rows", "whole_patient"]
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    COLS_FIELD_NUMBER: _ClassVar[int]
    GUARANTEE_FIELD_NUMBER: _ClassVar[int]
    NOISE_SD_FIELD_NUMBER: _ClassVar[int]
    RELEASE_ID_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    WHOLE_PATIENT_FIELD_NUMBER: _ClassVar[int]
    budget: Budget
    cols: int
    guarantee: str
    noise_sd: float
    release_id: str
    replayed: bool
    rows: int
    whole_patient: WholePatientCost
    def __init__(self, release_id: _Optional[str] = ..., rows: _Optional[int] = ..., cols: _Optional[int] = ..., replayed: bool = ..., budget: _Optional[_Union[Budget, _Mapping]] = ..., guarantee: _Optional[str] = ..., noise_sd: _Optional[float] = ..., whole_patient: _Optional[_Union[WholePatientCost, _Mapping]] = ...) -> None: ...

class ProjectionQuote(_message.Message):
    __slots__ = ["default_delta", "default_epsilon", "delta", "dimension", "dimension_choice", "dimension_chosen", "epsilon", "label", "mechanism", "noise_sd", "paid", "relation", "whole_patient", "whole_patient_epsilon", "whole_patient_units"]
    DEFAULT_DELTA_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_EPSILON_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_CHOICE_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_CHOSEN_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    EPSILON_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    MECHANISM_FIELD_NUMBER: _ClassVar[int]
    NOISE_SD_FIELD_NUMBER: _ClassVar[int]
    PAID_FIELD_NUMBER: _ClassVar[int]
    RELATION_FIELD_NUMBER: _ClassVar[int]
    WHOLE_PATIENT_EPSILON_FIELD_NUMBER: _ClassVar[int]
    WHOLE_PATIENT_FIELD_NUMBER: _ClassVar[int]
    WHOLE_PATIENT_UNITS_FIELD_NUMBER: _ClassVar[int]
    default_delta: bool
    default_epsilon: bool
    delta: float
    dimension: int
    dimension_choice: DimensionChoice
    dimension_chosen: bool
    epsilon: float
    label: str
    mechanism: str
    noise_sd: float
    paid: bool
    relation: str
    whole_patient: str
    whole_patient_epsilon: float
    whole_patient_units: float
    def __init__(self, dimension: _Optional[int] = ..., dimension_chosen: bool = ..., epsilon: _Optional[float] = ..., delta: _Optional[float] = ..., default_epsilon: bool = ..., default_delta: bool = ..., label: _Optional[str] = ..., mechanism: _Optional[str] = ..., relation: _Optional[str] = ..., noise_sd: _Optional[float] = ..., whole_patient_epsilon: _Optional[float] = ..., whole_patient_units: _Optional[float] = ..., whole_patient: _Optional[str] = ..., paid: bool = ..., dimension_choice: _Optional[_Union[DimensionChoice, _Mapping]] = ...) -> None: ...

class ProjectionTrailer(_message.Message):
    __slots__ = ["sha256"]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    sha256: bytes
    def __init__(self, sha256: _Optional[bytes] = ...) -> None: ...

class QueryRequest(_message.Message):
    __slots__ = ["clip", "confirmation_pass", "indices"]
    CLIP_FIELD_NUMBER: _ClassVar[int]
    CONFIRMATION_PASS_FIELD_NUMBER: _ClassVar[int]
    INDICES_FIELD_NUMBER: _ClassVar[int]
    clip: ClipRange
    confirmation_pass: int
    indices: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, indices: _Optional[_Iterable[int]] = ..., clip: _Optional[_Union[ClipRange, _Mapping]] = ..., confirmation_pass: _Optional[int] = ...) -> None: ...

class QueryResponse(_message.Message):
    __slots__ = ["budget", "observations"]
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    OBSERVATIONS_FIELD_NUMBER: _ClassVar[int]
    budget: Budget
    observations: _containers.RepeatedCompositeFieldContainer[Observation]
    def __init__(self, observations: _Optional[_Iterable[_Union[Observation, _Mapping]]] = ..., budget: _Optional[_Union[Budget, _Mapping]] = ...) -> None: ...

class QuoteJobRequest(_message.Message):
    __slots__ = ["spec"]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    spec: JobSpec
    def __init__(self, spec: _Optional[_Union[JobSpec, _Mapping]] = ...) -> None: ...

class QuoteStudyRequest(_message.Message):
    __slots__ = ["delta", "dimension", "epsilon", "label", "with_answers"]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    EPSILON_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    WITH_ANSWERS_FIELD_NUMBER: _ClassVar[int]
    delta: float
    dimension: int
    epsilon: float
    label: str
    with_answers: bool
    def __init__(self, dimension: _Optional[int] = ..., epsilon: _Optional[float] = ..., delta: _Optional[float] = ..., label: _Optional[str] = ..., with_answers: bool = ...) -> None: ...

class QuoteStudyResponse(_message.Message):
    __slots__ = ["answers", "charges", "default_study", "fits", "projection", "refusal", "whole_patient"]
    ANSWERS_FIELD_NUMBER: _ClassVar[int]
    CHARGES_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_STUDY_FIELD_NUMBER: _ClassVar[int]
    FITS_FIELD_NUMBER: _ClassVar[int]
    PROJECTION_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_FIELD_NUMBER: _ClassVar[int]
    WHOLE_PATIENT_FIELD_NUMBER: _ClassVar[int]
    answers: AnswersQuote
    charges: _containers.RepeatedCompositeFieldContainer[RelationCharge]
    default_study: DefaultStudy
    fits: bool
    projection: ProjectionQuote
    refusal: str
    whole_patient: WholePatientCharge
    def __init__(self, projection: _Optional[_Union[ProjectionQuote, _Mapping]] = ..., answers: _Optional[_Union[AnswersQuote, _Mapping]] = ..., charges: _Optional[_Iterable[_Union[RelationCharge, _Mapping]]] = ..., fits: bool = ..., refusal: _Optional[str] = ..., default_study: _Optional[_Union[DefaultStudy, _Mapping]] = ..., whole_patient: _Optional[_Union[WholePatientCharge, _Mapping]] = ...) -> None: ...

class RelationBudget(_message.Message):
    __slots__ = ["dataset_delta_limit", "dataset_delta_remaining", "dataset_delta_reserved", "dataset_delta_spent", "dataset_epsilon_limit", "dataset_epsilon_remaining", "dataset_epsilon_reserved", "dataset_epsilon_spent", "delta_limit", "delta_remaining", "delta_reserved", "delta_spent", "epsilon_limit", "epsilon_remaining", "epsilon_reserved", "epsilon_spent", "relation"]
    DATASET_DELTA_LIMIT_FIELD_NUMBER: _ClassVar[int]
    DATASET_DELTA_REMAINING_FIELD_NUMBER: _ClassVar[int]
    DATASET_DELTA_RESERVED_FIELD_NUMBER: _ClassVar[int]
    DATASET_DELTA_SPENT_FIELD_NUMBER: _ClassVar[int]
    DATASET_EPSILON_LIMIT_FIELD_NUMBER: _ClassVar[int]
    DATASET_EPSILON_REMAINING_FIELD_NUMBER: _ClassVar[int]
    DATASET_EPSILON_RESERVED_FIELD_NUMBER: _ClassVar[int]
    DATASET_EPSILON_SPENT_FIELD_NUMBER: _ClassVar[int]
    DELTA_LIMIT_FIELD_NUMBER: _ClassVar[int]
    DELTA_REMAINING_FIELD_NUMBER: _ClassVar[int]
    DELTA_RESERVED_FIELD_NUMBER: _ClassVar[int]
    DELTA_SPENT_FIELD_NUMBER: _ClassVar[int]
    EPSILON_LIMIT_FIELD_NUMBER: _ClassVar[int]
    EPSILON_REMAINING_FIELD_NUMBER: _ClassVar[int]
    EPSILON_RESERVED_FIELD_NUMBER: _ClassVar[int]
    EPSILON_SPENT_FIELD_NUMBER: _ClassVar[int]
    RELATION_FIELD_NUMBER: _ClassVar[int]
    dataset_delta_limit: float
    dataset_delta_remaining: float
    dataset_delta_reserved: float
    dataset_delta_spent: float
    dataset_epsilon_limit: float
    dataset_epsilon_remaining: float
    dataset_epsilon_reserved: float
    dataset_epsilon_spent: float
    delta_limit: float
    delta_remaining: float
    delta_reserved: float
    delta_spent: float
    epsilon_limit: float
    epsilon_remaining: float
    epsilon_reserved: float
    epsilon_spent: float
    relation: str
    def __init__(self, relation: _Optional[str] = ..., epsilon_limit: _Optional[float] = ..., delta_limit: _Optional[float] = ..., epsilon_spent: _Optional[float] = ..., delta_spent: _Optional[float] = ..., epsilon_remaining: _Optional[float] = ..., delta_remaining: _Optional[float] = ..., dataset_epsilon_limit: _Optional[float] = ..., dataset_delta_limit: _Optional[float] = ..., dataset_epsilon_spent: _Optional[float] = ..., dataset_delta_spent: _Optional[float] = ..., dataset_epsilon_remaining: _Optional[float] = ..., dataset_delta_remaining: _Optional[float] = ..., epsilon_reserved: _Optional[float] = ..., delta_reserved: _Optional[float] = ..., dataset_epsilon_reserved: _Optional[float] = ..., dataset_delta_reserved: _Optional[float] = ...) -> None: ...

class RelationCharge(_message.Message):
    __slots__ = ["delta", "delta_available", "epsilon", "epsilon_available", "fits", "relation", "scope"]
    DELTA_AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    EPSILON_AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    EPSILON_FIELD_NUMBER: _ClassVar[int]
    FITS_FIELD_NUMBER: _ClassVar[int]
    RELATION_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    delta: float
    delta_available: float
    epsilon: float
    epsilon_available: float
    fits: bool
    relation: str
    scope: str
    def __init__(self, relation: _Optional[str] = ..., epsilon: _Optional[float] = ..., delta: _Optional[float] = ..., epsilon_available: _Optional[float] = ..., delta_available: _Optional[float] = ..., fits: bool = ..., scope: _Optional[str] = ...) -> None: ...

class ReleaseProjectionRequest(_message.Message):
    __slots__ = ["delta", "dimension", "epsilon", "label", "with_answers"]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    EPSILON_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    WITH_ANSWERS_FIELD_NUMBER: _ClassVar[int]
    delta: float
    dimension: int
    epsilon: float
    label: str
    with_answers: bool
    def __init__(self, dimension: _Optional[int] = ..., epsilon: _Optional[float] = ..., delta: _Optional[float] = ..., label: _Optional[str] = ..., with_answers: bool = ...) -> None: ...

class ReleaseProjectionResponse(_message.Message):
    __slots__ = ["chunk", "header", "trailer"]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    TRAILER_FIELD_NUMBER: _ClassVar[int]
    chunk: MatrixChunk
    header: ProjectionHeader
    trailer: ProjectionTrailer
    def __init__(self, header: _Optional[_Union[ProjectionHeader, _Mapping]] = ..., chunk: _Optional[_Union[MatrixChunk, _Mapping]] = ..., trailer: _Optional[_Union[ProjectionTrailer, _Mapping]] = ...) -> None: ...

class SubmitJobRequest(_message.Message):
    __slots__ = ["idempotency_key", "spec"]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    idempotency_key: str
    spec: JobSpec
    def __init__(self, idempotency_key: _Optional[str] = ..., spec: _Optional[_Union[JobSpec, _Mapping]] = ...) -> None: ...

class WatchJobRequest(_message.Message):
    __slots__ = ["after_seq", "id"]
    AFTER_SEQ_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    after_seq: int
    id: str
    def __init__(self, id: _Optional[str] = ..., after_seq: _Optional[int] = ...) -> None: ...

class WholePatientBudget(_message.Message):
    __slots__ = ["bounded", "dataset_bounded", "dataset_delta_limit", "dataset_delta_reserved", "dataset_delta_spent", "dataset_epsilon_limit", "dataset_epsilon_reserved", "dataset_epsilon_spent", "delta_limit", "delta_remaining", "delta_reserved", "delta_spent", "epsilon_limit", "epsilon_remaining", "epsilon_reserved", "epsilon_spent", "statement"]
    BOUNDED_FIELD_NUMBER: _ClassVar[int]
    DATASET_BOUNDED_FIELD_NUMBER: _ClassVar[int]
    DATASET_DELTA_LIMIT_FIELD_NUMBER: _ClassVar[int]
    DATASET_DELTA_RESERVED_FIELD_NUMBER: _ClassVar[int]
    DATASET_DELTA_SPENT_FIELD_NUMBER: _ClassVar[int]
    DATASET_EPSILON_LIMIT_FIELD_NUMBER: _ClassVar[int]
    DATASET_EPSILON_RESERVED_FIELD_NUMBER: _ClassVar[int]
    DATASET_EPSILON_SPENT_FIELD_NUMBER: _ClassVar[int]
    DELTA_LIMIT_FIELD_NUMBER: _ClassVar[int]
    DELTA_REMAINING_FIELD_NUMBER: _ClassVar[int]
    DELTA_RESERVED_FIELD_NUMBER: _ClassVar[int]
    DELTA_SPENT_FIELD_NUMBER: _ClassVar[int]
    EPSILON_LIMIT_FIELD_NUMBER: _ClassVar[int]
    EPSILON_REMAINING_FIELD_NUMBER: _ClassVar[int]
    EPSILON_RESERVED_FIELD_NUMBER: _ClassVar[int]
    EPSILON_SPENT_FIELD_NUMBER: _ClassVar[int]
    STATEMENT_FIELD_NUMBER: _ClassVar[int]
    bounded: bool
    dataset_bounded: bool
    dataset_delta_limit: float
    dataset_delta_reserved: float
    dataset_delta_spent: float
    dataset_epsilon_limit: float
    dataset_epsilon_reserved: float
    dataset_epsilon_spent: float
    delta_limit: float
    delta_remaining: float
    delta_reserved: float
    delta_spent: float
    epsilon_limit: float
    epsilon_remaining: float
    epsilon_reserved: float
    epsilon_spent: float
    statement: str
    def __init__(self, bounded: bool = ..., epsilon_spent: _Optional[float] = ..., delta_spent: _Optional[float] = ..., dataset_bounded: bool = ..., dataset_epsilon_spent: _Optional[float] = ..., dataset_delta_spent: _Optional[float] = ..., epsilon_limit: _Optional[float] = ..., delta_limit: _Optional[float] = ..., dataset_epsilon_limit: _Optional[float] = ..., dataset_delta_limit: _Optional[float] = ..., epsilon_remaining: _Optional[float] = ..., delta_remaining: _Optional[float] = ..., statement: _Optional[str] = ..., epsilon_reserved: _Optional[float] = ..., delta_reserved: _Optional[float] = ..., dataset_epsilon_reserved: _Optional[float] = ..., dataset_delta_reserved: _Optional[float] = ...) -> None: ...

class WholePatientCharge(_message.Message):
    __slots__ = ["bounded", "dataset_delta_limit", "dataset_epsilon_limit", "delta", "delta_available", "delta_limit", "epsilon", "epsilon_available", "epsilon_limit", "fits"]
    BOUNDED_FIELD_NUMBER: _ClassVar[int]
    DATASET_DELTA_LIMIT_FIELD_NUMBER: _ClassVar[int]
    DATASET_EPSILON_LIMIT_FIELD_NUMBER: _ClassVar[int]
    DELTA_AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    DELTA_LIMIT_FIELD_NUMBER: _ClassVar[int]
    EPSILON_AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    EPSILON_FIELD_NUMBER: _ClassVar[int]
    EPSILON_LIMIT_FIELD_NUMBER: _ClassVar[int]
    FITS_FIELD_NUMBER: _ClassVar[int]
    bounded: bool
    dataset_delta_limit: float
    dataset_epsilon_limit: float
    delta: float
    delta_available: float
    delta_limit: float
    epsilon: float
    epsilon_available: float
    epsilon_limit: float
    fits: bool
    def __init__(self, bounded: bool = ..., epsilon: _Optional[float] = ..., delta: _Optional[float] = ..., epsilon_limit: _Optional[float] = ..., delta_limit: _Optional[float] = ..., dataset_epsilon_limit: _Optional[float] = ..., dataset_delta_limit: _Optional[float] = ..., epsilon_available: _Optional[float] = ..., delta_available: _Optional[float] = ..., fits: bool = ...) -> None: ...

class WholePatientCost(_message.Message):
    __slots__ = ["bounded", "delta", "epsilon"]
    BOUNDED_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    EPSILON_FIELD_NUMBER: _ClassVar[int]
    bounded: bool
    delta: float
    epsilon: float
    def __init__(self, bounded: bool = ..., epsilon: _Optional[float] = ..., delta: _Optional[float] = ...) -> None: ...

class NoiseFamily(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class JobState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class RefusalReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
