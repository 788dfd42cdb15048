// Command rpcdescriptors writes to standard output a google.protobuf.FileDescriptorSet of
// googleapis' google/rpc/status.proto and google/rpc/error_details.proto, with the
// google/protobuf files they import, exactly as compiled into the Go module
// google.golang.org/genproto/googleapis/rpc at the version go.mod pins (Apache-2.0).
//
// scripts/generate.sh feeds it to protoc (--descriptor_set_in) to generate the Python
// client's google.rpc messages (clients/python/privbo/_googleapis), so that the Python
// stubs and the Go server's errdetails come from one definition, offline: Debian
// bookworm packages neither the .proto files nor a Python module for them.
package main

import (
	"fmt"
	"os"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "rpcdescriptors:", err)
		os.Exit(1)
	}
}

func run() error {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(descriptorSet())
	if err != nil {
		return fmt.Errorf("marshal the descriptor set: %w", err)
	}
	_, err = os.Stdout.Write(b)
	return err
}

// descriptorSet is the set of google/rpc/status.proto and google/rpc/error_details.proto,
// each file after the files it imports (the order protoc expects).
func descriptorSet() *descriptorpb.FileDescriptorSet {
	var set descriptorpb.FileDescriptorSet
	seen := map[string]bool{}
	var add func(f protoreflect.FileDescriptor)
	add = func(f protoreflect.FileDescriptor) {
		if seen[f.Path()] {
			return
		}
		seen[f.Path()] = true
		imports := f.Imports()
		for i := range imports.Len() {
			add(imports.Get(i).FileDescriptor)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(f))
	}
	add(status.File_google_rpc_status_proto)
	add(errdetails.File_google_rpc_error_details_proto)
	return &set
}
