// Package curator is the curator's side of privbo without any transport: it holds the
// dataset, makes the differentially private releases of SPEC §2 (the private random
// projection and the answers to index queries), charges each release to the privacy
// ledger before it can leave, and keeps every release so that repeating it returns the
// same bytes at no further cost.
//
// Release protocol (the same for every kind of release):
//
//  1. A request names an account (dataset, caller identity) and a release key derived
//     from its parameters. A key already in the ledger is a replay: the stored result is
//     returned and nothing is charged.
//  2. A new release is refused before the data is touched when the caller's remaining
//     budget (and the dataset's) cannot cover it.
//  3. The release is computed and written durably (for a projection: a file in the state
//     directory, fsynced), then charged in one atomic ledger transaction that also records
//     where the result is. Only after that commit does anything leave the curator.
//  4. Two concurrent identical requests compute at most one release for the caller: a
//     charge that loses the race finds the winner's receipt and returns its result.
//
// Neighbouring relation. For the projection, datasets differ in one row by at most one
// unit of Euclidean norm after the dataset's scaling (package dataset states what one
// unit is). For private query answers, datasets differ in one row's target value within
// the declared output range [lower, upper], so the sensitivity of one answer is
// upper − lower.
//
// Secrets: the Gaussian matrix M and the seed of its generator exist only inside one call
// of projection.Project or projection.ProjectGaussian; they are never stored, logged or
// returned.
package curator
