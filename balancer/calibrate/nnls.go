package calibrate

import (
	"errors"
	"math"
)

// nnls solves min ‖A·x − b‖₂ subject to x ≥ 0 with the active-set method of
// Lawson and Hanson ("Solving Least Squares Problems", 1974, chapter 23).
// A is row-major, m rows of n columns. The columns are scaled to unit norm
// first, so constants of very different magnitude (a per-request overhead
// in ns next to an attention cost per query-key pair) are treated alike;
// the returned x is in the original units. A column that is all zero gets
// x = 0.
func nnls(a [][]float64, b []float64) ([]float64, error) {
	m := len(a)
	if m == 0 || m != len(b) {
		return nil, errors.New("nnls: no rows, or rows and right-hand side differ in length")
	}
	n := len(a[0])
	scale := make([]float64, n)
	for _, row := range a {
		if len(row) != n {
			return nil, errors.New("nnls: ragged matrix")
		}
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, errors.New("nnls: matrix is not finite")
			}
			scale[j] += v * v
		}
	}
	for _, v := range b {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, errors.New("nnls: right-hand side is not finite")
		}
	}
	as := make([][]float64, m)
	for i, row := range a {
		as[i] = make([]float64, n)
		for j, v := range row {
			if scale[j] > 0 {
				as[i][j] = v / math.Sqrt(scale[j])
			}
		}
	}
	x := make([]float64, n)
	passive := make([]bool, n)
	usable := make([]bool, n)
	for j := range n {
		usable[j] = scale[j] > 0
	}
	const tol = 1e-12
	for iter := 0; iter < 30*n; iter++ {
		w := gradient(as, b, x)
		t, best := -1, tol
		for j := range n {
			if usable[j] && !passive[j] && w[j] > best {
				t, best = j, w[j]
			}
		}
		if t < 0 {
			break
		}
		passive[t] = true
		for inner := 0; inner < 3*n; inner++ {
			s := lsq(as, b, passive)
			if s == nil { // the passive columns are dependent: drop the newest
				passive[t] = false
				usable[t] = false
				break
			}
			ok := true
			for j := range n {
				if passive[j] && s[j] <= tol {
					ok = false
				}
			}
			if ok {
				copy(x, s)
				break
			}
			alpha := math.Inf(1)
			for j := range n {
				if passive[j] && s[j] <= tol {
					if d := x[j] - s[j]; d > 0 {
						alpha = min(alpha, x[j]/d)
					} else {
						alpha = 0
					}
				}
			}
			if math.IsInf(alpha, 1) {
				alpha = 0
			}
			for j := range n {
				if passive[j] {
					x[j] += alpha * (s[j] - x[j])
					if x[j] <= tol {
						x[j], passive[j] = 0, false
					}
				}
			}
		}
	}
	for j := range n {
		if scale[j] > 0 {
			x[j] /= math.Sqrt(scale[j])
		} else {
			x[j] = 0
		}
	}
	return x, nil
}

// gradient returns Aᵀ(b − A·x).
func gradient(a [][]float64, b, x []float64) []float64 {
	w := make([]float64, len(x))
	for i, row := range a {
		r := b[i]
		for j, v := range row {
			r -= v * x[j]
		}
		for j, v := range row {
			w[j] += v * r
		}
	}
	return w
}

// lsq solves the unconstrained least-squares problem on the columns marked
// in cols by Householder QR and returns a full-length x (0 outside cols), or
// nil when those columns are numerically dependent.
func lsq(a [][]float64, b []float64, cols []bool) []float64 {
	var idx []int
	for j, ok := range cols {
		if ok {
			idx = append(idx, j)
		}
	}
	m, k := len(a), len(idx)
	if k == 0 || k > m {
		return nil
	}
	r := make([][]float64, m)
	y := make([]float64, m)
	for i := range m {
		r[i] = make([]float64, k)
		for c, j := range idx {
			r[i][c] = a[i][j]
		}
		y[i] = b[i]
	}
	for c := range k {
		norm := 0.0
		for i := c; i < m; i++ {
			norm += r[i][c] * r[i][c]
		}
		norm = math.Sqrt(norm)
		if norm < 1e-10 {
			return nil
		}
		if r[c][c] > 0 {
			norm = -norm
		}
		v := make([]float64, m)
		for i := c; i < m; i++ {
			v[i] = r[i][c]
		}
		v[c] -= norm
		vv := 0.0
		for i := c; i < m; i++ {
			vv += v[i] * v[i]
		}
		if vv == 0 {
			continue
		}
		for cc := c; cc < k; cc++ {
			d := 0.0
			for i := c; i < m; i++ {
				d += v[i] * r[i][cc]
			}
			f := 2 * d / vv
			for i := c; i < m; i++ {
				r[i][cc] -= f * v[i]
			}
		}
		d := 0.0
		for i := c; i < m; i++ {
			d += v[i] * y[i]
		}
		f := 2 * d / vv
		for i := c; i < m; i++ {
			y[i] -= f * v[i]
		}
	}
	// Columns are unit-norm, so a tiny diagonal means dependence.
	for c := range k {
		if math.Abs(r[c][c]) < 1e-9 {
			return nil
		}
	}
	sol := make([]float64, k)
	for c := k - 1; c >= 0; c-- {
		s := y[c]
		for cc := c + 1; cc < k; cc++ {
			s -= r[c][cc] * sol[cc]
		}
		sol[c] = s / r[c][c]
	}
	x := make([]float64, len(cols))
	for c, j := range idx {
		x[j] = sol[c]
	}
	return x
}
