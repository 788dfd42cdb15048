package pgledger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/privbo/privbo/pkg/blob"
	"github.com/privbo/privbo/pkg/ledger"
)

// ChunkSize is the most bytes of a blob one row of the blob_chunks table
// holds. PostgreSQL stores each chunk out of line (TOAST) and never compresses
// it (the released matrices are noise-like floats); the reader holds one chunk
// at a time.
const ChunkSize = 1 << 20

var blobDDL = []string{
	`CREATE SCHEMA IF NOT EXISTS {schema}`,
	`CREATE TABLE IF NOT EXISTS {t}blobs (
		name TEXT PRIMARY KEY,
		size BIGINT NOT NULL CHECK (size >= 0),
		chunks INTEGER NOT NULL CHECK (chunks >= 0),
		sha256 BYTEA NOT NULL,
		created_ns BIGINT NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS {t}blob_chunks (
		name TEXT NOT NULL REFERENCES {t}blobs (name) ON DELETE CASCADE,
		seq INTEGER NOT NULL CHECK (seq >= 0),
		data BYTEA NOT NULL,
		PRIMARY KEY (name, seq))`,
}

// blobStorage stores chunks out of line without trying to compress them; it runs only
// while the column is not so yet, since ALTER TABLE locks out the readers of the
// chunks (PostgreSQL 16 could say STORAGE EXTERNAL in CREATE TABLE; 15 cannot).
const blobStorage = `ALTER TABLE {t}blob_chunks ALTER COLUMN data SET STORAGE EXTERNAL`

// Blobs is a blob.Store in PostgreSQL: the curator's released matrices, in
// the schema of its ledger, so that every replica sharing the ledger can
// replay every release without a shared disk. A blob is a row of the blobs
// table (name, size, number of chunks, SHA-256) and its bytes are rows of
// blob_chunks of at most ChunkSize bytes each, all written in one
// transaction committed with synchronous_commit=on: a blob is visible whole,
// durably, or not at all.
type Blobs struct {
	e *pgEngine
	d ledger.Dialect
}

var _ blob.Store = (*Blobs)(nil)

// OpenBlobs opens the blob store in opt's schema of the database at dsn,
// creating its tables if missing. It keeps its own connections (at most
// opt.MaxConns, 0 meaning DefaultMaxConns), apart from the ledger's.
// opt.CallTimeout bounds each statement of a Put on its own (a blob's
// transaction is as long as the blob), and each read; a Put is never run
// again when its connection is lost (its reader is spent).
func OpenBlobs(ctx context.Context, dsn string, opt Options) (*Blobs, error) {
	e, err := connect(ctx, dsn, opt, true)
	if err != nil {
		return nil, err
	}
	e.perStatement, e.retryWrites = true, false
	b := &Blobs{e: e, d: e.dialect()}
	err = e.Write(ctx, ledger.Lock{Migrate: true}, func(q ledger.Querier) error {
		for _, stmt := range blobDDL {
			if _, err := q.Exec(ctx, b.d.SQL(stmt)); err != nil {
				return err
			}
		}
		var storage string
		if _, err := ledger.QueryRow(ctx, q, `SELECT attstorage::text FROM pg_attribute WHERE attrelid = $1::regclass AND attname = 'data'`,
			[]any{b.d.SQL("{t}blob_chunks")}, &storage); err != nil {
			return err
		}
		if storage != "e" {
			_, err := q.Exec(ctx, b.d.SQL(blobStorage))
			return err
		}
		return nil
	})
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("pgledger: creating the blob tables (postgres schema %s): %w", e.schema, err)
	}
	return b, nil
}

// Close releases the connections.
func (b *Blobs) Close() error { return b.e.Close() }

// Put stores r under name in one transaction, ChunkSize bytes per row.
func (b *Blobs) Put(ctx context.Context, name string, r io.Reader) ([]byte, error) {
	if err := blob.CheckName(name); err != nil {
		return nil, err
	}
	var sum []byte
	err := b.e.Write(ctx, ledger.Lock{}, func(q ledger.Querier) error {
		// The row of the name first: a concurrent Put of the same name waits on
		// its key until this transaction ends, then fails.
		if _, err := q.Exec(ctx, b.d.SQL(`INSERT INTO {t}blobs (name, size, chunks, sha256, created_ns) VALUES (?, 0, 0, '', ?)`),
			name, time.Now().UnixNano()); err != nil {
			return err
		}
		h := sha256.New()
		buf := make([]byte, ChunkSize)
		var size int64
		var chunks int32
		for {
			n, err := io.ReadFull(r, buf)
			if n > 0 {
				h.Write(buf[:n])
				if _, err := q.Exec(ctx, b.d.SQL(`INSERT INTO {t}blob_chunks (name, seq, data) VALUES (?, ?, ?)`), name, chunks, buf[:n]); err != nil {
					return err
				}
				size += int64(n)
				chunks++
			}
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				break
			}
			if err != nil {
				return fmt.Errorf("reading the blob: %w", err)
			}
		}
		sum = h.Sum(nil)
		_, err := q.Exec(ctx, b.d.SQL(`UPDATE {t}blobs SET size = ?, chunks = ?, sha256 = ? WHERE name = ?`), size, chunks, sum, name)
		return err
	})
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "23505": // unique_violation
		return nil, fmt.Errorf("%w: %s", blob.ErrExists, name)
	case err != nil:
		return nil, fmt.Errorf("pgledger: storing blob %s: %w", name, err)
	}
	return sum, nil
}

