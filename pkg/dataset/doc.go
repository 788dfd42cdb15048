// Package dataset loads a curator's CSV file and scales its features to the
// protected unit.
//
// # The protected unit
//
// PO-GP-UCB (Kharkovskii, Dai and Low, "Private Outsourced Bayesian
// Optimization", ICML 2020, §3) protects neighbouring datasets X, X′ that
// differ in a single row i* with
//
//	‖x_i* − x′_i*‖₂ ≤ 1,
//
// all other rows being equal. The units of X therefore decide what is
// protected: a change of one record's feature vector of Euclidean length one,
// after scaling, is hidden; larger changes are protected with proportionally
// weaker guarantees (group privacy). This package makes the choice of units
// explicit. Every Dataset carries a Unit text, written for the curator's
// operator, saying what one unit is under the scaling used.
//
// The modes below scale each row with constants fixed before the data are
// seen (or estimated from them with differential privacy), clip every row to
// Euclidean norm ClipNorm (default 25, the maximal norm of Kharkovskii et al.
// 2020, §4) and divide it by Unit (default 1):
//
//   - schema: a public schema file (LoadSchema; examples/data/*.schema.csv)
//     gives each feature public bounds [l, u] or a public scale s and offset
//     o. A bounded column is clamped to [l, u] and mapped affinely onto
//     [−c, c], c = ClipNorm/√d; a scaled column maps x to (x − o)/s. A line
//     for the target gives its public range (Dataset.TargetRange).
//   - private: as schema, with bounds estimated by EstimateBounds, which is
//     ε-DP under the replacement of one record (exponential mechanism over a
//     public grid, McSherry & Talwar 2007). Scaling takes two steps: LoadRaw,
//     charge the ledger, Raw.EstimateScaling, Raw.Scale.
//   - fixed: divide each column by a public scale chosen by the operator,
//     optionally after subtracting a public offset.
//   - none: the raw units of the columns.
//
// Clamping is 1-Lipschitz per column and clipping (the projection onto the
// ball of radius ClipNorm) is 1-Lipschitz per row, so a change of one record
// by at most one unit of the affine scaling changes exactly that scaled row,
// by at most one unit, and no other row; replacing a whole record moves its
// row by at most ClipDiameterUnits() = 2·ClipNorm/Unit units, the distance a
// record-level guarantee is converted for. Dataset.Private is true.
//
// Two further modes keep the old behaviour under names that say what it is:
//
//   - standardise-nonprivate (the zero Scaling): z-score each column with the
//     data's mean and population standard deviation, then multiply all of X
//     by one factor so that max_i ‖x_i‖₂ = MaxNorm (default 25). A constant
//     column is centred to zero and treated as if its sd were 1.
//   - maxnorm-nonprivate: centre the columns and multiply by one factor so
//     that max_i ‖x_i‖₂ = MaxNorm.
//
// Their scaling is a function of every record: one patient's change moves
// every scaled row, so the (ε, δ) claim of a release calibrated for one unit
// does NOT hold (Dataset.Private is false, ClipDiameterUnits is +Inf, and the
// Unit text says so). Their Offset and Scale are statistics of the data, for
// the curator's operator only. The old names standardise, standardize and
// maxnorm are refused.
//
// # Input format
//
// A header row of column names, then one row per record, comma-separated
// (RFC 4180 quoting, as read by encoding/csv). A UTF-8 byte-order mark, blank
// lines, CRLF line ends and spaces around fields are allowed. Only the target
// and the selected feature columns are parsed as numbers; other columns may
// hold anything but every row must have the header's number of fields.
// Selected cells must be finite numbers as strconv.ParseFloat reads them:
// empty cells, text, NaN and infinities are errors.
//
// # Errors never echo data
//
// Bad input gives a *ParseError naming the file, the line (the header is
// line 1 in a file without leading blank lines) and the column by its header
// name. Messages quote header names and describe what is wrong with a cell
// ("not a number", "empty", "NaN or infinite") but never repeat a cell's
// content, so an error can be logged or shown to a remote user without
// leaking a record.
package dataset
