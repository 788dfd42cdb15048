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
// Features are scaled column-wise as X[i,j] = (raw[i,j] − Offset[j]) / Scale[j].
// The modes are
//
//   - standardise (the default): z-score each column,
//     z[i,j] = (raw[i,j] − mean_j) / sd_j with the population standard
//     deviation sd_j = sqrt(Σ_i (raw[i,j] − mean_j)² / n); the rows are then
//     centred (every column has mean zero) and all of X is multiplied by one
//     factor so that max_i ‖x_i‖₂ = MaxNorm. One unit is 1/MaxNorm of the
//     largest record's distance from the average record, measured in standard
//     deviations. A constant column (sd_j = 0) cannot be standardised; it is
//     centred to zero, treated as if sd_j = 1, and so contributes nothing.
//   - maxnorm: centre the columns, raw[i,j] − mean_j, and multiply by one
//     factor so that max_i ‖x_i‖₂ = MaxNorm. The relative units of the columns
//     are kept.
//   - fixed: divide each column by a public scale chosen by the operator and
//     optionally subtract a public offset first. No statistic of the data is
//     used, so the neighbouring relation is fixed before the data are seen:
//     one unit is a change of Scale[j] in column j alone (or any combination of
//     such changes with Euclidean length one).
//   - none: the raw units of the columns are the protected unit.
//
// MaxNorm defaults to 25, the maximal norm used in the experiments of
// Kharkovskii et al. (2020, §4).
//
// Standardise and maxnorm compute means, standard deviations and the maximal
// row norm from the data themselves. The scaling is then itself a function of
// every record, so the guarantee holds for the scaled data but the scale (and
// hence what one unit means in raw terms) is not private; this is the usual
// practice in the literature, but a strict guarantee needs fixed public
// scales. The Unit text says so. Offset and Scale of a Dataset hold these
// statistics: they are for the curator's operator and must never be sent to a
// modeler.
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
