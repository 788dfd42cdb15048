"""Reads the google.rpc.Status a curator attaches to an error, for its RetryInfo.

A gRPC error's rich status travels in the trailing metadata entry
``grpc-status-details-bin``: a serialized google.rpc.Status whose ``details`` are
google.protobuf.Any messages. The curator's rate and concurrency limits put a
google.rpc.RetryInfo there (proto/privbo/curator/v1/curator.proto, "Errors"); a refusal
by the privacy budget carries none.

Debian bookworm packages no Python module for google/rpc (googleapis-common-protos), so
the four messages needed are declared here, field for field as in googleapis'
google/rpc/status.proto and error_details.proto and protobuf's any.proto and
duration.proto, in a private descriptor pool: the wire format is the same, and nothing is
registered in the default pool, where a pip-installed googleapis-common-protos may define
the real ones.
"""

from __future__ import annotations

from typing import Iterable, Optional, Tuple

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

DETAILS_KEY = "grpc-status-details-bin"
RETRY_INFO_TYPE = "google.rpc.RetryInfo"

_F = descriptor_pb2.FieldDescriptorProto


def _build():
    f = descriptor_pb2.FileDescriptorProto(
        name="privbo/client/rpc_status.proto", package="privbo.client.rpc", syntax="proto3"
    )

    def message(name, *fields):
        m = f.message_type.add(name=name)
        for fname, number, ftype, label, type_name in fields:
            fd = m.field.add(name=fname, number=number, type=ftype, label=label)
            if type_name:
                fd.type_name = type_name

    opt, rep = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
    message("Any", ("type_url", 1, _F.TYPE_STRING, opt, ""), ("value", 2, _F.TYPE_BYTES, opt, ""))
    message("Duration", ("seconds", 1, _F.TYPE_INT64, opt, ""), ("nanos", 2, _F.TYPE_INT32, opt, ""))
    message(
        "Status",
        ("code", 1, _F.TYPE_INT32, opt, ""),
        ("message", 2, _F.TYPE_STRING, opt, ""),
        ("details", 3, _F.TYPE_MESSAGE, rep, ".privbo.client.rpc.Any"),
    )
    message("RetryInfo", ("retry_delay", 1, _F.TYPE_MESSAGE, opt, ".privbo.client.rpc.Duration"))
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(f.SerializeToString())

    def cls(name):
        d = pool.FindMessageTypeByName("privbo.client.rpc." + name)
        if hasattr(message_factory, "GetMessageClass"):  # protobuf ≥ 4.21
            return message_factory.GetMessageClass(d)
        return message_factory.MessageFactory(pool).GetPrototype(d)  # protobuf 3.x

    return cls("Any"), cls("Duration"), cls("Status"), cls("RetryInfo")


Any, Duration, Status, RetryInfo = _build()


def retry_delay(trailing_metadata: Optional[Iterable[Tuple[str, object]]]) -> Optional[float]:
    """Returns the delay in seconds a RetryInfo in the error's rich status asks for, or
    None when the status carries no RetryInfo (or no rich status at all)."""
    for key, value in trailing_metadata or ():
        if key != DETAILS_KEY or not isinstance(value, bytes):
            continue
        st = Status()
        try:
            st.ParseFromString(value)
        except Exception:  # a damaged detail is no RetryInfo
            return None
        for det in st.details:
            if det.type_url.rsplit("/", 1)[-1] != RETRY_INFO_TYPE:
                continue
            ri = RetryInfo()
            try:
                ri.ParseFromString(det.value)
            except Exception:
                return None
            return max(0.0, ri.retry_delay.seconds + ri.retry_delay.nanos / 1e9)
    return None


def detail(trailing_metadata: Optional[Iterable[Tuple[str, object]]], type_name: str) -> Optional[bytes]:
    """Returns the serialized value of the first detail of the error's rich status whose
    type is ``type_name`` (a full protobuf message name such as
    "privbo.curator.v1.KusnerForecast"), or None."""
    for key, value in trailing_metadata or ():
        if key != DETAILS_KEY or not isinstance(value, bytes):
            continue
        st = Status()
        try:
            st.ParseFromString(value)
        except Exception:  # a damaged status has no usable detail
            return None
        for det in st.details:
            if det.type_url.rsplit("/", 1)[-1] == type_name:
                return det.value
    return None


def encode_details(code: int, message: str, *messages) -> bytes:
    """Returns a serialized google.rpc.Status whose details are the given protobuf
    messages (used by the tests' fake curator)."""
    st = Status(code=code, message=message)
    for m in messages:
        det = st.details.add()
        det.type_url = "type.googleapis.com/" + m.DESCRIPTOR.full_name
        det.value = m.SerializeToString()
    return st.SerializeToString()


def encode_retry_info(code: int, message: str, delay_seconds: float) -> bytes:
    """Returns a serialized google.rpc.Status with one RetryInfo, as a curator's limits
    send it (used by the tests' fake curator)."""
    whole = int(delay_seconds)
    ri = RetryInfo()
    ri.retry_delay.seconds = whole
    ri.retry_delay.nanos = int(round((delay_seconds - whole) * 1e9))
    st = Status(code=code, message=message)
    det = st.details.add()
    det.type_url = "type.googleapis.com/" + RETRY_INFO_TYPE
    det.value = ri.SerializeToString()
    return st.SerializeToString()
