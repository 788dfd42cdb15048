package main

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// TestDescriptorSet: the set holds the two google/rpc files after their imports, and it
// builds into descriptors (as protoc's --descriptor_set_in reads it) that declare the
// messages the Python client decodes.
func TestDescriptorSet(t *testing.T) {
	set := descriptorSet()
	var names []string
	for _, f := range set.GetFile() {
		names = append(names, f.GetName())
	}
	want := []string{"google/protobuf/any.proto", "google/rpc/status.proto", "google/protobuf/duration.proto", "google/rpc/error_details.proto"}
	if !slices.Equal(names, want) {
		t.Fatalf("files = %v, want %v", names, want)
	}
	files, err := protodesc.NewFiles(set)
	if err != nil {
		t.Fatalf("protodesc.NewFiles: %v", err)
	}
	for _, name := range []string{"google.rpc.Status", "google.rpc.ErrorInfo", "google.rpc.RetryInfo"} {
		if _, err := files.FindDescriptorByName(protoreflect.FullName(name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
