package ledgertest

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/blob"
	"github.com/privbo/privbo/pkg/blob/blobtest"
	"github.com/privbo/privbo/pkg/ledger/pgledger"
)

func openTestBlobs(t *testing.T, schema string) *pgledger.Blobs {
	t.Helper()
	b, err := pgledger.OpenBlobs(ctx, testDSN(), pgledger.Options{Schema: schema})
	if err != nil {
		t.Fatalf("OpenBlobs: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestBlobs(t *testing.T) {
	conn := requirePostgres(t)
	blobtest.Run(t, func(t *testing.T) blob.Store { return openTestBlobs(t, randomSchema(t, conn)) }, 2*pgledger.ChunkSize+12345)
}

// TestBlobsShareSchema checks that the blobs live beside the ledger's tables, and
// that a second store on the schema (another replica) reads what the first wrote.
func TestBlobsShareSchema(t *testing.T) {
	conn := requirePostgres(t)
	schema := randomSchema(t, conn)
	s, err := pgledger.Open(ctx, testDSN(), pgledger.Options{Schema: schema}, StdLimits)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, b := openTestBlobs(t, schema), openTestBlobs(t, schema)
	data := bytes.Repeat([]byte("0123456789abcdef"), pgledger.ChunkSize/16+1)
	if _, err := a.Put(ctx, "shared", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	rc, err := b.Open(ctx, "shared")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("the second store read %d bytes, %v; want the %d bytes written by the first", len(got), err, len(data))
	}
	var chunks int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM "`+schema+`".blob_chunks WHERE name = 'shared'`).Scan(&chunks); err != nil || chunks != 2 {
		t.Errorf("blob of pgledger.ChunkSize+16 bytes stored in %d chunks, %v; want 2", chunks, err)
	}
	var storage string
	if err := conn.QueryRow(ctx, `SELECT attstorage::text FROM pg_attribute WHERE attrelid = $1::regclass AND attname = 'data'`,
		`"`+schema+`".blob_chunks`).Scan(&storage); err != nil || storage != "e" {
		t.Errorf("blob_chunks.data storage = %q, %v; want e (external, uncompressed)", storage, err)
	}
}

// TestBlobsDamaged checks that a blob whose chunks no longer match its recorded
// SHA-256 is reported, not returned as if whole.
func TestBlobsDamaged(t *testing.T) {
	conn := requirePostgres(t)
	schema := randomSchema(t, conn)
	b := openTestBlobs(t, schema)
	if _, err := b.Put(ctx, "z", bytes.NewReader([]byte("the released bytes"))); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `UPDATE "`+schema+`".blob_chunks SET data = 'tampered bytes'::bytea WHERE name = 'z'`); err != nil {
		t.Fatal(err)
	}
	rc, err := b.Open(ctx, "z")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.ReadAll(rc); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("reading a tampered blob: %v, want a damaged-blob error", err)
	}
}
