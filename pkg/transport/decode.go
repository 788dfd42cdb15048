package transport

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// A request whose bytes are not a valid message of its method's type (malformed wire
// data, a string field that is not UTF-8) is the client's mistake and must be answered
// INVALID_ARGUMENT. grpc-go answers INTERNAL when its codec fails, and writes that
// status before any interceptor runs; so the server's codec never fails: it resets the
// message, keeps the error aside (undecoded), and the interceptors answer
// INVALID_ARGUMENT in the handler's place — after authentication and the limits, like
// any other request, so that a malformed request from an unauthenticated peer is
// answered UNAUTHENTICATED and counted as a failed authentication.

// undecoded holds the decoding error of each message the codec could not decode, by
// the message's pointer, from the codec until the outermost interceptor takes it
// (unary) or the stream's RecvMsg returns (streams).
var undecoded sync.Map

// takeUndecoded removes and returns the decoding error of m, if it had one.
func takeUndecoded(m any) error {
	if err, ok := undecoded.LoadAndDelete(m); ok {
		return err.(error)
	}
	return nil
}

// serverCodec is the proto codec, except that a failure to decode is kept aside
// (undecoded) rather than returned.
type serverCodec struct{ encoding.CodecV2 }

var _ encoding.CodecV2 = serverCodec{}

func newServerCodec() serverCodec { return serverCodec{encoding.GetCodecV2(grpcproto.Name)} }

func (c serverCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.CodecV2.Unmarshal(data, v)
	m, ok := v.(proto.Message)
	if err == nil || !ok {
		return err
	}
	proto.Reset(m)
	undecoded.Store(v, invalidMessage(m, err))
	return nil
}

// invalidMessage is the status of a request that is not a valid m.
func invalidMessage(m proto.Message, err error) error {
	return status.Errorf(codes.InvalidArgument, "the request is not a valid %s message (%v): send this method's request type, with every string field in UTF-8",
		proto.MessageName(m), err)
}

type undecodedKey struct{}

// unaryTakeUndecoded is the outermost of the transport's unary interceptors: it takes
// the request's decoding error, if any, into the context, where unaryRefuseUndecoded
// (the innermost) answers it. Taking it first means that no entry of undecoded
// outlives its request, whichever interceptor refuses it.
func unaryTakeUndecoded(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := takeUndecoded(req); err != nil {
		ctx = context.WithValue(ctx, undecodedKey{}, err)
	}
	return h(ctx, req)
}

func unaryRefuseUndecoded(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err, ok := ctx.Value(undecodedKey{}).(error); ok {
		return nil, err
	}
	return h(ctx, req)
}

// streamRefuseUndecoded makes a stream's RecvMsg return the decoding error of the
// message it received.
func streamRefuseUndecoded(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return h(srv, decodingStream{ss})
}

type decodingStream struct{ grpc.ServerStream }

func (s decodingStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return takeUndecoded(m)
}