// Open returns a reader that fetches the chunks of name one at a time, each
// on a connection of the pool it gives back at once, and checks the size and
// SHA-256 recorded with the blob when it reaches the end.
func (b *Blobs) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := blob.CheckName(name); err != nil {
		return nil, err
	}
	r := &blobReader{b: b, ctx: ctx, name: name, h: sha256.New()}
	var found bool
	err := b.e.Read(ctx, func(q ledger.Querier) error {
		var err error
		found, err = ledger.QueryRow(ctx, q, b.d.SQL(`SELECT size, chunks, sha256 FROM {t}blobs WHERE name = ?`), []any{name}, &r.size, &r.chunks, &r.sum)
		return err
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("pgledger: opening blob %s: %w", name, err)
	case !found:
		return nil, fmt.Errorf("%w: %s in postgres schema %s", blob.ErrNotFound, name, b.e.schema)
	}
	return r, nil
}

// Delete removes name and its chunks.
func (b *Blobs) Delete(ctx context.Context, name string) error {
	if err := blob.CheckName(name); err != nil {
		return err
	}
	err := b.e.Write(ctx, ledger.Lock{}, func(q ledger.Querier) error {
		_, err := q.Exec(ctx, b.d.SQL(`DELETE FROM {t}blobs WHERE name = ?`), name)
		return err
	})
	if err != nil {
		return fmt.Errorf("pgledger: deleting blob %s: %w", name, err)
	}
	return nil
}

// List returns every blob of the schema, by name, with its size and when its
// Put began (blob.Lister).
func (b *Blobs) List(ctx context.Context) ([]blob.Info, error) {
	var out []blob.Info
	err := b.e.Read(ctx, func(q ledger.Querier) error {
		out = out[:0]
		return ledger.EachRow(ctx, q, b.d.SQL(`SELECT name, size, created_ns FROM {t}blobs ORDER BY name`), nil, func(scan func(...any) error) error {
			var i blob.Info
			var ns int64
			err := scan(&i.Name, &i.Size, &ns)
			i.Created = time.Unix(0, ns)
			out = append(out, i)
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("pgledger: listing blobs: %w", err)
	}
	return out, nil
}

type blobReader struct {
	b      *Blobs
	ctx    context.Context
	name   string
	size   int64
	chunks int32
	sum    []byte

	next int32     // next chunk to fetch
	buf  []byte    // unread bytes of the current chunk
	read int64     // bytes fetched so far
	h    hash.Hash // of the bytes fetched
	err  error     // sticky: io.EOF at the end
}

func (r *blobReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.next == r.chunks {
			r.err = io.EOF
			if r.read != r.size || !bytes.Equal(r.h.Sum(nil), r.sum) {
				r.err = fmt.Errorf("pgledger: blob %s is damaged: %d bytes in %d chunks do not match its recorded size %d and SHA-256", r.name, r.read, r.chunks, r.size)
			}
			continue
		}
		var data []byte
		var found bool
		err := r.b.e.Read(r.ctx, func(q ledger.Querier) error {
			var err error
			found, err = ledger.QueryRow(r.ctx, q, r.b.d.SQL(`SELECT data FROM {t}blob_chunks WHERE name = ? AND seq = ?`), []any{r.name, r.next}, &data)
			return err
		})
		switch {
		case err != nil:
			r.err = fmt.Errorf("pgledger: reading blob %s: %w", r.name, err)
		case !found:
			r.err = fmt.Errorf("pgledger: blob %s is damaged: chunk %d of %d is missing", r.name, r.next, r.chunks)
		default:
			r.h.Write(data)
			r.read += int64(len(data))
			r.buf = data
			r.next++
		}
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

func (r *blobReader) Close() error { return nil }
