// Package ledger is the curator's durable privacy budget: every release is
// charged against it, atomically and durably, before its result leaves the
// curator (docs/MATHS.md §7).
//
// # Accounting
//
// A record costs (ε, δ) under a neighbour relation (Relation): the pairs of
// datasets its guarantee is stated for — one feature vector changed by at
// most one protected unit, one record replaced, one training record added or
// removed, one validation record replaced. A guarantee holds only for its
// own relation's neighbours, so costs stated under different relations are
// never added into one total: such a sum would be a guarantee under none of
// them.
//
// Within a relation, records compose by basic composition: k mechanisms
// that are (εᵢ, δᵢ)-DP for the same neighbouring pairs are jointly
// (Σεᵢ, Σδᵢ)-DP (Dwork and Roth 2014, Theorem 3.16). The only conversion
// between relations is Relation.Implies: a guarantee under r holds, with the
// same (ε, δ), under every s whose neighbours are also neighbours under r.
// Only RelationRecord implies another relation, RelationFeatureUnit (moving
// one feature vector by one unit replaces one record). The effective total
// of an account (a modeler identity on a dataset) under s, and of the
// dataset (all of its identities) under s, are
//
//	E(s) = Σ { εᵢ : rᵢ implies s },   D(s) = Σ { δᵢ : rᵢ implies s },
//
// so the feature-unit totals include the record-level charges and no other
// total includes another relation's charges. Finer accountants (Rényi DP)
// convert their total to an (ε, δ) cost, under their own relation, before it
// reaches the ledger.
//
// # The whole patient
//
// Every charge also carries its whole-patient cost (PatientCost): the (ε, δ) of
// the release under RelationRecord — one patient's record replaced by any other —
// converted from its own relation by the releaser (a projection's by group
// privacy at the clip diameter, on its zCDP curve; a DP-HyPO job's on its Rényi
// curve for two add/remove steps), or, when the charge states none, by
// DefaultPatientCost: record as it is, training-add-remove by group privacy for two
// steps (2ε, (1 + e^ε)δ), the other relations not bounded. A release with no
// finite figure is Unbounded. Unlike the per-relation costs these are guarantees
// under one relation, so they add up: the ledger keeps, per identity and for the
// dataset (every identity together), their exact sum by basic composition (Dwork
// & Roth 2014, Theorem 3.16, which holds for adaptively chosen parameters as a
// filter: Rogers, Roth, Ullman & Vadhan 2016), how many charges have no figure,
// and Σρ of the charges that state a ρ (PatientTotal.ZCDP). Limits.Patient caps
// them: a charge must fit the identity's and the dataset's whole-patient caps as
// well, checked in the same transaction as the per-relation limits; a charge with
// no finite figure fits no cap.
//
// The same Limits apply to every relation. A charge c under r is accepted
// only if it fits both limits in every relation s that r implies
// (Relation.CountsTowards). For RelationRecord that is the record totals
// and the feature-unit totals, the latter holding the feature-unit charges
// and the record-level ones:
//
//	E_identity(s) + c ≤ L_identity   and   E_dataset(s) + c ≤ L_dataset
//
// for ε and for δ alike (a component that is zero never refuses a charge, so
// a zero cost is always recorded: it makes a durable, idempotent record that
// spends nothing). The check and the insert run in one serialised
// transaction, so concurrent charges — from goroutines, Ledger values or
// processes sharing the database — can never spend more than the limits
// together (an OpenDP-style filter: refuse any charge whose pending total
// would exceed the limit).
//
// The limits a charge is checked against are the limits in force for its
// dataset, read in the charge's own transaction: the last recorded by
// RecordLimits (each curator's start), or the Ledger's own when none are. Ledgers
// sharing a database therefore enforce one set of limits; RecordLimits refuses a
// start whose limits differ from those in force unless it changes them, and keeps
// every change in the history (LimitsHistory).
//
// A charge reads and writes the totals of its own identities and of its dataset
// only — the dataset keeps its per-relation and whole-patient totals in rows of
// their own (identity "") — so its cost does not grow with the number of
// identities. Verify checks every kept total against the exact sum of the
// records. A refused charge writes nothing and returns a
// *BudgetError that names the scope and the relation whose budget is spent,
// and gives the requested and remaining (ε, δ), in the spirit of Tumult
// Core's InsufficientBudgetError.
//
// Costs must be finite, non-negative and δ < 1; anything else is refused
// before the database is touched, so a negative spend can never raise a
// remainder.
//
// # Exact sums and the slack
//
// Costs are stored as float64, and totals are kept exactly: every float64 is
// a dyadic rational, so the totals are big.Rat sums with no rounding at all,
// stored as text next to the records and independent of summation order and
// of the database engine. The only tolerance is for the rounding of the
// costs themselves. A cost such as 0.1 or 1e-5 is stored as the nearest
// float64, slightly above or below the decimal the caller meant, so ten
// charges of 0.1 sum exactly to 1 + 5.6·10⁻¹⁷, and ten of 1e-5 exceed
// float64(1e-4). Refusing the tenth charge of such a schedule would be
// wrong in practice, so a total may reach
//
//	L·(1 + RelativeSlack),   RelativeSlack = 10⁻¹²,
//
// and no more. The slack covers the representation error of about 10⁴
// decimal costs (10⁻¹²/1.1·10⁻¹⁶), bounds the overspend to a factor
// exp(10⁻¹²·ε) on the privacy loss, far below the precision to which any
// mechanism is calibrated, and does not accumulate: it bounds the total,
// not each charge. Reported remainders are max(0, L − total) rounded toward
// zero, so that a charge of exactly the reported remainder always fits.
//
// # Reservations: reserve, compute, commit
//
// A release that takes work to compute (a projection, a tuning job) holds its cost
// before the work starts, so that concurrent requests beyond the budget are refused
// before any of them touches the data:
//
//  1. Reserve(cs, Hold{Owner, TTL}) runs the check of ChargeAll — replays of
//     recorded keys (which reserve nothing), both limits in every relation the
//     charges count towards, the whole-patient caps — against the committed
//     totals plus the sums of every live reservation of the dataset, and records
//     the charges' costs as one reservation (a random token) expiring at
//     now + TTL. A refusal is the same *BudgetError as a charge's, with Reserved
//     set to what live reservations hold of the refusing budget. A key held by
//     another live reservation is refused with ErrReserved: the same release is
//     being made by another request.
//  2. The caller computes. Extend(r, ttl) keeps a long computation's reservation
//     alive.
//  3. Commit(r, cs) is ChargeAll(cs) in a transaction that first deletes r's
//     rows: the charges are checked against the committed totals and the other
//     live reservations, and recorded, all or none. What was reserved therefore
//     fits unless r lapsed and others spent the budget meanwhile, or the limits
//     were lowered; replays are ChargeAll's, so repeating a release costs nothing.
//     A failed commit leaves r in place.
//  4. Cancel(r), on any failure, deletes r's rows: the budget is available again
//     at once. A Cancel that fails is kept, and RetryCancels tries it again until
//     it succeeds or r expires.
//
// Every check-and-charge transaction — Charge, ChargeAll, Reserve, Commit — reads
// the dataset's reservations, counts the live ones (a handful: one per release in
// progress, so the cost stays independent of the number of identities and
// records) and deletes the expired ones it finds: one more read per charge when
// nothing is reserved. A Charge, ChargeAll or Commit whose new charges all cost
// zero, with a zero whole-patient cost (the answers of a paid identity, most
// records), reads neither the reservations nor the limits and totals: it fits
// whatever they hold, and only the totals' numbers of charges change.
//
// A reservation also holds what its releases will store for replay
// (Charge.Stored, a projection's matrix): Reserve checks it against
// Hold.Stored, the stored-bytes quotas of each identity and of the dataset,
// counting the recorded releases' bytes (kept per identity and dataset, schema
// version 6) and the live reservations', and refuses with a *StoredBytesError
// (ErrStoredBytes). Only reservations that store bytes are checked.
//
// A reservation left by a crash stops counting when it expires, when its
// owner's heartbeat lapses (Heartbeat: an owner that beat once is judged by
// its heartbeat as well), or at once when its owner starts again and calls
// DropReservations(dataset, owner), which also removes expired ones. Expiry is
// judged by the clock of the process that checks, against the expiry written by
// the process that reserved: clocks of replicas that differ by s make a
// reservation last s longer or shorter. Safety never depends on a reservation: a
// lapsed, dropped or cancelled reservation only means that its commit is checked
// like a new charge, which may refuse it; nothing is ever charged beyond the
// limits. Reservations are not charges: they appear in no total and no entry,
// and Verify compares the totals with the records only. The views — Balance,
// PatientBalance, Accounts, DatasetTotals, Report — show them as a figure of
// their own, Reserved beside Spent, and their remainders are what the limit
// check leaves: the limit less the committed total and the live reservations.
//
// # Idempotency
//
// A charge names a Key, unique within its account. Charging a key that is
// already recorded returns the stored receipt (with its stored result) and
// spends nothing, so a retried request can never be charged twice and a
// repeated release returns the same bytes. If the stored Kind, Relation or
// Cost differ from the request, Charge fails with ErrKeyConflict instead.
// Results can be attached later (jobs finish after they are charged) with
// SetResult, which never changes a cost.
//
// # Durability
//
// OpenSQLite uses WAL mode with synchronous=FULL and BEGIN IMMEDIATE:
// the commit is fsynced before Charge returns and the check-and-charge is
// atomic across processes sharing the file. pgledger.Open (package
// pgledger, the PostgreSQL engine, kept out of this package so that programs
// which never open PostgreSQL do not link its driver) takes
// pg_advisory_xact_lock on (schema, dataset) inside the transaction, which
// serialises the charges of a dataset across curator replicas, and commits
// with synchronous_commit=on. Both create their tables if missing and keep a
// schema_version table; a database written by a newer version is refused.
//
// # Availability
//
// ErrUnavailable marks the errors that say nothing about the request: the
// database could not be reached, did not answer within the engine's call
// timeout (pgledger.Options.CallTimeout), or dropped the connection. An engine
// may run a call again when its connection was lost before anything was
// committed (Engine.Write); it never runs again a transaction whose commit was
// sent and not acknowledged, which may have committed: a charge is then made
// safe to retry by its key (the retry replays it). Ping is the trivial read
// the curator's health check makes, and KindResults reads the results of one
// kind of record in one query, for the curator's removal of orphaned release
// matrices.
//
// Schema version 2 records each charge's relation and keeps the totals per
// (dataset, identity, relation). A version 1 database, whose totals summed
// all releases, is upgraded in place when opened, in one transaction: each
// record is given the relation its kind was released under ("projection":
// feature-unit; "query", "query-failure", "evaluation", "pending": record;
// "job:kusner…": validation-record; "job:dphypo…": training-add-remove;
// any other kind: record, the conservative choice, which counts towards the
// feature-unit budget as well), and the totals are recomputed exactly from
// the records. A process of the old version still writing to the upgraded
// database fails (its records lack a relation) rather than mixing relations.
//
// Schema version 3 adds the limits table: the limits a curator enforces for
// a dataset, recorded by RecordLimits each time it starts, so that a reader
// of the ledger (curator ledger) reports remainders against what the curator
// enforces rather than figures typed again. A version 2 program refuses a
// version 3 database.
//
// Schema version 4 records each charge's whole-patient cost, keeps the
// whole-patient totals and the dataset's own rows of totals, and replaces the
// limits table by the limits history. A version 1, 2 or 3 database is upgraded
// in one transaction: each record is given the whole-patient cost it states
// (migratedPatientCost: a projection's from the whole-patient clause the curator
// wrote into its description, unbounded without one; the other kinds by
// DefaultPatientCost; an exact answer unbounded), version 3's limits become the
// first entry of the history, and every total is recomputed exactly from the
// records.
//
// Schema version 5 adds the reservations table (dataset, identity, key, token,
// owner, kind, relation, the cost and the whole-patient cost, created and expiry
// times); a version 4 database is upgraded by creating it, and a version 4
// program, which would not count reservations, refuses a version 5 database.
//
// Schema version 6 adds the stored_bytes column to the entries and
// reservations tables and the stored_totals table (dataset, identity, bytes,
// releases; identity "" for the dataset); an older database is upgraded by
// adding them at zero, so releases recorded before count as storing nothing.
//
// # Reports and display
//
// Report gives the exact totals and remainders (big.Rat) of a dataset under
// given limits, per relation, each identity's remainder capped by the
// dataset's: min(L_identity − E_identity(s), L_dataset − E_dataset(s)), with
// the whole-patient totals first and OverLimit marks on totals above their
// limits (limits lowered since). PatientStatement prints the whole-patient
// total in one line for people; FormatBound rounds a total up.
// FormatSpent and FormatRemaining print them for people with DisplayDigits
// significant digits: totals to the nearest, remainders to the nearest only
// when a charge of the printed amount fits the rule above (which only removes
// float64 noise such as 2.6109999999999998), otherwise toward zero.
//
// # Tests
//
// The same suite, package ledgertest (Run), runs against both stores, as do
// the fixtures of the version 1 and 2 upgrades. The PostgreSQL tests (also in
// package ledgertest) use PRIVBO_TEST_POSTGRES_DSN, or
// postgres://postgres@127.0.0.1:5432/test, each in a fresh random schema that
// is dropped afterwards. If PostgreSQL cannot be reached they fail, unless
// PRIVBO_SKIP_POSTGRES=1 is set.
package ledger
