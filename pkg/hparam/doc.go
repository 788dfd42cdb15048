// Package hparam describes a finite hyperparameter space Λ: a grid over one
// or more named hyperparameters, each with a finite, sorted list of values.
//
// # The grid
//
// A Param is one hyperparameter with values v_1 < v_2 < … < v_k, given as a
// list (List, LogList), as k evenly spaced values on [lo, hi] (LinearRange:
// v_i = lo + (i−1)(hi − lo)/(k − 1)) or as k log-spaced values (LogRange:
// v_i = lo·(hi/lo)^((i−1)/(k−1)), lo > 0). Both ranges hit their endpoints
// exactly: v_1 = lo and v_k = hi bit for bit. ParseParam reads the same
// from text:
//
//	lambda=log:1e-4:10:16     LogRange("lambda", 1e-4, 10, 16)
//	lr=linear:0.1:1:10        LinearRange("lr", 0.1, 1, 10)
//	C=list:0.1,1,10           List("C", 0.1, 1, 10)
//	C=loglist:0.1,1,10        LogList("C", 0.1, 1, 10)
//
// An Axis is such a spec before expansion: a name, a kind, and either the
// values or LO, HI and N. It is the one form an axis travels in — the
// modeler's --grid flags (ParseAxis), the curator's protocol and its job
// records — and Axis.Param expands it; SpaceOf builds the grid of several.
//
// A Space is the Cartesian product Λ = P_1 × … × P_D of its Params, of size
// |Λ| = Π_j k_j ≤ MaxSize. Its points are numbered 0 … |Λ|−1 in row-major
// order (the last Param varies fastest), like a C array indexed by the
// value positions: i = ((i_1·k_2 + i_2)·k_3 + i_3)…
//
// # Coordinates for a kernel
//
// A Gaussian-process kernel over Λ (Kusner et al., ICML 2015; Wang et al.,
// DP-HyPO 2023) needs each point as a vector of comparable numbers.
// Space.Coords maps each Param to [0, 1]:
//
//	u = (v − v_1)/(v_k − v_1)               linear scale
//	u = (log v − log v_1)/(log v_k − log v_1)  log scale
//
// and u = 0 for a Param with a single value. A log-scale parameter such as a
// regularisation strength or a learning rate is then spaced by orders of
// magnitude, which is how its effect usually varies.
//
// Nothing in this package is private: a Space is public configuration that
// the curator and the modeler share.
package hparam
