// Package curator is the curator's side of privbo without any transport: it holds the
// dataset, makes the differentially private releases of PO-GP-UCB (Kharkovskii, Dai &
// Low, ICML 2020; docs/MATHS.md §2: the private random projection and the answers to
// index queries), charges each release to the privacy ledger before it can leave, and
// keeps every release so that repeating it returns the same bytes at no further cost.
//
// Release protocol (the same for every kind of release):
//
//  1. A request names an account (dataset, caller identity) and a release key derived
//     from its parameters. A key already in the ledger is a replay: the stored result is
//     returned and nothing is charged.
//  2. A new release's cost is reserved in the ledger (ledger.Ledger.Reserve) before the
//     data is touched: it is refused there when the caller's remaining budget (and the
//     dataset's), less what the releases being computed hold, cannot cover it, so
//     concurrent requests beyond the budget never compute. A new projection then waits,
//     holding its reservation, for the memory it will need (Config.Memory; known from
//     n, d, r, the mechanism and the store before anything is computed), or is refused
//     at once with a *MemoryError when it needs more than the whole budget.
//  3. The release is computed and written durably (for a projection: a blob of
//     Config.Releases — a file in the state directory, fsynced, or, with a PostgreSQL
//     ledger, committed rows of its database, which every replica reads; computed a
//     window of rows at a time while it is written, projection.Stream), then charged in
//     the reservation's atomic ledger transaction (ledger.Ledger.Commit), which also
//     records where the result is and its SHA-256. Only after that commit does anything
//     leave the curator. A release that fails cancels its reservation; one a crash left
//     expires (Config.ReservationTTL, extended while the release computes) or is freed
//     by RecoverReservations when the curator starts again under the same
//     Config.ReservationOwner.
//     A matrix stored and never charged (its curator killed in between) is removed at
//     a later start once older than OrphanGrace (RemoveOrphans).
//  4. Two concurrent identical requests compute at most one release for the caller: a
//     charge that loses the race finds the winner's receipt and returns its result.
//
// A study — a projection and the answers to its queries — is paid for whole: Quote
// states its cost before anything is charged (resolving what the request leaves to the
// curator: r, and the default study's ε and δ, DefaultStudy), and a projection asked
// WithAnswers is reserved and charged together with the identity's answers, both or
// neither, steps 2 and 3 checking their summed cost.
//
// Neighbouring relations. For the projection (ProjectionRelation, ledger's
// feature-unit), datasets differ in one record's features by at most one unit of
// Euclidean norm after the dataset's scaling (package dataset states what one unit is).
// For private query answers (AnswerRelation, ledger's record), one record is replaced by
// any other; its output moves anywhere within the declared range [lower, upper], so the
// sensitivity of one answer is upper − lower. Each answer depends on one record and is
// released once per identity, so an identity's answers compose in parallel and it pays
// their (ε, δ) once (Curator.chargeAnswers has the proof). Exact answers (output privacy
// "none") are no release at all: they protect nothing, cost nothing and are limited by
// ExactAnswerLimits.
//
// Budgets are kept per dataset id (Config.DatasetID), which the operator declares and
// keeps stable: a renamed file must not give the same records a fresh budget.
//
// Secrets: the Gaussian matrix M and the seed of its generator exist only inside one call
// of projection.Project or projection.ProjectGaussian; they are never stored, logged or
// returned.
package curator
