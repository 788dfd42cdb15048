package hparam

import (
	"fmt"
	"strconv"
	"strings"
)

// AxisKind says how an Axis gives its values.
type AxisKind string

const (
	// AxisList: Values, linear scale (List).
	AxisList AxisKind = "list"
	// AxisLogList: Values, log scale (LogList).
	AxisLogList AxisKind = "loglist"
	// AxisLinear: Count points evenly spaced in [Low, High] (LinearRange).
	AxisLinear AxisKind = "linear"
	// AxisLog: Count points log-spaced in [Low, High] (LogRange).
	AxisLog AxisKind = "log"
)

// Axis is one hyperparameter axis as a person or a job spec gives it: a list of
// values, or a range with a number of points. Param expands it into the Param it
// denotes. An Axis is what travels (the curator's protocol, job records) and a Param
// is what is searched: keeping the range form keeps a 5,000-point axis three numbers
// long, and shows the modeler back the grid they asked for.
//
// The JSON form is that of the job records the curator has always written
// ({"name", "scale", "values", "low", "high", "count"}), so records written before
// Axis existed still load.
type Axis struct {
	Name string `json:"name"`
	// Kind is stored under "scale", its name in the records and the protocol.
	Kind AxisKind `json:"scale"`
	// Values of a list or loglist axis.
	Values []float64 `json:"values,omitempty"`
	// Low, High and Count of a linear or log axis.
	Low   float64 `json:"low,omitempty"`
	High  float64 `json:"high,omitempty"`
	Count int     `json:"count,omitempty"`
}

// Param returns the Param a denotes, checked as List, LogList, LinearRange or
// LogRange check it. A list axis must not set Low, High or Count, and a range axis
// must not set Values; errors name the parameter and the field.
func (a Axis) Param() (Param, error) {
	switch a.Kind {
	case AxisList, AxisLogList:
		if a.Low != 0 || a.High != 0 || a.Count != 0 {
			return Param{}, fmt.Errorf("hparam: parameter %q: a %s axis takes values, not low, high or count", a.Name, a.Kind)
		}
		if a.Kind == AxisList {
			return List(a.Name, a.Values...)
		}
		return LogList(a.Name, a.Values...)
	case AxisLinear, AxisLog:
		if len(a.Values) != 0 {
			return Param{}, fmt.Errorf("hparam: parameter %q: a %s axis takes low, high and count, not values", a.Name, a.Kind)
		}
		if a.Kind == AxisLinear {
			return LinearRange(a.Name, a.Low, a.High, a.Count)
		}
		return LogRange(a.Name, a.Low, a.High, a.Count)
	}
	if err := checkName(a.Name); err != nil {
		return Param{}, err
	}
	return Param{}, fmt.Errorf("hparam: parameter %q: unknown kind %q: want log, linear, list or loglist", a.Name, truncate(string(a.Kind)))
}

// String returns the spec ParseAxis reads back to a: "name=log:LO:HI:N",
// "name=linear:LO:HI:N", "name=list:V1,V2,…" or "name=loglist:V1,V2,…", with the
// shortest decimal form of each number.
func (a Axis) String() string {
	var b strings.Builder
	b.WriteString(a.Name)
	b.WriteByte('=')
	b.WriteString(string(a.Kind))
	b.WriteByte(':')
	num := func(v float64) { b.WriteString(strconv.FormatFloat(v, 'g', -1, 64)) }
	switch a.Kind {
	case AxisLinear, AxisLog:
		num(a.Low)
		b.WriteByte(':')
		num(a.High)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(a.Count))
	default:
		for i, v := range a.Values {
			if i > 0 {
				b.WriteByte(',')
			}
			num(v)
		}
	}
	return b.String()
}

// SpaceOf returns the grid over the axes' Params (see Axis.Param and NewSpace).
func SpaceOf(axes ...Axis) (Space, error) {
	params := make([]Param, len(axes))
	for i, a := range axes {
		p, err := a.Param()
		if err != nil {
			return Space{}, err
		}
		params[i] = p
	}
	return NewSpace(params...)
}

// ParseAxis reads an Axis from a spec "name=kind:arguments" and checks that it
// denotes a valid Param:
//
//	name=log:LO:HI:N        LogRange(name, LO, HI, N)
//	name=linear:LO:HI:N     LinearRange(name, LO, HI, N)
//	name=list:V1,V2,…       List(name, V1, V2, …)
//	name=loglist:V1,V2,…    LogList(name, V1, V2, …)
//
// Numbers are read by strconv.ParseFloat (N by strconv.Atoi); spaces around
// the parts are ignored. List values are kept in the order given (Param sorts
// them).
func ParseAxis(spec string) (Axis, error) {
	a, _, err := parseAxis(spec)
	return a, err
}

// ParseParam reads the Param of an Axis spec (see ParseAxis).
func ParseParam(spec string) (Param, error) {
	_, p, err := parseAxis(spec)
	return p, err
}

func parseAxis(spec string) (Axis, Param, error) {
	name, rest, ok := strings.Cut(spec, "=")
	if !ok {
		return Axis{}, Param{}, specError(spec, `missing "=": want name=kind:arguments, e.g. lambda=log:1e-4:10:16`)
	}
	a := Axis{Name: strings.TrimSpace(name)}
	if err := checkName(a.Name); err != nil {
		return Axis{}, Param{}, specError(spec, err.Error())
	}
	kind, args, ok := strings.Cut(rest, ":")
	if !ok {
		return Axis{}, Param{}, specError(spec, `missing ":" after the kind: want log:LO:HI:N, linear:LO:HI:N, list:V1,V2,… or loglist:V1,V2,…`)
	}
	var err error
	switch a.Kind = AxisKind(strings.TrimSpace(kind)); a.Kind {
	case AxisLog, AxisLinear:
		parts := strings.Split(args, ":")
		if len(parts) != 3 {
			return Axis{}, Param{}, specError(spec, fmt.Sprintf("%s range needs LO:HI:N (3 fields), got %d", a.Kind, len(parts)))
		}
		if a.Low, err = parseNumber(parts[0], "LO"); err != nil {
			return Axis{}, Param{}, specError(spec, err.Error())
		}
		if a.High, err = parseNumber(parts[1], "HI"); err != nil {
			return Axis{}, Param{}, specError(spec, err.Error())
		}
		if a.Count, err = strconv.Atoi(strings.TrimSpace(parts[2])); err != nil {
			return Axis{}, Param{}, specError(spec, fmt.Sprintf("N %q is not an integer", truncate(parts[2])))
		}
	case AxisList, AxisLogList:
		if strings.Count(args, ",") >= MaxSize {
			return Axis{}, Param{}, specError(spec, fmt.Sprintf("more than %d values", MaxSize))
		}
		fields := strings.Split(args, ",")
		a.Values = make([]float64, len(fields))
		for i, f := range fields {
			if a.Values[i], err = parseNumber(f, fmt.Sprintf("value %d", i+1)); err != nil {
				return Axis{}, Param{}, specError(spec, err.Error())
			}
		}
	default:
		return Axis{}, Param{}, specError(spec, fmt.Sprintf("unknown kind %q: want log, linear, list or loglist", truncate(string(a.Kind))))
	}
	p, err := a.Param()
	if err != nil {
		return Axis{}, Param{}, specError(spec, err.Error())
	}
	return a, p, nil
}
