package render

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Series is one line of a line chart.
type Series struct {
	Name string
	X, Y []float64
}

// Ref is a horizontal reference line (a bound).
type Ref struct {
	Name  string
	Value float64
}

// LineChart is a chart of lines over a shared x axis.
type LineChart struct {
	Title, XLabel, YLabel string
	Series                []Series
	// LogX draws the x axis in log10 scale (values must be > 0).
	LogX bool
	// Refs are horizontal reference lines.
	Refs []Ref
	// Markers draws a dot at every point.
	Markers bool
}

// BarChart is a chart of labelled bars.
type BarChart struct {
	Title, YLabel string
	Labels        []string
	Values        []float64
	Refs          []Ref
}

// Layout, in pixels.
const (
	chartW, chartH                     = 960, 540
	marginL, marginR, marginT, marginB = 80, 200, 40, 70
	plotW, plotH                       = chartW - marginL - marginR, chartH - marginT - marginB
	lineWidth                          = 2
	tickCount                          = 6
	tickLen                            = 5
	legendX                            = chartW - marginR + 16
	legendLine                         = 18
	legendSwatch                       = 24
	maxLegendName                      = 24
	fontAscent, fontWidth              = 11, 7 // basicfont.Face7x13
	fontFaceHeight                     = 13
	refDash                            = 8
	refLabelOffset                     = 4
	barGapFraction                     = 0.25
	barLabelMin                        = 6
	markerRadius                       = 3
	titleY, xLabelY, yLabelX           = 24, chartH - 20, 8
	labelPad                           = 6
	minSpan                            = 1e-9
	logFloor                           = 1e-3
	gridAlpha                          = 40
)

// palette is the colour of series i (Okabe–Ito, colour-blind friendly, then four more).
var palette = []color.RGBA{
	{0, 114, 178, 255}, {230, 159, 0, 255}, {0, 158, 115, 255}, {204, 121, 167, 255},
	{86, 180, 233, 255}, {213, 94, 0, 255}, {240, 228, 66, 255}, {0, 0, 0, 255},
	{136, 136, 136, 255}, {120, 28, 129, 255}, {25, 80, 40, 255}, {170, 110, 40, 255},
}

// refColours are the colours of reference lines.
var refColours = []color.RGBA{{90, 90, 90, 255}, {160, 0, 0, 255}, {110, 40, 170, 255}}

var (
	black = color.RGBA{0, 0, 0, 255}
	grid  = color.RGBA{0, 0, 0, gridAlpha}
)

// canvas is an image with plotting helpers.
type canvas struct {
	img *image.RGBA
}

func newCanvas() *canvas {
	img := image.NewRGBA(image.Rect(0, 0, chartW, chartH))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	return &canvas{img: img}
}

func (c *canvas) blend(x, y int, col color.RGBA) {
	if !image.Pt(x, y).In(c.img.Rect) {
		return
	}
	if col.A == 255 {
		c.img.SetRGBA(x, y, col)
		return
	}
	o := c.img.RGBAAt(x, y)
	a := uint32(col.A)
	mix := func(n, b uint8) uint8 { return uint8((uint32(n)*a + uint32(b)*(255-a)) / 255) }
	c.img.SetRGBA(x, y, color.RGBA{mix(col.R, o.R), mix(col.G, o.G), mix(col.B, o.B), 255})
}

// line draws a line of the given width (Bresenham with a square pen); with
// dash > 0 it is dashed.
func (c *canvas) line(x0, y0, x1, y1, width, dash int, col color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for n := 0; ; n++ {
		if dash == 0 || (n/dash)%2 == 0 {
			for i := -(width / 2); i < width-width/2; i++ {
				for j := -(width / 2); j < width-width/2; j++ {
					c.blend(x0+i, y0+j, col)
				}
			}
		}
		if x0 == x1 && y0 == y1 {
			return
		}
		if e2 := 2 * e; e2 >= dy {
			e += dy
			x0 += sx
		} else {
			e += dx
			y0 += sy
		}
	}
}

