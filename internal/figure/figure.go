// Package figure writes the figures of text a person reads: at most four significant
// digits, never float noise, and in words when a whole-patient figure protects no
// record. Every command and library text uses it; JSON and the ledger keep figures exact.
package figure

import (
	"math"
	"strconv"
)

// Digits is how many significant digits a figure has in text a person reads; JSON and
// the ledger keep figures exact.
const Digits = 4

// Text is x in text a person reads: the nearest number of at most Digits significant
// digits, in its shortest form ("7.389", "0.0008", "1e-07", "4310", "∞"), so that no
// float noise (7.38905609893065, 0.0007999999999999999) reaches a person.
func Text(x float64) string { return figure(x, false) }

// Up is Text rounded up, for a bound that must stay one: an ε no release
// exceeds is never printed below its value, but for the representation error of
// decimal costs (0.1 + 0.2 is 0.30000000000000004, printed 0.3; relative 1e-9).
func Up(x float64) string { return figure(x, true) }

func figure(x float64, up bool) string {
	switch {
	case math.IsInf(x, 1):
		return "∞"
	case math.IsInf(x, -1):
		return "−∞"
	case x == 0 || math.IsNaN(x):
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	r := round(x)
	if up && x-r > 1e-9*math.Abs(x) {
		r = round(r + math.Pow(10, math.Floor(math.Log10(math.Abs(r)))-(Digits-1)))
	}
	return strconv.FormatFloat(r, 'g', -1, 64)
}

// round is x to Digits significant digits, the nearest.
func round(x float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', Digits, 64), 64)
	return r
}

// RecordProtectingEpsilon is the largest whole-patient ε that privbo's texts present as
// protecting a whole record (docs/PRIVACY.md, section 0): above it a patient's record
// may change what a modeler sees by a factor e^10 ≈ 22,000 or more.
const RecordProtectingEpsilon = 10

// WholeRecordWords is what the texts add after a whole-patient ε: that it protects no
// whole record when it is above RecordProtectingEpsilon, "" otherwise.
func WholeRecordWords(eps float64) string {
	if eps <= RecordProtectingEpsilon {
		return ""
	}
	return ", which protects no whole record (above ε=10)"
}
