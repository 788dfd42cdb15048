// Package transport holds privbo's gRPC plumbing, shared by the curator daemon and the
// modeler client: the server options (credentials, chained interceptors for panic
// recovery, identity, request ids and logging, message-size limits), client dialing, the
// caller identity carried in request metadata, and the codec that carries a row-major
// float64 matrix as a stream of row-aligned chunks.
//
// Nothing here knows about privacy or datasets: handlers in package server translate
// between protobuf messages and the domain packages.
package transport