func (c *canvas) rect(x0, y0, x1, y1 int, col color.RGBA) {
	for y := min(y0, y1); y <= max(y0, y1); y++ {
		for x := min(x0, x1); x <= max(x0, x1); x++ {
			c.blend(x, y, col)
		}
	}
}

func (c *canvas) dot(x, y, r int, col color.RGBA) {
	for i := -r; i <= r; i++ {
		for j := -r; j <= r; j++ {
			if i*i+j*j <= r*r {
				c.blend(x+i, y+j, col)
			}
		}
	}
}

// text draws s with its baseline-left at (x, y).
func (c *canvas) text(x, y int, s string, col color.RGBA) {
	d := font.Drawer{Dst: c.img, Src: image.NewUniform(col), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

func textWidth(s string) int { return len([]rune(s)) * fontWidth }

func abs(v int) int { return max(v, -v) }

func sign(v int) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

// niceTicks returns about n round tick values covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	span := hi - lo
	if span <= 0 {
		span = math.Max(math.Abs(hi), 1)
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		out = append(out, v)
	}
	return out
}

func fmtTick(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 1000:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func shorten(s string) string {
	if r := []rune(s); len(r) > maxLegendName {
		return string(r[:maxLegendName-1]) + "~"
	}
	return s
}

// frame draws the title, axes labels and y grid for [ylo, yhi]; it returns
// the y mapping.
func (c *canvas) frame(title, xlabel, ylabel string, ylo, yhi float64) func(float64) int {
	c.text((chartW-textWidth(title))/2, titleY, title, black)
	c.text(marginL+(plotW-textWidth(xlabel))/2, xLabelY, xlabel, black)
	c.text(yLabelX, marginT-labelPad-4, ylabel, black)
	if yhi-ylo < minSpan {
		yhi = ylo + 1
	}
	ymap := func(v float64) int { return marginT + plotH - int(math.Round((v-ylo)/(yhi-ylo)*plotH)) }
	for _, t := range niceTicks(ylo, yhi, tickCount) {
		y := ymap(t)
		c.line(marginL, y, marginL+plotW, y, 1, 0, grid)
		s := fmtTick(t)
		c.text(marginL-labelPad-textWidth(s), y+fontAscent/2, s, black)
	}
	c.line(marginL, marginT, marginL, marginT+plotH, 1, 0, black)
	c.line(marginL, marginT+plotH, marginL+plotW, marginT+plotH, 1, 0, black)
	return ymap
}

func (c *canvas) legend(i int, name string, col color.RGBA, dashed bool) {
	y := marginT + i*legendLine
	dash := 0
	if dashed {
		dash = refDash / 2
	}
	c.line(legendX, y, legendX+legendSwatch, y, lineWidth+1, dash, col)
	c.text(legendX+legendSwatch+labelPad, y+fontAscent/2, shorten(name), black)
}

// refs draws reference lines and their legend entries from legend slot i.
func (c *canvas) refs(refs []Ref, ymap func(float64) int, slot int) {
	for k, r := range refs {
		col := refColours[k%len(refColours)]
		y := ymap(r.Value)
		c.line(marginL, y, marginL+plotW, y, 1, refDash, col)
		c.legend(slot+k, fmt.Sprintf("%s %.3f", r.Name, r.Value), col, true)
	}
}

// finite reports whether a point can be drawn: a run with no answered
// request has an infinite latency, which a chart leaves out (a gap).
func finite(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }

// WritePNG renders the chart.
func (lc LineChart) WritePNG(w io.Writer) error {
	c := newCanvas()
	xf := func(v float64) float64 { return v }
	if lc.LogX {
		xf = func(v float64) float64 { return math.Log10(math.Max(v, logFloor)) }
	}
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), 0.0, math.Inf(-1)
	for _, s := range lc.Series {
		for i := range s.X {
			if !finite(s.Y[i]) {
				continue
			}
			xlo, xhi = math.Min(xlo, xf(s.X[i])), math.Max(xhi, xf(s.X[i]))
			ylo, yhi = math.Min(ylo, s.Y[i]), math.Max(yhi, s.Y[i])
		}
	}
	for _, r := range lc.Refs {
		yhi = math.Max(yhi, r.Value)
	}
	if math.IsInf(xlo, 0) {
		xlo, xhi, yhi = 0, 1, 1
	}
	if xhi-xlo < minSpan {
		xlo, xhi = xlo-1, xhi+1
	}
	yhi *= 1.05
	ymap := c.frame(lc.Title, lc.XLabel, lc.YLabel, ylo, yhi)
	xmap := func(v float64) int { return marginL + int(math.Round((xf(v)-xlo)/(xhi-xlo)*plotW)) }
	if lc.LogX {
		for e := math.Floor(xlo); e <= math.Ceil(xhi); e++ {
			for _, m := range []float64{1, 2, 5} {
				v := math.Log10(m) + e
				if v < xlo-1e-9 || v > xhi+1e-9 {
					continue
				}
				x := marginL + int(math.Round((v-xlo)/(xhi-xlo)*plotW))
				c.line(x, marginT, x, marginT+plotH, 1, 0, grid)
				c.line(x, marginT+plotH, x, marginT+plotH+tickLen, 1, 0, black)
				s := fmtTick(m * math.Pow(10, e))
				c.text(x-textWidth(s)/2, marginT+plotH+tickLen+fontFaceHeight, s, black)
			}
		}
	} else {
		for _, t := range niceTicks(xlo, xhi, tickCount) {
			x := marginL + int(math.Round((t-xlo)/(xhi-xlo)*plotW))
			c.line(x, marginT+plotH, x, marginT+plotH+tickLen, 1, 0, black)
			s := fmtTick(t)
			c.text(x-textWidth(s)/2, marginT+plotH+tickLen+fontFaceHeight, s, black)
		}
	}
	for i, s := range lc.Series {
		col := palette[i%len(palette)]
		for j := 1; j < len(s.X); j++ {
			if !finite(s.Y[j-1]) || !finite(s.Y[j]) {
				continue
			}
			c.line(xmap(s.X[j-1]), ymap(s.Y[j-1]), xmap(s.X[j]), ymap(s.Y[j]), lineWidth, 0, col)
		}
		if lc.Markers || len(s.X) == 1 {
			for j := range s.X {
				if !finite(s.Y[j]) {
					continue
				}
				c.dot(xmap(s.X[j]), ymap(s.Y[j]), markerRadius, col)
			}
		}
		c.legend(i, s.Name, col, false)
	}
	c.refs(lc.Refs, ymap, len(lc.Series))
	return png.Encode(w, c.img)
}

// WritePNG renders the chart.
func (bc BarChart) WritePNG(w io.Writer) error {
	c := newCanvas()
	yhi := 0.0
	for _, v := range bc.Values {
		yhi = math.Max(yhi, v)
	}
	for _, r := range bc.Refs {
		yhi = math.Max(yhi, r.Value)
	}
	if yhi == 0 {
		yhi = 1
	}
	ymap := c.frame(bc.Title, "", bc.YLabel, 0, yhi*1.1)
	n := max(1, len(bc.Values))
	slot := float64(plotW) / float64(n)
	for i, v := range bc.Values {
		x0 := marginL + int(float64(i)*slot+slot*barGapFraction/2)
		x1 := marginL + int(float64(i+1)*slot-slot*barGapFraction/2)
		c.rect(x0, ymap(v), x1, marginT+plotH-1, palette[i%len(palette)])
		s := fmtTick(v)
		if v < 1 {
			s = fmt.Sprintf("%.3f", v)
		}
		c.text((x0+x1-textWidth(s))/2, ymap(v)-refLabelOffset, s, black)
		name := bc.Labels[i]
		if fit := max(barLabelMin, (x1-x0)/fontWidth); len([]rune(name)) > fit {
			name = string([]rune(name)[:fit-1]) + "~"
		}
		c.text((x0+x1-textWidth(name))/2, marginT+plotH+fontFaceHeight+tickLen, name, black)
	}
	c.refs(bc.Refs, ymap, 0)
	return png.Encode(w, c.img)
}
