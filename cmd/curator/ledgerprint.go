package main

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/privbo/privbo/pkg/ledger"
)

// ledgerEntriesHeader heads the charges listed by 'curator ledger': each charge's
// (ε, δ) under its own relation, then its whole-patient figure.
const ledgerEntriesHeader = "TIME\tIDENTITY\tKIND\tRELATION\tEPSILON\tDELTA\tWHOLE PATIENT\tKEY\tDESCRIPTION"

// maxListedDescription bounds the description shown per charge (a job's is its whole
// specification); the ledger keeps it in full.
const maxListedDescription = 240

// ledgerEntryLine is one charge of the listing, tab-separated for a tabwriter, with its
// description on one line: for a projection it names the neighbour relation and the
// whole-patient ε the curator stated (package curator).
func ledgerEntryLine(e ledger.Receipt) string {
	d := strings.Join(strings.Fields(e.Description), " ")
	if r := []rune(d); len(r) > maxListedDescription {
		d = string(r[:maxListedDescription-1]) + "…"
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Created.UTC().Format(time.RFC3339), e.Identity, e.Kind, e.Relation,
		figureText(e.Cost.Epsilon), figureText(e.Cost.Delta),
		patientCell(e.Patient), e.Key, d)
}

// patientCell is a charge's whole-patient figure in a listing.
func patientCell(p ledger.PatientCost) string {
	if p.Unbounded {
		return "NOT BOUNDED"
	}
	return fmt.Sprintf("ε=%s δ=%s", roundUpText(p.Epsilon), figureText(p.Delta))
}

// figureText prints a charge's float64 figure as the budget tables do (ledger.FormatSpent:
// DisplayDigits significant digits), so 4.000000000000001e-06 reads 4e-06.
func figureText(v float64) string {
	if r := new(big.Rat).SetFloat64(v); r != nil {
		return ledger.FormatSpent(r)
	}
	return strconv.FormatFloat(v, 'g', -1, 64) // ±Inf, NaN
}
