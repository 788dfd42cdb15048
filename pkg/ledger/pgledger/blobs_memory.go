package pgledger

// PutMemory is what one Put holds (blob.Footprint): its ChunkSize buffer, and pgx's
// copy of each chunk in the connection's write buffer, with room for one more.
func (b *Blobs) PutMemory() int64 { return 3 * ChunkSize }

// OpenMemory is what one open blob holds (blob.Footprint): the chunk being read, pgx's
// read buffer holding the row it came in, with room for one more.
func (b *Blobs) OpenMemory() int64 { return 3 * ChunkSize }
