package gpucb

// The loops below are the arithmetic of the eager update and the lazy catch-up.
// On amd64 with AVX2 they run as assembly (simd_amd64.s) whose lanes perform
// these operations in this order. The explicit conversions here and in the eager
// and lazy updates keep the compiler from fusing a multiply and an add (as it
// may under GOAMD64=v3 and on arm64), so that the eager and lazy paths agree bit
// for bit in every build (make test checks a v3 build).

// chain4 sets v[k] −= Σ_i l[i]·c[4i+k] for the four columns interleaved in c,
// each summed in dot1's order.
func chain4(v *[4]float64, l, c []float64) {
	if useAVX2 {
		chain4AVX(v, l, c[:4*len(l)])
		return
	}
	chain4Go(v, l, c)
}

func chain4Go(v *[4]float64, l, c []float64) {
	c = c[:4*len(l)]
	v0, v1, v2, v3 := v[0], v[1], v[2], v[3]
	i := 0
	for ; i+4 <= len(l); i += 4 {
		l0, l1, l2, l3 := l[i], l[i+1], l[i+2], l[i+3]
		q := c[4*i : 4*i+16 : 4*i+16]
		v0 -= float64(float64(l0*q[0])+float64(l1*q[4])) + float64(float64(l2*q[8])+float64(l3*q[12]))
		v1 -= float64(float64(l0*q[1])+float64(l1*q[5])) + float64(float64(l2*q[9])+float64(l3*q[13]))
		v2 -= float64(float64(l0*q[2])+float64(l1*q[6])) + float64(float64(l2*q[10])+float64(l3*q[14]))
		v3 -= float64(float64(l0*q[3])+float64(l1*q[7])) + float64(float64(l2*q[11])+float64(l3*q[15]))
	}
	for ; i < len(l); i++ {
		li, q := l[i], c[4*i:4*i+4:4*i+4]
		v0 -= float64(li * q[0])
		v1 -= float64(li * q[1])
		v2 -= float64(li * q[2])
		v3 -= float64(li * q[3])
	}
	v[0], v[1], v[2], v[3] = v0, v1, v2, v3
}

// dot1 returns v − Σ_i l_i c_i, summed four at a time as in subtractRows.
func dot1(v float64, l, c []float64) float64 {
	c = c[:len(l)]
	i := 0
	for ; i+4 <= len(l); i += 4 {
		v -= float64(float64(l[i]*c[i])+float64(l[i+1]*c[i+1])) + float64(float64(l[i+2]*c[i+2])+float64(l[i+3]*c[i+3]))
	}
	for ; i < len(l); i++ {
		v -= float64(l[i] * c[i])
	}
	return v
}

// subtractRows sets seg[k] −= Σ_j col[j]·rows[j][t0+k], the rows taken four at a
// time; the eager and the lazy paths share its order of operations so that their
// values agree bit for bit.
func subtractRows(seg, col []float64, rows [][]float64, t0 int) {
	t1 := t0 + len(seg)
	j := 0
	for ; j+4 <= len(col); j += 4 {
		c0, c1, c2, c3 := col[j], col[j+1], col[j+2], col[j+3]
		r0 := rows[j][t0:t1]
		r1 := rows[j+1][t0:t1]
		r2 := rows[j+2][t0:t1]
		r3 := rows[j+3][t0:t1]
		r0, r1, r2, r3 = r0[:len(seg)], r1[:len(seg)], r2[:len(seg)], r3[:len(seg)]
		k := 0
		if useAVX2 {
			k = len(seg) &^ 3
			subRows4AVX(seg, r0, r1, r2, r3, c0, c1, c2, c3)
		}
		for ; k < len(seg); k++ {
			seg[k] -= float64(float64(c0*r0[k])+float64(c1*r1[k])) + float64(float64(c2*r2[k])+float64(c3*r3[k]))
		}
	}
	for ; j < len(col); j++ {
		c := col[j]
		r := rows[j][t0:t1]
		r = r[:len(seg)]
		for k := range seg {
			seg[k] -= float64(c * r[k])
		}
	}
}

// sqDist returns ‖a − b‖², with four partial sums to shorten the
// floating-point dependency chain.
func sqDist(a, b []float64) float64 {
	if useAVX2 {
		return sqDistAVX(a, b[:len(a)])
	}
	return sqDistGo(a, b)
}

func sqDistGo(a, b []float64) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	k := 0
	for ; k+4 <= len(a); k += 4 {
		d0 := a[k] - b[k]
		d1 := a[k+1] - b[k+1]
		d2 := a[k+2] - b[k+2]
		d3 := a[k+3] - b[k+3]
		s0 += float64(d0 * d0)
		s1 += float64(d1 * d1)
		s2 += float64(d2 * d2)
		s3 += float64(d3 * d3)
	}
	for ; k < len(a); k++ {
		d := a[k] - b[k]
		s0 += float64(d * d)
	}
	return (s0 + s1) + (s2 + s3)
}

// prefetch asks for the stored column and the kernel coordinates of candidate
// x, which a catch-up will read shortly: they are rarely in cache, and without
// it each catch-up waits for them line by line.
func (g *Posterior) prefetch(x int) {
	if !useAVX2 {
		return
	}
	if k := int(g.slot[x]); k >= 0 && g.cache != nil {
		prefetchAVX(g.cache[k*g.stride : k*g.stride+int(g.ls[x])])
	}
	prefetchAVX(g.kc[x*g.dim : (x+1)*g.dim])
}
